//! Per endpoint class aggregation of perf lines, one line at a time.
//!
//! Every figure is kept by its field name in a [`CountDist`] (counts) or a
//! [`TimeDist`] (durations), so memory grows with the number of classes and
//! keys, never with the number of lines; the slowest requests are the only
//! lines kept, `top` per class, each cut at [`MAX_KEPT_LINE`] bytes.
//!
//! Classes and keys are bounded ([`Limits`]): a class past the bound, or
//! whose name is longer than [`MAX_NAME`], is read as the class
//! [`OTHER`]; a key past the bound (or too long a name) adds its value to
//! the class's [`OTHER`] count or [`OTHER_US`] time for that request. The
//! figures' tables and histograms together take at most
//! [`Limits::figure_bytes`]; past that every value is recorded in place,
//! approximately. What was folded or approximated is counted in [`Folded`].

use std::cmp::Reverse;
use std::collections::{BTreeMap, BinaryHeap, HashMap};

use serde::Serialize;

use crate::dist::{CountDist, TimeDist};
use crate::line::{classify, FigureKind, PerfLine, Unit};
use crate::request_sample::RequestSample;

/// The class, and the count key, that take what is past the bounds.
pub const OTHER: &str = "(other)";

/// The time key that takes what is past the key bound.
pub const OTHER_US: &str = "(other)_us";

/// The longest class or key name kept (in bytes); a longer one is folded
/// into [`OTHER`] like one past the bound.
pub const MAX_NAME: usize = 256;

/// The longest slowest-request line kept (in bytes); a longer one is kept
/// cut, ending in `…`.
pub const MAX_KEPT_LINE: usize = 2048;

/// Distinct values a class's count keeps exact; past them it keeps 8
/// significant bits (see [`CountDist::bounded`]), so a count that takes a
/// new value on every request (a response's bytes) holds a bounded table.
pub const EXACT_COUNT_VALUES: usize = 1024;

/// How many classes and keys an aggregate holds at most.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Limits {
    /// Endpoint classes, [`OTHER`] aside.
    pub classes: usize,
    /// Keys (figure names) over every class, each class's [`OTHER`] and
    /// [`OTHER_US`] aside.
    pub keys: usize,
    /// Bytes the figures' tables and histograms may take; past them a
    /// figure records in place (see [`CountDist::record_in_place`] and
    /// [`TimeDist::record_in_place`]).
    pub figure_bytes: usize,
}

impl Default for Limits {
    fn default() -> Self {
        Limits {
            classes: 1_000,
            keys: 10_000,
            figure_bytes: 16 << 20,
        }
    }
}

/// What the bounds folded into [`OTHER`].
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
pub struct Folded {
    /// Lines read as the class [`OTHER`] (their class past the bound).
    pub class_lines: u64,
    /// Figures added to a class's [`OTHER`] key (their key past the bound).
    pub key_values: u64,
    /// Values recorded approximately, the figures' bytes spent.
    pub approximated: u64,
}

/// What one line may still take under the bounds, and what it folded or
/// recorded approximately.
#[derive(Debug, Clone, Copy)]
struct Budget {
    keys_free: usize,
    folded: u64,
    bytes_free: usize,
    approximated: u64,
}

/// A distribution recorded into under the byte bound.
trait Held {
    fn record(&mut self, value: u64);
    fn record_in_place(&mut self, value: u64) -> bool;
    fn heap_bytes(&self) -> usize;
}

/// [`Held`] by a distribution's own methods of the same names.
macro_rules! held {
    ($($dist:ident),*) => {$(
        impl Held for $dist {
            fn record(&mut self, value: u64) {
                $dist::record(self, value);
            }
            fn record_in_place(&mut self, value: u64) -> bool {
                $dist::record_in_place(self, value)
            }
            fn heap_bytes(&self) -> usize {
                $dist::heap_bytes(self)
            }
        }
    )*};
}

held!(CountDist, TimeDist);

impl Held for Figure {
    fn record(&mut self, value: u64) {
        match self {
            Figure::Count(d) => d.record(value),
            Figure::Time(d) => d.record(value),
        }
    }
    fn record_in_place(&mut self, value: u64) -> bool {
        match self {
            Figure::Count(d) => d.record_in_place(value),
            Figure::Time(d) => d.record_in_place(value),
        }
    }
    fn heap_bytes(&self) -> usize {
        match self {
            Figure::Count(d) => d.heap_bytes(),
            Figure::Time(d) => d.heap_bytes(),
        }
    }
}

