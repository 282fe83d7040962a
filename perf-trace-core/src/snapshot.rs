//! A plain value of what one request recorded: the host-independent counts
//! that unit tests assert on, and the durations.

use std::time::Duration;

use crate::key::{KeySet, PhaseKey, StoreMethodKey};
use crate::pool::DbFigures;

/// Count and total duration of one phase or store method.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct KeyStat {
    /// The key's rendered name.
    pub name: &'static str,
    /// How many times it was entered or called.
    pub count: u64,
    /// Total time spent in it.
    pub duration: Duration,
}

/// Authorization decisions and the time spent emitting their audit records.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Decisions {
    /// Audit records emitted (one per decision by default).
    pub records: u64,
    /// Decisions that allowed.
    pub allow: u64,
    /// Decisions that denied.
    pub deny: u64,
    /// Any other outcome.
    pub other: u64,
    /// Time spent in the audit emitter.
    pub emit_time: Duration,
}

/// The stage a streaming (SSE) line describes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SseStage {
    /// The stream was accepted and its headers flushed.
    Connect,
    /// The stream ended (or was refused).
    Close,
}

impl SseStage {
    /// The rendered value (`connect` / `close`).
    pub fn as_str(self) -> &'static str {
        match self {
            SseStage::Connect => "connect",
            SseStage::Close => "close",
        }
    }
}

/// Everything one request recorded.
///
/// Store calls, decisions and phase counts are host-independent: for a fixed
/// data set, caller, endpoint and code version they repeat exactly, which is
/// what makes them usable as test budgets.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Snapshot {
    /// The endpoint class's rendered name.
    pub endpoint: &'static str,
    /// Time since the recorder was made.
    pub elapsed: Duration,
    /// Phases entered at least once, sorted by name.
    pub phases: Vec<KeyStat>,
    /// Store methods called at least once, sorted by name.
    pub store_calls: Vec<KeyStat>,
    /// Store calls over all methods.
    pub authz_store_calls: u64,
    /// Store time over all methods.
    pub authz_store_time: Duration,
    /// Decisions and audit emission.
    pub decisions: Decisions,
    /// Stream events written.
    pub sse_events: u64,
    /// Pool figures, when the store exposes a pool.
    pub db: Option<DbFigures>,
    /// The stage, on lines of streaming requests.
    pub sse_stage: Option<SseStage>,
    /// The request method (`GET`, ...), empty when unknown.
    pub method: &'static str,
    /// The request id, empty when none.
    pub request_id: String,
}

fn find<K: KeySet>(stats: &[KeyStat], key: K) -> KeyStat {
    let name = key.name();
    stats
        .iter()
        .find(|s| s.name == name)
        .copied()
        .unwrap_or(KeyStat {
            name,
            count: 0,
            duration: Duration::ZERO,
        })
}

impl Snapshot {
    /// The figures of one phase (zero when never entered).
    pub fn phase<P: PhaseKey>(&self, phase: P) -> KeyStat {
        find(&self.phases, phase)
    }

    /// The figures of one store method (zero when never called).
    pub fn store<M: StoreMethodKey>(&self, method: M) -> KeyStat {
        find(&self.store_calls, method)
    }

    /// Sets the stage (used for streaming lines).
    pub fn with_stage(mut self, stage: Option<SseStage>) -> Self {
        self.sse_stage = stage;
        self
    }
}
