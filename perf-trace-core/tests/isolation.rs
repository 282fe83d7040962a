//! Many concurrent requests on a multi-thread runtime, each with its own
//! known counts: no figure leaks from one request into another.

mod common;

use std::convert::Infallible;
use std::time::Duration;

use bytes::Bytes;
use common::{Batch, Cache, Captured, Endpoint, ListPolicy, Method, Phase, Render, TestSchema};
use http::{Request, Response};
use http_body_util::{BodyExt, Full};
use perf_trace_core::{
    __private01::TimedGuard, record::Outcome, traced_phase, Emitter, LineFormat, LineSink,
    PerfTraceLayer,
};
use tower::{service_fn, Layer, ServiceExt};

#[traced_phase(Phase::Load)]
async fn load(n: u64) {
    for _ in 0..n {
        let _call = TimedGuard::store_call(Method::GetUser);
        tokio::task::yield_now().await;
    }
}

#[traced_phase(Phase::Check)]
fn check(n: u64) {
    for i in 0..n {
        let outcome = if i % 3 == 0 {
            Outcome::Deny
        } else {
            Outcome::Allow
        };
        perf_trace_core::record::time_decision(outcome, || ());
    }
}

async fn handler(request: Request<()>) -> Result<Response<Full<Bytes>>, Infallible> {
    let n: u64 = request.uri().query().unwrap().parse().unwrap();
    load(n).await;
    tokio::time::sleep(Duration::from_millis(n % 5)).await;
    perf_trace_core::scope::spawn_blocking(move || check(n))
        .await
        .unwrap();
    perf_trace_core::record::add_sse_events(n);
    perf_trace_core::scope::spawn_blocking(move || {
        for i in 0..n {
            perf_trace_core::record::count_by(Endpoint::ThingsList, Cache::Hit);
            perf_trace_core::record::count_n(Batch::Largest, i + 1);
            perf_trace_core::time(Render::Page, || ());
        }
        perf_trace_core::record::count_n_by(Endpoint::Other, Cache::Miss, n * 2);
        perf_trace_core::count(Batch::Count);
    })
    .await
    .unwrap();
    Ok(Response::new(Full::new(Bytes::from(vec![
        b'x';
        n as usize
    ]))))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn concurrent_requests_keep_their_own_counts() {
    let captured = Captured::default();
    let emitter = Emitter::new(
        LineFormat::scion("test-svc"),
        LineSink::new(captured.clone()),
    );
    let svc = PerfTraceLayer::<TestSchema, _>::new(ListPolicy, emitter).layer(service_fn(handler));
    let mut tasks = Vec::new();
    for n in 1..=200u64 {
        let svc = svc.clone();
        tasks.push(tokio::spawn(async move {
            let request = Request::get(format!("/things?{n}")).body(()).unwrap();
            let response = svc.oneshot(request).await.unwrap();
            let id = response.headers()["x-request-id"]
                .to_str()
                .unwrap()
                .to_owned();
            response.into_body().collect().await.unwrap();
            (id, n)
        }));
    }
    let mut expected = std::collections::HashMap::new();
    for task in tasks {
        let (id, n) = task.await.unwrap();
        expected.insert(id, n);
    }
    let lines = captured.json_lines();
    assert_eq!(lines.len(), 200);
    for line in lines {
        let n = expected[line["request_id"].as_str().unwrap()];
        let deny = n.div_ceil(3);
        assert_eq!(line["store_GetUser_n"], n, "{line}");
        assert_eq!(line["authz_store_calls"], n);
        assert_eq!(line["phase_load_n"], 1);
        assert_eq!(line["phase_check_n"], 1);
        assert_eq!(line["audit_records"], n);
        assert_eq!(line["audit_deny"], deny);
        assert_eq!(line["audit_allow"], n - deny);
        assert_eq!(line["sse_events"], n);
        assert_eq!(line["cache_things.list_hit"], n);
        assert_eq!(line["cache_other_miss"], n * 2);
        assert_eq!(line["authz_batch_count"], 1);
        assert_eq!(line["authz_batch_largest"], n);
        assert_eq!(line["render_page_n"], n);
    }
}
