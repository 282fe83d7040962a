//! What the audit queue carries and the `audit_events` table stores: an
//! [`AuditEntry`], one row per decision asked alone, and one row per
//! request and question for a batch of decisions (a list deciding an action
//! on each agent of its page): the question, the allowed, denied and error
//! counts, and the ids not allowed. So the rows a request writes grow with
//! the questions it asks, not with the agents it lists, and an auditor can
//! still read who was denied what and when.

use std::time::SystemTime;

use super::record::{AuditOutcome, AuditRecord, Resource};
use crate::authz::Action;
use crate::clock::unix_ms;
use crate::model::{Id, PrincipalRef};
use crate::store::audit::AuditRow;

/// Decisions by outcome: what an entry stands for.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Tally {
    /// Decisions allowed.
    pub allowed: u32,
    /// Decisions denied.
    pub denied: u32,
    /// Decisions without a conclusion (the inputs could not be read).
    pub errors: u32,
}

impl Tally {
    /// The decisions counted.
    pub fn decisions(&self) -> u64 {
        u64::from(self.allowed) + u64::from(self.denied) + u64::from(self.errors)
    }

    /// Adds `other`'s counts (saturating: a summary never wraps).
    pub fn merge(&mut self, other: Tally) {
        self.allowed = self.allowed.saturating_add(other.allowed);
        self.denied = self.denied.saturating_add(other.denied);
        self.errors = self.errors.saturating_add(other.errors);
    }

    fn add(&mut self, outcome: AuditOutcome) {
        match outcome {
            AuditOutcome::Allow => self.allowed += 1,
            AuditOutcome::Deny => self.denied += 1,
            AuditOutcome::Error => self.errors += 1,
        }
    }

    /// The `outcome` column: the gravest outcome counted (an error, then a
    /// denial, then allowed), so a search for denials finds every entry
    /// holding one.
    pub(crate) fn outcome(&self) -> AuditOutcome {
        if self.errors > 0 {
            AuditOutcome::Error
        } else if self.denied > 0 {
            AuditOutcome::Deny
        } else {
            AuditOutcome::Allow
        }
    }
}

/// One stored audit row: a decision, or the decisions of one question of a
/// batch.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AuditEntry {
    /// When it was decided (a batch's first decision).
    pub at: SystemTime,
    /// Who asked.
    pub principal: PrincipalRef,
    /// What for.
    pub action: Action,
    /// On what kind of resource (`hub`, `project`, `agent`, `group`,
    /// `user`).
    pub(crate) resource_kind: &'static str,
    /// The one resource decided on; `None` for the Hub and for an entry of
    /// several decisions.
    pub(crate) resource_id: Option<Id>,
    /// The decisions by outcome.
    pub tally: Tally,
    /// For an entry of several decisions, the resources not allowed
    /// (denied or in error), in the order decided; empty otherwise.
    pub(crate) denied_ids: Vec<Id>,
    /// For a summary (a principal's decisions past its audit rate, folded
    /// over an interval), when its last decision was made; `at` is the
    /// first's. `None` for every other entry.
    pub(crate) last_at: Option<SystemTime>,
}

impl AuditEntry {
    /// The decisions the entry stands for.
    pub fn decisions(&self) -> u64 {
        self.tally.decisions()
    }

    /// The row the entry is stored as: its time in Unix milliseconds, its
    /// gravest outcome, and the ids not allowed as a JSON array (NULL when
    /// there are none).
    pub(crate) fn row(&self) -> AuditRow<'_> {
        let t = self.tally;
        AuditRow {
            at_ms: unix_ms(self.at),
            principal_kind: self.principal.kind.as_str(),
            principal_id: &self.principal.id,
            action: self.action.as_str(),
            resource_kind: self.resource_kind,
            resource_id: self.resource_id.as_deref(),
            outcome: outcome_name(t.outcome()),
            tally: [t.allowed, t.denied, t.errors].map(i64::from),
            denied_ids: self.denied_ids_json(),
            last_ms: self.last_at.map(unix_ms),
        }
    }

    /// Whether the entry is a summary of decisions past its principal's
    /// rate.
    #[cfg(test)]
    pub(crate) fn is_summary(&self) -> bool {
        self.last_at.is_some()
    }

    fn denied_ids_json(&self) -> Option<String> {
        if self.denied_ids.is_empty() {
            return None;
        }
        let ids: Vec<&str> = self.denied_ids.iter().map(|id| &**id).collect();
        serde_json::to_string(&ids).ok()
    }
}

/// The `outcome` column's name for `outcome`.
pub(crate) fn outcome_name(outcome: AuditOutcome) -> &'static str {
    match outcome {
        AuditOutcome::Allow => "allow",
        AuditOutcome::Deny => "deny",
        AuditOutcome::Error => "error",
    }
}

