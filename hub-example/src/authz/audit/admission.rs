//! Who may put rows on the audit queue, and what happens to the rest.
//!
//! Every decision's entry enters the pipeline through the sink's queue, so
//! the bound sits there, whatever route or stream decided: each principal
//! writes its rows at up to a set rate (a token bucket per principal, its
//! burst [`BURST_SECONDS`] of the rate), and holds at most half of the
//! queue's free room (so one principal filling the queue never leaves
//! another's record without room). An entry past either bound is folded
//! into a summary keyed by principal, action, resource kind and outcome,
//! counting its decisions with the first and last time; the writer stores
//! the summaries once per [`SUMMARY_INTERVAL`]. Nothing is dropped, and the
//! table grows with principals × time, not with requests.
//!
//! Memory stays bounded: at most [`MAX_PRINCIPALS`] buckets (idle ones,
//! full and with nothing queued, are evicted first; a principal that finds
//! no room has its entries summarized) and at most [`MAX_SUMMARIES`]
//! summaries between two flushes (past it, entries are rejected and
//! counted, as a full queue's were).

use std::collections::HashMap;
use std::time::{Duration, Instant};

use serde::Serialize;

use super::entry::{outcome_name, AuditEntry};
use super::record::AuditOutcome;
use crate::authz::Action;
use crate::clock::unix_ms;
use crate::model::PrincipalRef;
use crate::rate::Bucket;

/// Rows per second one principal writes when `server.hub.audit.record_rate`
/// is not set: far above what a person or an agent does in normal use.
pub(crate) const DEFAULT_RECORD_RATE: u32 = 100;
/// A principal's bucket holds this many seconds of its rate.
pub(crate) const BURST_SECONDS: u32 = 10;
/// How often the writer stores the summaries folded since the last time.
pub(crate) const SUMMARY_INTERVAL: Duration = Duration::from_secs(5);
/// Most principals whose buckets are tracked at once.
pub(crate) const MAX_PRINCIPALS: usize = 65_536;
/// Most summaries held between two flushes.
pub(crate) const MAX_SUMMARIES: usize = 65_536;
/// Most summaries `/healthz` lists.
const SHOWN_SUMMARIES: usize = 10;

/// The per-principal bound on the audit trail.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct PrincipalLimits {
    /// Rows per second one principal writes, sustained; its bucket holds
    /// [`BURST_SECONDS`] of them.
    pub record_rate: u32,
}

impl Default for PrincipalLimits {
    fn default() -> Self {
        PrincipalLimits {
            record_rate: DEFAULT_RECORD_RATE,
        }
    }
}

/// What becomes of an entry.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Admit {
    /// It goes on the queue, as its own row.
    Queue,
    /// It is folded into its principal's summary.
    Fold,
}

/// One principal's token bucket and its entries on the queue.
#[derive(Debug)]
struct Share {
    bucket: Bucket,
    queued: usize,
}

/// What a summary counts together.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
struct SummaryKey {
    principal: PrincipalRef,
    action: Action,
    resource_kind: &'static str,
    outcome: AuditOutcome,
}

/// A summary not yet written, as `/healthz` lists it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct PendingSummary {
    /// The principal's kind (`user`, `group`, `agent`).
    pub principal_kind: &'static str,
    /// The principal's id: kept from `/healthz`, which answers anyone
    /// (the audit API, for hub admins, shows the summaries' rows whole).
    #[serde(skip)]
    pub principal_id: String,
    /// The permission name.
    pub action: &'static str,
    /// The outcome its decisions share.
    pub outcome: &'static str,
    /// The decisions folded in.
    pub count: u64,
    /// The first decision's time, Unix milliseconds.
    pub(crate) first_ms: i64,
    /// The last decision's time, Unix milliseconds.
    pub last_ms: i64,
}

/// The buckets, the queue's room and the summaries, behind the sink's lock.
#[derive(Debug)]
pub(super) struct Admission {
    rate: f64,
    burst: f64,
    capacity: usize,
    queued: usize,
    buckets: HashMap<PrincipalRef, Share>,
    summaries: HashMap<SummaryKey, AuditEntry>,
}

impl Admission {
    /// Admission to a queue of `capacity` entries under `limits`.
    pub(super) fn new(capacity: usize, limits: PrincipalLimits) -> Admission {
        let rate = f64::from(limits.record_rate.max(1));
        Admission {
            rate,
            burst: rate * f64::from(BURST_SECONDS),
            capacity,
            queued: 0,
            buckets: HashMap::new(),
            summaries: HashMap::new(),
        }
    }

    /// Whether `entry` goes on the queue or into a summary, at `now`. An
    /// entry queued is counted against its principal's share until the
    /// writer takes it ([`Admission::taken`]).
    pub(super) fn admit(&mut self, entry: &AuditEntry, now: Instant) -> Admit {
        let free = self.capacity.saturating_sub(self.queued);
        let (rate, burst) = (self.rate, self.burst);
        let Some(share) = self.share(&entry.principal, now) else {
            return Admit::Fold;
        };
        share.bucket.refill(rate, burst, now);
        // Half the free room at most: whoever comes next still finds some.
        if 2 * share.queued >= free || !share.bucket.try_take() {
            return Admit::Fold;
        }
        share.queued += 1;
        self.queued += 1;
        Admit::Queue
    }

