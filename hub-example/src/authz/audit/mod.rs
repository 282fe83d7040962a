//! Audit records: every authorization decision emits exactly one
//! ([`AuditRecord`]), through an [`AuditEmitter`]. The Hub's emitter,
//! [`ChannelAuditSink`], hands them to a bounded queue with `try_send`, so
//! emitting never waits: when the queue is full the records are rejected
//! and counted. A decision asked alone is queued as its own [`AuditEntry`];
//! a batch of decisions (a list's) as one entry per question
//! ([`summarize`]), so what is queued and stored grows with requests, not
//! with the agents they list. The figures count decisions either way. A
//! background writer takes entries off the queue in batches and persists
//! each batch through an [`AuditBackend`] (the Hub's writes into its
//! database's `audit_events` table through the store's
//! [`AuditWriter`](crate::store::audit::AuditWriter), one transaction per
//! batch); a batch that fails is counted and retried, so nothing is lost
//! while the queue has room. Between batches the writer deletes rows older
//! than the retention window, a few at a time ([`retention`]).
//! [`AuditLog`] reads the figures (`/healthz` shows them) and drains the
//! queue at shutdown.

mod backend;
mod entry;
mod record;
pub mod retention;

use std::collections::VecDeque;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering::Relaxed};
use std::sync::mpsc::{sync_channel, Receiver, RecvTimeoutError, SyncSender, TrySendError};
use std::sync::Arc;
use std::time::{Duration, Instant};

use parking_lot::{Condvar, Mutex};
use perf_trace_core::record::DecisionBatch;
use serde::Serialize;

pub use backend::{AuditBackend, AuditWriteError, MemoryAuditBackend, WRITER_BUSY_TIMEOUT};
pub use entry::{summarize, AuditEntry, Tally};
pub use record::{AuditOutcome, AuditRecord, Resource};
use retention::Pruning;

/// Most entries the writer persists in one batch.
pub const MAX_BATCH: usize = 4_096;
/// How long the writer waits for a record before it looks at the shutdown
/// flags again.
const IDLE_POLL: Duration = Duration::from_millis(20);
/// The first wait before a failed batch is retried; it doubles up to
/// [`MAX_RETRY_WAIT`].
const FIRST_RETRY_WAIT: Duration = Duration::from_millis(20);
/// The longest wait between two attempts at a failed batch.
const MAX_RETRY_WAIT: Duration = Duration::from_millis(500);
/// How long after the last rejected record or failed batch, the queue
/// empty, `/healthz` says `ok` again (its totals kept).
pub const RECOVERY_WINDOW: Duration = Duration::from_secs(60);

/// Receives one record per authorization decision.
pub trait AuditEmitter: Send + Sync + 'static {
    /// Emits `record`. Must not block.
    fn emit(&self, record: AuditRecord);

    /// Emits the records of one batch of decisions, in order; `outcomes`
    /// counts them by outcome. Must not block. The default emits them one by
    /// one; an emitter overrides it to pay its fixed costs once per batch.
    fn emit_batch(&self, outcomes: DecisionBatch, records: &mut dyn Iterator<Item = AuditRecord>) {
        let _ = outcomes;
        records.for_each(|record| self.emit(record));
    }

    /// The pipeline's figures, for `/healthz`; `None` for an emitter that
    /// keeps none.
    fn health(&self) -> Option<AuditHealth> {
        None
    }
}

/// The audit pipeline's figures, as `/healthz` shows them under `audit`,
/// counted in decisions (an entry of a batch counts each of its decisions).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct AuditHealth {
    /// The backend's name.
    pub backend: &'static str,
    /// Records taken into the queue.
    pub accepted: u64,
    /// Records the backend has written.
    pub flushed: u64,
    /// Records refused because the queue was full (or shutting down).
    pub rejected: u64,
    /// Batches the backend failed to write (each retried).
    pub failed_flushes: u64,
    /// Records accepted and not yet written.
    pub queue_size: u64,
    /// Whether a record was rejected or a batch failed within the last
    /// [`RECOVERY_WINDOW`], or since then the queue has not drained.
    #[serde(skip)]
    pub troubled: bool,
}

