//! The request-local recorder: fixed tables indexed by key, filled with
//! relaxed atomic adds, so recording never allocates and never contends with
//! anything but the same request's other threads. Phases, store calls and
//! decisions reach these tables once per scope, summed in thread-local
//! memory in between (the crate's private `pending` module).

use std::any::TypeId;
use std::cell::RefCell;
use std::fmt;
use std::sync::atomic::{AtomicBool, AtomicU16, AtomicU64, Ordering::Relaxed};
use std::sync::Arc;
use std::time::Duration;

use crate::clock;
use crate::keys::{EndpointKey, KeySetInfo, Schema, SchemaInfo, MAX_SETS};
use crate::line::needs_escape;
use crate::pool::{DbFigures, PoolFigures, PoolStats};
use crate::snapshot::{CounterStat, Counters, Decisions, KeyStat, Snapshot, SseStage, Timers};

mod extra_sets;
mod finished_line;
mod line_keys;

use extra_sets::ExtraSets;
use line_keys::LineKeys;

/// Count and summed raw ticks of one key.
#[derive(Default)]
pub(crate) struct Stat {
    count: AtomicU64,
    ticks: AtomicU64,
}

impl Stat {
    #[inline(always)]
    pub(crate) fn add(&self, ticks: u64) {
        self.add_n(1, ticks);
    }

    /// Adds `count` events that took `ticks` in all.
    #[inline(always)]
    pub(crate) fn add_n(&self, count: u64, ticks: u64) {
        self.count.fetch_add(count, Relaxed);
        self.ticks.fetch_add(ticks, Relaxed);
    }

    fn read(&self) -> (u64, u64) {
        (self.count.load(Relaxed), self.ticks.load(Relaxed))
    }
}

/// Which table of the recorder a timed key goes to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Table {
    Phases,
    Stores,
}

/// The outcome of an authorization decision.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Outcome {
    /// The decision allowed the action.
    Allow,
    /// The decision denied the action.
    Deny,
    /// Anything else (an error, an abstention).
    Other,
}

pub(crate) struct Inner {
    pub(crate) schema: SchemaInfo,
    /// The schema's type: a recorder is reused for its own schema only.
    schema_id: TypeId,
    /// The schema's field keys, for the line.
    line_keys: &'static LineKeys,
    /// Every timed key of the schema, one table after the other: the
    /// phases, the store methods from `stores_at`, the timer sets from
    /// `timers_at`. Sized to the schema, so a recorder is one small
    /// allocation (the allocator's fast path) rather than tables of
    /// [`MAX_KEYS`](crate::keys::MAX_KEYS) entries whatever the schema.
    stats: Box<[Stat]>,
    /// The keys of the phase and store tables added to at least once, a
    /// bit per key (a set has at most [`MAX_KEYS`](crate::keys::MAX_KEYS)
    /// = 64): the line and the next request's reset visit only those.
    touched: [AtomicU64; 2],
    stores_at: usize,
    timers_at: usize,
    /// The schema's counter sets, one after the other.
    counters: Box<[AtomicU64]>,
    /// The counters added to at least once, a bit per slot: the line and
    /// the next request's reset visit only those.
    counters_touched: Box<[AtomicU64]>,
    counter_offsets: [u32; MAX_SETS],
    /// Where each timer set starts, from `timers_at`.
    timer_offsets: [u32; MAX_SETS],
    /// Counter and timer sets the schema does not list.
    extra: ExtraSets,
    decisions: [AtomicU64; 3],
    decision_ticks: AtomicU64,
    sse_events: AtomicU64,
    endpoint: AtomicU16,
    /// The response's status, 0 until the layer sees the response.
    status: AtomicU16,
    discarded: AtomicBool,
    stream: AtomicBool,
    start_ticks: u64,
    method: &'static str,
    /// Whether `method` needs no escaping in the line: checked once as it
    /// is set (the layer's methods, a fixed list, need none).
    method_plain: bool,
    request_id: String,
    /// Whether `request_id` needs no escaping in the line, checked once as
    /// it is set (the layer's ids need none).
    request_id_plain: bool,
    pool: Option<(Arc<dyn PoolStats>, PoolFigures)>,
}

