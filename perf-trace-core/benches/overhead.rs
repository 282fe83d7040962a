//! What a traced phase, a counted store call, a counter, a timer and a line
//! cost, side by side with the alternatives, in one run:
//!
//! ```text
//! cargo bench -p perf-trace-core --bench overhead
//! ```

use std::hint::black_box;
use std::time::{Duration, Instant};

use criterion::{criterion_group, criterion_main, Criterion};

#[path = "support/calls.rs"]
mod calls;
#[path = "../tests/common/mod.rs"]
mod common;
#[path = "../tests/seed_example/mod.rs"]
mod seed_example;
use calls::*;
use parking_lot::Mutex;
use perf_trace_core::{LineFormat, Recorder, Snapshot};

#[inline(never)]
#[tracing::instrument(skip_all)]
fn instrumented(x: u64) -> u64 {
    black_box(x) + 1
}

#[inline(never)]
#[fastrace::trace]
fn fastraced(x: u64) -> u64 {
    black_box(x) + 1
}

/// The straightforward recipe the recorder is measured against: two
/// `Instant::now()` reads, a parking_lot lock and an array add.
struct LockedTable(Mutex<[(u64, Duration); 16]>);

impl LockedTable {
    #[inline(never)]
    fn record(&self, index: usize, x: u64) -> u64 {
        let start = Instant::now();
        let out = black_box(x) + 1;
        let elapsed = start.elapsed();
        let mut table = self.0.lock();
        table[index].0 += 1;
        table[index].1 += elapsed;
        out
    }
}

/// A tracing layer that times every span, as a duration-collecting subscriber does.
struct DurationLayer;

struct Entered(Instant);

impl<S> tracing_subscriber::Layer<S> for DurationLayer
where
    S: tracing::Subscriber + for<'a> tracing_subscriber::registry::LookupSpan<'a>,
{
    fn on_enter(&self, id: &tracing::span::Id, ctx: tracing_subscriber::layer::Context<'_, S>) {
        if let Some(span) = ctx.span(id) {
            span.extensions_mut().replace(Entered(Instant::now()));
        }
    }

    fn on_exit(&self, id: &tracing::span::Id, ctx: tracing_subscriber::layer::Context<'_, S>) {
        if let Some(span) = ctx.span(id) {
            if let Some(Entered(start)) = span.extensions_mut().remove::<Entered>() {
                black_box(start.elapsed());
            }
        }
    }
}

struct NullReporter;

impl fastrace::collector::Reporter for NullReporter {
    fn report(&mut self, spans: Vec<fastrace::prelude::SpanRecord>) {
        black_box(spans);
    }
}

/// The same line built the obvious way, with a `serde_json::Map`.
fn line_with_serde_map(s: &Snapshot, time: std::time::SystemTime) -> String {
    use serde_json::{Map, Value};
    let us = |d: Duration| Value::from(d.as_micros() as u64);
    let mut m = Map::new();
    m.insert(
        "time".into(),
        humantime::format_rfc3339_nanos(time).to_string().into(),
    );
    m.insert("level".into(), "INFO".into());
    m.insert("msg".into(), "perf_trace".into());
    m.insert("component".into(), "scion-hub".into());
    m.insert("subsystem".into(), "hub.perf-trace".into());
    m.insert("endpoint".into(), s.endpoint.into());
    m.insert("elapsed_us".into(), us(s.elapsed));
    for p in &s.phases {
        m.insert(format!("phase_{}_us", p.name), us(p.duration));
        m.insert(format!("phase_{}_n", p.name), p.count.into());
    }
    for c in &s.store_calls {
        m.insert(format!("store_{}_n", c.name), c.count.into());
        m.insert(format!("store_{}_us", c.name), us(c.duration));
    }
    m.insert("authz_store_calls".into(), s.authz_store_calls.into());
    m.insert("authz_store_us".into(), us(s.authz_store_time));
    m.insert("audit_records".into(), s.decisions.records.into());
    m.insert("audit_allow".into(), s.decisions.allow.into());
    m.insert("audit_deny".into(), s.decisions.deny.into());
    m.insert("audit_other".into(), s.decisions.other.into());
    m.insert("audit_emit_us".into(), us(s.decisions.emit_time));
    if let Some(db) = &s.db {
        m.insert("db_wait_count".into(), db.wait_count.into());
        m.insert("db_wait_us".into(), us(db.wait_time));
        m.insert("db_in_use".into(), db.in_use.into());
        m.insert("db_open".into(), db.open.into());
    }
    m.insert("method".into(), s.method.into());
    m.insert("request_id".into(), s.request_id.clone().into());
    serde_json::to_string(&Value::Object(m)).expect("serializable")
}