    /// Takes back an admission whose entry the queue refused after all.
    pub(super) fn unqueue(&mut self, principal: &PrincipalRef) {
        self.queued = self.queued.saturating_sub(1);
        if let Some(share) = self.buckets.get_mut(principal) {
            share.queued = share.queued.saturating_sub(1);
        }
    }

    /// The writer took `entries` off the queue: their room is free again.
    pub(super) fn taken(&mut self, entries: &[AuditEntry]) {
        // Summaries never go on the queue: every entry taken was admitted.
        for entry in entries {
            self.unqueue(&entry.principal);
        }
    }

    /// The share of `principal`, its bucket full when new; `None` when
    /// [`MAX_PRINCIPALS`] are tracked and none is idle.
    fn share(&mut self, principal: &PrincipalRef, now: Instant) -> Option<&mut Share> {
        if !self.buckets.contains_key(principal) {
            if self.buckets.len() >= MAX_PRINCIPALS {
                let (rate, burst) = (self.rate, self.burst);
                // An idle share is as good as a new one: forget it.
                self.buckets
                    .retain(|_, s| s.queued > 0 || !s.bucket.is_full_at(rate, burst, now));
                if self.buckets.len() >= MAX_PRINCIPALS {
                    return None;
                }
            }
            let share = Share {
                bucket: Bucket::full(self.burst, now),
                queued: 0,
            };
            self.buckets.insert(principal.clone(), share);
        }
        self.buckets.get_mut(principal)
    }

    /// Folds `entry` into its summary; `false` when [`MAX_SUMMARIES`] are
    /// held and it would start another.
    pub(super) fn fold(&mut self, entry: AuditEntry) -> bool {
        let key = SummaryKey {
            principal: entry.principal.clone(),
            action: entry.action,
            resource_kind: entry.resource_kind,
            outcome: entry.tally.outcome(),
        };
        let last = entry.last_at.unwrap_or(entry.at);
        if let Some(summary) = self.summaries.get_mut(&key) {
            summary.tally.merge(entry.tally);
            summary.at = summary.at.min(entry.at);
            summary.last_at = summary.last_at.max(Some(last));
            return true;
        }
        if self.summaries.len() >= MAX_SUMMARIES {
            return false;
        }
        let summary = AuditEntry {
            resource_id: None,
            denied_ids: Vec::new(),
            last_at: Some(last),
            ..entry
        };
        self.summaries.insert(key, summary);
        true
    }

    /// The summaries folded since the last call, oldest first.
    pub(super) fn take_summaries(&mut self) -> Vec<AuditEntry> {
        let mut summaries: Vec<AuditEntry> = self.summaries.drain().map(|(_, s)| s).collect();
        summaries.sort_by_key(|s| s.at);
        summaries
    }

    /// Whether any summary waits to be written.
    pub(super) fn has_summaries(&self) -> bool {
        !self.summaries.is_empty()
    }

    /// The decisions the summaries not yet written hold.
    pub(super) fn pending_decisions(&self) -> u64 {
        self.summaries.values().map(AuditEntry::decisions).sum()
    }

    /// The decisions the summaries not yet written hold, and the largest
    /// few of them (the earlier first among equals). Selected, not sorted
    /// whole: this runs under the lock every decision's entry takes.
    pub(super) fn pending(&self) -> (u64, Vec<PendingSummary>) {
        let order = |s: &&AuditEntry| (std::cmp::Reverse(s.decisions()), s.at);
        let mut largest: Vec<&AuditEntry> = self.summaries.values().collect();
        if largest.len() > SHOWN_SUMMARIES {
            largest.select_nth_unstable_by_key(SHOWN_SUMMARIES, order);
            largest.truncate(SHOWN_SUMMARIES);
        }
        largest.sort_unstable_by_key(order);
        let shown = largest
            .into_iter()
            .map(|s| PendingSummary {
                principal_kind: s.principal.kind.as_str(),
                principal_id: s.principal.id.to_string(),
                action: s.action.as_str(),
                outcome: outcome_name(s.tally.outcome()),
                count: s.decisions(),
                first_ms: unix_ms(s.at),
                last_ms: unix_ms(s.last_at.unwrap_or(s.at)),
            })
            .collect();
        (self.pending_decisions(), shown)
    }

    /// Principals whose buckets are tracked.
    #[cfg(test)]
    pub(super) fn principals(&self) -> usize {
        self.buckets.len()
    }
}

#[cfg(test)]
mod tests {
    use std::time::SystemTime;

    use super::*;
    use crate::authz::audit::{AuditRecord, Resource};

