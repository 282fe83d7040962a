//! The two distributions a figure is kept in, both in memory that does not
//! grow with the number of lines.
//!
//! - [`CountDist`]: counts per request, exact: a table of value to number of
//!   requests. It grows with the number of *distinct* values a count takes
//!   (a request shape takes a handful), never with the number of lines.
//!   Requests whose line has no such field count as 0 (profiles leave empty
//!   figures out), so its percentiles are over every request of the class.
//! - [`TimeDist`]: durations in microseconds: the first
//!   [`TimeDist::EXACT`] values as they are (a key seen on a few lines costs
//!   a few hundred bytes, whatever the values), then a log-linear histogram
//!   at two significant digits (HdrHistogram): every percentile is within
//!   1 % of the exact one, max and sum are exact, and its size is fixed by
//!   the largest value (about 25 KiB up to an hour). Only the requests that
//!   have the figure are in it.
//!
//! Percentiles are nearest-rank: the smallest value with at least `p`
//! percent of the values at or below it.

use std::collections::BTreeMap;

use hdrhistogram::Histogram;
use serde::Serialize;

/// Exact counts per request: a table of value to requests, so it serves any
/// whole-number figure whose percentiles must be exact (a latency in
/// microseconds too, at the cost of one entry per distinct value).
///
/// [`CountDist::bounded`] makes one whose table stops growing: past a
/// number of distinct values it keeps each value at 8 significant bits
/// (percentiles within 0.8 %, the sum, mean and largest value exact), as
/// the command's aggregates do for a count that takes a new value on
/// every request, such as a response's bytes.
#[derive(Debug, Clone, Default)]
pub struct CountDist {
    /// Value to number of requests with it (zeros not stored).
    table: BTreeMap<u64, u64>,
    /// Requests recorded with a value (zeros included).
    present: u64,
    sum: u64,
    /// The largest value recorded (exact when the table is not).
    max: u64,
    /// Distinct values kept exact; `None`: all of them.
    exact_values: Option<usize>,
    /// Whether the table holds values at 8 significant bits.
    coarse: bool,
}

/// `value` with all but its 8 highest significant bits cleared.
fn coarsen(value: u64) -> u64 {
    let bits = 64 - value.leading_zeros();
    if bits <= 8 {
        return value;
    }
    let shift = bits - 8;
    (value >> shift) << shift
}

/// A count's figures over every request of a class.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize)]
pub struct CountStats {
    /// Requests that had the figure with a value above 0.
    pub requests_with: u64,
    /// Mean per request.
    pub mean: f64,
    /// Smallest.
    pub min: u64,
    /// Median.
    pub p50: u64,
    /// 95th percentile.
    pub p95: u64,
    /// Largest.
    pub max: u64,
}

impl CountDist {
    /// One that keeps `exact_values` distinct values exact, then the rest
    /// (and those) at 8 significant bits, so its table holds at most
    /// `max(exact_values, 7,424)` entries.
    pub fn bounded(exact_values: usize) -> Self {
        CountDist {
            exact_values: Some(exact_values),
            ..CountDist::default()
        }
    }

    /// Whether every value is held exactly.
    pub fn is_exact(&self) -> bool {
        !self.coarse
    }

    /// Records one request's value.
    pub fn record(&mut self, value: u64) {
        self.present += 1;
        self.sum = self.sum.saturating_add(value);
        self.max = self.max.max(value);
        if value > 0 {
            self.add_requests(value, 1);
        }
    }

    /// Records one request's value without growing a table that has
    /// entries: a value it holds no entry for is counted at the nearest one
    /// it holds. Returns whether the value was kept as
    /// [`CountDist::record`] would have kept it.
    pub fn record_in_place(&mut self, value: u64) -> bool {
        self.present += 1;
        self.sum = self.sum.saturating_add(value);
        self.max = self.max.max(value);
        if value == 0 {
            return true;
        }
        let key = if self.coarse { coarsen(value) } else { value };
        if let Some(n) = self.table.get_mut(&key) {
            *n += 1;
            return true;
        }
        let below = self.table.range(..key).next_back().map(|(&k, _)| k);
        let above = self.table.range(key..).next().map(|(&k, _)| k);
        let nearest = match (below, above) {
            (Some(b), Some(a)) => Some(if key - b <= a - key { b } else { a }),
            (b, a) => b.or(a),
        };
        match nearest {
            Some(k) => {
                *self.table.get_mut(&k).expect("a key of the table") += 1;
                false
            }
            None => {
                // An empty table takes its first value: one entry.
                self.table.insert(key, 1);
                true
            }
        }
    }

