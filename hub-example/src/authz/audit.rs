//! Audit records: every authorization decision emits exactly one, through an
//! [`AuditEmitter`]. The Hub's emitter hands records to a bounded channel
//! drained by a background thread, so emitting never blocks a request: when
//! the channel is full the record is dropped and counted.

use std::collections::VecDeque;
use std::sync::atomic::{AtomicU64, Ordering::Relaxed};
use std::sync::mpsc::{sync_channel, SyncSender, TrySendError};
use std::sync::Arc;
use std::time::SystemTime;

use parking_lot::Mutex;

use super::Action;
use crate::model::{Id, PrincipalRef};

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
}

/// Figures of the audit pipeline.
#[derive(Debug, Default)]
struct Counters {
    sent: AtomicU64,
    dropped: AtomicU64,
    received: AtomicU64,
}

/// The state the background thread keeps: counters and the latest records.
#[derive(Debug)]
struct Shared {
    counters: Counters,
    recent: Mutex<VecDeque<AuditRecord>>,
    recent_capacity: usize,
}

/// The Hub's audit emitter: a bounded channel drained by a background thread.
#[derive(Debug, Clone)]
pub struct ChannelAuditSink {
    tx: SyncSender<AuditRecord>,
    shared: Arc<Shared>,
}

/// A read-only view of the audit pipeline (for operators and tests).
#[derive(Debug, Clone)]
pub struct AuditLog {
    shared: Arc<Shared>,
}

impl ChannelAuditSink {
    /// Starts the background thread; the channel holds `capacity` records and
    /// the log keeps the latest `keep_recent`. The thread ends when every
    /// clone of the sink is dropped.
    pub fn start(capacity: usize, keep_recent: usize) -> (ChannelAuditSink, AuditLog) {
        let (tx, rx) = sync_channel::<AuditRecord>(capacity);
        let shared = Arc::new(Shared {
            counters: Counters::default(),
            recent: Mutex::new(VecDeque::with_capacity(keep_recent)),
            recent_capacity: keep_recent,
        });
        let drain = shared.clone();
        std::thread::Builder::new()
            .name("audit-drain".into())
            .spawn(move || {
                for record in rx {
                    drain.counters.received.fetch_add(1, Relaxed);
                    if drain.recent_capacity > 0 {
                        let mut recent = drain.recent.lock();
                        if recent.len() == drain.recent_capacity {
                            recent.pop_front();
                        }
                        recent.push_back(record);
                    }
                }
            })
            .expect("spawn the audit thread");
        (
            ChannelAuditSink {
                tx,
                shared: shared.clone(),
            },
            AuditLog { shared },
        )
    }
}

impl AuditEmitter for ChannelAuditSink {
    fn emit(&self, record: AuditRecord) {
        match self.tx.try_send(record) {
            Ok(()) => self.shared.counters.sent.fetch_add(1, Relaxed),
            Err(TrySendError::Full(_) | TrySendError::Disconnected(_)) => {
                self.shared.counters.dropped.fetch_add(1, Relaxed)
            }
        };
    }
}

impl AuditLog {
    /// Records handed to the channel.
    pub fn sent(&self) -> u64 {
        self.shared.counters.sent.load(Relaxed)
    }

    /// Records dropped because the channel was full.
    pub fn dropped(&self) -> u64 {
        self.shared.counters.dropped.load(Relaxed)
    }

    /// Records the background thread has taken in.
    pub fn received(&self) -> u64 {
        self.shared.counters.received.load(Relaxed)
    }

    /// The latest records, oldest first.
    pub fn recent(&self) -> Vec<AuditRecord> {
        self.shared.recent.lock().iter().cloned().collect()
    }
}

/// Installed only when tracing is on: records each decision's outcome and the
/// time its emission took into the current request's recorder.
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
        let outcome = match record.outcome {
            AuditOutcome::Allow => perf_trace_core::Outcome::Allow,
            AuditOutcome::Deny => perf_trace_core::Outcome::Deny,
            AuditOutcome::Error => perf_trace_core::Outcome::Other,
        };
        perf_trace_core::time_decision(outcome, || self.inner.emit(record));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn record(outcome: AuditOutcome) -> AuditRecord {
        AuditRecord {
            at: SystemTime::UNIX_EPOCH,
            principal: PrincipalRef::user("u"),
            action: Action::AgentRead,
            resource: Resource::Hub,
            outcome,
        }
    }

    #[test]
    fn a_full_channel_drops_and_counts_instead_of_blocking() {
        let (tx, _rx) = sync_channel(1);
        let sink = ChannelAuditSink {
            tx,
            shared: Arc::new(Shared {
                counters: Counters::default(),
                recent: Mutex::new(VecDeque::new()),
                recent_capacity: 0,
            }),
        };
        for _ in 0..3 {
            sink.emit(record(AuditOutcome::Allow));
        }
        let log = AuditLog {
            shared: sink.shared.clone(),
        };
        assert_eq!((log.sent(), log.dropped()), (1, 2));
    }

    #[test]
    fn records_reach_the_background_thread() {
        let (sink, log) = ChannelAuditSink::start(16, 4);
        for _ in 0..6 {
            sink.emit(record(AuditOutcome::Deny));
        }
        drop(sink);
        for _ in 0..200 {
            if log.received() == 6 {
                break;
            }
            std::thread::sleep(std::time::Duration::from_millis(5));
        }
        assert_eq!(log.received(), 6);
        assert_eq!(log.recent().len(), 4);
    }
}
