//! N+1 suspects: per endpoint class, the store methods (`store_<M>_n`) and
//! repeated SQL statements (`sql_repeated_n`) whose calls per request are
//! high, or grow with the size of the response.
//!
//! The rule, for one class and one such count:
//!
//! - the class has at least [`Rule::min_requests`] requests (20), and
//! - its 95th percentile per request is at least [`Rule::p95`] (20), *or*
//!   it grows with the response: Spearman's rank correlation between the
//!   count and the response's size over the class's requests is at least
//!   [`Rule::rho`] (0.5), with at least [`GROWS_FROM`] calls at p95 (a
//!   method called once or twice more on large responses is not a loop).
//!
//! The response's size is the class's first count field, by name, of
//! `response_bytes`, then any other `..bytes`, then `..rows` / `..items`
//! (each also with `_n`), unless [`Rule::size_key`] names one. A class
//! whose lines carry none is judged by the percentile alone. The class
//! `(other)`, where classes past the class bound are folded, is not judged.
//!
//! Percentiles are exact (over every request); the correlation is over a
//! uniform sample of [`SAMPLE`] requests per class ([`RequestSample`]), so
//! memory does not grow with the lines.

use serde::Serialize;

use crate::aggregate::{ClassAgg, Figure, OTHER};
use crate::dist::CountStats;
pub use crate::request_sample::{is_source, RequestSample, SAMPLE};

/// The p95 a growing count needs to be a suspect.
pub const GROWS_FROM: u64 = 3;

/// Spearman's rank correlation of two equally long series (ties take their
/// mean rank); `None` when either is constant or there are fewer than two.
pub fn spearman(xs: &[u32], ys: &[u32]) -> Option<f64> {
    if xs.len() != ys.len() || xs.len() < 2 {
        return None;
    }
    let (rx, ry) = (ranks(xs), ranks(ys));
    let mean = (xs.len() as f64 + 1.0) / 2.0;
    let (mut sxy, mut sxx, mut syy) = (0.0, 0.0, 0.0);
    for (a, b) in rx.iter().zip(&ry) {
        let (dx, dy) = (a - mean, b - mean);
        sxy += dx * dy;
        sxx += dx * dx;
        syy += dy * dy;
    }
    if sxx == 0.0 || syy == 0.0 {
        return None;
    }
    Some(sxy / (sxx * syy).sqrt())
}

/// 1-based ranks, ties given the mean of the ranks they span.
fn ranks(values: &[u32]) -> Vec<f64> {
    let mut order: Vec<usize> = (0..values.len()).collect();
    order.sort_by_key(|&i| values[i]);
    let mut out = vec![0.0; values.len()];
    let mut start = 0;
    while start < order.len() {
        let mut end = start;
        while end + 1 < order.len() && values[order[end + 1]] == values[order[start]] {
            end += 1;
        }
        let rank = (start + end) as f64 / 2.0 + 1.0;
        for &i in &order[start..=end] {
            out[i] = rank;
        }
        start = end + 1;
    }
    out
}

/// What makes a count a suspect (see the module documentation).
#[derive(Debug, Clone, PartialEq)]
pub struct Rule {
    /// Requests a class needs before any of its counts is judged.
    pub min_requests: u64,
    /// A count at least this high at p95 is a suspect.
    pub p95: u64,
    /// A count whose rank correlation with the size is at least this is a
    /// suspect (with at least [`GROWS_FROM`] calls at p95).
    pub rho: f64,
    /// The field that stands for the response's size, instead of the one
    /// found by name.
    pub size_key: Option<String>,
}

impl Default for Rule {
    fn default() -> Self {
        Rule {
            min_requests: 20,
            p95: 20,
            rho: 0.5,
            size_key: None,
        }
    }
}

/// One suspect count of one class, with the figures that made it one.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Suspect {
    /// The endpoint class.
    pub endpoint: String,
    /// The count's field name (`store_GetUser_n`, `sql_repeated_n`).
    pub key: String,
    /// Requests of the class.
    pub requests: u64,
    /// The count per request over every request of the class.
    pub calls: CountStats,
    /// The field read as the response's size, when the class has one.
    pub size_key: Option<String>,
    /// Spearman's correlation of the count with the size over the sampled
    /// requests, when both vary.
    pub rho: Option<f64>,
    /// Requests the correlation is over.
    pub sampled: usize,
    /// Why it is a suspect: `p95 84 >= 20`, `grows with rows (rho 0.98 >= 0.5)`.
    pub why: Vec<String>,
}