fn phases(c: &mut Criterion) {
    let mut group = c.benchmark_group("phase");
    group.bench_function("plain call", |b| b.iter(|| plain(black_box(1))));
    group.bench_function("traced, no recorder in scope", |b| {
        b.iter(|| traced(black_box(1)))
    });
    let recorder = Recorder::new::<TestSchema>();
    recorder.in_scope(|| {
        group.bench_function("traced, recorded", |b| b.iter(|| traced(black_box(1))));
        group.bench_function("phase! block, recorded", |b| {
            b.iter(|| traced_block(black_box(1)))
        });
    });
    #[cfg(target_arch = "x86_64")]
    group.bench_function("floor: two raw TSC reads + thread-local add", |b| {
        b.iter(|| floor(black_box(1)))
    });
    group.bench_function("two Instant::now()", |b| {
        b.iter(|| {
            let start = Instant::now();
            black_box(Instant::now() - start)
        })
    });
    let table = LockedTable(Mutex::new([(0, Duration::ZERO); 16]));
    group.bench_function("Instant x2 + parking_lot lock + array add", |b| {
        b.iter(|| table.record(black_box(3), black_box(1)))
    });
    {
        use tracing_subscriber::layer::SubscriberExt;
        let subscriber = tracing_subscriber::registry().with(DurationLayer);
        tracing::subscriber::with_default(subscriber, || {
            group.bench_function("tracing #[instrument], registry + duration layer", |b| {
                b.iter(|| instrumented(black_box(1)))
            });
        });
    }
    {
        // A local span stack holds a bounded number of spans, beyond which
        // children are dropped unrecorded; so children are measured in
        // batches under a fresh root each, as requests would make them.
        fastrace::set_reporter(NullReporter, fastrace::collector::Config::default());
        const CHILDREN: u64 = 256;
        group.bench_function(
            "fastrace #[trace] child span (root per 256 children)",
            |b| {
                b.iter_custom(|iters| {
                    let start = Instant::now();
                    let mut done = 0;
                    while done < iters {
                        let root = fastrace::Span::root(
                            "request",
                            fastrace::prelude::SpanContext::random(),
                        );
                        let _parent = root.set_local_parent();
                        for _ in 0..CHILDREN.min(iters - done) {
                            fastraced(black_box(1));
                        }
                        done += CHILDREN;
                    }
                    start.elapsed()
                })
            },
        );
        group.bench_function("traced, recorded (recorder per 256 phases)", |b| {
            b.iter_custom(|iters| {
                let start = Instant::now();
                let mut done = 0;
                while done < iters {
                    let recorder = Recorder::new::<TestSchema>();
                    recorder.in_scope(|| {
                        for _ in 0..CHILDREN.min(iters - done) {
                            traced(black_box(1));
                        }
                    });
                    black_box(recorder.snapshot());
                    done += CHILDREN;
                }
                start.elapsed()
            })
        });
    }
    group.finish();
}

fn store_calls(c: &mut Criterion) {
    let mut group = c.benchmark_group("store call");
    let direct = Direct;
    let counted = CountedThingStore::new(Direct);
    group.bench_function("direct", |b| b.iter(|| direct.get_user(black_box(1))));
    let recorder = Recorder::new::<TestSchema>();
    recorder.in_scope(|| {
        group.bench_function("counted, recorded", |b| {
            b.iter(|| counted.get_user(black_box(1)))
        });
    });
    group.finish();
}

/// A counter beside a phase, in one group so both medians come from the same run.
fn counters(c: &mut Criterion) {
    let mut group = c.benchmark_group("counter");
    group.bench_function("count, no recorder in scope", |b| {
        b.iter(|| counted(black_box(1)))
    });
    let recorder = Recorder::new::<TestSchema>();
    recorder.in_scope(|| {
        group.bench_function("phase, recorded", |b| b.iter(|| traced(black_box(1))));
        group.bench_function("count, recorded", |b| b.iter(|| counted(black_box(1))));
        group.bench_function("count_n of a max key, recorded", |b| {
            b.iter(|| counted_max(black_box(1)))
        });
        group.bench_function("count_by, recorded", |b| {
            b.iter(|| counted_by(black_box(1)))
        });
        group.bench_function("time (timer set), recorded", |b| {
            b.iter(|| timed(black_box(1)))
        });
    });
    group.finish();
}

fn lines(c: &mut Criterion) {
    let mut group = c.benchmark_group("seed line");
    let snapshot = seed_example::seed_snapshot();
    let time = std::time::SystemTime::now();
    let format = LineFormat::scion("scion-hub");
    let mut out = String::with_capacity(2048);
    group.bench_function("LineFormat::render", |b| {
        b.iter(|| {
            format.render(black_box(&snapshot), time, &mut out);
            black_box(out.len())
        })
    });
    group.bench_function("serde_json::Map", |b| {
        b.iter(|| black_box(line_with_serde_map(black_box(&snapshot), time)))
    });
    group.finish();
}

criterion_group!(benches, phases, store_calls, counters, lines);
criterion_main!(benches);