    /// Heap bytes held, about (a B-tree entry with its share of a node).
    pub fn heap_bytes(&self) -> usize {
        self.table.len() * 40
    }

    /// Adds `n` requests of `value` to the table, coarsening it when it
    /// outgrows its bound.
    fn add_requests(&mut self, value: u64, n: u64) {
        let key = if self.coarse { coarsen(value) } else { value };
        *self.table.entry(key).or_default() += n;
        if !self.coarse && self.exact_values.is_some_and(|cap| self.table.len() > cap) {
            self.make_coarse();
        }
    }

    /// Keeps its values at 8 significant bits from now on, those held
    /// included.
    fn make_coarse(&mut self) {
        self.coarse = true;
        let exact = std::mem::take(&mut self.table);
        for (value, n) in exact {
            *self.table.entry(coarsen(value)).or_default() += n;
        }
    }

    /// The sum over every request.
    pub fn sum(&self) -> u64 {
        self.sum
    }

    /// The nearest-rank percentile `p` over `requests` requests, those not
    /// recorded (and those recorded as 0) being 0.
    pub fn percentile(&self, p: f64, requests: u64) -> u64 {
        let nonzero: u64 = self.table.values().sum();
        let requests = requests.max(nonzero);
        if requests == 0 {
            return 0;
        }
        let rank = nearest_rank(p, requests);
        let mut seen = requests - nonzero;
        if rank <= seen {
            return 0;
        }
        if rank == requests {
            // The largest is kept exact even when the table is not.
            return self.max;
        }
        for (&value, &n) in &self.table {
            seen += n;
            if seen >= rank {
                return value;
            }
        }
        self.table.keys().next_back().copied().unwrap_or(0)
    }

    /// The figures over `requests` requests.
    pub fn stats(&self, requests: u64) -> CountStats {
        let nonzero: u64 = self.table.values().sum();
        CountStats {
            requests_with: nonzero,
            mean: if requests == 0 {
                0.0
            } else {
                self.sum as f64 / requests as f64
            },
            min: self.percentile(0.0, requests),
            p50: self.percentile(50.0, requests),
            p95: self.percentile(95.0, requests),
            max: self.percentile(100.0, requests),
        }
    }

    /// Values and how many requests had each (0 not listed).
    pub fn values(&self) -> impl Iterator<Item = (u64, u64)> + '_ {
        self.table.iter().map(|(&v, &n)| (v, n))
    }

    /// Adds another distribution's requests (at 8 significant bits when
    /// either holds them so).
    pub fn merge(&mut self, other: &CountDist) {
        self.present += other.present;
        self.sum = self.sum.saturating_add(other.sum);
        self.max = self.max.max(other.max);
        if other.coarse && !self.coarse {
            self.make_coarse();
        }
        for (&value, &n) in &other.table {
            self.add_requests(value, n);
        }
    }
}

/// The 1-based nearest rank of percentile `p` among `n` values.
pub fn nearest_rank(p: f64, n: u64) -> u64 {
    let p = p.clamp(0.0, 100.0);
    ((p * n as f64 / 100.0).ceil() as u64).clamp(1, n)
}

/// Durations in microseconds (see the module documentation).
#[derive(Debug, Clone)]
pub struct TimeDist {
    /// The values while there are at most [`TimeDist::EXACT`] of them and
    /// no histogram; a uniform sample of them when
    /// [`TimeDist::record_in_place`] could not make one.
    exact: Vec<u64>,
    /// Every value once there were more.
    hist: Option<Box<Histogram<u64>>>,
    /// Values recorded.
    count: u64,
    sum: u64,
    /// Exact extremes (the histogram reports its bucket's edges).
    min: u64,
    max: u64,
}

