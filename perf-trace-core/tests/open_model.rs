//! The open data model: counter sets (single, paired, max), timer sets,
//! optional groups and the plain profile, from recording to the line, the
//! headers and the count view; and the contract module against the
//! contract's own line.

mod common;
mod seed_example;

use std::convert::Infallible;
use std::time::Duration;

use bytes::Bytes;
use common::{Batch, Cache, Captured, Endpoint, Method, Phase, Render, TestSchema};
use http::{Request, Response};
use http_body_util::{BodyExt, Full};
use perf_trace_core::keys::{CounterSet, Groups, TimerSet};
use perf_trace_core::line::scion::{self, header, suffix};
use perf_trace_core::snapshot::CountsView;
use perf_trace_core::{
    count, layer::TracePolicy, line::render_headers, record::count_by, record::count_n,
    record::count_n_by, time, traced_phase, Emitter, KeySet, LineFormat, LineSink, PerfTraceLayer,
    Recorder, Schema, Snapshot,
};
use seed_example::{seed_snapshot, seed_time, SEED_LINE};
use tower::{service_fn, Layer, ServiceExt};

/// A service with no decisions, no store total, no pool and no SSE.
struct PlainSchema;

impl Schema for PlainSchema {
    type Phase = Phase;
    type StoreMethod = Method;
    type Endpoint = Endpoint;
    const COUNTERS: &'static [CounterSet] = &[CounterSet::of::<Cache>(), CounterSet::of::<Batch>()];
    const TIMERS: &'static [TimerSet] = &[TimerSet::of::<Render>()];
    const GROUPS: Groups = Groups::NONE;
}

/// A counter set no schema lists: counted all the same.
#[derive(KeySet, Clone, Copy, PartialEq, Eq, Debug)]
#[key_set(counters, prefix = "unlisted")]
enum Unlisted {
    Thing,
}

/// Figures whose durations do not depend on the host: counters only, and
/// timers whose durations are cleared.
fn recorded<S: Schema>() -> Snapshot {
    let recorder = Recorder::builder()
        .method("GET")
        .request_id("r-1")
        .build::<S>();
    recorder.in_scope(|| {
        count_by(Endpoint::ThingsList, Cache::Hit);
        count_by(Endpoint::ThingsList, Cache::Hit);
        count_by(Endpoint::ThingsList, Cache::Shared);
        count_n_by(Endpoint::Other, Cache::Miss, 3);
        count(Batch::Count);
        count(Batch::Count);
        count_n(Batch::Largest, 7);
        count_n(Batch::Largest, 3);
        count(Unlisted::Thing);
        time(Render::Footer, || ());
        time(Render::Footer, || ());
    });
    let mut snapshot = recorder.snapshot();
    snapshot.elapsed = Duration::from_micros(42);
    for set in &mut snapshot.timers {
        for stat in &mut set.stats {
            stat.duration = Duration::from_nanos(5_999);
        }
    }
    snapshot
}

#[test]
fn counters_sum_keep_the_largest_and_pair_with_their_by_set() {
    let snapshot = recorded::<TestSchema>();
    assert_eq!(snapshot.counter_by(Endpoint::ThingsList, Cache::Hit), 2);
    assert_eq!(snapshot.counter_by(Endpoint::ThingsList, Cache::Shared), 1);
    assert_eq!(snapshot.counter_by(Endpoint::Other, Cache::Miss), 3);
    assert_eq!(snapshot.counter_by(Endpoint::Other, Cache::Hit), 0);
    assert_eq!(snapshot.counter(Batch::Count), 2);
    assert_eq!(snapshot.counter(Batch::Largest), 7);
    assert_eq!(snapshot.counter(Unlisted::Thing), 1);
    assert_eq!(snapshot.timer(Render::Footer).count, 2);
    assert_eq!(snapshot.timer(Render::Page).count, 0);
    // Each set's non-zero keys, sorted by rendered name.
    let cache: Vec<_> = snapshot.counters[0]
        .values
        .iter()
        .map(|c| (c.rendered_name(), c.value))
        .collect();
    assert_eq!(
        cache,
        [
            ("other_miss".to_owned(), 3),
            ("things.list_hit".to_owned(), 2),
            ("things.list_shared".to_owned(), 1),
        ]
    );
}

