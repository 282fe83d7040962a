//! Audit records: every authorization decision emits exactly one, through an
//! [`AuditEmitter`]. The Hub's emitter, [`ChannelAuditSink`], hands records
//! to a bounded queue with `try_send`, so emitting never waits: when the
//! queue is full the record is rejected and counted. A background writer
//! takes records off the queue in batches and persists each batch through an
//! [`AuditBackend`] (the Hub's writes into its database's `audit_events`
//! table: [`SqliteAuditBackend`](super::audit_sqlite::SqliteAuditBackend) or
//! [`PostgresAuditBackend`](super::audit_postgres::PostgresAuditBackend), one
//! transaction per batch); a batch that fails is counted and retried, so
//! nothing is lost while the queue has room. [`AuditLog`] reads the figures
//! (`/healthz` shows them) and drains the queue at shutdown.

use std::collections::VecDeque;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering::Relaxed};
use std::sync::mpsc::{sync_channel, Receiver, RecvTimeoutError, SyncSender, TrySendError};
use std::sync::Arc;
use std::time::{Duration, Instant, SystemTime};

use parking_lot::{Condvar, Mutex};
use perf_trace_core::{record::DecisionBatch, record::Outcome};
use serde::Serialize;

use super::Action;
use crate::model::{Id, PrincipalRef};

/// Most records the writer persists in one batch.
pub const MAX_BATCH: usize = 4_096;
/// How long the writer waits for a record before it looks at the shutdown
/// flags again.
const IDLE_POLL: Duration = Duration::from_millis(20);
/// The first wait before a failed batch is retried; it doubles up to
/// [`MAX_RETRY_WAIT`].
const FIRST_RETRY_WAIT: Duration = Duration::from_millis(20);
/// The longest wait between two attempts at a failed batch.
const MAX_RETRY_WAIT: Duration = Duration::from_millis(500);
/// How long a database backend's batch waits on a lock another connection
/// holds before the attempt counts as failed (and is retried).
pub const WRITER_BUSY_TIMEOUT: Duration = Duration::from_millis(250);

/// What a decision concluded.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum AuditOutcome {
    /// Allowed.
    Allow,
    /// Denied.
    Deny,
    /// No conclusion: the inputs could not be read.
    Error,
}

impl From<AuditOutcome> for Outcome {
    fn from(outcome: AuditOutcome) -> Outcome {
        match outcome {
            AuditOutcome::Allow => Outcome::Allow,
            AuditOutcome::Deny => Outcome::Deny,
            AuditOutcome::Error => Outcome::Other,
        }
    }
}

/// What a decision was about.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Resource {
    /// The Hub as a whole.
    Hub,
    /// A project.
    Project(Id),
    /// An agent.
    Agent(Id),
    /// A group.
    Group(Id),
    /// Another user's event subject.
    User(Id),
}

/// One authorization decision.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AuditRecord {
    /// When it was decided.
    pub at: SystemTime,
    /// Who asked.
    pub principal: PrincipalRef,
    /// What for.
    pub action: Action,
    /// On what.
    pub resource: Resource,
    /// The conclusion.
    pub outcome: AuditOutcome,
}

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

/// Persists batches of records: the writer's side of the queue.
pub trait AuditBackend: Send + 'static {
    /// The backend's name as `/healthz` shows it (`sqlite`, `postgres`,
    /// `memory`).
    fn name(&self) -> &'static str;

    /// Writes `batch` entirely or not at all; an error leaves the batch to
    /// be retried.
    fn write_batch(&mut self, batch: &[AuditRecord]) -> Result<(), AuditWriteError>;
}

/// A batch the backend could not write.
#[derive(Debug, thiserror::Error)]
#[error("audit batch not written: {0}")]
pub struct AuditWriteError(pub String);

/// A backend that keeps nothing (the records stay visible only through
/// [`AuditLog::recent`]): for tests and in-process measurements.
#[derive(Debug, Default, Clone, Copy)]
pub struct MemoryAuditBackend;