    fn entry(principal: &str, outcome: AuditOutcome, at_s: u64) -> AuditEntry {
        AuditEntry::from(AuditRecord {
            at: SystemTime::UNIX_EPOCH + Duration::from_secs(at_s),
            principal: PrincipalRef::user(principal),
            action: Action::AgentRead,
            resource: Resource::Agent(format!("agent-{at_s}").into()),
            outcome,
        })
    }

    #[test]
    fn a_principal_queues_its_burst_then_its_rate_and_folds_the_rest() {
        let mut admission = Admission::new(1_000_000, PrincipalLimits { record_rate: 2 });
        let start = Instant::now();
        let burst = (2 * BURST_SECONDS) as usize;
        let queued = (0..burst + 5)
            .filter(|_| admission.admit(&entry("a", AuditOutcome::Deny, 1), start) == Admit::Queue)
            .count();
        assert_eq!(queued, burst);
        let later = start + Duration::from_secs(3);
        let queued = (0..10)
            .filter(|_| admission.admit(&entry("a", AuditOutcome::Deny, 1), later) == Admit::Queue)
            .count();
        assert_eq!(queued, 6, "three seconds at two a second");
        assert_eq!(
            admission.admit(&entry("b", AuditOutcome::Deny, 1), later),
            Admit::Queue,
            "another principal has its own bucket"
        );
    }

    #[test]
    fn one_principal_never_takes_the_last_of_the_queue_s_room() {
        let capacity = 64;
        let mut admission = Admission::new(
            capacity,
            PrincipalLimits {
                record_rate: 10_000,
            },
        );
        let now = Instant::now();
        let flood = (0..capacity)
            .filter(|_| admission.admit(&entry("a", AuditOutcome::Deny, 1), now) == Admit::Queue)
            .count();
        assert!(flood <= capacity / 3 + 1, "{flood}");
        // Each of many others still finds room, one after the other.
        for other in 0..16 {
            let name = format!("other-{other}");
            assert_eq!(
                admission.admit(&entry(&name, AuditOutcome::Allow, 1), now),
                Admit::Queue,
                "{name}"
            );
        }
        assert!(admission.queued < capacity);
        // Once the writer takes the flood's entries, their room is free.
        let taken: Vec<AuditEntry> = (0..flood)
            .map(|_| entry("a", AuditOutcome::Deny, 1))
            .collect();
        admission.taken(&taken);
        assert_eq!(admission.queued, 16);
        assert_eq!(admission.buckets[&PrincipalRef::user("a")].queued, 0);
    }

    #[test]
    fn folded_entries_make_one_summary_per_principal_action_and_outcome() {
        let mut admission = Admission::new(16, PrincipalLimits::default());
        for at in [5, 3, 9] {
            assert!(admission.fold(entry("a", AuditOutcome::Deny, at)));
        }
        assert!(admission.fold(entry("a", AuditOutcome::Allow, 4)));
        assert!(admission.fold(entry("b", AuditOutcome::Deny, 7)));
        let (decisions, shown) = admission.pending();
        assert_eq!(decisions, 5);
        assert_eq!(
            shown[0],
            PendingSummary {
                principal_kind: "user",
                principal_id: "a".into(),
                action: "agent.read",
                outcome: "deny",
                count: 3,
                first_ms: 3_000,
                last_ms: 9_000,
            }
        );
        let summaries = admission.take_summaries();
        assert_eq!(summaries.len(), 3);
        let denied = summaries
            .iter()
            .find(|s| &*s.principal.id == "a" && s.tally.denied == 3)
            .unwrap();
        assert_eq!(denied.resource_id, None, "a summary names no resource");
        let row = denied.row();
        assert_eq!((row.at_ms, row.last_ms), (3_000, Some(9_000)));
        assert!(!admission.has_summaries(), "taken once");
    }

    #[test]
    fn idle_principals_are_forgotten_when_the_table_is_full() {
        let mut admission = Admission::new(usize::MAX, PrincipalLimits { record_rate: 1 });
        let start = Instant::now();
        for n in 0..MAX_PRINCIPALS {
            admission.admit(&entry(&n.to_string(), AuditOutcome::Allow, 1), start);
        }
        assert_eq!(admission.principals(), MAX_PRINCIPALS);
        // Every bucket owes a token and holds a queued entry: no room.
        assert_eq!(
            admission.admit(&entry("late", AuditOutcome::Allow, 1), start),
            Admit::Fold
        );
        let all: Vec<AuditEntry> = (0..MAX_PRINCIPALS)
            .map(|n| entry(&n.to_string(), AuditOutcome::Allow, 1))
            .collect();
        admission.taken(&all);
        let later = start + Duration::from_secs(u64::from(BURST_SECONDS));
        assert_eq!(
            admission.admit(&entry("late", AuditOutcome::Allow, 1), later),
            Admit::Queue,
            "the idle buckets made room"
        );
        assert_eq!(admission.principals(), 1);
    }
}