/// A duration's figures, in microseconds.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize)]
pub struct TimeStats {
    /// Requests that had the figure.
    pub requests_with: u64,
    /// Sum over them.
    pub sum_us: u64,
    /// Mean over them.
    pub mean_us: f64,
    /// Median (within 1 %).
    pub p50_us: u64,
    /// 95th percentile (within 1 %).
    pub p95_us: u64,
    /// 99th percentile (within 1 %).
    pub p99_us: u64,
    /// Largest (exact).
    pub max_us: u64,
}

impl Default for TimeDist {
    fn default() -> Self {
        TimeDist {
            exact: Vec::new(),
            hist: None,
            count: 0,
            sum: 0,
            min: u64::MAX,
            max: 0,
        }
    }
}

/// Records `n` of a value into a histogram that grows to take it; past its
/// largest trackable value it keeps its top bucket.
fn record_in(hist: &mut Histogram<u64>, us: u64, n: u64) {
    if hist.record_n(us, n).is_err() {
        hist.saturating_record_n(us, n);
    }
}

/// splitmix64 of `x`: a fixed pseudo-random sequence, so a sample repeats.
pub(crate) fn splitmix(x: u64) -> u64 {
    let mut z = x.wrapping_add(0x9e37_79b9_7f4a_7c15);
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
}

impl TimeDist {
    /// Values kept as they are before a histogram is made.
    pub const EXACT: usize = 32;

    /// Records one duration.
    pub fn record(&mut self, us: u64) {
        let room = self.exact.len() < Self::EXACT && !self.is_sampled();
        match &mut self.hist {
            Some(hist) => record_in(hist, us, 1),
            None if room => self.exact.push(us),
            None => record_in(self.histogram(), us, 1),
        }
        self.note(us);
    }

    /// Records one duration without taking more memory than it holds: a
    /// histogram does not grow (a value past its range is counted in its
    /// top bucket), and past [`TimeDist::EXACT`] values without one the
    /// values become a uniform sample. Returns whether the value was kept
    /// as [`TimeDist::record`] would have kept it.
    pub fn record_in_place(&mut self, us: u64) -> bool {
        let room = self.exact.len() < Self::EXACT && !self.is_sampled();
        let kept = match &mut self.hist {
            Some(hist) if us <= hist.high() => {
                record_in(hist, us, 1);
                true
            }
            Some(hist) => {
                let high = hist.high();
                record_in(hist, high, 1);
                false
            }
            None if room => {
                self.exact.push(us);
                true
            }
            None => {
                // Reservoir sampling: the new value replaces a kept one
                // with the chance a uniform sample gives it.
                let at = splitmix(self.count) % (self.count + 1);
                if let Some(slot) = self.exact.get_mut(at as usize) {
                    *slot = us;
                }
                false
            }
        };
        self.note(us);
        kept
    }

    fn note(&mut self, us: u64) {
        self.count += 1;
        self.sum = self.sum.saturating_add(us);
        self.min = self.min.min(us);
        self.max = self.max.max(us);
    }

    /// Whether the values are a sample of those recorded (see
    /// [`TimeDist::record_in_place`]).
    pub fn is_sampled(&self) -> bool {
        self.hist.is_none() && self.count > self.exact.len() as u64
    }

    /// Heap bytes held, about.
    pub fn heap_bytes(&self) -> usize {
        self.exact.capacity() * 8 + self.hist.as_ref().map_or(0, |h| h.distinct_values() * 8)
    }

    /// The histogram, made from the values held when there is none yet.
    fn histogram(&mut self) -> &mut Histogram<u64> {
        if self.hist.is_none() {
            // Two significant digits, growing to the largest value seen.
            let mut hist = Histogram::new(2).expect("2 significant digits is a valid precision");
            for (v, n) in self.weighted_values() {
                record_in(&mut hist, v, n);
            }
            self.exact = Vec::new();
            self.hist = Some(Box::new(hist));
        }
        self.hist.as_mut().expect("made above")
    }

    /// Values recorded.
    pub fn len(&self) -> u64 {
        self.count
    }

    /// Whether nothing was recorded.
    pub fn is_empty(&self) -> bool {
        self.count == 0
    }

    /// The sum of the recorded values (exact).
    pub fn sum(&self) -> u64 {
        self.sum
    }