impl AuditHealth {
    /// Whether a record was rejected or a batch failed lately (within
    /// [`RECOVERY_WINDOW`], or the queue has not drained since): `/healthz`
    /// then says `degraded` (still 200). The totals stay counted after.
    pub fn is_degraded(&self) -> bool {
        self.troubled
    }
}

/// What draining the queue at shutdown achieved: `accepted == flushed +
/// lost`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct AuditDrain {
    /// Records accepted over the Hub's life.
    pub accepted: u64,
    /// Records written.
    pub flushed: u64,
    /// Records accepted but not written by the deadline.
    pub lost: u64,
    /// Records refused over the Hub's life.
    pub rejected: u64,
    /// Whether the writer finished before the deadline.
    pub completed: bool,
}

/// Figures of the audit pipeline.
#[derive(Debug, Default)]
struct Counters {
    sent: AtomicU64,
    dropped: AtomicU64,
    received: AtomicU64,
    flushed: AtomicU64,
    failed_flushes: AtomicU64,
    lost: AtomicU64,
}

/// The state the writer and the sink share: counters, the latest entries,
/// when trouble last happened, the retention window and the shutdown flags.
#[derive(Debug)]
struct Shared {
    counters: Counters,
    recent: Mutex<VecDeque<AuditEntry>>,
    recent_capacity: usize,
    backend: &'static str,
    /// When a record was last rejected or a batch last failed.
    troubled_at: Mutex<Option<Instant>>,
    /// How long rows are kept; the writer deletes older ones.
    retention: Mutex<Duration>,
    /// Set when the retention changes: the writer prunes at its next turn.
    retention_changed: AtomicBool,
    /// Set when the drain starts: no record is accepted after it, and the
    /// writer stops once the queue is empty.
    closing: AtomicBool,
    /// Set at the drain's deadline: the writer stops at once.
    abandon: AtomicBool,
    /// Whether the writer has stopped, and its wake-up.
    stopped: Mutex<bool>,
    stopped_cv: Condvar,
}

/// The Hub's audit emitter: a bounded queue drained by a background writer.
#[derive(Debug, Clone)]
pub struct ChannelAuditSink {
    tx: SyncSender<AuditEntry>,
    shared: Arc<Shared>,
}

/// A read-only view of the audit pipeline (for operators and tests), and
/// its drain at shutdown.
#[derive(Debug, Clone)]
pub struct AuditLog {
    shared: Arc<Shared>,
}

impl ChannelAuditSink {
    /// Starts a writer that keeps nothing ([`MemoryAuditBackend`]); the
    /// queue holds `capacity` records and the log keeps the latest
    /// `keep_recent`. The writer ends when every clone of the sink is
    /// dropped.
    pub fn start(capacity: usize, keep_recent: usize) -> (ChannelAuditSink, AuditLog) {
        Self::start_with(Box::new(MemoryAuditBackend), capacity, keep_recent)
    }

    /// Starts a writer that persists through `backend`.
    pub fn start_with(
        backend: Box<dyn AuditBackend>,
        capacity: usize,
        keep_recent: usize,
    ) -> (ChannelAuditSink, AuditLog) {
        let (tx, rx) = sync_channel::<AuditEntry>(capacity);
        let shared = Arc::new(Shared {
            counters: Counters::default(),
            recent: Mutex::new(VecDeque::with_capacity(keep_recent)),
            recent_capacity: keep_recent,
            backend: backend.name(),
            troubled_at: Mutex::new(None),
            retention: Mutex::new(retention::DEFAULT_RETENTION),
            retention_changed: AtomicBool::new(false),
            closing: AtomicBool::new(false),
            abandon: AtomicBool::new(false),
            stopped: Mutex::new(false),
            stopped_cv: Condvar::new(),
        });
        let writer = shared.clone();
        std::thread::Builder::new()
            .name("audit-writer".into())
            .spawn(move || {
                write_until_stopped(&writer, &rx, backend);
                *writer.stopped.lock() = true;
                writer.stopped_cv.notify_all();
            })
            .expect("spawn the audit writer");
        (
            ChannelAuditSink {
                tx,
                shared: shared.clone(),
            },
            AuditLog { shared },
        )
    }
}