impl Inner {
    /// Adds `count` events taking `ticks` in all to key `index` of `table`.
    #[inline]
    pub(crate) fn add_stat(&self, table: Table, index: usize, count: u64, ticks: u64) {
        self.table(table)[index].add_n(count, ticks);
        self.mark_touched(table, 1 << index);
    }

    /// Marks the keys of `mask` as added to: one atomic operation at most,
    /// none when they already are.
    #[inline]
    pub(crate) fn mark_touched(&self, table: Table, mask: u64) {
        let touched = &self.touched[table as usize];
        if touched.load(Relaxed) & mask != mask {
            touched.fetch_or(mask, Relaxed);
        }
    }

    /// Each counter of the set at `offset` with `slots` slots added to at
    /// least once: its slot in the set.
    #[inline]
    fn each_touched_counter(&self, offset: usize, slots: usize, mut each: impl FnMut(usize)) {
        let end = offset + slots;
        let mut at = offset;
        while at < end {
            let (w, first) = (at / 64, at % 64);
            let mut touched = self.counters_touched[w].load(Relaxed) >> first;
            let span = (64 - first).min(end - at);
            if span < 64 {
                touched &= (1 << span) - 1;
            }
            while touched != 0 {
                each(at - offset + touched.trailing_zeros() as usize);
                touched &= touched - 1;
            }
            at += span;
        }
    }

    /// The keys of `table` added to at least once, a bit per key.
    #[inline]
    fn touched(&self, table: Table) -> u64 {
        self.touched[table as usize].load(Relaxed)
    }

    #[inline(always)]
    pub(crate) fn table(&self, table: Table) -> &[Stat] {
        match table {
            Table::Phases => &self.stats[..self.stores_at],
            Table::Stores => &self.stats[self.stores_at..self.timers_at],
        }
    }

    fn timers(&self) -> &[Stat] {
        &self.stats[self.timers_at..]
    }

    #[inline(always)]
    pub(crate) fn set_id(&self, table: Table) -> TypeId {
        match table {
            Table::Phases => self.schema.phases.type_id,
            Table::Stores => self.schema.stores.type_id,
        }
    }

    /// Adds decisions by outcome (allow, deny, other) whose emissions took
    /// `ticks` in all.
    #[inline]
    pub(crate) fn add_decisions(&self, by_outcome: [u64; 3], ticks: u64) {
        for (shared, n) in self.decisions.iter().zip(by_outcome) {
            if n > 0 {
                shared.fetch_add(n, Relaxed);
            }
        }
        if ticks > 0 {
            self.decision_ticks.fetch_add(ticks, Relaxed);
        }
    }

    /// Store calls and their ticks over all methods.
    fn store_total(&self) -> (u64, u64) {
        let stores = self.table(Table::Stores);
        let mut touched = self.touched(Table::Stores);
        let (mut calls, mut ticks) = (0, 0);
        while touched != 0 {
            let (count, t) = stores[touched.trailing_zeros() as usize].read();
            touched &= touched - 1;
            calls += count;
            ticks += t;
        }
        (calls, ticks)
    }

    /// The decisions by outcome and the time their audit records took.
    fn decisions(&self) -> Decisions {
        let [allow, deny, other] = [0, 1, 2].map(|i| self.decisions[i].load(Relaxed));
        Decisions {
            records: allow + deny + other,
            allow,
            deny,
            other,
            emit_time: clock::ticks_to_duration(self.decision_ticks.load(Relaxed)),
        }
    }

    /// Where counter set `info` starts in the counter table, when the schema has it.
    #[inline(always)]
    pub(crate) fn counter_offset(&self, info: &'static KeySetInfo) -> Option<usize> {
        // A schema has a handful of sets at most: a short scan of pointers.
        let sets = self.schema.counters;
        let mut i = 0;
        while i < sets.len() {
            if std::ptr::eq(sets[i].0, info) {
                return Some(self.counter_offsets[i] as usize);
            }
            i += 1;
        }
        None
    }