    /// The value at quantile `q` (0 to 1), as the histogram resolves it
    /// (within 1 %; exact while the values are few); the largest value
    /// exactly at 1.
    pub fn quantile(&self, q: f64) -> u64 {
        if self.is_empty() {
            return 0;
        }
        if q >= 1.0 {
            return self.max;
        }
        match &self.hist {
            Some(hist) => hist.value_at_quantile(q).clamp(self.min, self.max),
            None => {
                let mut sorted = self.exact.clone();
                sorted.sort_unstable();
                let rank = nearest_rank(q * 100.0, sorted.len() as u64);
                sorted[rank as usize - 1]
            }
        }
    }

    /// The figures of the recorded values.
    pub fn stats(&self) -> TimeStats {
        let n = self.len();
        TimeStats {
            requests_with: n,
            sum_us: self.sum,
            mean_us: if n == 0 {
                0.0
            } else {
                self.sum as f64 / n as f64
            },
            p50_us: self.quantile(0.5),
            p95_us: self.quantile(0.95),
            p99_us: self.quantile(0.99),
            max_us: self.quantile(1.0),
        }
    }

    /// The recorded values as `(value, how many)`: by the histogram's
    /// buckets once there is one, each sampled value standing for its share
    /// of the values when they are a sample.
    fn weighted_values(&self) -> Vec<(u64, u64)> {
        if let Some(hist) = &self.hist {
            return hist
                .iter_recorded()
                .map(|b| (b.value_iterated_to(), b.count_at_value()))
                .collect();
        }
        let kept = self.exact.len() as u64;
        self.exact
            .iter()
            .enumerate()
            .map(|(i, &v)| {
                // Shares that add up to the count exactly.
                let share = self.count / kept + u64::from((i as u64) < self.count % kept);
                (v, share)
            })
            .collect()
    }

    /// Requests per bin of `bins` log-spaced bins from the smallest to the
    /// largest value: `(upper bound in µs, requests)`.
    pub fn log_bins(&self, bins: usize) -> Vec<(u64, u64)> {
        if self.is_empty() || bins == 0 {
            return Vec::new();
        }
        let low = self.min.max(1) as f64;
        let high = (self.max.max(1) as f64).max(low * 1.01);
        let step = (high / low).powf(1.0 / bins as f64);
        let bounds: Vec<u64> = (1..=bins)
            .map(|i| (low * step.powi(i as i32)).ceil() as u64)
            .collect();
        let mut counts = vec![0u64; bins];
        for (value, n) in self.weighted_values() {
            let at = bounds.partition_point(|&b| b < value).min(bins - 1);
            counts[at] += n;
        }
        bounds.into_iter().zip(counts).collect()
    }

