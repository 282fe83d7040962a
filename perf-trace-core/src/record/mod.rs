//! What service code calls to record into the current request: counters,
//! timers, decisions, stream events, and the request's class and fate.
//!
//! Every function is a no-op (a thread-local read and a branch) when no
//! recorder is current. None of them locks or allocates for a set the
//! schema lists; a counter or timer set it does not list is recorded all
//! the same, on a slower path, and reaches the line after the listed ones.
//!
//! A store that owns a connection pool records its figures through
//! [`PoolStats`], so each request line can say how contended the pool was.

use std::future::Future;
use std::pin::Pin;
use std::task::{Context, Poll};

use crate::clock;
use crate::keys::{CounterKey, EndpointKey, KeySet, KeySetInfo, PairedCounterKey, TimerKey};
pub use crate::recorder::Outcome;
use crate::recorder::{add_decision, add_decisions, current_ptr, with_current, CountMerge, Inner};

pub(crate) mod pool;

pub use pool::{with_baseline, PoolBaseline, PoolFigures, PoolStats, WithBaseline};

/// How a count of `key` joins its counter: kept when larger for a max key
/// (its bit set in `max_mask`), added otherwise.
#[inline(always)]
fn merge_of<K: KeySet>(max_mask: u64, key: K) -> CountMerge {
    match max_mask & (1u64 << key.index()) != 0 {
        true => CountMerge::Max,
        false => CountMerge::Add,
    }
}

/// Counts one event of counter `key` into the current request.
///
/// ```
/// use perf_trace_core::{count, KeySet, Recorder, Schema};
/// use perf_trace_core::keys::{CounterSet, Groups};
/// # #[derive(KeySet, Clone, Copy, PartialEq, Eq, Debug)]
/// # #[key_set(phases)]
/// # enum Phase { Price }
/// # #[derive(KeySet, Clone, Copy, PartialEq, Eq, Debug)]
/// # #[key_set(store_methods)]
/// # enum Method { GetOrder }
/// # #[derive(KeySet, Clone, Copy, PartialEq, Eq, Debug)]
/// # #[key_set(endpoints)]
/// # enum Endpoint { #[key(default)] Other }
///
/// #[derive(KeySet, Clone, Copy, PartialEq, Eq, Debug)]
/// #[key_set(counters, prefix = "cache")]
/// enum Cache { Hit, Miss }
///
/// struct Orders;
/// impl Schema for Orders {
///     type Phase = Phase;
///     type StoreMethod = Method;
///     type Endpoint = Endpoint;
///     const COUNTERS: &'static [CounterSet] = &[CounterSet::of::<Cache>()];
///     const GROUPS: Groups = Groups::NONE;
/// }
///
/// let recorder = Recorder::new::<Orders>();
/// recorder.in_scope(|| {
///     count(Cache::Hit);
///     count(Cache::Hit);
///     count(Cache::Miss);
/// });
/// let snapshot = recorder.snapshot();
/// assert_eq!(snapshot.counter(Cache::Hit), 2);
/// assert_eq!(snapshot.counter(Cache::Miss), 1);
/// ```
#[inline]
pub fn count<K: CounterKey>(key: K) {
    count_n(key, 1);
}

/// Adds `n` to counter `key` (or, for a `#[key(max)]` key, keeps `n` when it
/// is the largest value given so far).
#[inline]
pub fn count_n<K: CounterKey>(key: K, n: u64) {
    with_current(|r| match r.counter_offset(K::INFO) {
        Some(offset) => r.add_count(offset + key.index(), n, merge_of(K::INFO.max_mask, key)),
        None => r.add_unlisted(K::INFO, key.index(), n, 0),
    });
}

/// Counts one event of counter `key` for `by` (a route x an outcome, say),
/// rendered `<prefix>_<by>_<key>`.
#[inline]
pub fn count_by<K: PairedCounterKey>(by: K::By, key: K) {
    count_n_by(by, key, 1);
}

/// Adds `n` to counter `key` for `by` (or keeps the largest, for a max key).
#[inline]
pub fn count_n_by<K: PairedCounterKey>(by: K::By, key: K, n: u64) {
    with_current(|r| {
        let slot = by.index() * K::NAMES.len() + key.index();
        match r.counter_offset(K::INFO) {
            Some(offset) => r.add_count(offset + slot, n, merge_of(K::INFO.max_mask, key)),
            None => r.add_unlisted(K::INFO, slot, n, 0),
        }
    });
}

