//! The audit queue and writer: rejections, retries, the drain, recovery.

use std::sync::mpsc::{channel, Sender};
use std::time::SystemTime;

use super::*;
use crate::authz::Action;
use crate::model::PrincipalRef;

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
    fn write_batch(&mut self, batch: &[AuditEntry]) -> Result<(), AuditWriteError> {
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

/// A sink of `capacity` over a gated backend whose writer has taken the
/// first record (an `Allow`) and is held in its write; the sink, its log and
/// the gate.
fn held_in_first_write(capacity: usize) -> (ChannelAuditSink, AuditLog, Gate) {
    let (backend, started, gate) = gated();
    let (sink, log) = ChannelAuditSink::start_with(backend, capacity, 0);
    sink.emit(record(AuditOutcome::Allow));
    assert_eq!(
        started.recv().unwrap(),
        1,
        "the writer took the first record"
    );
    (sink, log, gate)
}

/// The health's record totals: accepted, flushed, rejected, queued.
pub(super) fn totals(health: &AuditHealth) -> (u64, u64, u64, u64) {
    (
        health.accepted,
        health.flushed,
        health.rejected,
        health.queue_size,
    )
}

fn open(gate: &(Mutex<bool>, Condvar)) {
    *gate.0.lock() = true;
    gate.1.notify_all();
}

/// Fails its first `failures` writes, then keeps what it is given.
struct FlakyBackend {
    failures: usize,
    written: Arc<Mutex<Vec<AuditEntry>>>,
}

impl AuditBackend for FlakyBackend {
    fn name(&self) -> &'static str {
        "flaky"
    }
    fn write_batch(&mut self, batch: &[AuditEntry]) -> Result<(), AuditWriteError> {
        if self.failures > 0 {
            self.failures -= 1;
            return Err(AuditWriteError("database is locked".into()));
        }
        self.written.lock().extend_from_slice(batch);
        Ok(())
    }
}

/// Waits until `what` holds, or at most 20 s (the test's assertion then
/// fails).
pub(super) fn wait_for(what: impl Fn() -> bool) {
    let until = Instant::now() + Duration::from_secs(20);
    while !what() && Instant::now() < until {
        std::thread::sleep(Duration::from_millis(2));
    }
}

#[test]
fn a_stalled_writer_fills_the_queue_and_emitting_never_waits() {
    let (sink, log, gate) = held_in_first_write(4);
    // The writer is stuck in its write: 4 fit in the queue, 6 are refused.
    for _ in 0..10 {
        sink.emit(record(AuditOutcome::Allow));
    }
    let health = log.health();
    assert_eq!(totals(&health), (5, 0, 6, 5));
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
            summaries_lost: 0,
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
    let got: Vec<AuditOutcome> = written.iter().map(|r| r.tally.outcome()).collect();
    let want: Vec<AuditOutcome> = (0..30).map(|i| outcomes[i % 3]).collect();
    assert_eq!(got, want, "every record written once, in order");
}

