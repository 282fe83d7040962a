//! Tail sampling: whether a finished request keeps its line (and its span),
//! decided when it ends, from what it did.
//!
//! A request is kept when it is slow (over its endpoint's threshold), when
//! it failed with a 5xx or without a response, when it asked for the perf
//! headers and got them, or when it is the 1 in N of the rest. Lines of
//! event streams (`sse_stage`) are always kept: a stream is long-lived and
//! its connect and close lines belong together. Exits that see every
//! request (metrics) count the others too, and the sampled-out ones apart.
//!
//! Without a [`TailSampling`] on the [`Emitter`], every
//! request keeps its line, as the contract says.
//!
//! ```
//! use std::time::Duration;
//! use perf_trace_core::exits::sampling::TailSampling;
//! use perf_trace_core::exits::RequestFacts;
//! use perf_trace_core::Snapshot;
//!
//! let sampling = TailSampling::one_in(100)
//!     .slow_over(Duration::from_millis(250))
//!     .slow_over_for("orders.get", Duration::from_millis(20));
//! let fast = Snapshot { endpoint: "orders.get", elapsed: Duration::from_millis(5), ..Snapshot::default() };
//! let slow = Snapshot { elapsed: Duration::from_millis(30), ..fast.clone() };
//! let ok = RequestFacts { status: Some(200), ..RequestFacts::default() };
//! let failed = RequestFacts { status: Some(503), ..RequestFacts::default() };
//!
//! assert!(sampling.keep(&slow, &ok));
//! assert!(sampling.keep(&fast, &failed));
//! // 1 in 100 of the fast successes: the first is kept, the next 99 are not.
//! let kept = (0..100).filter(|_| sampling.keep(&fast, &ok)).count();
//! assert_eq!(kept, 1);
//! assert_eq!(sampling.sampled_out(), 99);
//! ```

use std::borrow::Cow;
use std::sync::atomic::{AtomicU64, Ordering::Relaxed};
use std::time::Duration;

use crate::emitter::{Emitter, Sampler};
use crate::exits::RequestFacts;
use crate::snapshot::Snapshot;

/// Why a request's line was kept or not.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Verdict {
    /// Over its endpoint's threshold.
    Slow,
    /// A 5xx, or no response at all.
    Failed,
    /// It asked for the perf headers and was allowed them.
    PerfHeaders,
    /// A stream's connect or close line.
    Stream,
    /// The 1 in N of the rest.
    Chosen,
    /// Sampled out: no line, no span.
    Dropped,
}

impl Verdict {
    /// Whether the request keeps its line and span.
    pub fn kept(self) -> bool {
        self != Verdict::Dropped
    }
}

/// A tail-sampling policy (see the [module](self)).
#[derive(Debug)]
pub struct TailSampling {
    one_in: u64,
    slow_default: Option<Duration>,
    slow_by_endpoint: Vec<(Cow<'static, str>, Duration)>,
    seen: AtomicU64,
    sampled_out: AtomicU64,
}

impl Clone for TailSampling {
    /// The same policy, with its own counts.
    fn clone(&self) -> Self {
        TailSampling {
            one_in: self.one_in,
            slow_default: self.slow_default,
            slow_by_endpoint: self.slow_by_endpoint.clone(),
            seen: AtomicU64::new(0),
            sampled_out: AtomicU64::new(0),
        }
    }
}

impl TailSampling {
    /// Keeps 1 in `n` of the requests no rule keeps (`0` and `1` keep all).
    pub fn one_in(n: u64) -> Self {
        TailSampling {
            one_in: n.max(1),
            slow_default: None,
            slow_by_endpoint: Vec::new(),
            seen: AtomicU64::new(0),
            sampled_out: AtomicU64::new(0),
        }
    }

    /// Keeps every request slower than `threshold`, on an endpoint with no
    /// threshold of its own.
    pub fn slow_over(mut self, threshold: Duration) -> Self {
        self.slow_default = Some(threshold);
        self
    }

    /// Keeps every request of endpoint class `endpoint` (its rendered name)
    /// slower than `threshold`.
    pub fn slow_over_for(
        mut self,
        endpoint: impl Into<Cow<'static, str>>,
        threshold: Duration,
    ) -> Self {
        let endpoint = endpoint.into();
        self.slow_by_endpoint.retain(|(name, _)| *name != endpoint);
        self.slow_by_endpoint.push((endpoint, threshold));
        self
    }

    /// The N of "1 in N".
    pub fn rate(&self) -> u64 {
        self.one_in
    }

    /// The slow threshold of endpoint class `endpoint`, if any.
    pub fn threshold(&self, endpoint: &str) -> Option<Duration> {
        self.slow_by_endpoint
            .iter()
            .find(|(name, _)| name == endpoint)
            .map(|(_, threshold)| *threshold)
            .or(self.slow_default)
    }