    /// Adds `n` to counter `slot`, or keeps the larger of the two for a max key.
    #[inline(always)]
    pub(crate) fn add_count(&self, slot: usize, n: u64, max: bool) {
        if let Some(counter) = self.counters.get(slot) {
            if max {
                counter.fetch_max(n, Relaxed);
            } else {
                counter.fetch_add(n, Relaxed);
            }
            let (word, bit) = (&self.counters_touched[slot / 64], 1 << (slot % 64));
            if word.load(Relaxed) & bit == 0 {
                word.fetch_or(bit, Relaxed);
            }
        }
    }

    /// Where timer set `info` starts in the timer table, when the schema has it.
    #[inline(always)]
    pub(crate) fn timer_offset(&self, info: &'static KeySetInfo) -> Option<usize> {
        let sets = self.schema.timers;
        let mut i = 0;
        while i < sets.len() {
            if std::ptr::eq(sets[i].0, info) {
                return Some(self.timer_offsets[i] as usize);
            }
            i += 1;
        }
        None
    }

    /// Adds one timed event to timer `slot`.
    #[inline(always)]
    pub(crate) fn add_timer(&self, slot: usize, ticks: u64) {
        if let Some(stat) = self.timers().get(slot) {
            stat.add(ticks);
        }
    }

    /// Adds to `slot` of a counter or timer set the schema does not list
    /// (a slower path, but nothing recorded is lost).
    pub(crate) fn add_unlisted(&self, set: &'static KeySetInfo, slot: usize, n: u64, ticks: u64) {
        self.extra.add(set, slot, n, ticks);
    }

    pub(crate) fn add_sse_events(&self, n: u64) {
        self.sse_events.fetch_add(n, Relaxed);
    }

    /// Sets the endpoint class when `E` is this recorder's endpoint set.
    pub(crate) fn set_endpoint<E: EndpointKey>(&self, endpoint: E) {
        if TypeId::of::<E>() == self.schema.endpoints.type_id {
            self.endpoint.store(endpoint.index() as u16, Relaxed);
        }
    }

    /// Records the response's status.
    pub(crate) fn set_status(&self, status: u16) {
        self.status.store(status, Relaxed);
    }

    /// The response's status, when the layer has seen it.
    pub(crate) fn status(&self) -> Option<u16> {
        Some(self.status.load(Relaxed)).filter(|&s| s != 0)
    }

    pub(crate) fn discard(&self) {
        self.discarded.store(true, Relaxed);
    }

    pub(crate) fn mark_stream(&self) {
        self.stream.store(true, Relaxed);
    }
}

/// One request's recorder. Cloning is cheap (a reference count).
///
/// A recorder is made for a [`Schema`]; phases, store methods and endpoint
/// classes of other schemas recorded while it is current are ignored.
/// Counter and timer sets the schema does not list are recorded all the
/// same and reach the line after the listed ones.
///
/// ```
/// use perf_trace_core::{KeySet, Recorder, Schema};
///
/// #[derive(KeySet, Clone, Copy, PartialEq, Eq, Debug)]
/// #[key_set(phases)]
/// enum Phase { Load, Render }
///
/// #[derive(KeySet, Clone, Copy, PartialEq, Eq, Debug)]
/// #[key_set(store_methods)]
/// enum Method { GetUser }
///
/// #[derive(KeySet, Clone, Copy, PartialEq, Eq, Debug)]
/// #[key_set(endpoints)]
/// enum Endpoint { #[key(default)] Other }
///
/// struct App;
/// impl Schema for App {
///     type Phase = Phase;
///     type StoreMethod = Method;
///     type Endpoint = Endpoint;
/// }
///
/// #[perf_trace_core::traced_phase(Phase::Load)]
/// fn load() -> u32 { 7 }
///
/// let recorder = Recorder::new::<App>();
/// recorder.in_scope(|| { load(); load(); });
/// let snapshot = recorder.snapshot();
/// assert_eq!(snapshot.phase(Phase::Load).count, 2);
/// assert_eq!(snapshot.phase(Phase::Render).count, 0);
/// ```
#[derive(Clone)]
pub struct Recorder(pub(crate) Arc<Inner>);