impl AuditBackend for MemoryAuditBackend {
    fn name(&self) -> &'static str {
        "memory"
    }

    fn write_batch(&mut self, _batch: &[AuditRecord]) -> Result<(), AuditWriteError> {
        Ok(())
    }
}

/// The audit pipeline's figures, as `/healthz` shows them under `audit`.
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
}

impl AuditHealth {
    /// Whether anything was rejected or failed: `/healthz` then says
    /// `degraded` (still 200).
    pub fn is_degraded(&self) -> bool {
        self.rejected > 0 || self.failed_flushes > 0
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

/// The state the writer and the sink share: counters, the latest records
/// and the shutdown flags.
#[derive(Debug)]
struct Shared {
    counters: Counters,
    recent: Mutex<VecDeque<AuditRecord>>,
    recent_capacity: usize,
    backend: &'static str,
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
    tx: SyncSender<AuditRecord>,
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
        let (tx, rx) = sync_channel::<AuditRecord>(capacity);
        let shared = Arc::new(Shared {
            counters: Counters::default(),
            recent: Mutex::new(VecDeque::with_capacity(keep_recent)),
            recent_capacity: keep_recent,
            backend: backend.name(),
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

/// The writer: takes up to [`MAX_BATCH`] records at a time and writes them,
/// retrying a failed batch (with a growing wait) until it is written or the
/// drain's deadline passes.
// Never inlined: profiles name the writer's loop (the instruction counter
// of hub-bench leaves it out by this name).
#[inline(never)]
fn write_until_stopped(
    shared: &Shared,
    rx: &Receiver<AuditRecord>,
    mut backend: Box<dyn AuditBackend>,
) {
    let counters = &shared.counters;
    let mut batch: Vec<AuditRecord> = Vec::with_capacity(MAX_BATCH);
    let mut retry_wait = FIRST_RETRY_WAIT;
    loop {
        if shared.abandon.load(Relaxed) {
            return;
        }
        if batch.is_empty() {
            match rx.recv_timeout(IDLE_POLL) {
                Ok(record) => batch.push(record),
                Err(RecvTimeoutError::Timeout) if shared.closing.load(Relaxed) => return,
                Err(RecvTimeoutError::Timeout) => continue,
                Err(RecvTimeoutError::Disconnected) => return,
            }
            while batch.len() < MAX_BATCH {
                match rx.try_recv() {
                    Ok(record) => batch.push(record),
                    Err(_) => break,
                }
            }
            counters.received.fetch_add(batch.len() as u64, Relaxed);
        }
        match backend.write_batch(&batch) {
            Ok(()) => {
                counters.flushed.fetch_add(batch.len() as u64, Relaxed);
                keep_recent(shared, &mut batch);
                retry_wait = FIRST_RETRY_WAIT;
            }
            Err(_) => {
                counters.failed_flushes.fetch_add(1, Relaxed);
                sleep_unless_abandoned(shared, retry_wait);
                retry_wait = (retry_wait * 2).min(MAX_RETRY_WAIT);
            }
        }
    }
}

fn keep_recent(shared: &Shared, batch: &mut Vec<AuditRecord>) {
    if shared.recent_capacity == 0 {
        batch.clear();
        return;
    }
    let mut recent = shared.recent.lock();
    for record in batch.drain(..) {
        if recent.len() == shared.recent_capacity {
            recent.pop_front();
        }
        recent.push_back(record);
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

impl AuditEmitter for ChannelAuditSink {
    fn emit(&self, record: AuditRecord) {
        if self.shared.closing.load(Relaxed) {
            self.shared.counters.dropped.fetch_add(1, Relaxed);
            return;
        }
        match self.tx.try_send(record) {
            Ok(()) => self.shared.counters.sent.fetch_add(1, Relaxed),
            Err(TrySendError::Full(_) | TrySendError::Disconnected(_)) => {
                self.shared.counters.dropped.fetch_add(1, Relaxed)
            }
        };
    }

    /// Queues the records one by one, as [`emit`](Self::emit) does, and
    /// adds them to the shared counters once for the batch.
    fn emit_batch(&self, _: DecisionBatch, records: &mut dyn Iterator<Item = AuditRecord>) {
        let counters = &self.shared.counters;
        if self.shared.closing.load(Relaxed) {
            counters.dropped.fetch_add(records.count() as u64, Relaxed);
            return;
        }
        let (mut sent, mut dropped) = (0, 0);
        for record in records {
            match self.tx.try_send(record) {
                Ok(()) => sent += 1,
                Err(TrySendError::Full(_) | TrySendError::Disconnected(_)) => dropped += 1,
            }
        }
        if sent > 0 {
            counters.sent.fetch_add(sent, Relaxed);
        }
        if dropped > 0 {
            counters.dropped.fetch_add(dropped, Relaxed);
        }
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

    /// The latest records written, oldest first.
    pub fn recent(&self) -> Vec<AuditRecord> {
        self.shared.recent.lock().iter().cloned().collect()
    }

    /// The figures `/healthz` shows.
    pub fn health(&self) -> AuditHealth {
        Self::health_of(&self.shared)
    }

    fn health_of(shared: &Shared) -> AuditHealth {
        let c = &shared.counters;
        // Read written before accepted, so the difference is never negative.
        let flushed = c.flushed.load(Relaxed);
        let lost = c.lost.load(Relaxed);
        let accepted = c.sent.load(Relaxed);
        AuditHealth {
            backend: shared.backend,
            accepted,
            flushed,
            rejected: c.dropped.load(Relaxed),
            failed_flushes: c.failed_flushes.load(Relaxed),
            queue_size: accepted.saturating_sub(flushed + lost),
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
mod tests {
    use super::*;
    use std::sync::mpsc::{channel, Sender};

    fn record(outcome: AuditOutcome) -> AuditRecord {
        AuditRecord {
            at: SystemTime::UNIX_EPOCH,
            principal: PrincipalRef::user("u"),
            action: Action::AgentRead,
            resource: Resource::Hub,
            outcome,
        }
    }

    /// Signals each write it starts, then waits for a go-ahead per batch.
    struct GatedBackend {
        entered: Sender<usize>,
        gate: Gate,
    }

    impl AuditBackend for GatedBackend {
        fn name(&self) -> &'static str {
            "gated"
        }
        fn write_batch(&mut self, batch: &[AuditRecord]) -> Result<(), AuditWriteError> {
            let _ = self.entered.send(batch.len());
            let (open, cv) = &*self.gate;
            let mut open = open.lock();
            while !*open {
                cv.wait(&mut open);
            }
            Ok(())
        }
    }

    /// A gate a test opens to let the writer go on.
    type Gate = Arc<(Mutex<bool>, Condvar)>;

    /// A gated backend, the channel on which it reports each write it
    /// starts, and its gate.
    fn gated() -> (
        Box<dyn AuditBackend>,
        std::sync::mpsc::Receiver<usize>,
        Gate,
    ) {
        let (entered, started) = channel();
        let gate = Arc::new((Mutex::new(false), Condvar::new()));
        let backend = GatedBackend {
            entered,
            gate: gate.clone(),
        };
        (Box::new(backend), started, gate)
    }

    fn open(gate: &(Mutex<bool>, Condvar)) {
        *gate.0.lock() = true;
        gate.1.notify_all();
    }

    /// Fails its first `failures` writes, then keeps what it is given.
    struct FlakyBackend {
        failures: usize,
        written: Arc<Mutex<Vec<AuditRecord>>>,
    }

    impl AuditBackend for FlakyBackend {
        fn name(&self) -> &'static str {
            "flaky"
        }
        fn write_batch(&mut self, batch: &[AuditRecord]) -> Result<(), AuditWriteError> {
            if self.failures > 0 {
                self.failures -= 1;
                return Err(AuditWriteError("database is locked".into()));
            }
            self.written.lock().extend_from_slice(batch);
            Ok(())
        }
    }

    fn wait_for(what: impl Fn() -> bool) {
        let until = Instant::now() + Duration::from_secs(10);
        while !what() && Instant::now() < until {
            std::thread::sleep(Duration::from_millis(2));
        }
    }

    #[test]
    fn a_stalled_writer_fills_the_queue_and_emitting_never_waits() {
        let (backend, started, gate) = gated();
        let (sink, log) = ChannelAuditSink::start_with(backend, 4, 0);
        sink.emit(record(AuditOutcome::Allow));
        assert_eq!(
            started.recv().unwrap(),
            1,
            "the writer took the first record"
        );
        // The writer is stuck in its write: 4 fit in the queue, 6 are refused.
        for _ in 0..10 {
            sink.emit(record(AuditOutcome::Allow));
        }
        let health = log.health();
        assert_eq!(
            (
                health.accepted,
                health.rejected,
                health.flushed,
                health.queue_size
            ),
            (5, 6, 0, 5)
        );
        assert!(health.is_degraded());
        open(&gate);
        let drain = log.drain(Duration::from_secs(10));
        assert_eq!(
            drain,
            AuditDrain {
                accepted: 5,
                flushed: 5,
                lost: 0,
                rejected: 6,
                completed: true
            }
        );
        assert_eq!(log.health().queue_size, 0);
    }

    #[test]
    fn a_failed_batch_is_counted_and_retried_until_written() {
        let written = Arc::new(Mutex::new(Vec::new()));
        let backend = FlakyBackend {
            failures: 3,
            written: written.clone(),
        };
        let (sink, log) = ChannelAuditSink::start_with(Box::new(backend), 64, 0);
        let outcomes = [AuditOutcome::Allow, AuditOutcome::Deny, AuditOutcome::Error];
        for i in 0..30 {
            sink.emit(record(outcomes[i % 3]));
        }
        wait_for(|| log.flushed() == 30);
        let health = log.health();
        assert_eq!(health.failed_flushes, 3);
        assert_eq!(
            (health.accepted, health.flushed, health.rejected),
            (30, 30, 0)
        );
        assert!(health.is_degraded(), "a failed flush degrades the health");
        let written = written.lock();
        let got: Vec<AuditOutcome> = written.iter().map(|r| r.outcome).collect();
        let want: Vec<AuditOutcome> = (0..30).map(|i| outcomes[i % 3]).collect();
        assert_eq!(got, want, "every record written once, in order");
    }

    #[test]
    fn a_drain_past_its_deadline_counts_what_was_not_written() {
        let (backend, started, gate) = gated();
        let (sink, log) = ChannelAuditSink::start_with(backend, 8, 0);
        sink.emit(record(AuditOutcome::Allow));
        started.recv().unwrap();
        for _ in 0..3 {
            sink.emit(record(AuditOutcome::Deny));
        }
        let drain = log.drain(Duration::from_millis(30));
        assert!(!drain.completed);
        assert_eq!((drain.accepted, drain.flushed, drain.lost), (4, 0, 4));
        assert_eq!(drain.accepted, drain.flushed + drain.lost);
        assert_eq!(log.lost(), 4);
        // After the drain started, nothing more is accepted.
        sink.emit(record(AuditOutcome::Allow));
        assert_eq!((log.sent(), log.dropped()), (4, 1));
        open(&gate);
    }

    #[test]
    fn records_reach_the_background_thread() {
        let (sink, log) = ChannelAuditSink::start(16, 4);
        for _ in 0..6 {
            sink.emit(record(AuditOutcome::Deny));
        }
        drop(sink);
        wait_for(|| log.received() == 6 && log.flushed() == 6);
        assert_eq!(log.received(), 6);
        assert_eq!(log.recent().len(), 4);
        assert_eq!(log.health().backend, "memory");
    }
}