/// Records `value` into `dist`, its growth paid from the budget; in place
/// once the budget is spent.
fn put(dist: &mut impl Held, value: u64, budget: &mut Budget) {
    if budget.bytes_free == 0 {
        if !dist.record_in_place(value) {
            budget.approximated += 1;
        }
        return;
    }
    let before = dist.heap_bytes();
    dist.record(value);
    let after = dist.heap_bytes();
    // A count's table shrinks when it turns to 8 significant bits.
    budget.bytes_free = (budget.bytes_free + before).saturating_sub(after);
}

/// `text` cut to at most `max` bytes at a character's edge, `…` marking a cut.
pub fn cut(text: &str, max: usize) -> String {
    if text.len() <= max {
        return text.to_owned();
    }
    let mut end = max;
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    // Sized exactly: a kept line's room is what bounds the slowest lists.
    let mut out = String::with_capacity(end + '…'.len_utf8());
    out.push_str(&text[..end]);
    out.push('…');
    out
}

/// The status class of an HTTP status: `2xx`, ..., or `other` outside 100
/// to 599 (so odd values cannot grow the table).
fn status_class(status: u64) -> String {
    if (100..600).contains(&status) {
        format!("{}xx", status / 100)
    } else {
        "other".to_owned()
    }
}

/// One figure of a class, by its field name.
#[derive(Debug, Clone)]
pub enum Figure {
    /// A count per request.
    Count(CountDist),
    /// A duration.
    Time(TimeDist),
}

/// One of the slowest requests of a class.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, serde::Serialize)]
pub struct SlowRequest {
    /// `elapsed_us`.
    pub elapsed_us: u64,
    /// Order of arrival (earlier first among equals).
    #[serde(skip)]
    pub seq: Reverse<u64>,
    /// The request id, empty when the line has none.
    pub request_id: String,
    /// The whole line as read.
    pub line: String,
}

/// Everything known about one endpoint class.
#[derive(Debug, Clone)]
pub struct ClassAgg {
    /// Requests (lines) of the class.
    pub requests: u64,
    /// Requests per status class (`2xx`, ...), for lines with a status.
    pub statuses: BTreeMap<String, u64>,
    /// `elapsed_us` of every request.
    pub elapsed: TimeDist,
    /// Every other figure by field name.
    pub figures: HashMap<String, Figure>,
    /// Store calls per request over every method (the line's own total
    /// where it writes one, the sum of its methods otherwise).
    pub store_total: CountDist,
    /// Time in the store per request, likewise.
    pub store_total_us: TimeDist,
    /// A sample of the requests' store and size counts, for the N+1
    /// suspects' correlation.
    pub sample: RequestSample,
    /// The slowest requests, fastest on top (a min-heap of size `top`).
    slowest: BinaryHeap<Reverse<SlowRequest>>,
}

impl Default for ClassAgg {
    fn default() -> Self {
        ClassAgg {
            requests: 0,
            statuses: BTreeMap::new(),
            elapsed: TimeDist::default(),
            figures: HashMap::new(),
            store_total: CountDist::bounded(EXACT_COUNT_VALUES),
            store_total_us: TimeDist::default(),
            sample: RequestSample::default(),
            slowest: BinaryHeap::new(),
        }
    }
}

impl ClassAgg {
    /// The slowest requests, slowest first.
    pub fn slowest(&self) -> Vec<SlowRequest> {
        let mut out: Vec<SlowRequest> = self.slowest.iter().map(|r| r.0.clone()).collect();
        out.sort_by(|a, b| b.cmp(a));
        out
    }

    fn keep_if_slow(&mut self, line: &PerfLine<'_>, text: &str, seq: u64, top: usize) {
        if top == 0 {
            return;
        }
        if self.slowest.len() == top {
            let fastest = &self.slowest.peek().expect("a full heap").0;
            if line.elapsed_us <= fastest.elapsed_us {
                return;
            }
            self.slowest.pop();
        }
        self.slowest.push(Reverse(SlowRequest {
            elapsed_us: line.elapsed_us,
            seq: Reverse(seq),
            request_id: cut(line.request_id.as_deref().unwrap_or(""), MAX_NAME),
            line: cut(text.trim(), MAX_KEPT_LINE),
        }));
    }