// A panic while recording leaves at worst one event uncounted: the tables are
// independent counters, so observing them after a panic is sound.
impl std::panic::UnwindSafe for Recorder {}
impl std::panic::RefUnwindSafe for Recorder {}

impl fmt::Debug for Recorder {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Recorder")
            .field("request_id", &self.0.request_id)
            .field("method", &self.0.method)
            .finish_non_exhaustive()
    }
}

/// Builds a [`Recorder`] with request metadata.
#[derive(Default)]
pub struct RecorderBuilder {
    method: &'static str,
    request_id: String,
    pool: Option<Arc<dyn PoolStats>>,
    pool_start: Option<PoolFigures>,
}

impl fmt::Debug for RecorderBuilder {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("RecorderBuilder")
            .field("method", &self.method)
            .field("request_id", &self.request_id)
            .field("pool", &self.pool.is_some())
            .finish()
    }
}

impl RecorderBuilder {
    /// The request method as it is rendered (`GET`, `PUT`, ...).
    pub fn method(mut self, method: &'static str) -> Self {
        self.method = method;
        self
    }

    /// The request's random id (rendered as `request_id` when not empty).
    pub fn request_id(mut self, request_id: impl Into<String>) -> Self {
        self.request_id = request_id.into();
        self
    }

    /// A pool whose figures are read now and when the snapshot is taken.
    pub fn pool(mut self, pool: Arc<dyn PoolStats>) -> Self {
        self.pool = Some(pool);
        self
    }

    /// Counts the pool's waits from `start`, figures read earlier in the
    /// request (see [`PoolBaseline`](crate::pool::PoolBaseline)), instead of
    /// from when the recorder is built.
    pub fn pool_since(mut self, start: PoolFigures) -> Self {
        self.pool_start = Some(start);
        self
    }

    /// The pool and the figures its waits count from: the baseline given,
    /// or the pool's figures now.
    fn pool_with_start(&mut self) -> Option<(Arc<dyn PoolStats>, PoolFigures)> {
        let start = self.pool_start;
        self.pool.take().map(|p| {
            let start = start.unwrap_or_else(|| p.pool_figures());
            (p, start)
        })
    }

    /// Makes the recorder for schema `S`; its clock starts now.
    pub fn build<S: Schema>(mut self) -> Recorder {
        let schema = SchemaInfo::of::<S>();
        let pool = self.pool_with_start();
        let (counter_offsets, counter_slots) = layout(schema.counters.iter().map(|s| s.0));
        let (timer_offsets, timer_slots) = layout(schema.timers.iter().map(|s| s.0));
        let stores_at = schema.phases.names.len();
        let timers_at = stores_at + schema.stores.names.len();
        Recorder(Arc::new(Inner {
            schema,
            schema_id: TypeId::of::<S>(),
            line_keys: LineKeys::of::<S>(),
            stats: (0..timers_at + timer_slots)
                .map(|_| Stat::default())
                .collect(),
            touched: Default::default(),
            stores_at,
            timers_at,
            counters: (0..counter_slots).map(|_| AtomicU64::new(0)).collect(),
            counters_touched: (0..counter_slots.div_ceil(64))
                .map(|_| AtomicU64::new(0))
                .collect(),
            counter_offsets,
            timer_offsets,
            extra: ExtraSets::default(),
            decisions: Default::default(),
            decision_ticks: AtomicU64::new(0),
            sse_events: AtomicU64::new(0),
            endpoint: AtomicU16::new(schema.default_endpoint),
            status: AtomicU16::new(0),
            discarded: AtomicBool::new(false),
            stream: AtomicBool::new(false),
            start_ticks: clock::now(),
            method: self.method,
            method_plain: !needs_escape(self.method),
            request_id_plain: !needs_escape(&self.request_id),
            request_id: self.request_id,
            pool,
        }))
    }
}

