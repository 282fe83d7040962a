//! A check repeated over time (an event stream's re-check of its
//! subjects every few seconds) writes its records only when their outcomes
//! change: an idle stream re-allowed every interval would otherwise write
//! the same rows forever, with no request sent. The decisions are made
//! into a [`CollectedRecords`] and handed to [`RepeatedCheck::report`],
//! which emits them when they differ from the check before and otherwise
//! only counts them ([`AuditEmitter::note_unchanged`]).

use parking_lot::Mutex;
use perf_trace_core::record::DecisionBatch;

use super::{AuditEmitter, AuditOutcome, AuditRecord, Resource};
use crate::authz::Action;

/// An emitter that keeps the records of one check, for
/// [`RepeatedCheck::report`].
#[derive(Debug, Default)]
pub(crate) struct CollectedRecords {
    records: Mutex<Vec<AuditRecord>>,
}

impl CollectedRecords {
    /// The records kept, in the order decided.
    pub(crate) fn into_records(self) -> Vec<AuditRecord> {
        self.records.into_inner()
    }
}

impl AuditEmitter for CollectedRecords {
    fn emit(&self, record: AuditRecord) {
        self.records.lock().push(record);
    }

    fn emit_batch(&self, _: DecisionBatch, records: &mut dyn Iterator<Item = AuditRecord>) {
        self.records.lock().extend(records);
    }
}

/// What a decision concluded about what: a check's outcomes compare by
/// these, not by their times.
type Decided = (Action, Resource, AuditOutcome);

/// The outcomes of the last check reported.
#[derive(Debug, Default)]
pub(crate) struct RepeatedCheck {
    /// `None` before the first report: the check that opened the stream,
    /// which allowed it.
    last: Option<Vec<Decided>>,
}

impl RepeatedCheck {
    /// Emits `records` through `audit` when their outcomes differ from the
    /// last check's (before any, when one is not allowed: the first check
    /// allowed everything); otherwise counts them as unchanged. Returns
    /// whether they were emitted.
    pub fn report<A: AuditEmitter + ?Sized>(
        &mut self,
        records: Vec<AuditRecord>,
        audit: &A,
    ) -> bool {
        let decided: Vec<Decided> = records
            .iter()
            .map(|r| (r.action, r.resource.clone(), r.outcome))
            .collect();
        let unchanged = match &self.last {
            Some(last) => *last == decided,
            None => decided.iter().all(|d| d.2 == AuditOutcome::Allow),
        };
        if unchanged {
            if !records.is_empty() {
                audit.note_unchanged(records.len() as u64);
            }
            return false;
        }
        self.last = Some(decided);
        let mut outcomes = DecisionBatch::default();
        for record in &records {
            outcomes.add(record.outcome.into());
        }
        audit.emit_batch(outcomes, &mut records.into_iter());
        true
    }
}

#[cfg(test)]
mod tests {
    use std::sync::atomic::{AtomicU64, Ordering::Relaxed};
    use std::time::{Duration, SystemTime};

    use super::*;
    use crate::model::PrincipalRef;

    /// Counts what it is given.
    #[derive(Default)]
    struct Counting {
        emitted: AtomicU64,
        unchanged: AtomicU64,
    }

    impl AuditEmitter for Counting {
        fn emit(&self, _: AuditRecord) {
            self.emitted.fetch_add(1, Relaxed);
        }
        fn note_unchanged(&self, decisions: u64) {
            self.unchanged.fetch_add(decisions, Relaxed);
        }
    }

    /// The records of one re-check of two subjects at second `at`.
    fn check(at: u64, second: AuditOutcome) -> Vec<AuditRecord> {
        let collected = CollectedRecords::default();
        for (subject, outcome) in [("a", AuditOutcome::Allow), ("b", second)] {
            collected.emit(AuditRecord {
                at: SystemTime::UNIX_EPOCH + Duration::from_secs(at),
                principal: PrincipalRef::user("u"),
                action: Action::EventsSubscribe,
                resource: Resource::User(subject.into()),
                outcome,
            });
        }
        collected.into_records()
    }

    #[test]
    fn only_a_change_of_outcome_is_written() {
        let audit = Counting::default();
        let mut repeated = RepeatedCheck::default();
        for at in 1..=5 {
            assert!(!repeated.report(check(at, AuditOutcome::Allow), &audit));
        }
        assert_eq!(audit.emitted.load(Relaxed), 0, "allowed as when opened");
        assert_eq!(audit.unchanged.load(Relaxed), 10);
        assert!(repeated.report(check(6, AuditOutcome::Deny), &audit));
        assert_eq!(audit.emitted.load(Relaxed), 2, "the change, written whole");
        assert!(!repeated.report(check(7, AuditOutcome::Deny), &audit));
        assert!(repeated.report(check(8, AuditOutcome::Allow), &audit));
        assert_eq!(audit.emitted.load(Relaxed), 4, "and the change back");
    }
}
