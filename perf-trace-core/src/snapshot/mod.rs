//! A plain value of what one request recorded: the host-independent counts
//! that unit tests assert on, and the durations.

use std::time::Duration;

use crate::keys::{
    CounterKey, Groups, KeySet, KeySetInfo, PairedCounterKey, PhaseKey, StoreMethodKey, TimerKey,
};
pub use crate::record::pool::DbFigures;

#[cfg(feature = "insta")]
mod counts;
#[cfg(feature = "insta")]
pub use counts::{CountsView, DecisionCounts, StoreCallCounts};
/// insta, for the expansion of
/// [`assert_counts_snapshot!`](crate::assert_counts_snapshot): a crate that
/// uses the macro needs no dependency on insta of its own.
#[cfg(feature = "insta")]
#[doc(hidden)]
pub use insta as __insta;

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

/// One counter of a counter set.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CounterStat {
    /// The key of the `by` set, for a paired counter set.
    pub by: Option<&'static str>,
    /// The key's rendered name.
    pub name: &'static str,
    /// The count (the largest value given, for a max key).
    pub value: u64,
}

impl CounterStat {
    /// The name as rendered after the set's prefix: `<by>_<name>` or `<name>`.
    pub fn rendered_name(&self) -> String {
        self.rendered_bytes().map(char::from).collect()
    }

    pub(crate) fn rendered_bytes(&self) -> impl Iterator<Item = u8> + '_ {
        let by = self.by.unwrap_or("").bytes();
        let sep = self.by.map(|_| b'_').into_iter();
        by.chain(sep).chain(self.name.bytes())
    }
}

/// The non-zero counters of one counter set, sorted by rendered name.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Counters {
    /// The set.
    pub set: &'static KeySetInfo,
    /// Its counters with a value above zero.
    pub values: Vec<CounterStat>,
}

/// The timers of one timer set that ran at least once, sorted by name.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Timers {
    /// The set.
    pub set: &'static KeySetInfo,
    /// Its keys entered at least once.
    pub stats: Vec<KeyStat>,
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
    /// The response's status, once the layer has seen the response
    /// (rendered as `status` by the plain profile).
    pub status: Option<u16>,
    /// The schema's counter sets, in the schema's order.
    pub counters: Vec<Counters>,
    /// The schema's timer sets, in the schema's order.
    pub timers: Vec<Timers>,
    /// The optional groups the schema has: the line and headers leave the others out.
    pub groups: Groups,
}

impl Default for Snapshot {
    /// An empty snapshot of the `other` endpoint with no optional group.
    fn default() -> Self {
        Snapshot {
            endpoint: "other",
            elapsed: Duration::ZERO,
            phases: Vec::new(),
            store_calls: Vec::new(),
            authz_store_calls: 0,
            authz_store_time: Duration::ZERO,
            decisions: Decisions::default(),
            sse_events: 0,
            db: None,
            sse_stage: None,
            method: "",
            request_id: String::new(),
            status: None,
            counters: Vec::new(),
            timers: Vec::new(),
            groups: Groups::NONE,
        }
    }
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

    /// The count of counter `key` (zero when never counted).
    pub fn counter<K: CounterKey>(&self, key: K) -> u64 {
        self.counter_value(K::INFO, None, key.name())
    }

    /// The count of counter `key` per `by` key (zero when never counted).
    pub fn counter_by<K: PairedCounterKey>(&self, by: K::By, key: K) -> u64 {
        self.counter_value(K::INFO, Some(by.name()), key.name())
    }

    fn counter_value(&self, set: &'static KeySetInfo, by: Option<&str>, name: &str) -> u64 {
        self.counters
            .iter()
            .filter(|c| std::ptr::eq(c.set, set))
            .flat_map(|c| &c.values)
            .find(|v| v.by == by && v.name == name)
            .map_or(0, |v| v.value)
    }

    /// The figures of timer `key` (zero when never entered).
    pub fn timer<K: TimerKey>(&self, key: K) -> KeyStat {
        let stats = self
            .timers
            .iter()
            .find(|t| std::ptr::eq(t.set, K::INFO))
            .map_or(&[][..], |t| &t.stats[..]);
        find(stats, key)
    }

    /// Sets the stage (used for streaming lines).
    pub fn with_stage(mut self, stage: Option<SseStage>) -> Self {
        self.sse_stage = stage;
        self
    }
}