#[test]
fn a_drain_past_its_deadline_counts_what_was_not_written() {
    let (sink, log, gate) = held_in_first_write(8);
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

#[test]
fn health_recovers_once_the_queue_drained_and_nothing_was_lost_for_the_window() {
    let (sink, log, gate) = held_in_first_write(1);
    for _ in 0..3 {
        sink.emit(record(AuditOutcome::Allow));
    }
    let later = Instant::now() + RECOVERY_WINDOW * 2;
    assert!(log.health().is_degraded(), "a rejection degrades");
    assert!(
        log.health_at(later).is_degraded(),
        "still degraded while the queue holds records"
    );
    open(&gate);
    wait_for(|| log.flushed() == log.sent());
    let now = log.health();
    assert!(now.is_degraded(), "within the window after the rejection");
    let recovered = log.health_at(Instant::now() + RECOVERY_WINDOW);
    assert!(!recovered.is_degraded(), "{recovered:?}");
    assert_eq!(
        (recovered.accepted, recovered.flushed, recovered.rejected),
        (2, 2, 2),
        "the totals are kept"
    );
}

#[test]
fn a_batch_is_queued_as_one_entry_per_question_and_counted_in_decisions() {
    let (sink, log) = ChannelAuditSink::start(16, 16);
    let agents = ["a", "b", "c", "d"];
    let mut records = agents.iter().flat_map(|id| {
        [Action::AgentRead, Action::AgentDelete].map(|action| AuditRecord {
            resource: Resource::Agent((*id).into()),
            action,
            outcome: if action == Action::AgentRead {
                AuditOutcome::Allow
            } else {
                AuditOutcome::Deny
            },
            ..record(AuditOutcome::Allow)
        })
    });
    let outcomes = DecisionBatch {
        allow: 4,
        deny: 4,
        ..DecisionBatch::default()
    };
    sink.emit_batch(outcomes, &mut records);
    drop(sink);
    wait_for(|| log.flushed() == 8);
    assert_eq!((log.sent(), log.flushed()), (8, 8), "counted in decisions");
    let entries = log.recent();
    assert_eq!(entries.len(), 2, "one entry per question");
    assert_eq!(entries[1].denied_ids.len(), 4);
}

/// Keeps what it writes; waits at its gate, when it has one, in every
/// write.
struct KeepingBackend {
    written: Arc<Mutex<Vec<AuditEntry>>>,
    gate: Gate,
}

impl AuditBackend for KeepingBackend {
    fn name(&self) -> &'static str {
        "keeping"
    }
    fn write_batch(&mut self, batch: &[AuditEntry]) -> Result<(), AuditWriteError> {
        let (open, cv) = &*self.gate;
        let mut open = open.lock();
        while !*open {
            cv.wait(&mut open);
        }
        self.written.lock().extend_from_slice(batch);
        Ok(())
    }
}

/// A denial by the user `principal`.
fn denial_by(principal: &str) -> AuditRecord {
    AuditRecord {
        principal: PrincipalRef::user(principal),
        at: SystemTime::now(),
        ..record(AuditOutcome::Deny)
    }
}

#[test]
fn a_principal_past_its_rate_is_summarized_and_another_s_record_still_finds_room() {
    let written = Arc::new(Mutex::new(Vec::new()));
    let gate: Gate = Arc::new((Mutex::new(false), Condvar::new()));
    let backend = KeepingBackend {
        written: written.clone(),
        gate: gate.clone(),
    };
    let limits = PrincipalLimits { record_rate: 2 };
    let capacity = 1_000;
    let (sink, log) = ChannelAuditSink::start_limited(Box::new(backend), capacity, 0, limits);
    // The writer is held in its first write: the flood meets a queue that
    // does not drain.
    for _ in 0..5_000 {
        sink.emit(denial_by("flooder"));
    }
    sink.emit(denial_by("other"));
    let health = log.health();
    let burst = u64::from(2 * admission::BURST_SECONDS);
    assert_eq!(health.rejected, 0, "nothing rejected: {health:?}");
    assert!(health.accepted <= burst + 2, "{health:?}");
    assert_eq!(health.accepted + health.summarized, 5_001);
    assert!(!health.is_degraded(), "a flood summarized is no trouble");
    let shown = &health.pending_summaries[0];
    assert_eq!(
        (shown.principal_id.as_str(), shown.action, shown.outcome),
        ("flooder", "agent.read", "deny")
    );
    assert_eq!(shown.count, health.summarized);
    assert_eq!(health.summaries_pending, health.summarized);

    open(&gate);
    let drain = log.drain(Duration::from_secs(10));
    assert!(drain.completed && drain.lost == 0 && drain.rejected == 0);
    let written = written.lock();
    let (summaries, rows): (Vec<&AuditEntry>, Vec<&AuditEntry>) =
        written.iter().partition(|e| e.is_summary());
    assert_eq!(summaries.len(), 1, "one summary for the flood");
    assert!(rows.len() as u64 <= burst + 2);
    assert!(
        rows.iter().any(|e| &*e.principal.id == "other"),
        "the other principal's record is its own row"
    );
    let stored: u64 = written.iter().map(AuditEntry::decisions).sum();
    assert_eq!(
        stored, 5_001,
        "every decision stored, in a row or a summary"
    );
    assert_eq!(log.summaries_flushed(), summaries[0].decisions());
    assert_eq!(log.health().summary_rows, 1);
    assert_eq!(log.health().summaries_pending, 0);
}