impl Recorder {
    /// A recorder for schema `S` with no request metadata.
    pub fn new<S: Schema>() -> Recorder {
        Recorder::builder().build::<S>()
    }

    /// A builder for a recorder with a method, request id and pool.
    pub fn builder() -> RecorderBuilder {
        RecorderBuilder::default()
    }

    /// A request's recorder, reusing one this thread kept (see [`recycle`])
    /// when it has one of this schema: its tables are zeroed in place
    /// instead of allocated, and it keeps its request id's buffer and, when
    /// the pool is the same, its reference to the pool.
    pub(crate) fn for_request<S: Schema>(start: RequestStart<'_>) -> Recorder {
        let schema = SchemaInfo::of::<S>();
        let Some(mut reused) = take_spare(TypeId::of::<S>()) else {
            return Recorder::first_for_request::<S>(start);
        };
        let inner = Arc::get_mut(&mut reused).expect("a recycled recorder is unique");
        // Only the keys the last request touched are reset, and the timers.
        let (stores_at, timers_at) = (inner.stores_at, inner.timers_at);
        for (table, at) in [(Table::Phases, 0), (Table::Stores, stores_at)] {
            let mut touched = std::mem::take(inner.touched[table as usize].get_mut());
            while touched != 0 {
                let stat = &mut inner.stats[at + touched.trailing_zeros() as usize];
                touched &= touched - 1;
                *stat.count.get_mut() = 0;
                *stat.ticks.get_mut() = 0;
            }
        }
        for stat in inner.stats[timers_at..].iter_mut() {
            *stat.count.get_mut() = 0;
            *stat.ticks.get_mut() = 0;
        }
        for (w, word) in inner.counters_touched.iter_mut().enumerate() {
            let mut touched = std::mem::take(word.get_mut());
            while touched != 0 {
                *inner.counters[w * 64 + touched.trailing_zeros() as usize].get_mut() = 0;
                touched &= touched - 1;
            }
        }
        inner.extra.clear();
        inner.decisions = Default::default();
        *inner.decision_ticks.get_mut() = 0;
        *inner.sse_events.get_mut() = 0;
        *inner.endpoint.get_mut() = schema.default_endpoint;
        *inner.status.get_mut() = 0;
        *inner.discarded.get_mut() = false;
        *inner.stream.get_mut() = false;
        inner.method = start.method;
        // The layer's methods are `method_name`'s, none of which needs escaping.
        debug_assert!(!needs_escape(start.method));
        inner.method_plain = true;
        inner.request_id.clear();
        inner.request_id.push_str(start.request_id);
        // The layer's id is a UUID: hex digits and hyphens.
        debug_assert!(!needs_escape(start.request_id));
        inner.request_id_plain = true;
        let kept = inner.pool.take();
        inner.pool = start.pool.map(|(pool, since)| {
            let pool = match kept {
                Some((kept, _)) if Arc::ptr_eq(&kept, pool) => kept,
                _ => Arc::clone(pool),
            };
            let figures = since.unwrap_or_else(|| pool.pool_figures());
            (pool, figures)
        });
        // Last, as in `build`: the clock starts when the recorder is ready.
        inner.start_ticks = clock::now();
        Recorder(reused)
    }

    /// A request's recorder built afresh, on a thread with none to reuse.
    /// Out of line: a thread builds a few, then reuses them, and inlined
    /// into every request's path the builder's code was fetched with it.
    #[cold]
    #[inline(never)]
    fn first_for_request<S: Schema>(start: RequestStart<'_>) -> Recorder {
        let mut builder = Recorder::builder()
            .method(start.method)
            .request_id(start.request_id);
        if let Some((pool, since)) = start.pool {
            builder = builder.pool(Arc::clone(pool));
            if let Some(since) = since {
                builder = builder.pool_since(since);
            }
        }
        builder.build::<S>()
    }

    /// The request id given at creation.
    pub fn request_id(&self) -> &str {
        &self.0.request_id
    }