    /// Decides one finished request (each call counts it).
    pub fn decide(&self, snapshot: &Snapshot, facts: &RequestFacts) -> Verdict {
        let verdict = if snapshot.sse_stage.is_some() {
            Verdict::Stream
        } else if facts.status.is_none_or(|status| status >= 500) {
            Verdict::Failed
        } else if facts.perf_headers {
            Verdict::PerfHeaders
        } else if self
            .threshold(snapshot.endpoint)
            .is_some_and(|threshold| snapshot.elapsed > threshold)
        {
            Verdict::Slow
        } else if self.seen.fetch_add(1, Relaxed).is_multiple_of(self.one_in) {
            Verdict::Chosen
        } else {
            Verdict::Dropped
        };
        if !verdict.kept() {
            self.sampled_out.fetch_add(1, Relaxed);
        }
        verdict
    }

    /// Whether a finished request keeps its line and span (see [`decide`](Self::decide)).
    pub fn keep(&self, snapshot: &Snapshot, facts: &RequestFacts) -> bool {
        self.decide(snapshot, facts).kept()
    }

    /// Requests sampled out so far.
    pub fn sampled_out(&self) -> u64 {
        self.sampled_out.load(Relaxed)
    }
}

impl Sampler for TailSampling {
    fn keep(&self, snapshot: &Snapshot, facts: &RequestFacts) -> bool {
        TailSampling::keep(self, snapshot, facts)
    }

    fn clone_box(&self) -> Box<dyn Sampler> {
        Box::new(self.clone())
    }
}

impl Emitter {
    /// Writes the line (and hands the request to the exits that want kept
    /// requests only) only for the requests `sampling` keeps. Without it,
    /// every request keeps its line.
    pub fn with_sampling(self, sampling: TailSampling) -> Self {
        self.with_sampler(Box::new(sampling))
    }

    /// The tail-sampling policy, if any (its count of sampled-out requests).
    pub fn sampling(&self) -> Option<&TailSampling> {
        let sampler: &dyn std::any::Any = self.sampler()?;
        sampler.downcast_ref()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::snapshot::SseStage;

    fn request(endpoint: &'static str, ms: u64) -> Snapshot {
        Snapshot {
            endpoint,
            elapsed: Duration::from_millis(ms),
            ..Snapshot::default()
        }
    }

    fn status(status: u16) -> RequestFacts {
        RequestFacts {
            status: Some(status),
            ..RequestFacts::default()
        }
    }

    #[test]
    fn every_rule_keeps_what_it_names() {
        let sampling = TailSampling::one_in(1_000_000)
            .slow_over(Duration::from_millis(100))
            .slow_over_for("list", Duration::from_millis(10));
        let asked = RequestFacts {
            perf_headers: true,
            ..status(200)
        };
        let stream = request("sse", 1).with_stage(Some(SseStage::Connect));
        // Decided in order: the first request of the "rest" is the 1 in N,
        // and uses it up.
        let cases = [
            (request("a", 1), status(200), Verdict::Chosen),
            (request("list", 11), status(200), Verdict::Slow),
            (request("list", 9), status(200), Verdict::Dropped),
            (request("other", 101), status(200), Verdict::Slow),
            (request("other", 99), status(404), Verdict::Dropped),
            (request("other", 1), status(500), Verdict::Failed),
            (
                request("other", 1),
                RequestFacts::default(),
                Verdict::Failed,
            ),
            (request("other", 1), asked, Verdict::PerfHeaders),
            (stream, status(200), Verdict::Stream),
        ];
        for (i, (snapshot, facts, verdict)) in cases.iter().enumerate() {
            assert_eq!(sampling.decide(snapshot, facts), *verdict, "case {i}");
        }
        assert_eq!(sampling.sampled_out(), 2);
    }

    #[test]
    fn one_in_n_keeps_exactly_that_share() {
        let sampling = TailSampling::one_in(10);
        let kept = (0..1000)
            .filter(|_| sampling.keep(&request("a", 1), &status(200)))
            .count();
        assert_eq!(kept, 100);
        assert_eq!(sampling.sampled_out(), 900);
    }

    #[test]
    fn one_in_zero_or_one_keeps_everything() {
        for n in [0, 1] {
            let sampling = TailSampling::one_in(n);
            assert!((0..50).all(|_| sampling.keep(&request("a", 1), &status(200))));
        }
    }

    #[test]
    fn a_later_threshold_for_an_endpoint_replaces_the_earlier() {
        let sampling = TailSampling::one_in(2)
            .slow_over_for("a", Duration::from_millis(5))
            .slow_over_for("a", Duration::from_millis(50));
        assert_eq!(sampling.threshold("a"), Some(Duration::from_millis(50)));
        assert_eq!(sampling.threshold("b"), None);
    }
}
