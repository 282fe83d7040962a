//! Small, exact statistics over latency samples.
//!
//! Everything here sorts a copy of the samples and reads exact values: no
//! histogram buckets, no interpolation between samples except for the median
//! of an even number of samples (the mean of the two middle values).
//!
//! - [`median`]: the middle value, or the mean of the two middle values.
//! - [`stddev`]: the *population* standard deviation (divides by `n`), so one
//!   sample has a deviation of 0 and nothing is undefined for `n >= 1`.
//! - [`percentile`]: nearest rank: the smallest sample such that at least
//!   `p` percent of the samples are less than or equal to it
//!   (`rank = ceil(p / 100 * n)`, 1-based, at least 1).
//!
//! Every function returns `None` for an empty slice.
//!
//! Latencies and per-request counts go into `perf-trace-cli`'s exact
//! distribution ([`CountDist`]), the one its summaries keep counts in, so a
//! per-endpoint table here and `perf-trace summary` rank values alike.

use perf_trace_cli::dist::{self, CountDist, CountStats};

use crate::report::LatencySummary;

fn sorted(samples: &[f64]) -> Vec<f64> {
    let mut v = samples.to_vec();
    v.sort_by(f64::total_cmp);
    v
}

/// The median: the middle value of the sorted samples, or the mean of the two
/// middle values for an even count.
pub fn median(samples: &[f64]) -> Option<f64> {
    if samples.is_empty() {
        return None;
    }
    let v = sorted(samples);
    let mid = v.len() / 2;
    Some(if v.len() % 2 == 1 {
        v[mid]
    } else {
        (v[mid - 1] + v[mid]) / 2.0
    })
}

/// The smallest sample.
pub fn min(samples: &[f64]) -> Option<f64> {
    samples.iter().copied().min_by(f64::total_cmp)
}

/// The largest sample.
pub fn max(samples: &[f64]) -> Option<f64> {
    samples.iter().copied().max_by(f64::total_cmp)
}

/// The arithmetic mean.
pub fn mean(samples: &[f64]) -> Option<f64> {
    if samples.is_empty() {
        return None;
    }
    Some(samples.iter().sum::<f64>() / samples.len() as f64)
}

/// The population standard deviation: `sqrt(sum((x - mean)^2) / n)`.
pub fn stddev(samples: &[f64]) -> Option<f64> {
    let m = mean(samples)?;
    let var = samples.iter().map(|x| (x - m) * (x - m)).sum::<f64>() / samples.len() as f64;
    Some(var.sqrt())
}

/// The 1-based nearest rank of percentile `p` (clamped to `0..=100`) among `n`
/// samples: `ceil(p / 100 * n)`, at least 1. `n` must be at least 1.
pub fn nearest_rank(p: f64, n: usize) -> usize {
    let p = if p.is_nan() { 0.0 } else { p };
    dist::nearest_rank(p, n as u64) as usize
}

/// The nearest-rank percentile `p` (0 to 100) of `samples`.
pub fn percentile(samples: &[f64], p: f64) -> Option<f64> {
    if samples.is_empty() {
        return None;
    }
    let v = sorted(samples);
    Some(percentile_of_sorted(&v, p))
}

/// The nearest-rank percentile `p` of samples already sorted ascending.
/// Panics on an empty slice.
fn percentile_of_sorted(sorted: &[f64], p: f64) -> f64 {
    sorted[nearest_rank(p, sorted.len()) - 1]
}

/// Rounds a millisecond value to microsecond precision (three decimals), so
/// reports do not carry float noise such as `1.2000000000000002`.
pub fn round_ms(ms: f64) -> f64 {
    (ms * 1000.0).round() / 1000.0
}

/// Latency samples in microseconds as an exact distribution.
pub fn latency_dist(samples_us: impl IntoIterator<Item = u32>) -> CountDist {
    let mut dist = CountDist::default();
    for us in samples_us {
        dist.record(u64::from(us));
    }
    dist
}

/// Summarizes an exact distribution of `count` latencies in microseconds:
/// the mean, the nearest-rank p50/p75/p90/p95/p99 and the maximum, all in
/// milliseconds. The latency fields are `None` when there are no samples.
pub fn latency_summary(dist: &CountDist, count: u64) -> LatencySummary {
    if count == 0 {
        return LatencySummary::default();
    }
    let ms = |us: u64| round_ms(us as f64 / 1000.0);
    let pick = |p: f64| Some(ms(dist.percentile(p, count)));
    LatencySummary {
        count,
        avg_ms: Some(round_ms(dist.sum() as f64 / count as f64 / 1000.0)),
        p50_ms: pick(50.0),
        p75_ms: pick(75.0),
        p90_ms: pick(90.0),
        p95_ms: pick(95.0),
        p99_ms: pick(99.0),
        max_ms: pick(100.0),
    }
}

