//! The retention window of `audit_events`: the audit writer deletes rows
//! decided longer ago than `server.hub.audit.retention` (30 days unless
//! set), `PRUNE_ROWS` at a time between its batches, never on a request's
//! path. While a pass deletes full batches the next follows at once (after
//! whatever the queue holds), so a backlog goes within minutes without a
//! long transaction; otherwise the writer looks again after
//! `PRUNE_EVERY` (the first pass too, after the writer starts).

use std::time::{Duration, Instant, SystemTime};

use super::backend::AuditBackend;
use crate::clock::unix_ms;

/// How long rows are kept when `server.hub.audit.retention` is not set.
pub(crate) const DEFAULT_RETENTION: Duration = Duration::from_secs(30 * 24 * 60 * 60);
/// Most rows one pass deletes (one short transaction).
pub(crate) const PRUNE_ROWS: u32 = 500;
/// How long the writer waits between passes once nothing is left to delete.
pub(crate) const PRUNE_EVERY: Duration = Duration::from_secs(10);

/// When the writer next deletes expired rows.
#[derive(Debug)]
pub(super) struct Pruning {
    next: Instant,
}

impl Default for Pruning {
    /// The first pass [`PRUNE_EVERY`] after the writer starts.
    fn default() -> Self {
        Pruning {
            next: Instant::now() + PRUNE_EVERY,
        }
    }
}

impl Pruning {
    /// A pass due at once (the retention window just changed).
    pub(super) fn due_now() -> Self {
        Pruning {
            next: Instant::now(),
        }
    }

    /// Deletes one batch of rows older than `retention` when a pass is due.
    /// A failed pass is tried again at the next interval: the rows wait,
    /// nothing is lost.
    pub(super) fn run_if_due(&mut self, backend: &mut dyn AuditBackend, retention: Duration) {
        let now = Instant::now();
        if now < self.next {
            return;
        }
        let deleted = backend.prune(cutoff_ms(SystemTime::now(), retention), PRUNE_ROWS);
        self.next = match deleted {
            Ok(n) if n >= u64::from(PRUNE_ROWS) => now,
            _ => now + PRUNE_EVERY,
        };
    }
}

/// The Unix milliseconds before which rows expire at `now`.
pub(crate) fn cutoff_ms(now: SystemTime, retention: Duration) -> i64 {
    unix_ms(now).saturating_sub(retention.as_millis().min(i64::MAX as u128) as i64)
}

#[cfg(test)]
mod tests {
    use std::time::UNIX_EPOCH;

    use super::*;
    use crate::authz::audit::backend::AuditWriteError;
    use crate::authz::audit::entry::AuditEntry;

    /// Counts the passes and deletes `per_pass` rows each time.
    struct Counting {
        passes: Vec<i64>,
        per_pass: u64,
    }

    impl AuditBackend for Counting {
        fn name(&self) -> &'static str {
            "counting"
        }
        fn write_batch(&mut self, _: &[AuditEntry]) -> Result<(), AuditWriteError> {
            Ok(())
        }
        fn prune(&mut self, before_ms: i64, max_rows: u32) -> Result<u64, AuditWriteError> {
            assert_eq!(max_rows, PRUNE_ROWS);
            self.passes.push(before_ms);
            Ok(self.per_pass)
        }
    }

    #[test]
    fn a_full_pass_is_followed_at_once_and_a_short_one_waits() {
        let mut idle = Counting {
            passes: Vec::new(),
            per_pass: 0,
        };
        Pruning::default().run_if_due(&mut idle, DEFAULT_RETENTION);
        assert!(
            idle.passes.is_empty(),
            "the first pass waits for the interval"
        );
        let mut pruning = Pruning::due_now();
        let mut full = Counting {
            passes: Vec::new(),
            per_pass: u64::from(PRUNE_ROWS),
        };
        pruning.run_if_due(&mut full, DEFAULT_RETENTION);
        pruning.run_if_due(&mut full, DEFAULT_RETENTION);
        assert_eq!(full.passes.len(), 2, "a backlog keeps going");
        let mut short = Counting {
            passes: Vec::new(),
            per_pass: 3,
        };
        pruning.run_if_due(&mut short, DEFAULT_RETENTION);
        pruning.run_if_due(&mut short, DEFAULT_RETENTION);
        assert_eq!(short.passes.len(), 1, "nothing left: wait for the interval");
    }

    #[test]
    fn the_cutoff_is_the_window_before_now() {
        let now = UNIX_EPOCH + Duration::from_secs(40 * 24 * 60 * 60);
        assert_eq!(cutoff_ms(now, DEFAULT_RETENTION), 10 * 24 * 60 * 60 * 1_000);
        assert!(cutoff_ms(UNIX_EPOCH, DEFAULT_RETENTION) < 0);
    }
}
