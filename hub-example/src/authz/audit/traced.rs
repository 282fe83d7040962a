//! The emitter the traced Hub wraps its audit emitter in: each decision's
//! outcome and its emission's time go to the current request's recorder.

use super::{AuditEmitter, AuditHealth, AuditRecord};
use perf_trace_core::record::DecisionBatch;

/// Installed only when tracing is on: records each decision's outcome and the
/// time its emission took into the current request's recorder; a batch's
/// emission is timed once, as a whole (two clock reads, not two per
/// decision).
#[derive(Debug, Clone)]
pub struct TracedAuditEmitter<E> {
    inner: E,
}

impl<E> TracedAuditEmitter<E> {
    /// Wraps `inner`.
    pub fn new(inner: E) -> Self {
        TracedAuditEmitter { inner }
    }

    /// The wrapped emitter.
    pub fn inner(&self) -> &E {
        &self.inner
    }
}

impl<E: AuditEmitter> AuditEmitter for TracedAuditEmitter<E> {
    fn emit(&self, record: AuditRecord) {
        let outcome = record.outcome.into();
        perf_trace_core::record::time_decision(outcome, || self.inner.emit(record));
    }

    fn emit_batch(&self, outcomes: DecisionBatch, records: &mut dyn Iterator<Item = AuditRecord>) {
        // The counts the line gets must be the records' own.
        #[cfg(debug_assertions)]
        let mut seen = DecisionBatch::default();
        #[cfg(debug_assertions)]
        let records = &mut records.inspect(|r| seen.add(r.outcome.into()));
        perf_trace_core::record::time_decisions(outcomes, || {
            self.inner.emit_batch(outcomes, records)
        });
        #[cfg(debug_assertions)]
        assert_eq!(seen, outcomes, "a batch's outcomes must count its records");
    }

    fn note_unchanged(&self, decisions: u64) {
        self.inner.note_unchanged(decisions);
    }

    fn health(&self) -> Option<AuditHealth> {
        self.inner.health()
    }
}
