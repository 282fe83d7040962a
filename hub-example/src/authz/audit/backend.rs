//! Where the audit writer persists its batches: an [`AuditBackend`]. The
//! Hub's is the `audit_events` table of its database, through the store's
//! [`AuditWriter`]; [`MemoryAuditBackend`] keeps nothing.

use std::time::Duration;

use super::entry::AuditEntry;
use crate::store::audit::{AuditRow, AuditWriter};

/// How long a database backend's batch waits on a lock another connection
/// holds before the attempt counts as failed (and is retried).
pub const WRITER_BUSY_TIMEOUT: Duration = Duration::from_millis(250);

/// Persists batches of entries: the writer's side of the queue.
pub trait AuditBackend: Send + 'static {
    /// The backend's name as `/healthz` shows it (`sqlite`, `postgres`,
    /// `memory`).
    fn name(&self) -> &'static str;

    /// Writes `batch` entirely or not at all; an error leaves the batch to
    /// be retried.
    fn write_batch(&mut self, batch: &[AuditEntry]) -> Result<(), AuditWriteError>;

    /// Deletes at most `max_rows` of the oldest rows decided before
    /// `before_ms` (Unix milliseconds) and returns how many went. A backend
    /// that keeps nothing deletes nothing.
    fn prune(&mut self, before_ms: i64, max_rows: u32) -> Result<u64, AuditWriteError> {
        let _ = (before_ms, max_rows);
        Ok(0)
    }
}

/// A batch the backend could not write.
#[derive(Debug, thiserror::Error)]
#[error("audit batch not written: {0}")]
pub struct AuditWriteError(pub String);

/// A backend that keeps nothing (the records stay visible only through
/// the audit log's latest entries): for tests and in-process measurements.
#[derive(Debug, Default, Clone, Copy)]
pub(crate) struct MemoryAuditBackend;

impl AuditBackend for MemoryAuditBackend {
    fn name(&self) -> &'static str {
        "memory"
    }

    fn write_batch(&mut self, _batch: &[AuditEntry]) -> Result<(), AuditWriteError> {
        Ok(())
    }
}

/// The database's `audit_events` table: each batch one transaction.
impl AuditBackend for AuditWriter {
    fn name(&self) -> &'static str {
        self.database()
    }

    fn write_batch(&mut self, batch: &[AuditEntry]) -> Result<(), AuditWriteError> {
        let rows: Vec<AuditRow<'_>> = batch.iter().map(AuditEntry::row).collect();
        self.write(&rows)
            .map_err(|e| AuditWriteError(e.to_string()))
    }

    fn prune(&mut self, before_ms: i64, max_rows: u32) -> Result<u64, AuditWriteError> {
        AuditWriter::prune(self, before_ms, max_rows).map_err(|e| AuditWriteError(e.to_string()))
    }
}