    /// Sets the endpoint class (the default class until set).
    pub(crate) fn set_endpoint<E: EndpointKey>(&self, endpoint: E) {
        self.0.set_endpoint(endpoint);
    }

    /// Whether [`discard_line`](crate::record::discard_line) was called in its scope.
    pub(crate) fn is_discarded(&self) -> bool {
        self.0.discarded.load(Relaxed)
    }

    /// Whether the request was marked as a stream (see [`crate::record::mark_stream`]).
    pub(crate) fn is_stream(&self) -> bool {
        self.0.stream.load(Relaxed)
    }

    /// Takes a snapshot of everything recorded so far, with the elapsed time
    /// measured up to now and pool gauges read now.
    pub fn snapshot(&self) -> Snapshot {
        self.snapshot_at(self.end_now())
    }

    /// Ends the request now as far as its line is concerned: what this
    /// thread has pending for it is added, and the clock and the pool's
    /// figures are read. The line's snapshot can then be taken later, on
    /// another thread ([`snapshot_at`](Self::snapshot_at)).
    pub(crate) fn end_now(&self) -> RequestEnd {
        self.end_at(clock::now())
    }

    /// Where the request ended, at `ticks` (a reading of the request clock
    /// just taken), and the pool's figures now.
    pub(crate) fn end_at(&self, ticks: u64) -> RequestEnd {
        let inner = &*self.0;
        // What this thread recorded in the scope it is in now counts too.
        if std::ptr::eq(crate::scope::current_ptr(), inner) {
            crate::pending::flush(inner);
        }
        RequestEnd {
            ticks,
            pool: inner.pool.as_ref().map(|(pool, _)| pool.pool_figures()),
        }
    }

    /// A snapshot of everything recorded, with the elapsed time and pool
    /// figures of `end`.
    pub(crate) fn snapshot_at(&self, end: RequestEnd) -> Snapshot {
        let mut snapshot = Snapshot::default();
        self.snapshot_into(end, &mut snapshot);
        snapshot
    }

    /// [`snapshot_at`](Self::snapshot_at) into `out`, whose lists are
    /// cleared and refilled: a thread that renders many lines keeps one
    /// snapshot and allocates nothing once its lists have grown.
    pub(crate) fn snapshot_into(&self, end: RequestEnd, out: &mut Snapshot) {
        let inner = &*self.0;
        let stores = inner.table(Table::Stores);
        collect_into(
            &mut out.phases,
            inner.table(Table::Phases),
            inner.touched(Table::Phases),
            inner.schema.phases.names,
            inner.schema.phases.sorted,
        );
        collect_into(
            &mut out.store_calls,
            stores,
            inner.touched(Table::Stores),
            inner.schema.stores.names,
            inner.schema.stores.sorted,
        );
        let (authz_store_calls, store_ticks) = inner.store_total();
        let sets = inner.schema.counters.iter().zip(inner.counter_offsets);
        out.counters.truncate(inner.schema.counters.len());
        for (i, (set, offset)) in sets.enumerate() {
            let table = &inner.counters[offset as usize..];
            match out.counters.get_mut(i) {
                Some(counters) if std::ptr::eq(counters.set, set.0) => {
                    collect_counters_into(&mut counters.values, set.0, table)
                }
                _ => {
                    out.counters.truncate(i);
                    let mut values = Vec::new();
                    collect_counters_into(&mut values, set.0, table);
                    out.counters.push(Counters { set: set.0, values });
                }
            }
        }
        let sets = inner.schema.timers.iter().zip(inner.timer_offsets);
        out.timers.truncate(inner.schema.timers.len());
        for (i, (set, offset)) in sets.enumerate() {
            let table = &inner.timers()[offset as usize..];
            match out.timers.get_mut(i) {
                Some(timers) if std::ptr::eq(timers.set, set.0) => {
                    collect_into(&mut timers.stats, table, ALL, set.0.names, set.0.sorted)
                }
                _ => {
                    out.timers.truncate(i);
                    let mut stats = Vec::new();
                    collect_into(&mut stats, table, ALL, set.0.names, set.0.sorted);
                    out.timers.push(Timers { set: set.0, stats });
                }
            }
        }
        if !inner.extra.is_empty() {
            let (counters, timers) = inner.extra.collect();
            out.counters.extend(counters);
            out.timers.extend(timers);
        }
        out.endpoint = inner.schema.endpoints.names[inner.endpoint.load(Relaxed) as usize];
        out.elapsed = clock::ticks_to_duration(clock::span(inner.start_ticks, end.ticks));
        out.authz_store_calls = authz_store_calls;
        out.authz_store_time = clock::ticks_to_duration(store_ticks);
        out.decisions = inner.decisions();
        out.sse_events = inner.sse_events.load(Relaxed);
        out.db = inner
            .pool
            .as_ref()
            .zip(end.pool)
            .map(|((_, start), end)| DbFigures::between(*start, end));
        out.sse_stage = inner.stream.load(Relaxed).then_some(SseStage::Close);
        out.method = inner.method;
        out.request_id.clear();
        out.request_id.push_str(&inner.request_id);
        out.status = inner.status();
        out.groups = inner.schema.groups;
    }
}