/// The suspects of one class, by key.
pub fn of_class(endpoint: &str, class: &ClassAgg, rule: &Rule) -> Vec<Suspect> {
    // The classes folded past the class bound are many endpoints' requests
    // together: their spread is not one endpoint's.
    if class.requests < rule.min_requests || endpoint == OTHER {
        return Vec::new();
    }
    let sample = &class.sample;
    let size_key = match &rule.size_key {
        Some(key) => sample.has_column(key).then_some(key.as_str()),
        None => sample.size_key(),
    };
    let size = size_key.map(|key| sample.column(key));
    let mut keys: Vec<&String> = class.figures.keys().filter(|k| is_source(k)).collect();
    keys.sort();
    let mut out = Vec::new();
    for key in keys {
        let Some(Figure::Count(dist)) = class.figures.get(key) else {
            continue;
        };
        let calls = dist.stats(class.requests);
        let rho = size
            .as_ref()
            .filter(|_| sample.len() as u64 >= rule.min_requests)
            .and_then(|size| spearman(&sample.column(key), size));
        let mut why = Vec::new();
        if calls.p95 >= rule.p95 {
            why.push(format!("p95 {} >= {}", calls.p95, rule.p95));
        }
        if let (Some(r), Some(size_key)) = (rho, size_key) {
            if r >= rule.rho && calls.p95 >= GROWS_FROM {
                why.push(format!(
                    "grows with {size_key} (rho {r:.2} >= {})",
                    rule.rho
                ));
            }
        }
        if !why.is_empty() {
            out.push(Suspect {
                endpoint: endpoint.to_owned(),
                key: key.clone(),
                requests: class.requests,
                calls,
                size_key: size_key.map(str::to_owned),
                rho,
                sampled: sample.len(),
                why,
            });
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn spearman_reads_ranks_with_ties() {
        assert_eq!(spearman(&[1, 2, 3, 4], &[10, 20, 30, 40]), Some(1.0));
        assert_eq!(spearman(&[1, 2, 3, 4], &[40, 30, 20, 10]), Some(-1.0));
        // Monotone but not linear: still 1.
        assert_eq!(spearman(&[1, 2, 3, 4], &[1, 4, 9, 1000]), Some(1.0));
        assert_eq!(spearman(&[3, 3, 3], &[1, 2, 3]), None);
        assert_eq!(spearman(&[1], &[1]), None);
        let r = spearman(&[1, 1, 2, 2], &[1, 2, 3, 4]).unwrap();
        assert!((r - 0.894_427).abs() < 1e-5, "{r}");
        assert_eq!(ranks(&[5, 1, 5, 3]), [3.5, 1.0, 3.5, 2.0]);
    }

    #[test]
    fn a_class_is_judged_on_enough_requests_and_other_is_not() {
        let mut agg = crate::aggregate::Aggregate::new(0);
        for i in 0..30 {
            let text = format!(
                r#"{{"msg":"perf_trace","endpoint":"a","elapsed_us":1,"store_X_n":50,"store_Y_n":{},"rows":{}}}"#,
                i % 5 + 1,
                i % 5
            );
            let crate::line::Parsed::Perf(line) = crate::line::parse(&text) else {
                panic!("{text}")
            };
            agg.add(&line, &text);
            if i == 18 {
                assert!(of_class("a", &agg.classes["a"], &Rule::default()).is_empty());
            }
        }
        let class = &agg.classes["a"];
        let found = of_class("a", class, &Rule::default());
        let keys: Vec<&str> = found.iter().map(|s| s.key.as_str()).collect();
        assert_eq!(keys, ["store_X_n", "store_Y_n"]);
        assert_eq!(found[0].why, ["p95 50 >= 20"]);
        assert_eq!(
            found[0].rho, None,
            "a constant count has no rank correlation"
        );
        assert_eq!(found[1].why, ["grows with rows (rho 1.00 >= 0.5)"]);
        assert!(of_class(OTHER, class, &Rule::default()).is_empty());
    }
}