    fn figure(&mut self, name: &str, unit: Unit) -> &mut Figure {
        if !self.figures.contains_key(name) {
            let fresh = match unit {
                Unit::Count => Figure::Count(CountDist::bounded(EXACT_COUNT_VALUES)),
                Unit::Micros => Figure::Time(TimeDist::default()),
            };
            self.figures.insert(name.to_owned(), fresh);
        }
        self.figures.get_mut(name).expect("inserted above")
    }

    /// Records `value` under `name`, making its figure when the key budget
    /// allows; `false` when the key is to be folded.
    fn record_within(&mut self, name: &str, unit: Unit, value: u64, budget: &mut Budget) -> bool {
        // One lookup for a key already held, the common case.
        if let Some(figure) = self.figures.get_mut(name) {
            put(figure, value, budget);
            return true;
        }
        if name.len() > MAX_NAME || budget.keys_free == 0 {
            budget.folded += 1;
            return false;
        }
        budget.keys_free -= 1;
        self.record(name, unit, value, budget);
        true
    }

    fn record(&mut self, name: &str, unit: Unit, value: u64, budget: &mut Budget) {
        put(self.figure(name, unit), value, budget);
    }

    /// Adds one request.
    fn add(&mut self, line: &PerfLine<'_>, text: &str, seq: u64, top: usize, budget: &mut Budget) {
        self.requests += 1;
        if let Some(status) = line.status {
            *self.statuses.entry(status_class(status)).or_default() += 1;
        }
        put(&mut self.elapsed, line.elapsed_us, budget);
        let (mut store_n, mut store_us, mut has_store_us) = (0u64, 0u64, false);
        let (mut total_n, mut total_us) = (None, None);
        // The values of keys past the bound, summed for this request.
        let (mut other_n, mut other_us) = (None::<u64>, None::<u64>);
        for (name, value) in &line.figures {
            let kind = classify(name);
            let unit = match kind {
                FigureKind::Phase(_, unit) | FigureKind::Other(unit) => unit,
                FigureKind::Store(_, Unit::Count) => {
                    store_n += value;
                    Unit::Count
                }
                FigureKind::Store(_, Unit::Micros) => {
                    store_us += value;
                    has_store_us = true;
                    Unit::Micros
                }
                FigureKind::StoreTotal(Unit::Count) => {
                    total_n = Some(*value);
                    continue;
                }
                FigureKind::StoreTotal(Unit::Micros) => {
                    total_us = Some(*value);
                    continue;
                }
            };
            if !self.record_within(name, unit, *value, budget) {
                let sum = match unit {
                    Unit::Count => &mut other_n,
                    Unit::Micros => &mut other_us,
                };
                *sum = Some(sum.unwrap_or(0).saturating_add(*value));
            }
        }
        if let Some(n) = other_n {
            self.record(OTHER, Unit::Count, n, budget);
        }
        if let Some(us) = other_us {
            self.record(OTHER_US, Unit::Micros, us, budget);
        }
        put(&mut self.store_total, total_n.unwrap_or(store_n), budget);
        if let Some(us) = total_us.or(has_store_us.then_some(store_us)) {
            put(&mut self.store_total_us, us, budget);
        }
        // Only keys held (not folded) are sampled, so the key bound bounds
        // the sample too.
        let held = &self.figures;
        self.sample.offer(
            line.figures
                .iter()
                .filter(|(name, _)| RequestSample::wants(name) && held.contains_key(name.as_ref()))
                .map(|(name, value)| (name.as_ref(), *value)),
        );
        self.keep_if_slow(line, text, seq, top);
    }