/// Every key, for a table whose touched keys are not tracked (timers).
const ALL: u64 = u64::MAX;

/// Each key of `table` entered at least once, in name order; only the keys
/// in `touched` (a bit per key) are read.
#[inline]
fn each_stat(
    table: &[Stat],
    touched: u64,
    names: &'static [&'static str],
    sorted: &[u16],
    mut each: impl FnMut(&'static str, u64, Duration),
) {
    if touched == 0 {
        return;
    }
    for &i in sorted {
        if touched & 1 << i == 0 {
            continue;
        }
        let (count, ticks) = table[i as usize].read();
        if count > 0 {
            each(names[i as usize], count, clock::ticks_to_duration(ticks));
        }
    }
}

/// What a layer knows of a request as it starts, borrowed, for
/// [`Recorder::for_request`].
pub(crate) struct RequestStart<'a> {
    pub(crate) method: &'static str,
    pub(crate) request_id: &'a str,
    /// The pool, and the figures its waits count from when read earlier
    /// (else now).
    pub(crate) pool: Option<(&'a Arc<dyn PoolStats>, Option<PoolFigures>)>,
}

thread_local! {
    /// Recorders of requests that ended on this thread, for its next
    /// requests. Kept by the thread rather than in a pool the threads
    /// share: a request mostly starts and ends on one thread, so its
    /// recorder is reused from that thread's cache, with no atomic operation
    /// and no memory moving between cores.
    static SPARES: RefCell<Vec<Arc<Inner>>> = const { RefCell::new(Vec::new()) };
}

/// Recorders a thread keeps at most: it ends one request at a time, and a
/// recorder ended elsewhere lands here only when a request moved threads.
const SPARES_MAX: usize = 4;

/// Keeps `recorder`, whose request has ended and whose line is written,
/// for this thread's next request, when nothing else holds it (a task the
/// request spawned may still) and the thread has room; else frees it. A
/// kept recorder keeps its pool's handle until it is reused or its thread
/// ends.
pub(crate) fn recycle(recorder: Recorder) {
    let mut inner = recorder.0;
    if Arc::get_mut(&mut inner).is_none() {
        return;
    }
    // A thread tearing down its thread-locals frees the recorder.
    let _ = SPARES.try_with(|spares| {
        if let Ok(mut spares) = spares.try_borrow_mut() {
            if spares.len() < SPARES_MAX {
                spares.push(inner);
            }
        }
    });
}

/// A recorder this thread kept, of schema `schema` (its type's id), if any.
fn take_spare(schema: TypeId) -> Option<Arc<Inner>> {
    SPARES
        .try_with(|spares| {
            let mut spares = spares.try_borrow_mut().ok()?;
            let at = spares.iter().rposition(|inner| inner.schema_id == schema)?;
            Some(spares.swap_remove(at))
        })
        .ok()
        .flatten()
}