/// Times `f` as timer `key` (count + 1, its duration), however `f` ends.
///
/// ```
/// # use perf_trace_core::{KeySet, Recorder, Schema};
/// # use perf_trace_core::keys::{TimerSet, Groups};
/// # #[derive(KeySet, Clone, Copy, PartialEq, Eq, Debug)]
/// # #[key_set(phases)]
/// # enum Phase { Price }
/// # #[derive(KeySet, Clone, Copy, PartialEq, Eq, Debug)]
/// # #[key_set(store_methods)]
/// # enum Method { GetOrder }
/// # #[derive(KeySet, Clone, Copy, PartialEq, Eq, Debug)]
/// # #[key_set(endpoints)]
/// # enum Endpoint { #[key(default)] Other }
/// #[derive(KeySet, Clone, Copy, PartialEq, Eq, Debug)]
/// #[key_set(timers, prefix = "render")]
/// enum Render { Invoice }
///
/// struct Orders;
/// impl Schema for Orders {
///     type Phase = Phase;
///     type StoreMethod = Method;
///     type Endpoint = Endpoint;
///     const TIMERS: &'static [TimerSet] = &[TimerSet::of::<Render>()];
/// }
///
/// let recorder = Recorder::new::<Orders>();
/// let pdf = recorder.in_scope(|| perf_trace_core::time(Render::Invoice, || "pdf"));
/// assert_eq!(pdf, "pdf");
/// assert_eq!(recorder.snapshot().timer(Render::Invoice).count, 1);
/// ```
#[inline]
pub fn time<K: TimerKey, R>(key: K, f: impl FnOnce() -> R) -> R {
    let _timer = start_timer(key);
    f()
}

/// Starts timer `key`: the returned guard records when it is dropped (a
/// block's end, an early return, `?`, a panic).
#[inline]
pub fn start_timer<K: TimerKey>(key: K) -> TimerGuard {
    let recorder = current_ptr();
    if recorder.is_null() {
        return TimerGuard {
            recorder,
            slot: 0,
            set: K::INFO,
            start: 0,
        };
    }
    // SAFETY: a non-null current pointer is kept alive by its scope.
    let slot = match unsafe { &*recorder }.timer_offset(K::INFO) {
        Some(offset) => offset + key.index(),
        None => UNLISTED | key.index(),
    };
    TimerGuard {
        recorder,
        slot,
        set: K::INFO,
        start: clock::now(),
    }
}

/// Marks a [`TimerGuard`]'s slot as the key's index in a set the schema
/// does not list.
const UNLISTED: usize = 1 << (usize::BITS - 1);

/// A running timer (see [`start_timer`]); records when dropped.
#[must_use = "the timer records when this guard is dropped"]
#[derive(Debug)]
pub struct TimerGuard {
    /// The recorder current at the start; null when nothing is recorded.
    recorder: *const Inner,
    /// The slot in the recorder's timer table, or [`UNLISTED`] and the
    /// key's index.
    slot: usize,
    set: &'static KeySetInfo,
    start: u64,
}

impl Drop for TimerGuard {
    #[inline]
    fn drop(&mut self) {
        // Only into the recorder that was current at the start, and only
        // while it still is (which also keeps it alive).
        if !self.recorder.is_null() && current_ptr() == self.recorder {
            let ticks = clock::span(self.start, clock::now());
            // SAFETY: the pointer is current, so its scope keeps it alive.
            let recorder = unsafe { &*self.recorder };
            if self.slot & UNLISTED == 0 {
                recorder.add_timer(self.slot, ticks);
            } else {
                recorder.add_unlisted(self.set, self.slot & !UNLISTED, 1, ticks);
            }
        }
    }
}

/// Times `future` as timer `key`, from its first poll until it completes or
/// is dropped, into the recorder current when it ends (the future may move
/// between threads, as a phase's does).
///
/// ```
/// # use perf_trace_core::{KeySet, Recorder, Schema};
/// # use perf_trace_core::keys::TimerSet;
/// # #[derive(KeySet, Clone, Copy, PartialEq, Eq, Debug)]
/// # #[key_set(phases)]
/// # enum Phase { Price }
/// # #[derive(KeySet, Clone, Copy, PartialEq, Eq, Debug)]
/// # #[key_set(store_methods)]
/// # enum Method { GetOrder }
/// # #[derive(KeySet, Clone, Copy, PartialEq, Eq, Debug)]
/// # #[key_set(endpoints)]
/// # enum Endpoint { #[key(default)] Other }
/// #[derive(KeySet, Clone, Copy, PartialEq, Eq, Debug)]
/// #[key_set(timers, prefix = "upstream")]
/// enum Upstream { Tax }
///
/// struct Orders;
/// impl Schema for Orders {
///     type Phase = Phase;
///     type StoreMethod = Method;
///     type Endpoint = Endpoint;
///     const TIMERS: &'static [TimerSet] = &[TimerSet::of::<Upstream>()];
/// }
///
/// let recorder = Recorder::new::<Orders>();
/// let rate = async { 20 };
/// let rate = block_on(recorder.instrument(perf_trace_core::record::time_future(Upstream::Tax, rate)));
/// assert_eq!(rate, 20);
/// assert_eq!(recorder.snapshot().timer(Upstream::Tax).count, 1);
/// # fn block_on<F: std::future::Future>(f: F) -> F::Output {
/// #     tokio::runtime::Builder::new_current_thread().build().unwrap().block_on(f)
/// # }
/// ```
pub fn time_future<K: TimerKey, F: Future>(key: K, future: F) -> TimedTimer<F> {
    TimedTimer {
        inner: future,
        set: K::INFO,
        index: key.index(),
        start: None,
        polled: false,
    }
}