/// The writer: takes up to [`MAX_BATCH`] entries at a time and writes them,
/// retrying a failed batch (with a growing wait) until it is written or the
/// drain's deadline passes; between batches, deletes rows past the
/// retention window a few at a time.
// Never inlined: profiles name the writer's loop (the instruction counter
// of hub-bench leaves it out by this name).
#[inline(never)]
fn write_until_stopped(
    shared: &Shared,
    rx: &Receiver<AuditEntry>,
    mut backend: Box<dyn AuditBackend>,
) {
    let counters = &shared.counters;
    let mut batch: Vec<AuditEntry> = Vec::with_capacity(MAX_BATCH);
    let mut retry_wait = FIRST_RETRY_WAIT;
    let mut pruning = Pruning::default();
    loop {
        if shared.abandon.load(Relaxed) {
            return;
        }
        if batch.is_empty() {
            if shared.retention_changed.swap(false, Relaxed) {
                pruning = Pruning::due_now();
            }
            pruning.run_if_due(&mut *backend, *shared.retention.lock());
            match rx.recv_timeout(IDLE_POLL) {
                Ok(entry) => batch.push(entry),
                Err(RecvTimeoutError::Timeout) if shared.closing.load(Relaxed) => return,
                Err(RecvTimeoutError::Timeout) => continue,
                Err(RecvTimeoutError::Disconnected) => return,
            }
            while batch.len() < MAX_BATCH {
                match rx.try_recv() {
                    Ok(entry) => batch.push(entry),
                    Err(_) => break,
                }
            }
            counters.received.fetch_add(decisions(&batch), Relaxed);
        }
        match backend.write_batch(&batch) {
            Ok(()) => {
                counters.flushed.fetch_add(decisions(&batch), Relaxed);
                keep_recent(shared, &mut batch);
                retry_wait = FIRST_RETRY_WAIT;
            }
            Err(_) => {
                counters.failed_flushes.fetch_add(1, Relaxed);
                shared.note_trouble();
                sleep_unless_abandoned(shared, retry_wait);
                retry_wait = (retry_wait * 2).min(MAX_RETRY_WAIT);
            }
        }
    }
}

/// The decisions `entries` stand for.
fn decisions(entries: &[AuditEntry]) -> u64 {
    entries.iter().map(AuditEntry::decisions).sum()
}

impl Shared {
    /// Notes that a record was rejected or a batch failed just now.
    fn note_trouble(&self) {
        *self.troubled_at.lock() = Some(Instant::now());
    }
}

fn keep_recent(shared: &Shared, batch: &mut Vec<AuditEntry>) {
    if shared.recent_capacity == 0 {
        batch.clear();
        return;
    }
    let mut recent = shared.recent.lock();
    for entry in batch.drain(..) {
        if recent.len() == shared.recent_capacity {
            recent.pop_front();
        }
        recent.push_back(entry);
    }
}

/// Sleeps `wait` in short steps, waking early when the drain gives up.
fn sleep_unless_abandoned(shared: &Shared, wait: Duration) {
    let until = Instant::now() + wait;
    while !shared.abandon.load(Relaxed) {
        let left = until.saturating_duration_since(Instant::now());
        if left.is_zero() {
            return;
        }
        std::thread::sleep(left.min(IDLE_POLL));
    }
}

impl ChannelAuditSink {
    /// Queues `entries`, counting their decisions accepted or rejected.
    fn queue(&self, entries: impl Iterator<Item = AuditEntry>) {
        let counters = &self.shared.counters;
        let (mut sent, mut dropped) = (0, 0);
        let closing = self.shared.closing.load(Relaxed);
        for entry in entries {
            let decisions = entry.decisions();
            if closing {
                dropped += decisions;
                continue;
            }
            match self.tx.try_send(entry) {
                Ok(()) => sent += decisions,
                Err(TrySendError::Full(_) | TrySendError::Disconnected(_)) => dropped += decisions,
            }
        }
        if sent > 0 {
            counters.sent.fetch_add(sent, Relaxed);
        }
        if dropped > 0 {
            counters.dropped.fetch_add(dropped, Relaxed);
            self.shared.note_trouble();
        }
    }
}

impl AuditEmitter for ChannelAuditSink {
    fn emit(&self, record: AuditRecord) {
        self.queue(std::iter::once(AuditEntry::from(record)));
    }

