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
//!
//! The Hub's sink bounds the trail per principal where every entry enters
//! the queue (`admission`): past its rate or its share of the queue, a
//! principal's entries are folded into summary rows the writer stores once
//! per interval, so one principal's flood neither grows the table with its
//! requests nor leaves another's record without room.
//!
//! [`AuditLog`] reads the figures (`/healthz` shows them, and says
//! `degraded` while the writer is stalled: a batch in hand and none
//! finished for [`STALL_AFTER`], or a database call waiting past
//! `DB_CALL_TIMEOUT`) and drains the queue at shutdown.

pub(crate) mod admission;
mod backend;
mod entry;
pub(crate) mod recheck;
mod record;
pub mod retention;
mod traced;

use std::collections::VecDeque;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering::Relaxed};
use std::sync::mpsc::{sync_channel, Receiver, RecvTimeoutError, SyncSender, TrySendError};
use std::sync::Arc;
use std::time::{Duration, Instant};

use parking_lot::{Condvar, Mutex};
use perf_trace_core::record::DecisionBatch;
use serde::Serialize;

pub(crate) use admission::PendingSummary;
pub(crate) use admission::PrincipalLimits;
use admission::{Admission, Admit};
pub(crate) use backend::MemoryAuditBackend;
pub use backend::{AuditBackend, AuditWriteError, WRITER_BUSY_TIMEOUT};
pub use entry::{summarize, AuditEntry, Tally};
pub use record::{AuditOutcome, AuditRecord, Resource};
use retention::Pruning;
pub use traced::TracedAuditEmitter;

/// Most entries the writer persists in one batch.
pub(crate) const MAX_BATCH: usize = 4_096;
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
pub(crate) const RECOVERY_WINDOW: Duration = Duration::from_secs(60);
/// How long the writer may hold a batch without finishing it (written, or
/// given up at the drain's deadline) before `/healthz` says `degraded`.
pub const STALL_AFTER: Duration = Duration::from_secs(10);
/// How long one database call of the writer (a batch's write, a pruning
/// pass) may wait before `/healthz` says `degraded`: far past the lock
/// wait ([`WRITER_BUSY_TIMEOUT`]), so only a database that does not answer
/// (a frozen disk, a server gone silent) reaches it.
pub(crate) const DB_CALL_TIMEOUT: Duration = Duration::from_secs(5);

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

    /// Notes `decisions` a stream's re-check made and did not emit, their
    /// outcomes the same as the check before. Must not block.
    fn note_unchanged(&self, decisions: u64) {
        let _ = decisions;
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
    /// Decisions folded into summaries (their principal past its rate or
    /// its share of the queue).
    pub summarized: u64,
    /// Summary rows written.
    pub(crate) summary_rows: u64,
    /// Decisions folded into summaries not yet written.
    pub summaries_pending: u64,
    /// The largest summaries not yet written.
    pub pending_summaries: Vec<PendingSummary>,
    /// Decisions of streams' re-checks not written: the same outcomes as
    /// the check before.
    pub unchanged_rechecks: u64,
    /// Whether the writer is stalled: a batch in hand and none finished
    /// for [`STALL_AFTER`], or a database call waiting past
    /// `DB_CALL_TIMEOUT`.
    pub stalled: bool,
    /// Whether a record was rejected or a batch failed within the last
    /// [`RECOVERY_WINDOW`], or since then the queue has not drained.
    #[serde(skip)]
    pub(crate) troubled: bool,
}

impl AuditHealth {
    /// Whether a record was rejected or a batch failed lately (within
    /// `RECOVERY_WINDOW`, or the queue has not drained since), or the
    /// writer is stalled: `/healthz` then says `degraded` (still 200). The
    /// totals stay counted after.
    pub fn is_degraded(&self) -> bool {
        self.troubled || self.stalled
    }
}