#[test]
fn a_flood_within_its_rate_still_leaves_room_for_others() {
    let (backend, started, gate) = gated();
    let limits = PrincipalLimits {
        record_rate: 1_000_000,
    };
    let (sink, log) = ChannelAuditSink::start_limited(backend, 64, 0, limits);
    sink.emit(denial_by("flooder"));
    started.recv().unwrap();
    for _ in 0..1_000 {
        sink.emit(denial_by("flooder"));
    }
    for other in 0..8 {
        sink.emit(denial_by(&format!("other-{other}")));
    }
    let health = log.health();
    assert_eq!(health.rejected, 0, "{health:?}");
    assert!(health.queue_size <= 64, "{health:?}");
    assert!(
        health.summarized > 900,
        "the flood past its share: {health:?}"
    );
    open(&gate);
    let drain = log.drain(Duration::from_secs(10));
    assert_eq!((drain.lost, drain.rejected), (0, 0));
    assert_eq!(log.summaries_flushed(), health.summarized);
}

#[test]
fn a_writer_held_in_its_write_is_stalled_until_it_finishes() {
    let (sink, log, gate) = held_in_first_write(8);
    let start = Instant::now();
    let health = log.health_at(start);
    assert!(!health.stalled && !health.is_degraded(), "{health:?}");
    let waited = log.health_at(start + DB_CALL_TIMEOUT + Duration::from_secs(1));
    assert!(waited.stalled, "a database call past its timeout");
    assert!(waited.is_degraded());
    open(&gate);
    wait_for(|| log.flushed() == log.sent());
    sink.emit(record(AuditOutcome::Allow));
    wait_for(|| log.flushed() == log.sent());
    let later = log.health_at(Instant::now() + STALL_AFTER * 2);
    assert!(!later.stalled && !later.is_degraded(), "{later:?}");
}

#[test]
fn a_batch_retried_past_the_stall_time_is_a_stall() {
    let backend = FlakyBackend {
        failures: usize::MAX,
        written: Arc::default(),
    };
    let (sink, log) = ChannelAuditSink::start_with(Box::new(backend), 8, 0);
    sink.emit(record(AuditOutcome::Allow));
    wait_for(|| log.failed_flushes() >= 1);
    let now = Instant::now();
    assert!(!log.health_at(now).stalled, "failing, not yet stalled");
    assert!(
        log.health_at(now + STALL_AFTER + Duration::from_secs(1))
            .stalled
    );
    let drain = log.drain(Duration::from_millis(30));
    assert_eq!(drain.lost, 1);
}

#[test]
fn a_drain_past_its_deadline_counts_the_summaries_not_written() {
    let (backend, started, gate) = gated();
    let limits = PrincipalLimits { record_rate: 1 };
    let (sink, log) = ChannelAuditSink::start_limited(backend, 64, 0, limits);
    sink.emit(denial_by("flooder"));
    started.recv().unwrap();
    for _ in 0..100 {
        sink.emit(denial_by("flooder"));
    }
    let summarized = log.health().summarized;
    assert!(summarized > 0);
    let drain = log.drain(Duration::from_millis(30));
    assert!(!drain.completed);
    assert_eq!(drain.summaries_lost, summarized);
    assert_eq!(drain.accepted, drain.flushed + drain.lost);
    open(&gate);
}
