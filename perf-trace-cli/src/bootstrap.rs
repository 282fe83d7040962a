//! A 95 % bootstrap interval on the ratio of two medians, drawn from the
//! histograms themselves rather than from kept samples.
//!
//! The median of a bootstrap resample of `n` values is the `k`-th smallest
//! of `n` draws from the empirical distribution (`k` the median's nearest
//! rank). The `k`-th smallest of `n` uniform draws follows Beta(k, n + 1 - k),
//! and the empirical quantile function maps it to the resample's median, so
//! one Beta draw per side gives one bootstrap replicate exactly, whatever
//! `n` is. The seed is fixed: the same two logs give the same interval.

use rand::rngs::StdRng;
use rand::SeedableRng;
use rand_distr::{Beta, Distribution};
use serde::Serialize;

use crate::dist::{nearest_rank, TimeDist};

/// Bootstrap replicates per interval.
pub const REPLICATES: usize = 2000;

const SEED: u64 = 0x5eed_0f7e;

/// The ratio of medians `after / before` and its 95 % interval.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct RatioInterval {
    /// Median after over median before (each at least 1 µs).
    pub ratio: f64,
    /// 2.5th percentile of the bootstrap ratios.
    pub low: f64,
    /// 97.5th percentile of the bootstrap ratios.
    pub high: f64,
}

struct MedianSampler<'a> {
    dist: &'a TimeDist,
    beta: Beta<f64>,
}

impl<'a> MedianSampler<'a> {
    fn new(dist: &'a TimeDist) -> Option<Self> {
        let n = dist.len();
        if n == 0 {
            return None;
        }
        let k = nearest_rank(50.0, n) as f64;
        let beta = Beta::new(k, n as f64 + 1.0 - k).ok()?;
        Some(MedianSampler { dist, beta })
    }

    fn draw(&self, rng: &mut StdRng) -> f64 {
        self.dist.quantile(self.beta.sample(rng)).max(1) as f64
    }
}

/// The ratio of the medians of `after` and `before` with its 95 %
/// bootstrap interval; `None` when either side is empty.
pub fn ratio_of_medians(before: &TimeDist, after: &TimeDist) -> Option<RatioInterval> {
    let (b, a) = (MedianSampler::new(before)?, MedianSampler::new(after)?);
    let mut rng = StdRng::seed_from_u64(SEED);
    let mut ratios: Vec<f64> = (0..REPLICATES)
        .map(|_| a.draw(&mut rng) / b.draw(&mut rng))
        .collect();
    ratios.sort_by(f64::total_cmp);
    let at = |p: f64| ratios[(nearest_rank(p, REPLICATES as u64) - 1) as usize];
    Some(RatioInterval {
        ratio: after.quantile(0.5).max(1) as f64 / before.quantile(0.5).max(1) as f64,
        low: at(2.5),
        high: at(97.5),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn dist(values: impl IntoIterator<Item = u64>) -> TimeDist {
        let mut d = TimeDist::default();
        for v in values {
            d.record(v);
        }
        d
    }

    #[test]
    fn same_data_gives_an_interval_around_one() {
        let d = dist((0..2000).map(|i| 1000 + (i * 7919) % 1000));
        let r = ratio_of_medians(&d, &d).unwrap();
        assert_eq!(r.ratio, 1.0);
        assert!(r.low < 1.0 && r.high > 1.0, "{r:?}");
        assert!(r.low > 0.9 && r.high < 1.1, "{r:?}");
    }

    #[test]
    fn a_doubling_is_seen_with_a_tight_interval() {
        let before = dist((0..2000).map(|i| 1000 + (i * 7919) % 200));
        let after = dist((0..2000).map(|i| 2000 + (i * 7919) % 400));
        let r = ratio_of_medians(&before, &after).unwrap();
        assert!((r.ratio - 2.0).abs() < 0.05, "{r:?}");
        assert!(r.low > 1.8 && r.high < 2.2, "{r:?}");
    }

    #[test]
    fn few_values_give_a_wide_interval_and_none_gives_none() {
        let r = ratio_of_medians(&dist([100, 1000, 10_000]), &dist([100, 1000, 10_000])).unwrap();
        assert!(r.low <= 0.1 + 1e-9 && r.high >= 10.0 - 1e-9, "{r:?}");
        assert_eq!(ratio_of_medians(&TimeDist::default(), &dist([1])), None);
    }
}