    /// Queues one entry per question of the batch ([`summarize`]) and adds
    /// their decisions to the shared counters once for the batch.
    fn emit_batch(&self, _: DecisionBatch, records: &mut dyn Iterator<Item = AuditRecord>) {
        self.queue(summarize(records).into_iter());
    }

    fn health(&self) -> Option<AuditHealth> {
        Some(AuditLog::health_of(&self.shared))
    }
}

impl AuditLog {
    /// Records handed to the queue (accepted).
    pub fn sent(&self) -> u64 {
        self.shared.counters.sent.load(Relaxed)
    }

    /// Records refused because the queue was full (rejected).
    pub fn dropped(&self) -> u64 {
        self.shared.counters.dropped.load(Relaxed)
    }

    /// Records the writer has taken off the queue.
    pub fn received(&self) -> u64 {
        self.shared.counters.received.load(Relaxed)
    }

    /// Records the backend has written.
    pub fn flushed(&self) -> u64 {
        self.shared.counters.flushed.load(Relaxed)
    }

    /// Batches the backend failed to write.
    pub fn failed_flushes(&self) -> u64 {
        self.shared.counters.failed_flushes.load(Relaxed)
    }

    /// Records accepted but not written when the drain gave up.
    pub fn lost(&self) -> u64 {
        self.shared.counters.lost.load(Relaxed)
    }

    /// The latest entries written, oldest first.
    pub fn recent(&self) -> Vec<AuditEntry> {
        self.shared.recent.lock().iter().cloned().collect()
    }

    /// Keeps rows for `retention` (the writer deletes older ones).
    pub fn set_retention(&self, retention: Duration) {
        *self.shared.retention.lock() = retention;
        self.shared.retention_changed.store(true, Relaxed);
    }

    /// The figures `/healthz` shows.
    pub fn health(&self) -> AuditHealth {
        Self::health_of(&self.shared)
    }

    /// The figures as they will read at `now` (for tests of the recovery
    /// window).
    pub fn health_at(&self, now: Instant) -> AuditHealth {
        Self::health_at_of(&self.shared, now)
    }

    fn health_of(shared: &Shared) -> AuditHealth {
        Self::health_at_of(shared, Instant::now())
    }

    fn health_at_of(shared: &Shared, now: Instant) -> AuditHealth {
        let c = &shared.counters;
        // Read written before accepted, so the difference is never negative.
        let flushed = c.flushed.load(Relaxed);
        let lost = c.lost.load(Relaxed);
        let accepted = c.sent.load(Relaxed);
        let queue_size = accepted.saturating_sub(flushed + lost);
        // Degraded from the first rejection or failure until the queue has
        // drained and none has happened for the recovery window.
        let troubled = shared.troubled_at.lock().is_some_and(|at| {
            queue_size > 0 || now.saturating_duration_since(at) < RECOVERY_WINDOW
        });
        AuditHealth {
            backend: shared.backend,
            accepted,
            flushed,
            rejected: c.dropped.load(Relaxed),
            failed_flushes: c.failed_flushes.load(Relaxed),
            queue_size,
            troubled,
        }
    }

    /// Stops accepting records and waits up to `deadline` for the writer to
    /// write what is queued. What is still unwritten then is counted as
    /// lost; the writer is told to stop (a write in progress may still end
    /// after this returns, but nothing more is taken off the queue).
    pub fn drain(&self, deadline: Duration) -> AuditDrain {
        let shared = &self.shared;
        shared.closing.store(true, Relaxed);
        let until = Instant::now() + deadline;
        let mut stopped = shared.stopped.lock();
        while !*stopped {
            if shared
                .stopped_cv
                .wait_until(&mut stopped, until)
                .timed_out()
            {
                break;
            }
        }
        let completed = *stopped;
        drop(stopped);
        if !completed {
            shared.abandon.store(true, Relaxed);
        }
        let c = &shared.counters;
        let accepted = c.sent.load(Relaxed);
        let flushed = c.flushed.load(Relaxed);
        let lost = accepted.saturating_sub(flushed);
        c.lost.store(lost, Relaxed);
        AuditDrain {
            accepted,
            flushed,
            lost,
            rejected: c.dropped.load(Relaxed),
            completed,
        }
    }
}

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

    fn health(&self) -> Option<AuditHealth> {
        self.inner.health()
    }
}

#[cfg(test)]
mod database_tests;
#[cfg(test)]
mod tests;