    /// Adds another aggregate's requests of the same class (the slowest
    /// kept up to `top`).
    pub fn merge(&mut self, other: &ClassAgg, top: usize) {
        self.requests += other.requests;
        for (status, n) in &other.statuses {
            *self.statuses.entry(status.clone()).or_default() += n;
        }
        self.elapsed.merge(&other.elapsed);
        for (name, figure) in &other.figures {
            match (self.figures.get_mut(name), figure) {
                (Some(Figure::Count(mine)), Figure::Count(theirs)) => mine.merge(theirs),
                (Some(Figure::Time(mine)), Figure::Time(theirs)) => mine.merge(theirs),
                _ => {
                    self.figures.insert(name.clone(), figure.clone());
                }
            }
        }
        self.store_total.merge(&other.store_total);
        self.store_total_us.merge(&other.store_total_us);
        self.sample.merge(&other.sample);
        for slow in &other.slowest {
            self.slowest.push(slow.clone());
            if self.slowest.len() > top {
                self.slowest.pop();
            }
        }
    }
}

/// Every class of one or more logs.
#[derive(Debug, Clone, Default)]
pub struct Aggregate {
    /// Classes by name.
    pub classes: BTreeMap<String, ClassAgg>,
    /// Slowest requests kept per class.
    pub top: usize,
    /// What the bounds folded into [`OTHER`].
    pub folded: Folded,
    limits: Limits,
    /// Keys held over every class ([`OTHER`] and [`OTHER_US`] aside).
    keys: usize,
    /// Bytes the figures take, about.
    figure_bytes: usize,
    seq: u64,
}

impl Aggregate {
    /// An empty aggregate keeping the `top` slowest requests per class,
    /// within the default [`Limits`].
    pub fn new(top: usize) -> Self {
        Aggregate::with_limits(top, Limits::default())
    }

    /// An empty aggregate keeping the `top` slowest requests per class,
    /// within `limits`.
    pub fn with_limits(top: usize, limits: Limits) -> Self {
        Aggregate {
            top,
            limits,
            ..Aggregate::default()
        }
    }

    /// Adds one perf line; `text` is the line as read (kept only if it is
    /// among the slowest).
    pub fn add(&mut self, line: &PerfLine<'_>, text: &str) {
        self.seq += 1;
        let name = line.endpoint.as_ref();
        if !self.classes.contains_key(name) {
            let held = self.classes.len() - usize::from(self.classes.contains_key(OTHER));
            let name = if name.len() > MAX_NAME || held >= self.limits.classes {
                self.folded.class_lines += 1;
                OTHER
            } else {
                name
            };
            self.classes.entry(name.to_owned()).or_default();
        }
        let class = match self.classes.get_mut(name) {
            Some(class) => class,
            None => self.classes.get_mut(OTHER).expect("made above"),
        };
        let mut budget = Budget {
            keys_free: self.limits.keys.saturating_sub(self.keys),
            folded: 0,
            bytes_free: self.limits.figure_bytes.saturating_sub(self.figure_bytes),
            approximated: 0,
        };
        let (keys_free, bytes_free) = (budget.keys_free, budget.bytes_free);
        class.add(line, text, self.seq, self.top, &mut budget);
        self.keys += keys_free - budget.keys_free;
        self.figure_bytes = (self.figure_bytes + bytes_free).saturating_sub(budget.bytes_free);
        self.folded.key_values += budget.folded;
        self.folded.approximated += budget.approximated;
    }