/// [`latency_summary`] of latency samples given in microseconds.
pub fn latency_summary_us(samples_us: &[u32]) -> LatencySummary {
    latency_summary(
        &latency_dist(samples_us.iter().copied()),
        samples_us.len() as u64,
    )
}

/// The smallest and largest of per-request counts, `None` without any.
pub fn count_range(counts: impl IntoIterator<Item = u64>) -> Option<(u64, u64)> {
    let mut dist = CountDist::default();
    let mut requests = 0;
    for count in counts {
        dist.record(count);
        requests += 1;
    }
    let CountStats { min, max, .. } = dist.stats(requests);
    (requests > 0).then_some((min, max))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn empty_is_none() {
        assert_eq!(median(&[]), None);
        assert_eq!(min(&[]), None);
        assert_eq!(max(&[]), None);
        assert_eq!(mean(&[]), None);
        assert_eq!(stddev(&[]), None);
        assert_eq!(percentile(&[], 50.0), None);
        let s = latency_summary_us(&[]);
        assert_eq!(s.count, 0);
        assert_eq!(s.p50_ms, None);
        assert_eq!(s.max_ms, None);
    }

    #[test]
    fn median_odd_and_even() {
        assert_eq!(median(&[3.0, 1.0, 2.0]), Some(2.0));
        assert_eq!(median(&[4.0, 1.0, 3.0, 2.0]), Some(2.5));
        assert_eq!(median(&[7.0]), Some(7.0));
    }

    #[test]
    fn min_max_mean() {
        let s = [5.0, -1.0, 10.0, 2.0];
        assert_eq!(min(&s), Some(-1.0));
        assert_eq!(max(&s), Some(10.0));
        assert_eq!(mean(&s), Some(4.0));
    }

    #[test]
    fn stddev_is_population() {
        // The classic example: mean 5, population variance 4.
        let s = [2.0, 4.0, 4.0, 4.0, 5.0, 5.0, 7.0, 9.0];
        assert_eq!(stddev(&s), Some(2.0));
        assert_eq!(stddev(&[3.0]), Some(0.0));
    }

    #[test]
    fn nearest_rank_percentiles() {
        // 1..=10: p50 is the 5th value, p90 the 9th, p95 and p99 the 10th.
        let s: Vec<f64> = (1..=10).rev().map(f64::from).collect();
        assert_eq!(percentile(&s, 50.0), Some(5.0));
        assert_eq!(percentile(&s, 90.0), Some(9.0));
        assert_eq!(percentile(&s, 95.0), Some(10.0));
        assert_eq!(percentile(&s, 99.0), Some(10.0));
        assert_eq!(percentile(&s, 100.0), Some(10.0));
        assert_eq!(percentile(&s, 0.0), Some(1.0));
        assert_eq!(percentile(&s, 10.0), Some(1.0));
        assert_eq!(percentile(&s, 11.0), Some(2.0));
        // Out-of-range and NaN percentiles are clamped.
        assert_eq!(percentile(&s, 250.0), Some(10.0));
        assert_eq!(percentile(&s, f64::NAN), Some(1.0));
    }

    #[test]
    fn nearest_rank_of_one_hundred() {
        let s: Vec<f64> = (1..=100).map(f64::from).collect();
        assert_eq!(percentile(&s, 50.0), Some(50.0));
        assert_eq!(percentile(&s, 95.0), Some(95.0));
        assert_eq!(percentile(&s, 99.0), Some(99.0));
        assert_eq!(percentile(&s, 99.5), Some(100.0));
        assert_eq!(nearest_rank(0.0, 1), 1);
        assert_eq!(nearest_rank(100.0, 1), 1);
    }

    #[test]
    fn latency_summary_in_ms() {
        // 1 ms .. 20 ms in microseconds, unsorted.
        let mut us: Vec<u32> = (1..=20).map(|i| i * 1000).collect();
        us.reverse();
        let s = latency_summary_us(&us);
        assert_eq!(s.count, 20);
        assert_eq!(s.avg_ms, Some(10.5));
        assert_eq!(s.p50_ms, Some(10.0));
        assert_eq!(s.p90_ms, Some(18.0));
        assert_eq!(s.p95_ms, Some(19.0));
        assert_eq!(s.p99_ms, Some(20.0));
        assert_eq!(s.max_ms, Some(20.0));
        let one = latency_summary_us(&[1234]);
        assert_eq!(one.avg_ms, Some(1.234));
        assert_eq!(one.p99_ms, Some(1.234));
    }

    #[test]
    fn rounding() {
        assert_eq!(round_ms(1.2000000000000002), 1.2);
        assert_eq!(round_ms(0.0004), 0.0);
        assert_eq!(round_ms(2.0006), 2.001);
    }
}
