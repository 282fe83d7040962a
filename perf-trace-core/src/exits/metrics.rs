//! Prometheus metrics whose label sets are bounded by construction: every
//! label value is a key's rendered name (a `&'static str` of a set fixed at
//! compile time), a decision outcome or a status class, never a value taken
//! from a request. However many paths, queries or callers a service sees,
//! the number of series is at most the product of its key sets.
//!
//! | metric | labels | what |
//! | --- | --- | --- |
//! | `{ns}_request_duration_seconds` (histogram, exemplar `request_id`) | `endpoint` | each request, whether sampled or not |
//! | `{ns}_requests_total` | `endpoint`, `status` (`1xx` .. `5xx`, `none`) | each request |
//! | `{ns}_phase_duration_seconds` (histogram) | `endpoint`, `phase` | each request's time in a phase it entered |
//! | `{ns}_phase_entries_total` | `endpoint`, `phase` | phase entries |
//! | `{ns}_store_calls_total` | `endpoint`, `method` | store calls |
//! | `{ns}_store_duration_seconds_total` | `endpoint`, `method` | store time |
//! | `{ns}_decisions_total` | `endpoint`, `outcome` (`allow`, `deny`, `other`) | authorization decisions |
//! | `{ns}_counter_total` | `set`, `by` (empty unless paired), `key` | counter sets (summed keys) |
//! | `{ns}_counter_max` (histogram) | `set`, `by`, `key` | counter sets (`#[key(max)]` keys, one observation per request) |
//! | `{ns}_timer_duration_seconds_total`, `{ns}_timer_entries_total` | `set`, `key` | timer sets |
//! | `{ns}_sse_events_total` | `endpoint` | stream events written |
//! | `{ns}_sampled_out_total` | | requests tail sampling dropped the line of |
//!
//! A stream is counted once, by its close line. The text is OpenMetrics
//! ([`MetricsSink::encode`]), exemplars included.
//!
//! ```
//! use std::sync::Arc;
//! use std::time::Duration;
//! use perf_trace_core::exits::RequestFacts;
//! use perf_trace_core::exits::metrics::MetricsSink;
//! use perf_trace_core::{Emitter, LineFormat, LineSink, Snapshot};
//!
//! let metrics = Arc::new(MetricsSink::new("svc"));
//! let emitter = Emitter::new(LineFormat::scion("svc"), LineSink::new(std::io::sink()))
//!     .with_sink(Arc::clone(&metrics));
//! let snapshot = Snapshot {
//!     endpoint: "orders.get",
//!     elapsed: Duration::from_millis(3),
//!     request_id: "r-1".into(),
//!     ..Snapshot::default()
//! };
//! emitter.emit_request(&snapshot, &RequestFacts { status: Some(200), ..RequestFacts::default() });
//!
//! let text = metrics.encode();
//! assert!(text.contains(r#"svc_requests_total{endpoint="orders.get",status="2xx"} 1"#));
//! assert!(text.contains(r#"# {request_id="r-1"} 0.003"#));
//! assert!(text.ends_with("# EOF\n"));
//! ```

use std::fmt;

use prometheus_client::encoding::text::encode;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::exemplar::HistogramWithExemplars;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::histogram::{exponential_buckets, Histogram};
use prometheus_client::registry::{Metric, Registry};

use crate::exits::{FinishedRequest, RequestSink};
use crate::snapshot::{Snapshot, SseStage};