pin_project_lite::pin_project! {
    /// A future timed as one timer key (see [`time_future`]).
    #[must_use = "futures do nothing unless polled"]
    #[derive(Debug)]
    pub struct TimedTimer<F> {
        #[pin]
        inner: F,
        set: &'static KeySetInfo,
        index: usize,
        // Set on the first poll when a recorder is current.
        start: Option<u64>,
        polled: bool,
    }

    impl<F> PinnedDrop for TimedTimer<F> {
        fn drop(this: Pin<&mut Self>) {
            let this = this.project();
            if let Some(start) = this.start.take() {
                record_timer(this.set, *this.index, start);
            }
        }
    }
}

/// Adds one event to timer `index` of `set` in the current recorder.
fn record_timer(set: &'static KeySetInfo, index: usize, start: u64) {
    let ticks = clock::span(start, clock::now());
    with_current(|r| match r.timer_offset(set) {
        Some(offset) => r.add_timer(offset + index, ticks),
        None => r.add_unlisted(set, index, 1, ticks),
    });
}

impl<F: Future> Future for TimedTimer<F> {
    type Output = F::Output;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<F::Output> {
        let this = self.project();
        if !*this.polled {
            *this.polled = true;
            if with_current(|_| ()).is_some() {
                *this.start = Some(clock::now());
            }
        }
        let output = this.inner.poll(cx);
        if output.is_ready() {
            if let Some(start) = this.start.take() {
                record_timer(this.set, *this.index, start);
            }
        }
        output
    }
}

/// Records one authorization decision without timing its emission.
#[inline]
pub fn record_decision(outcome: Outcome) {
    if !current_ptr().is_null() {
        add_decision(outcome, 0);
    }
}

/// Records one authorization decision, timing `emit` (the audit emitter) as
/// its emission time. With no recorder in scope, just runs `emit`.
#[inline]
pub fn time_decision<R>(outcome: Outcome, emit: impl FnOnce() -> R) -> R {
    time_emission(emit, |ticks| add_decision(outcome, ticks))
}

/// Runs `emit` (an audit emission), timing it, and hands its ticks to
/// `record`. With no recorder in scope, just runs `emit`.
#[inline]
fn time_emission<R>(emit: impl FnOnce() -> R, record: impl FnOnce(u64)) -> R {
    let recorder = current_ptr();
    if recorder.is_null() {
        return emit();
    }
    let start = clock::now();
    let result = emit();
    let ticks = clock::span(start, clock::now());
    // Re-read: `emit` may have run in (and left) a nested scope; record only
    // into the recorder that is still current.
    if current_ptr() == recorder {
        record(ticks);
    }
    result
}

/// How many decisions of a batch ended in each outcome, for
/// [`time_decisions`].
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct DecisionBatch {
    /// Decisions that allowed the action.
    pub allow: u64,
    /// Decisions that denied the action.
    pub deny: u64,
    /// Decisions that ended otherwise (an error, an abstention).
    pub other: u64,
}

impl DecisionBatch {
    /// Counts one more decision with `outcome`.
    #[inline]
    pub fn add(&mut self, outcome: Outcome) {
        match outcome {
            Outcome::Allow => self.allow += 1,
            Outcome::Deny => self.deny += 1,
            Outcome::Other => self.other += 1,
        }
    }
}

/// Records a batch of authorization decisions whose emissions happen
/// together, timing `emit` (the batch's audit emission) once: one pair of
/// clock reads for the whole batch instead of one per decision. The line
/// counts exactly what [`time_decision`] called once per decision would.
/// With no recorder in scope, just runs `emit`.
///
/// ```
/// use perf_trace_core::{record::time_decisions, record::DecisionBatch, record::Outcome};
///
/// let mut batch = DecisionBatch::default();
/// for allowed in [true, true, false] {
///     batch.add(if allowed { Outcome::Allow } else { Outcome::Deny });
/// }
/// let written = time_decisions(batch, || 3);
/// assert_eq!((written, batch.allow, batch.deny), (3, 2, 1));
/// ```
#[inline]
pub fn time_decisions<R>(batch: DecisionBatch, emit: impl FnOnce() -> R) -> R {
    time_emission(emit, |ticks| {
        add_decisions([batch.allow, batch.deny, batch.other], ticks)
    })
}