/// The `resource_kind` and `resource_id` columns of a resource.
fn resource_parts(resource: &Resource) -> (&'static str, Option<&Id>) {
    match resource {
        Resource::Hub => ("hub", None),
        Resource::Project(id) => ("project", Some(id)),
        Resource::Agent(id) => ("agent", Some(id)),
        Resource::Group(id) => ("group", Some(id)),
        Resource::User(id) => ("user", Some(id)),
    }
}

impl From<AuditRecord> for AuditEntry {
    /// A decision asked alone: its own row.
    fn from(record: AuditRecord) -> AuditEntry {
        let (resource_kind, resource_id) = resource_parts(&record.resource);
        let mut tally = Tally::default();
        tally.add(record.outcome);
        AuditEntry {
            at: record.at,
            resource_kind,
            resource_id: resource_id.cloned(),
            principal: record.principal,
            action: record.action,
            tally,
            denied_ids: Vec::new(),
            last_at: None,
        }
    }
}

/// The entries of one batch of decisions: one per principal, action and
/// resource kind, in the order each was first decided. A question decided
/// once stays its own row, resource id and all.
pub fn summarize(records: &mut dyn Iterator<Item = AuditRecord>) -> Vec<AuditEntry> {
    // A batch asks a few questions (an action each): a scan beats a map.
    let mut entries: Vec<(AuditEntry, Option<Id>)> = Vec::new();
    for record in records {
        let (kind, id) = resource_parts(&record.resource);
        let found = entries.iter_mut().find(|(e, _)| {
            e.action == record.action && e.resource_kind == kind && e.principal == record.principal
        });
        let (entry, _) = match found {
            Some(found) => found,
            None => {
                entries.push((
                    AuditEntry {
                        at: record.at,
                        principal: record.principal.clone(),
                        action: record.action,
                        resource_kind: kind,
                        resource_id: None,
                        tally: Tally::default(),
                        denied_ids: Vec::new(),
                        last_at: None,
                    },
                    id.cloned(),
                ));
                entries.last_mut().expect("just pushed")
            }
        };
        entry.tally.add(record.outcome);
        if record.outcome != AuditOutcome::Allow {
            if let Some(id) = id {
                entry.denied_ids.push(id.clone());
            }
        }
    }
    entries
        .into_iter()
        .map(|(mut entry, first_id)| {
            if entry.decisions() == 1 {
                entry.resource_id = first_id;
                entry.denied_ids.clear();
            }
            entry
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn record(action: Action, agent: &str, outcome: AuditOutcome) -> AuditRecord {
        AuditRecord {
            at: SystemTime::UNIX_EPOCH,
            principal: PrincipalRef::user("u"),
            action,
            resource: Resource::Agent(agent.into()),
            outcome,
        }
    }

    #[test]
    fn a_batch_becomes_one_entry_per_question_with_its_counts_and_denied_ids() {
        let mut records = Vec::new();
        for agent in ["a", "b", "c"] {
            records.push(record(Action::AgentRead, agent, AuditOutcome::Allow));
            let update = if agent == "a" {
                AuditOutcome::Allow
            } else {
                AuditOutcome::Deny
            };
            records.push(record(Action::AgentUpdate, agent, update));
        }
        let entries = summarize(&mut records.into_iter());
        assert_eq!(entries.len(), 2);
        let (read, update) = (&entries[0], &entries[1]);
        assert_eq!(
            (read.action, read.resource_kind),
            (Action::AgentRead, "agent")
        );
        assert_eq!((read.tally.allowed, read.tally.denied), (3, 0));
        assert!(read.denied_ids.is_empty() && read.resource_id.is_none());
        assert_eq!((update.tally.allowed, update.tally.denied), (1, 2));
        assert_eq!(update.denied_ids, vec![Id::from("b"), Id::from("c")]);
        assert_eq!(update.tally.outcome(), AuditOutcome::Deny);
        assert_eq!(entries.iter().map(AuditEntry::decisions).sum::<u64>(), 6);
    }

    #[test]
    fn a_question_decided_once_keeps_its_resource() {
        let entries = summarize(&mut std::iter::once(record(
            Action::AgentDelete,
            "a",
            AuditOutcome::Deny,
        )));
        assert_eq!(entries.len(), 1);
        assert_eq!(entries[0].resource_id, Some(Id::from("a")));
        assert!(entries[0].denied_ids.is_empty());
        assert_eq!(
            entries[0],
            AuditEntry::from(record(Action::AgentDelete, "a", AuditOutcome::Deny))
        );
    }
}