type Labels1 = [(&'static str, &'static str); 1];
type Labels2 = [(&'static str, &'static str); 2];
type Labels3 = [(&'static str, &'static str); 3];
type RequestIdExemplar = [(&'static str, String); 1];

fn duration_histogram() -> HistogramWithExemplars<RequestIdExemplar> {
    // 0.5 ms to about 16 s.
    HistogramWithExemplars::new(exponential_buckets(0.0005, 2.0, 16))
}

fn phase_histogram() -> Histogram {
    // 20 us to about 5 s.
    Histogram::new(exponential_buckets(0.00002, 4.0, 10))
}

fn max_histogram() -> Histogram {
    Histogram::new(exponential_buckets(1.0, 4.0, 8))
}

/// Registers `metric` under `name` and hands it back, for the sink to
/// update.
fn registered<M: Metric + Clone>(registry: &mut Registry, name: &str, help: &str, metric: M) -> M {
    registry.register(name, help, metric.clone());
    metric
}

type HistogramCtor = fn() -> Histogram;
type ExemplarCtor = fn() -> HistogramWithExemplars<RequestIdExemplar>;

/// The metrics of every finished request (see the [module](self)).
pub struct MetricsSink {
    registry: Registry,
    duration: Family<Labels1, HistogramWithExemplars<RequestIdExemplar>, ExemplarCtor>,
    requests: Family<Labels2, Counter>,
    phase_duration: Family<Labels2, Histogram, HistogramCtor>,
    phase_entries: Family<Labels2, Counter>,
    store_calls: Family<Labels2, Counter>,
    store_duration: Family<Labels2, Counter<f64>>,
    decisions: Family<Labels2, Counter>,
    counters: Family<Labels3, Counter>,
    counter_max: Family<Labels3, Histogram, HistogramCtor>,
    timer_duration: Family<Labels2, Counter<f64>>,
    timer_entries: Family<Labels2, Counter>,
    sse_events: Family<Labels1, Counter>,
    sampled_out: Counter,
}

impl fmt::Debug for MetricsSink {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("MetricsSink")
            .field("registry", &self.registry)
            .finish_non_exhaustive()
    }
}

fn status_class(status: Option<u16>) -> &'static str {
    match status {
        Some(100..=199) => "1xx",
        Some(200..=299) => "2xx",
        Some(300..=399) => "3xx",
        Some(400..=499) => "4xx",
        Some(500..=599) => "5xx",
        // Out of range statuses are not a label value either.
        _ => "none",
    }
}

impl MetricsSink {
    /// Metrics named `{namespace}_...` (a Prometheus name: letters, digits
    /// and `_`).
    pub fn new(namespace: &str) -> Self {
        let mut registry = Registry::with_prefix(namespace);
        MetricsSink {
            duration: registered(
                &mut registry,
                "request_duration_seconds",
                "Request duration by endpoint class (every request, sampled or not)",
                Family::new_with_constructor(duration_histogram as ExemplarCtor),
            ),
            requests: registered(
                &mut registry,
                "requests",
                "Requests by endpoint class and status class",
                Family::default(),
            ),
            phase_duration: registered(
                &mut registry,
                "phase_duration_seconds",
                "A request's time in a phase, by endpoint class and phase",
                Family::new_with_constructor(phase_histogram as HistogramCtor),
            ),
            phase_entries: registered(
                &mut registry,
                "phase_entries",
                "Phase entries by endpoint class and phase",
                Family::default(),
            ),
            store_calls: registered(
                &mut registry,
                "store_calls",
                "Store calls by endpoint class and store method",
                Family::default(),
            ),
            store_duration: registered(
                &mut registry,
                "store_duration_seconds",
                "Store time by endpoint class and store method",
                Family::default(),
            ),
            decisions: registered(
                &mut registry,
                "decisions",
                "Authorization decisions by endpoint class and outcome",
                Family::default(),
            ),
            counters: registered(
                &mut registry,
                "counter",
                "Counter sets: summed keys, by set, paired key and key",
                Family::default(),
            ),
            counter_max: registered(
                &mut registry,
                "counter_max",
                "Counter sets: each request's value of a largest-value key",
                Family::new_with_constructor(max_histogram as HistogramCtor),
            ),
            timer_duration: registered(
                &mut registry,
                "timer_duration_seconds",
                "Timer sets: time by set and key",
                Family::default(),
            ),
            timer_entries: registered(
                &mut registry,
                "timer_entries",
                "Timer sets: entries by set and key",
                Family::default(),
            ),
            sse_events: registered(
                &mut registry,
                "sse_events",
                "Stream events written, by endpoint class",
                Family::default(),
            ),
            sampled_out: registered(
                &mut registry,
                "sampled_out",
                "Requests whose line and span tail sampling dropped",
                Counter::default(),
            ),
            registry,
        }
    }

