//! What the tower layer adds to one request, whatever the service does: a
//! service that records two phases and a counter and answers
//! a short body, called untraced and traced in one group, so the medians
//! come from the same run. The traced cases differ only in where the line
//! goes: into its thread's buffer, written out by the emitter's own thread
//! (`Emitter::in_background`, as the example Hub writes its lines), and
//! to a sink that writes each line at once, one `write` system call to
//! `/dev/null` per request.
//!
//! ```text
//! cargo bench -p perf-trace-core --bench layer
//! ```

#[path = "../tests/common/mod.rs"]
mod common;

use std::convert::Infallible;
use std::time::Duration;

use bytes::Bytes;
use common::{Batch, ListPolicy, Phase, TestSchema};
use criterion::{criterion_group, criterion_main, Criterion};
use http::{Request, Response};
use http_body_util::{BodyExt, Full};
use perf_trace_core::{count, traced_phase, Emitter, LineFormat, LineSink, PerfTraceLayer};
use tower::{service_fn, Layer, Service, ServiceExt};

#[traced_phase(Phase::Load)]
fn load() -> u64 {
    std::hint::black_box(3)
}

#[traced_phase(Phase::Check)]
fn check(n: u64) {
    count(Batch::Count);
    std::hint::black_box(n);
}

/// The service's own work: what a small handler records.
async fn handler(_: Request<()>) -> Result<Response<Full<Bytes>>, Infallible> {
    check(load());
    Ok(Response::new(Full::new(Bytes::from_static(b"[1,2,3]"))))
}

/// Sends one request to `service` and reads its body to the end (the line
/// is written as the body ends).
async fn request<S>(service: &S)
where
    S: Service<Request<()>, Error = Infallible> + Clone,
    S::Response: IntoBody,
{
    let response = service
        .clone()
        .oneshot(Request::get("/things").body(()).unwrap())
        .await
        .unwrap();
    response.collect_body().await;
}

/// Reads a response's body whatever its body type.
trait IntoBody {
    async fn collect_body(self);
}

impl<B: http_body::Body> IntoBody for Response<B>
where
    B::Error: std::fmt::Debug,
{
    async fn collect_body(self) {
        std::hint::black_box(self.into_body().collect().await.unwrap().to_bytes());
    }
}

fn traced_with(
    emitter: Emitter,
) -> impl Service<
    Request<()>,
    Response = Response<impl http_body::Body<Error = Infallible>>,
    Error = Infallible,
> + Clone {
    PerfTraceLayer::<TestSchema, _>::new(ListPolicy, emitter).layer(service_fn(handler))
}

fn layer(c: &mut Criterion) {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let untraced = service_fn(handler);
    let dev_null = || {
        std::fs::OpenOptions::new()
            .write(true)
            .open("/dev/null")
            .expect("/dev/null")
    };
    let format = LineFormat::scion("bench-svc");
    let background = traced_with(
        Emitter::new(format.clone(), LineSink::new(dev_null()))
            .in_background(Duration::from_millis(50)),
    );
    let each_line = traced_with(Emitter::new(format, LineSink::new(dev_null())));

    let mut group = c.benchmark_group("request");
    group.bench_function("untraced", |b| {
        b.iter(|| runtime.block_on(request(&untraced)))
    });
    group.bench_function("traced, lines in the background", |b| {
        b.iter(|| runtime.block_on(request(&background)))
    });
    group.bench_function("traced, a write per line", |b| {
        b.iter(|| runtime.block_on(request(&each_line)))
    });
    group.finish();
}

criterion_group!(benches, layer);
criterion_main!(benches);