    /// Adds another distribution's values.
    pub fn merge(&mut self, other: &TimeDist) {
        let (count, sum, min, max) = (self.count, self.sum, self.min, self.max);
        if other.hist.is_none() && !other.is_sampled() {
            other.exact.iter().for_each(|&v| self.record(v));
        } else {
            let theirs = other.weighted_values();
            let hist = self.histogram();
            for (v, n) in theirs {
                record_in(hist, v, n);
            }
        }
        self.count = count + other.count;
        self.sum = sum.saturating_add(other.sum);
        self.min = min.min(other.min);
        self.max = max.max(other.max);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counts_are_exact_with_absent_requests_as_zero() {
        let mut d = CountDist::default();
        for v in [13, 13, 13, 14] {
            d.record(v);
        }
        // Six requests, two without the figure.
        let s = d.stats(6);
        assert_eq!((s.min, s.p50, s.p95, s.max), (0, 13, 14, 14));
        assert_eq!(s.requests_with, 4);
        assert!((s.mean - 53.0 / 6.0).abs() < 1e-9);
        assert_eq!(d.percentile(33.0, 6), 0);
        assert_eq!(d.percentile(34.0, 6), 13);
        assert_eq!(CountDist::default().stats(0), CountStats::default());
    }

    #[test]
    fn a_bounded_count_keeps_eight_significant_bits_past_its_bound() {
        let mut d = CountDist::bounded(1000);
        let mut exact = CountDist::default();
        for v in 1..=100_000u64 {
            d.record(v * 7);
            exact.record(v * 7);
        }
        assert!(!d.is_exact() && exact.is_exact());
        assert!(d.table.len() <= 7424, "{}", d.table.len());
        let (s, e) = (d.stats(100_000), exact.stats(100_000));
        assert_eq!(
            (s.max, s.mean, s.requests_with),
            (e.max, e.mean, e.requests_with)
        );
        for (got, want) in [(s.p50, e.p50), (s.p95, e.p95), (s.min, e.min)] {
            assert!(
                got <= want && (want - got) as f64 / want as f64 <= 1.0 / 128.0,
                "{got} {want}"
            );
        }
        // Up to the bound it is exact.
        let mut few = CountDist::bounded(1000);
        (1..=1000).for_each(|v| few.record(v * 1_000_003));
        assert!(few.is_exact());
        assert_eq!(few.percentile(50.0, 1000), 500 * 1_000_003);
        assert_eq!(
            (coarsen(255), coarsen(256), coarsen(1023)),
            (255, 256, 1020)
        );
        // Merging a coarse one makes the other coarse too.
        few.merge(&d);
        assert!(!few.is_exact());
        assert_eq!(few.stats(101_000).max, 1000 * 1_000_003);
    }

    #[test]
    fn recording_in_place_takes_no_more_room() {
        let mut c = CountDist::default();
        assert!(c.record_in_place(10), "an empty table takes its first");
        assert!(c.record_in_place(10) && c.record_in_place(0));
        c.record(100);
        let bytes = c.heap_bytes();
        assert!(!c.record_in_place(40), "counted at 10, the nearest");
        assert!(!c.record_in_place(70), "counted at 100");
        assert_eq!(c.heap_bytes(), bytes);
        assert_eq!(c.values().collect::<Vec<_>>(), [(10, 3), (100, 2)]);
        assert_eq!((c.sum(), c.stats(6).max), (230, 100));

        let mut t = TimeDist::default();
        for us in 1..=TimeDist::EXACT as u64 {
            assert!(t.record_in_place(us));
        }
        // No histogram can be made: a uniform sample of 32 stands in.
        for us in 33..=10_000u64 {
            assert!(!t.record_in_place(us));
        }
        assert!(t.is_sampled());
        assert_eq!((t.len(), t.sum()), (10_000, 5_000 * 10_001));
        assert_eq!(t.quantile(1.0), 10_000);
        let median = t.quantile(0.5);
        assert!((2_000..8_000).contains(&median), "{median}");
        let bins = t.log_bins(8);
        assert_eq!(bins.iter().map(|b| b.1).sum::<u64>(), 10_000);
        // A histogram stays within its range: a later, larger value is
        // counted in its top bucket.
        let mut h = TimeDist::default();
        (1..=100).for_each(|us| h.record(us));
        let bytes = h.heap_bytes();
        assert!(!h.record_in_place(1 << 40));
        assert_eq!(h.heap_bytes(), bytes);
        assert_eq!((h.len(), h.quantile(1.0)), (101, 1 << 40));
        // Merging a sample keeps its count.
        let mut m = TimeDist::default();
        m.record(5);
        m.merge(&t);
        assert_eq!(m.len(), 10_001);
    }

    #[test]
    fn times_are_within_one_percent() {
        let mut d = TimeDist::default();
        for us in 1..=10_000u64 {
            d.record(us * 100);
        }
        let s = d.stats();
        assert_eq!(s.max_us, 1_000_000);
        assert_eq!(s.sum_us, (1..=10_000u64).map(|x| x * 100).sum::<u64>());
        for (got, want) in [
            (s.p50_us, 500_000.0),
            (s.p95_us, 950_000.0),
            (s.p99_us, 990_000.0),
        ] {
            assert!((got as f64 - want).abs() / want < 0.01, "{got} vs {want}");
        }
        let bins = d.log_bins(10);
        assert_eq!(bins.len(), 10);
        assert_eq!(bins.iter().map(|b| b.1).sum::<u64>(), 10_000);
        assert!(bins.last().unwrap().0 >= 1_000_000);
    }

    #[test]
    fn merging_adds_requests() {
        let (mut a, mut b) = (TimeDist::default(), TimeDist::default());
        a.record(10);
        b.record(30);
        a.merge(&b);
        assert_eq!((a.len(), a.sum(), a.quantile(1.0)), (2, 40, 30));
        let (mut c, mut d) = (CountDist::default(), CountDist::default());
        c.record(1);
        d.record(2);
        c.merge(&d);
        assert_eq!(c.stats(2).max, 2);
    }
}