    /// Requests over every class.
    pub fn requests(&self) -> u64 {
        self.classes.values().map(|c| c.requests).sum()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::line::{parse, Parsed};

    fn add(agg: &mut Aggregate, text: &str) {
        match parse(text) {
            Parsed::Perf(line) => agg.add(&line, text),
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn store_total_is_the_sum_of_methods_or_the_lines_own() {
        let mut agg = Aggregate::new(2);
        add(
            &mut agg,
            r#"{"msg":"perf_trace","endpoint":"a","elapsed_us":5,"store_GetX_n":2,"store_GetX_us":7,"store_GetY_n":3,"store_GetY_us":1}"#,
        );
        add(
            &mut agg,
            r#"{"msg":"perf_trace","endpoint":"a","elapsed_us":9,"store_calls":4,"store_us":2,"store_get_x_n":4,"status":404}"#,
        );
        add(
            &mut agg,
            r#"{"msg":"perf_trace","endpoint":"a","elapsed_us":1,"request_id":"fast"}"#,
        );
        let class = &agg.classes["a"];
        assert_eq!(class.requests, 3);
        let s = class.store_total.stats(3);
        assert_eq!((s.min, s.p50, s.max), (0, 4, 5));
        assert_eq!(class.store_total_us.sum(), 10);
        assert_eq!(class.statuses["4xx"], 1);
        let slow: Vec<u64> = class.slowest().iter().map(|s| s.elapsed_us).collect();
        assert_eq!(slow, [9, 5]);
        assert!(matches!(class.figures["store_GetX_us"], Figure::Time(_)));
        assert!(matches!(class.figures["store_get_x_n"], Figure::Count(_)));
    }

    #[test]
    fn long_names_fold_and_kept_lines_are_cut() {
        let mut agg = Aggregate::new(1);
        let long = "k".repeat(MAX_NAME + 1);
        let id = "r".repeat(MAX_NAME + 10);
        let text = format!(
            r#"{{"msg":"perf_trace","endpoint":"{long}","elapsed_us":5,"{long}_us":4,"{long}":2,"fine":1,"request_id":"{id}","status":999,"pad":"{}"}}"#,
            "p".repeat(MAX_KEPT_LINE)
        );
        add(&mut agg, &text);
        let class = &agg.classes[OTHER];
        assert_eq!(
            agg.folded,
            Folded {
                class_lines: 1,
                key_values: 2,
                approximated: 0
            }
        );
        assert!(matches!(&class.figures[OTHER], Figure::Count(d) if d.sum() == 2));
        assert!(matches!(&class.figures[OTHER_US], Figure::Time(d) if d.sum() == 4));
        assert!(class.figures.contains_key("fine"));
        assert_eq!(class.statuses["other"], 1);
        let slow = &class.slowest()[0];
        assert_eq!(slow.line.len(), MAX_KEPT_LINE + "…".len());
        assert!(slow.line.ends_with('…') && slow.request_id.ends_with('…'));
        assert_eq!(cut("héllo", 2), "h…");
    }

    #[test]
    fn past_the_figures_bytes_values_are_recorded_in_place() {
        let limits = Limits {
            figure_bytes: 64 << 10,
            ..Limits::default()
        };
        let mut agg = Aggregate::with_limits(0, limits);
        // Each key's 40 values spread to an hour: a histogram each, about
        // 26 KiB, so the third key's is past the 64 KiB.
        for i in 0..40u64 {
            let text = format!(
                r#"{{"msg":"perf_trace","endpoint":"a","elapsed_us":1,"t1_us":{0},"t2_us":{0},"t3_us":{0},"n":{1}}}"#,
                (i + 1) * 90_000_000,
                i * 1000
            );
            add(&mut agg, &text);
        }
        assert!(
            agg.figure_bytes <= (64 << 10) + (32 << 10),
            "{}",
            agg.figure_bytes
        );
        assert!(agg.folded.approximated > 0);
        let class = &agg.classes["a"];
        let Figure::Time(t3) = &class.figures["t3_us"] else {
            panic!()
        };
        // Sampled or held in place, the count, sum and largest stay exact.
        assert_eq!(t3.len(), 40);
        assert_eq!(t3.stats().max_us, 40 * 90_000_000);
        assert_eq!(t3.sum(), (1..=40).map(|i| i * 90_000_000).sum::<u64>());
        let Figure::Count(n) = &class.figures["n"] else {
            panic!()
        };
        assert_eq!(n.stats(40).max, 39_000);
        assert!(n.heap_bytes() <= 40 * 40);
    }

    #[test]
    fn merging_keeps_the_slowest_overall() {
        let mut a = Aggregate::new(1);
        let mut b = Aggregate::new(1);
        add(
            &mut a,
            r#"{"msg":"perf_trace","endpoint":"a","elapsed_us":5}"#,
        );
        add(
            &mut b,
            r#"{"msg":"perf_trace","endpoint":"a","elapsed_us":8,"phase_p_n":1}"#,
        );
        let mut merged = a.classes["a"].clone();
        merged.merge(&b.classes["a"], 1);
        assert_eq!(merged.requests, 2);
        assert_eq!(merged.slowest()[0].elapsed_us, 8);
        assert!(merged.figures.contains_key("phase_p_n"));
    }
}