/// Where a request ended, for its line: the clock and the pool's figures.
#[derive(Debug, Clone, Copy)]
pub(crate) struct RequestEnd {
    ticks: u64,
    pool: Option<PoolFigures>,
}

/// The start of each set in one table, and the table's size.
fn layout(sets: impl Iterator<Item = &'static KeySetInfo>) -> ([u32; MAX_SETS], usize) {
    let mut offsets = [0; MAX_SETS];
    let mut total = 0;
    for (offset, set) in offsets.iter_mut().zip(sets) {
        *offset = total as u32;
        total += set.slots();
    }
    (offsets, total)
}

/// The non-zero counters of one set into `values`, sorted by rendered name
/// (`by` key, `_`, key).
fn collect_counters_into(
    values: &mut Vec<CounterStat>,
    set: &'static KeySetInfo,
    table: &[AtomicU64],
) {
    values.clear();
    // A new list is sized first (growing from empty would copy it more
    // than once); a reused one (a thread's own, for its lines) keeps its room.
    if values.capacity() == 0 {
        let table = &table[..set.slots()];
        values.reserve(table.iter().filter(|v| v.load(Relaxed) > 0).count());
    }
    each_counter(set, table, |by, name, value| {
        values.push(CounterStat { by, name, value })
    });
}

/// Each non-zero counter of `set`, whose slots start `table`, in the order
/// of its rendered name: `by` key, key, value.
fn each_counter(
    set: &'static KeySetInfo,
    table: &[AtomicU64],
    mut each: impl FnMut(Option<&'static str>, &'static str, u64),
) {
    let table = &table[..set.slots()];
    let Some(by) = set.by else {
        for &i in set.sorted {
            let value = table[i as usize].load(Relaxed);
            if value > 0 {
                each(None, set.names[i as usize], value);
            }
        }
        return;
    };
    // A paired set's order is that of `<by>_<name>`, which nesting the two
    // sets' orders does not give (`a_x` sorts after `a_b_y`): its non-zero
    // slots, a handful, are sorted here, on the stack unless there are many.
    let width = set.names.len();
    let names = |slot: u16| {
        let slot = usize::from(slot);
        (by.names[slot / width], set.names[slot % width])
    };
    // Slot numbers fit: a set has at most 64 keys, by at most 64.
    let mut few = [0u16; 32];
    let mut found = 0;
    let mut many = Vec::new();
    for (slot, value) in table.iter().enumerate() {
        if value.load(Relaxed) == 0 {
            continue;
        }
        let slot = slot as u16;
        if found < few.len() {
            few[found] = slot;
            found += 1;
        } else {
            if many.is_empty() {
                many.extend_from_slice(&few);
            }
            many.push(slot);
        }
    }
    let found = if many.is_empty() {
        &mut few[..found]
    } else {
        &mut many[..]
    };
    if found.len() > 1 {
        let rendered = |slot: u16| {
            let (by, name) = names(slot);
            CounterStat {
                by: Some(by),
                name,
                value: 0,
            }
        };
        found.sort_unstable_by(|&a, &b| {
            rendered(a)
                .rendered_bytes()
                .cmp(rendered(b).rendered_bytes())
        });
    }
    for &mut slot in found {
        let (by, name) = names(slot);
        // Read again: a counter never goes back to zero, so the slot is
        // still non-zero, and this is its latest value.
        let value = table[usize::from(slot)].load(Relaxed);
        each(Some(by), name, value);
    }
}

/// The keys of `table` entered at least once into `stats`, in name order.
fn collect_into(
    stats: &mut Vec<KeyStat>,
    table: &[Stat],
    touched: u64,
    names: &'static [&'static str],
    sorted: &[u16],
) {
    stats.clear();
    // As in `collect_counters_into`: a new list is sized first (growing
    // from empty would copy it more than once).
    if stats.capacity() == 0 {
        stats.reserve((touched.count_ones() as usize).min(sorted.len()));
    }
    each_stat(table, touched, names, sorted, |name, count, duration| {
        stats.push(KeyStat {
            name,
            count,
            duration,
        })
    });
}