/// Adds `n` written events to the current request's `sse_events`.
#[inline]
pub fn add_sse_events(n: u64) {
    with_current(|r| r.add_sse_events(n));
}

/// Sets the current request's endpoint class (overriding the layer's
/// classification).
#[inline]
pub fn set_endpoint<E: EndpointKey>(endpoint: E) {
    with_current(|r| r.set_endpoint(endpoint));
}

/// Marks the current request so that no line is written for it (a request
/// the service rejects before it is worth tracing, such as a malformed stream
/// subscription).
#[inline]
pub fn discard_line() {
    with_current(|r| r.discard());
}

/// Marks the current request as a stream: its line carries `sse_stage`, and
/// the tower layer writes a `connect` line when the body is first polled.
#[inline]
pub fn mark_stream() {
    with_current(|r| r.mark_stream());
}

/// Notes that the statement `text` runs in the current request, and
/// returns whether it already ran in it (a repeated statement, as an N+1
/// query is). Only a hash of the text is kept (see
/// [`statements`](crate::recorder::statements)), unless the recorder is a
/// test's ([`capture_statements`](crate::recorder::RecorderBuilder::capture_statements));
/// the text never reaches the line. Returns `false` when no recorder is
/// current, at the cost of a thread-local read.
///
/// The SQL wrappers of `perf-trace-sql` call this for every statement and
/// count the repeats themselves; a driver without one can do the same.
///
/// ```
/// # use perf_trace_core::{KeySet, Recorder, Schema};
/// # #[derive(KeySet, Clone, Copy, PartialEq, Eq, Debug)]
/// # #[key_set(phases)]
/// # enum Phase { Price }
/// # #[derive(KeySet, Clone, Copy, PartialEq, Eq, Debug)]
/// # #[key_set(store_methods)]
/// # enum Method { GetOrder }
/// # #[derive(KeySet, Clone, Copy, PartialEq, Eq, Debug)]
/// # #[key_set(endpoints)]
/// # enum Endpoint { #[key(default)] Other }
/// # struct App;
/// # impl Schema for App { type Phase = Phase; type StoreMethod = Method; type Endpoint = Endpoint; }
/// use perf_trace_core::record::note_statement;
///
/// let recorder = Recorder::builder().capture_statements().build::<App>();
/// let repeats = recorder.in_scope(|| {
///     [1, 2, 3].map(|_| note_statement("SELECT qty FROM stock WHERE sku = ?"))
/// });
/// assert_eq!(repeats, [false, true, true]);
/// let runs = recorder.statements();
/// assert_eq!(runs[0].runs, 3);
/// assert_eq!(runs[0].text.as_deref(), Some("SELECT qty FROM stock WHERE sku = ?"));
/// assert!(!note_statement("SELECT 1"), "no recorder in scope");
/// ```
#[inline]
pub fn note_statement(text: &str) -> bool {
    with_current(|r| r.note_statement(crate::recorder::statements::statement_hash(text), text))
        .unwrap_or(false)
}

/// A timer started in one place and ended in another, across polls and
/// threads (it is `Send`): the time from [`start`](Stopwatch::start) to
/// [`finish`](Stopwatch::finish) (or its drop), as one event of its key,
/// added to the recorder current when it ends. A stream's wrapper starts one
/// on its first poll and finishes it when the stream ends or is dropped.
///
/// Started with no recorder current, it reads no clock and records nothing.
#[derive(Debug)]
#[must_use = "the stopwatch records when finished or dropped"]
pub struct Stopwatch {
    set: &'static KeySetInfo,
    index: usize,
    start: Option<u64>,
}

impl Stopwatch {
    /// Starts timing one event of `key`, when a recorder is current.
    #[inline]
    pub fn start<K: TimerKey>(key: K) -> Stopwatch {
        Stopwatch {
            set: K::INFO,
            index: key.index(),
            start: (!current_ptr().is_null()).then(clock::now),
        }
    }

    /// Whether it is timing (a recorder was current at the start).
    #[inline]
    pub fn is_running(&self) -> bool {
        self.start.is_some()
    }

    /// Ends the event now and adds it to the current recorder.
    #[inline]
    pub fn finish(mut self) {
        self.stop();
    }

    fn stop(&mut self) {
        if let Some(start) = self.start.take() {
            record_timer(self.set, self.index, start);
        }
    }
}

impl Drop for Stopwatch {
    fn drop(&mut self) {
        self.stop();
    }
}