#[test]
fn a_schema_that_lists_no_set_still_gets_every_count() {
    struct Bare;
    impl Schema for Bare {
        type Phase = Phase;
        type StoreMethod = Method;
        type Endpoint = Endpoint;
    }
    let snapshot = recorded::<Bare>();
    assert_eq!(snapshot.counter(Batch::Count), 2);
    assert_eq!(snapshot.counter(Batch::Largest), 7);
    assert_eq!(snapshot.counter_by(Endpoint::ThingsList, Cache::Hit), 2);
    assert_eq!(snapshot.counter(Unlisted::Thing), 1);
    assert_eq!(snapshot.timer(Render::Footer).count, 2);
    let mut line = String::new();
    LineFormat::plain("orders-api", "orders.perf").render(&snapshot, seed_time(), &mut line);
    // The sets by prefix, the counters before the timers.
    assert!(
        line.contains(r#""elapsed_us":42,"authz_batch_count":2,"authz_batch_largest":7,"cache_other_miss":3,"cache_things.list_hit":2,"cache_things.list_shared":1,"unlisted_thing":1,"render_footer_us":5,"render_footer_n":2,"method""#),
        "{line}"
    );
}

#[test]
fn the_plain_profile_writes_only_the_schemas_groups() {
    let mut line = String::new();
    LineFormat::plain("orders-api", "orders.perf").render(
        &recorded::<PlainSchema>(),
        seed_time(),
        &mut line,
    );
    assert_eq!(
        line,
        r#"{"time":"2026-01-01T00:00:00.000000000Z","level":"INFO","msg":"perf_trace","component":"orders-api","subsystem":"orders.perf","endpoint":"other","elapsed_us":42,"cache_other_miss":3,"cache_things.list_hit":2,"cache_things.list_shared":1,"authz_batch_count":2,"authz_batch_largest":7,"unlisted_thing":1,"render_footer_us":5,"render_footer_n":2,"method":"GET","request_id":"r-1"}"#
    );
}

#[test]
fn counters_and_timers_are_in_the_count_view_and_decisions_are_not() {
    let counts = CountsView::from(&recorded::<PlainSchema>());
    assert_eq!(counts.decisions, None);
    assert_eq!(
        counts.counters.into_iter().collect::<Vec<_>>(),
        [
            ("authz_batch_count".to_owned(), 2),
            ("authz_batch_largest".to_owned(), 7),
            ("cache_other_miss".to_owned(), 3),
            ("cache_things.list_hit".to_owned(), 2),
            ("cache_things.list_shared".to_owned(), 1),
            ("unlisted_thing".to_owned(), 1),
        ]
    );
    assert_eq!(
        counts.timers.into_iter().collect::<Vec<_>>(),
        [("render_footer".to_owned(), 2)]
    );
}

#[test]
fn sets_come_after_the_contract_groups_and_before_the_stage() {
    let mut snapshot = recorded::<TestSchema>();
    snapshot.sse_events = 2;
    snapshot.sse_stage = Some(perf_trace_core::snapshot::SseStage::Close);
    let mut line = String::new();
    LineFormat::scion("test-svc").render(&snapshot, seed_time(), &mut line);
    assert!(
        line.contains(r#""audit_emit_us":0,"sse_events":2,"cache_other_miss":3,"#),
        "{line}"
    );
    assert!(
        line.ends_with(
            r#""render_footer_n":2,"sse_stage":"close","method":"GET","request_id":"r-1"}"#
        ),
        "{line}"
    );
}

#[test]
fn each_set_has_its_header_and_a_schema_without_decisions_has_no_decisions_header() {
    let headers: Vec<_> = render_headers(&recorded::<PlainSchema>())
        .into_iter()
        .map(|h| (h.suffix, h.value))
        .collect();
    assert_eq!(
        headers,
        [
            ("Endpoint", "other".to_owned()),
            (
                "Cache",
                "other_miss=3,things.list_hit=2,things.list_shared=1".to_owned()
            ),
            ("Authz-Batch", "count=2,largest=7".to_owned()),
            ("Unlisted", "thing=1".to_owned()),
            ("Render-Us", "footer=5".to_owned()),
            ("Render-Counts", "footer=2".to_owned()),
        ]
    );
}

#[tokio::test]
async fn a_timed_future_counts_once_whether_it_completes_or_is_dropped() {
    let recorder = Recorder::new::<TestSchema>();
    let value = recorder
        .instrument(perf_trace_core::record::time_future(Render::Page, async {
            tokio::task::yield_now().await;
            7
        }))
        .await;
    assert_eq!(value, 7);
    // Dropped after its first poll: still one event.
    let mut pending = Box::pin(recorder.instrument(perf_trace_core::record::time_future(
        Render::Page,
        std::future::pending::<()>(),
    )));
    assert!(futures_util::poll!(pending.as_mut()).is_pending());
    drop(pending);
    // Never polled: nothing.
    drop(perf_trace_core::record::time_future(
        Render::Footer,
        async {},
    ));
    let snapshot = recorder.snapshot();
    assert_eq!(snapshot.timer(Render::Page).count, 2);
    assert_eq!(snapshot.timer(Render::Footer).count, 0);
}

#[derive(Clone)]
struct EveryoneSees;

impl TracePolicy<PlainSchema> for EveryoneSees {
    fn classify<B>(&self, _: &Request<B>) -> Endpoint {
        Endpoint::ThingsList
    }
    fn headers_allowed<B>(&self, _: &Request<B>) -> bool {
        true
    }
}

#[traced_phase(Phase::Load)]
fn load() {
    count(Batch::Count);
}

#[tokio::test]
async fn the_layer_names_headers_from_the_profile() {
    let captured = Captured::default();
    let format = LineFormat::plain("orders-api", "orders.perf")
        .header_prefix("X-Orders-Perf-")
        .unwrap()
        .request_id_header("X-Orders-Request")
        .unwrap();
    let svc = PerfTraceLayer::<PlainSchema, _>::new(
        EveryoneSees,
        Emitter::new(format, LineSink::new(captured.clone())),
    )
    .layer(service_fn(|_: Request<()>| async {
        load();
        Ok::<_, Infallible>(Response::new(Full::new(Bytes::from_static(b"{}"))))
    }));
    let request = Request::get("/orders")
        .header("X-Orders-Perf-Trace", "1")
        .body(())
        .unwrap();
    let response = svc.oneshot(request).await.unwrap();
    let headers = response.headers().clone();
    response.into_body().collect().await.unwrap();
    assert_eq!(headers["x-orders-perf-endpoint"], "things.list");
    assert_eq!(headers["x-orders-perf-phase-counts"], "load=1");
    assert_eq!(headers["x-orders-perf-authz-batch"], "count=1");
    assert!(headers.get("x-orders-perf-decisions").is_none());
    assert!(headers
        .keys()
        .all(|name| !name.as_str().starts_with("x-scion")));
    let id = headers["x-orders-request"].to_str().unwrap();
    let line = &captured.json_lines()[0];
    assert_eq!(line["request_id"], id);
    assert_eq!(line["subsystem"], "orders.perf");
    assert!(line.get("audit_records").is_none());
    assert!(line.get("authz_store_calls").is_none());
}

#[test]
fn a_bad_header_prefix_is_refused() {
    for bad in ["", "X Perf-", "X-Perf:", "X-Pérf-"] {
        let error = LineFormat::plain("a", "b").header_prefix(bad).unwrap_err();
        assert_eq!(error.0, bad);
        assert!(error
            .to_string()
            .contains("cannot start an HTTP header name"));
    }
    assert!(LineFormat::plain("a", "b")
        .request_id_header("X Request")
        .is_err());
}

#[test]
fn the_contract_module_holds_the_contracts_line_and_names() {
    assert_eq!(scion::EXAMPLE_LINE, SEED_LINE);
    let mut line = String::new();
    LineFormat::scion(scion::COMPONENT).render(&seed_snapshot(), seed_time(), &mut line);
    assert_eq!(line, scion::EXAMPLE_LINE);
    for (full, suffix) in header::ALL.iter().zip(suffix::ALL) {
        assert_eq!(*full, format!("{}{suffix}", scion::HEADER_PREFIX));
        assert_eq!(LineFormat::scion("x").header_name(suffix), *full);
    }
    assert_eq!(
        header::TRIGGER,
        format!("{}{}", scion::HEADER_PREFIX, suffix::TRIGGER)
    );
    // The header values rebuilt from the line's figures are the rendered ones.
    let value: serde_json::Value = serde_json::from_str(scion::EXAMPLE_LINE).unwrap();
    let figure = |name: &str| value[name].as_u64().unwrap();
    let rendered = render_headers(&seed_snapshot());
    let get = |s: &str| {
        rendered
            .iter()
            .find(|h| h.suffix == s)
            .unwrap()
            .value
            .clone()
    };
    let [records, allow, deny, other, emit] = scion::field::DECISIONS.map(figure);
    assert_eq!(
        scion::decisions_value(records, allow, deny, other, emit),
        get(suffix::DECISIONS)
    );
    let [wait_count, wait_us, in_use, open] = scion::field::DB.map(figure);
    assert_eq!(
        scion::db_value(wait_count, wait_us, in_use, open),
        get(suffix::DB)
    );
}