/// What draining the queue at shutdown achieved: `accepted == flushed +
/// lost`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct AuditDrain {
    /// Records accepted over the Hub's life.
    pub accepted: u64,
    /// Records written.
    pub flushed: u64,
    /// Records accepted but not written by the deadline.
    pub lost: u64,
    /// Records refused over the Hub's life.
    pub rejected: u64,
    /// Decisions folded into summaries not written by the deadline (not
    /// part of `accepted`, which counts the queue's records).
    pub(crate) summaries_lost: u64,
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
    summarized: AtomicU64,
    summary_rows: AtomicU64,
    summary_flushed: AtomicU64,
    unchanged: AtomicU64,
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
    /// The per-principal bound; `None` for a plain queue.
    admission: Option<Mutex<Admission>>,
    /// What the two marks below count from.
    base: Instant,
    /// Since when the writer holds the batch it has not finished
    /// ([`Shared::mark`]'s encoding, 0 for none).
    batch_since: AtomicU64,
    /// Since when the writer's current database call waits (0 for none).
    db_call_since: AtomicU64,
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
    /// Starts a writer that keeps nothing (`MemoryAuditBackend`); the
    /// queue holds `capacity` records and the log keeps the latest
    /// `keep_recent`. The writer ends when every clone of the sink is
    /// dropped.
    pub fn start(capacity: usize, keep_recent: usize) -> (ChannelAuditSink, AuditLog) {
        Self::start_with(Box::new(MemoryAuditBackend), capacity, keep_recent)
    }

    /// Starts a writer that persists through `backend`, every entry queued
    /// while the queue has room.
    pub fn start_with(
        backend: Box<dyn AuditBackend>,
        capacity: usize,
        keep_recent: usize,
    ) -> (ChannelAuditSink, AuditLog) {
        Self::spawn(backend, capacity, keep_recent, None)
    }

    /// Starts a writer that persists through `backend`, each principal's
    /// entries bounded by `limits` and its share of the queue, the rest
    /// folded into summaries ([`admission`]).
    pub(crate) fn start_limited(
        backend: Box<dyn AuditBackend>,
        capacity: usize,
        keep_recent: usize,
        limits: PrincipalLimits,
    ) -> (ChannelAuditSink, AuditLog) {
        let admission = Admission::new(capacity, limits);
        Self::spawn(backend, capacity, keep_recent, Some(admission))
    }

    fn spawn(
        backend: Box<dyn AuditBackend>,
        capacity: usize,
        keep_recent: usize,
        admission: Option<Admission>,
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
            admission: admission.map(Mutex::new),
            base: Instant::now(),
            batch_since: AtomicU64::new(0),
            db_call_since: AtomicU64::new(0),
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
/// drain's deadline passes; once per [`admission::SUMMARY_INTERVAL`] (and
/// before it stops), writes the summaries folded since as a batch of their
/// own; between batches, deletes rows past the retention window a few at a
/// time.
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
    // Whether `batch` holds summaries rather than queued entries.
    let mut summaries = false;
    let mut retry_wait = FIRST_RETRY_WAIT;
    let mut pruning = Pruning::default();
    let mut next_summaries = Instant::now() + admission::SUMMARY_INTERVAL;
    loop {
        if shared.abandon.load(Relaxed) {
            return;
        }
        if batch.is_empty() {
            if shared.retention_changed.swap(false, Relaxed) {
                pruning = Pruning::due_now();
            }
            let retention = *shared.retention.lock();
            shared.in_db_call(|| pruning.run_if_due(&mut *backend, retention));
            let closing = shared.closing.load(Relaxed);
            if closing || Instant::now() >= next_summaries {
                next_summaries = Instant::now() + admission::SUMMARY_INTERVAL;
                batch = shared.take_summaries();
                summaries = !batch.is_empty();
            }
        }
        if batch.is_empty() {
            match rx.recv_timeout(IDLE_POLL) {
                Ok(entry) => batch.push(entry),
                Err(RecvTimeoutError::Timeout) if shared.closing.load(Relaxed) => {
                    if !shared.has_summaries() {
                        return;
                    }
                    continue;
                }
                Err(RecvTimeoutError::Timeout) => continue,
                // Every sink is gone: nothing more can be folded either.
                Err(RecvTimeoutError::Disconnected) => {
                    if !shared.has_summaries() {
                        return;
                    }
                    next_summaries = Instant::now();
                    continue;
                }
            }
            while batch.len() < MAX_BATCH {
                match rx.try_recv() {
                    Ok(entry) => batch.push(entry),
                    Err(_) => break,
                }
            }
            if let Some(admission) = &shared.admission {
                admission.lock().taken(&batch);
            }
            counters.received.fetch_add(decisions(&batch), Relaxed);
        }
        if shared.batch_since.load(Relaxed) == 0 {
            shared.mark(&shared.batch_since);
        }
        match shared.in_db_call(|| backend.write_batch(&batch)) {
            Ok(()) => {
                if summaries {
                    counters.summary_rows.fetch_add(batch.len() as u64, Relaxed);
                    counters
                        .summary_flushed
                        .fetch_add(decisions(&batch), Relaxed);
                    summaries = false;
                } else {
                    counters.flushed.fetch_add(decisions(&batch), Relaxed);
                }
                shared.batch_since.store(0, Relaxed);
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

    /// Marks `cell` with the time now: milliseconds since `base`, plus one
    /// so that 0 stays "not marked".
    fn mark(&self, cell: &AtomicU64) {
        cell.store(self.base.elapsed().as_millis() as u64 + 1, Relaxed);
    }

    /// How long before `now` `cell` was marked; zero when it is not.
    fn waited(&self, cell: &AtomicU64, now: Instant) -> Duration {
        match cell.load(Relaxed) {
            0 => Duration::ZERO,
            mark => now.saturating_duration_since(self.base + Duration::from_millis(mark - 1)),
        }
    }

    /// Runs `call` (a database call of the writer) with its start marked,
    /// so a call that never returns shows in the health.
    fn in_db_call<T>(&self, call: impl FnOnce() -> T) -> T {
        self.mark(&self.db_call_since);
        let done = call();
        self.db_call_since.store(0, Relaxed);
        done
    }

    /// Whether the writer is stalled at `now`.
    fn stalled_at(&self, now: Instant) -> bool {
        self.waited(&self.batch_since, now) > STALL_AFTER
            || self.waited(&self.db_call_since, now) > DB_CALL_TIMEOUT
    }

    /// The summaries folded since the last call, for the writer.
    fn take_summaries(&self) -> Vec<AuditEntry> {
        self.admission
            .as_ref()
            .map_or_else(Vec::new, |a| a.lock().take_summaries())
    }

    /// Whether summaries wait to be written.
    fn has_summaries(&self) -> bool {
        self.admission
            .as_ref()
            .is_some_and(|a| a.lock().has_summaries())
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
    /// Queues `entries`, counting their decisions accepted, summarized or
    /// rejected.
    fn queue(&self, entries: impl Iterator<Item = AuditEntry>) {
        let counters = &self.shared.counters;
        let (mut sent, mut dropped, mut folded) = (0, 0, 0);
        let closing = self.shared.closing.load(Relaxed);
        // One lock and one clock read for the whole call.
        let mut admission = self
            .shared
            .admission
            .as_ref()
            .map(|a| (a.lock(), Instant::now()));
        for entry in entries {
            let decisions = entry.decisions();
            if closing {
                dropped += decisions;
                continue;
            }
            let Some((admission, now)) = admission.as_mut() else {
                match self.tx.try_send(entry) {
                    Ok(()) => sent += decisions,
                    Err(TrySendError::Full(_) | TrySendError::Disconnected(_)) => {
                        dropped += decisions
                    }
                }
                continue;
            };
            let refused = match admission.admit(&entry, *now) {
                Admit::Queue => match self.tx.try_send(entry) {
                    Ok(()) => {
                        sent += decisions;
                        continue;
                    }
                    Err(TrySendError::Full(entry) | TrySendError::Disconnected(entry)) => {
                        admission.unqueue(&entry.principal);
                        entry
                    }
                },
                Admit::Fold => entry,
            };
            if admission.fold(refused) {
                folded += decisions;
            } else {
                dropped += decisions;
            }
        }
        drop(admission);
        if sent > 0 {
            counters.sent.fetch_add(sent, Relaxed);
        }
        if folded > 0 {
            counters.summarized.fetch_add(folded, Relaxed);
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

    fn note_unchanged(&self, decisions: u64) {
        self.shared.counters.unchanged.fetch_add(decisions, Relaxed);
    }

    fn health(&self) -> Option<AuditHealth> {
        Some(AuditLog::health_of(&self.shared))
    }
}

/// The log's counters as read by its owner, one getter per counter.
macro_rules! counter_getters {
    ($($(#[$doc:meta])* $getter:ident => $counter:ident,)+) => {
        impl AuditLog {
            $(
                $(#[$doc])*
                pub fn $getter(&self) -> u64 {
                    self.shared.counters.$counter.load(Relaxed)
                }
            )+
        }
    };
}

counter_getters! {
    /// Records handed to the queue (accepted).
    sent => sent,
    /// Records refused because the queue was full (rejected).
    dropped => dropped,
    /// Records the writer has taken off the queue.
    received => received,
    /// Records the backend has written.
    flushed => flushed,
    /// Batches the backend failed to write.
    failed_flushes => failed_flushes,
    /// Records accepted but not written when the drain gave up.
    lost => lost,
    /// Decisions written through summary rows.
    summaries_flushed => summary_flushed,
    /// Decisions of streams' re-checks not written (unchanged outcomes).
    unchanged_rechecks => unchanged,
}

impl AuditLog {
    /// The latest entries written, oldest first.
    #[cfg(test)]
    pub(crate) fn recent(&self) -> Vec<AuditEntry> {
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
    #[cfg(test)]
    pub(crate) fn health_at(&self, now: Instant) -> AuditHealth {
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
        let (summaries_pending, pending_summaries) = shared
            .admission
            .as_ref()
            .map_or_else(Default::default, |a| a.lock().pending());
        AuditHealth {
            backend: shared.backend,
            accepted,
            flushed,
            rejected: c.dropped.load(Relaxed),
            failed_flushes: c.failed_flushes.load(Relaxed),
            queue_size,
            summarized: c.summarized.load(Relaxed),
            summary_rows: c.summary_rows.load(Relaxed),
            summaries_pending,
            pending_summaries,
            unchanged_rechecks: c.unchanged.load(Relaxed),
            stalled: shared.stalled_at(now),
            troubled,
        }
    }

    /// Stops accepting records and waits up to `deadline` for the writer to
    /// write what is queued. What is still unwritten then is counted as
    /// lost; the writer is told to stop (a write in progress may still end
    /// after this returns, but nothing more is taken off the queue).
    pub(crate) fn drain(&self, deadline: Duration) -> AuditDrain {
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
        let summaries_lost = shared
            .admission
            .as_ref()
            .map_or(0, |a| a.lock().pending_decisions());
        AuditDrain {
            accepted,
            flushed,
            lost,
            rejected: c.dropped.load(Relaxed),
            summaries_lost,
            completed,
        }
    }
}

#[cfg(test)]
mod database_tests;
#[cfg(test)]
mod tests;
