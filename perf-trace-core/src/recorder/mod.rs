//! The request-local recorder: fixed tables indexed by key, filled with
//! relaxed atomic adds, so recording never allocates and never contends with
//! anything but the same request's other threads. Phases, store calls and
//! decisions reach these tables once per scope, summed in thread-local
//! memory in between (`pending`).
//!
//! Inside: [`scope`] (which recorder is current on a thread), `pending`
//! (what the current scope has recorded, not yet added), `reuse` (the
//! recorders a thread keeps for its next requests), `collect` (the tables
//! read into a snapshot) and `finished_line` (the tables read into a
//! line). Only this module and those below it see a recorder's tables.

use std::any::TypeId;
use std::fmt;
use std::sync::atomic::{AtomicBool, AtomicU16, AtomicU64, Ordering::Relaxed};
use std::sync::Arc;

use crate::clock;
use crate::keys::{EndpointKey, KeySetInfo, Schema, SchemaInfo, MAX_SETS};
use crate::line::needs_escape;
use crate::record::pool::{PoolFigures, PoolStats};
use crate::snapshot::{Decisions, Snapshot};

mod collect;
mod extra_sets;
mod finished_line;
mod line_keys;
mod pending;
mod reuse;
pub mod scope;
pub mod statements;

use extra_sets::ExtraSets;
use line_keys::LineKeys;
use statements::{StatementRuns, Statements};

// What recording (`record`, the macros' guards) and the layer reach of the
// inside: the current recorder, what its scope has pending, and reuse.
pub(crate) use pending::{add_decision, add_decisions, add_timed};
pub(crate) use reuse::{recycle, RequestStart};
pub(crate) use scope::{current_ptr, in_scope_of, with_current};

/// How a count joins what its counter holds.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum CountMerge {
    /// Added to it.
    Add,
    /// Kept when larger: a max key (`#[key(max)]`).
    Max,
}

/// Count and summed raw ticks of one key.
#[derive(Default)]
struct Stat {
    count: AtomicU64,
    ticks: AtomicU64,
}

impl Stat {
    #[inline(always)]
    fn add(&self, ticks: u64) {
        self.add_n(1, ticks);
    }

    /// Adds `count` events that took `ticks` in all.
    #[inline(always)]
    fn add_n(&self, count: u64, ticks: u64) {
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
    schema: SchemaInfo,
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
    /// The statements run, by hash (their texts in a test's recorder).
    statements: Statements,
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
    /// The endpoint class's name as the line writes it.
    #[inline]
    pub(crate) fn endpoint_name(&self) -> &'static str {
        self.schema.endpoints.names[self.endpoint.load(Relaxed) as usize]
    }

    /// Adds `count` events taking `ticks` in all to key `index` of `table`.
    #[inline]
    pub(crate) fn add_stat(&self, table: Table, index: usize, count: u64, ticks: u64) {
        self.table(table)[index].add_n(count, ticks);
        self.mark_touched(table, 1 << index);
    }

    /// Marks the keys of `mask` as added to: one atomic operation at most,
    /// none when they already are.
    #[inline]
    fn mark_touched(&self, table: Table, mask: u64) {
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
    fn table(&self, table: Table) -> &[Stat] {
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
    fn add_decisions(&self, by_outcome: [u64; 3], ticks: u64) {
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
        set_offset(
            self.schema.counters,
            |set| set.0,
            &self.counter_offsets,
            info,
        )
    }

    /// Joins `n` to counter `slot` as `merge` says.
    #[inline(always)]
    pub(crate) fn add_count(&self, slot: usize, n: u64, merge: CountMerge) {
        if let Some(counter) = self.counters.get(slot) {
            match merge {
                CountMerge::Max => counter.fetch_max(n, Relaxed),
                CountMerge::Add => counter.fetch_add(n, Relaxed),
            };
            let (word, bit) = (&self.counters_touched[slot / 64], 1 << (slot % 64));
            if word.load(Relaxed) & bit == 0 {
                word.fetch_or(bit, Relaxed);
            }
        }
    }

    /// Where timer set `info` starts in the timer table, when the schema has it.
    #[inline(always)]
    pub(crate) fn timer_offset(&self, info: &'static KeySetInfo) -> Option<usize> {
        set_offset(self.schema.timers, |set| set.0, &self.timer_offsets, info)
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

    /// Notes one run of a statement; whether it already ran in the request.
    #[inline]
    pub(crate) fn note_statement(&self, hash: u64, text: &str) -> bool {
        self.statements.note(hash, text)
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
    capture_statements: bool,
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

    /// Keeps the text of each distinct statement the request runs (up to
    /// [`MAX_TEXT`](statements::MAX_TEXT) bytes), for a test's checks of
    /// repeated statements ([`Recorder::statements`]). A service's recorder
    /// keeps only hashes; a text never reaches the line either way.
    pub fn capture_statements(mut self) -> Self {
        self.capture_statements = true;
        self
    }

    /// A pool whose figures are read now and when the snapshot is taken.
    pub fn pool(mut self, pool: Arc<dyn PoolStats>) -> Self {
        self.pool = Some(pool);
        self
    }

    /// Counts the pool's waits from `start`, figures read earlier in the
    /// request (see [`PoolBaseline`](crate::record::PoolBaseline)), instead of
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
            statements: Statements::new(self.capture_statements),
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

    /// The request id given at creation.
    pub fn request_id(&self) -> &str {
        &self.0.request_id
    }

    /// How often each distinct statement ran so far in the request, most
    /// runs first, as noted by [`record::note_statement`](crate::record::note_statement)
    /// (the SQL wrappers of `perf-trace-sql` note every statement). Texts
    /// are there only when the recorder was built with
    /// [`capture_statements`](RecorderBuilder::capture_statements).
    pub fn statements(&self) -> Vec<StatementRuns> {
        self.0.statements.runs()
    }

    /// Sets the endpoint class (the default class until set).
    pub(crate) fn set_endpoint<E: EndpointKey>(&self, endpoint: E) {
        self.0.set_endpoint(endpoint);
    }

    /// The endpoint class's name as the line writes it.
    #[cfg(feature = "tracing")]
    pub(crate) fn endpoint_name(&self) -> &'static str {
        self.0.endpoint_name()
    }

    /// Whether `record::discard_line` was called in its scope.
    pub(crate) fn is_discarded(&self) -> bool {
        self.0.discarded.load(Relaxed)
    }

    /// Whether the request was marked as a stream (`record::mark_stream`).
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
        if std::ptr::eq(scope::current_ptr(), inner) {
            pending::flush(inner);
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
}

/// Every key, for a table whose touched keys are not tracked (timers).
const ALL: u64 = u64::MAX;

/// Where a request ended, for its line: the clock and the pool's figures.
#[derive(Debug, Clone, Copy)]
pub(crate) struct RequestEnd {
    ticks: u64,
    pool: Option<PoolFigures>,
}

/// Where set `info` starts in a table laid out by [`layout`] from `sets`,
/// when `sets` has it. A schema has a handful of sets at most: a short scan
/// of pointers, inlined into each counting and timing call.
#[inline(always)]
fn set_offset<T>(
    sets: &[T],
    info_of: impl Fn(&T) -> &'static KeySetInfo,
    offsets: &[u32; MAX_SETS],
    info: &'static KeySetInfo,
) -> Option<usize> {
    let mut i = 0;
    while i < sets.len() {
        if std::ptr::eq(info_of(&sets[i]), info) {
            return Some(offsets[i] as usize);
        }
        i += 1;
    }
    None
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