    /// Counts one finished request (what [`RequestSink::record`] does).
    pub fn observe(&self, snapshot: &Snapshot, status: Option<u16>, sampled: bool) {
        if snapshot.sse_stage == Some(SseStage::Connect) {
            return;
        }
        let endpoint = snapshot.endpoint;
        let exemplar = (!snapshot.request_id.is_empty())
            .then(|| [("request_id", snapshot.request_id.clone())]);
        self.duration
            .get_or_create(&[("endpoint", endpoint)])
            .observe(snapshot.elapsed.as_secs_f64(), exemplar, None);
        self.requests
            .get_or_create(&[("endpoint", endpoint), ("status", status_class(status))])
            .inc();
        for phase in &snapshot.phases {
            let labels = [("endpoint", endpoint), ("phase", phase.name)];
            self.phase_duration
                .get_or_create(&labels)
                .observe(phase.duration.as_secs_f64());
            self.phase_entries
                .get_or_create(&labels)
                .inc_by(phase.count);
        }
        for call in &snapshot.store_calls {
            let labels = [("endpoint", endpoint), ("method", call.name)];
            self.store_calls.get_or_create(&labels).inc_by(call.count);
            self.store_duration
                .get_or_create(&labels)
                .inc_by(call.duration.as_secs_f64());
        }
        let decisions = &snapshot.decisions;
        for (outcome, count) in [
            ("allow", decisions.allow),
            ("deny", decisions.deny),
            ("other", decisions.other),
        ] {
            if count > 0 {
                self.decisions
                    .get_or_create(&[("endpoint", endpoint), ("outcome", outcome)])
                    .inc_by(count);
            }
        }
        for set in &snapshot.counters {
            for value in &set.values {
                let labels = [
                    ("set", set.set.prefix),
                    ("by", value.by.unwrap_or("")),
                    ("key", value.name),
                ];
                let index = set.set.names.iter().position(|name| *name == value.name);
                let is_max = index.is_some_and(|i| set.set.max_mask & (1 << i) != 0);
                if is_max {
                    self.counter_max
                        .get_or_create(&labels)
                        .observe(value.value as f64);
                } else {
                    self.counters.get_or_create(&labels).inc_by(value.value);
                }
            }
        }
        for set in &snapshot.timers {
            for stat in &set.stats {
                let labels = [("set", set.set.prefix), ("key", stat.name)];
                self.timer_duration
                    .get_or_create(&labels)
                    .inc_by(stat.duration.as_secs_f64());
                self.timer_entries.get_or_create(&labels).inc_by(stat.count);
            }
        }
        if snapshot.sse_events > 0 {
            self.sse_events
                .get_or_create(&[("endpoint", endpoint)])
                .inc_by(snapshot.sse_events);
        }
        if !sampled {
            self.sampled_out.inc();
        }
    }

    /// The metrics as OpenMetrics text (ending `# EOF`).
    pub fn encode(&self) -> String {
        let mut text = String::new();
        // Writing to a String cannot fail.
        let _ = encode(&mut text, &self.registry);
        text
    }

    /// Requests tail sampling dropped the line of, as counted here.
    pub fn sampled_out(&self) -> u64 {
        self.sampled_out.get()
    }
}

impl RequestSink for MetricsSink {
    fn record(&self, request: &FinishedRequest<'_>) {
        self.observe(request.snapshot, request.facts.status, request.sampled);
    }

    fn sees_every_request(&self) -> bool {
        true
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn status_classes_are_a_fixed_set() {
        assert_eq!(status_class(Some(204)), "2xx");
        assert_eq!(status_class(Some(503)), "5xx");
        assert_eq!(status_class(Some(999)), "none");
        assert_eq!(status_class(None), "none");
    }
}
