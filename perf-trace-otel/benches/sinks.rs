//! What each exit costs per request, on the contract's example request
//! (seven phases, five store methods, decisions, pool figures), in one run:
//!
//! ```text
//! cargo bench -p perf-trace-otel --bench sinks
//! ```
//!
//! Every row renders and writes the line (to `io::sink()`) and then runs its
//! exit on the request's thread; the OTLP row measures what a request pays
//! (a snapshot copy and a queue push), the export thread posting to a
//! collector that refuses connections, so batches fail fast. Beside them,
//! `tracing-opentelemetry`'s cost for one span with the same figures as
//! fields (30: a `tracing` call site takes at most 32), exported by a
//! batch processor to an exporter that discards.

use std::hint::black_box;
use std::sync::Arc;

use criterion::{criterion_group, criterion_main, Criterion};
use opentelemetry::trace::TracerProvider as _;
use opentelemetry_sdk::error::OTelSdkResult;
use opentelemetry_sdk::trace::{SdkTracerProvider, SpanData, SpanExporter};
use perf_trace_core::exits::metrics::MetricsSink;
use perf_trace_core::exits::tracing_sink::TracingSink;
use perf_trace_core::exits::RequestFacts;
use perf_trace_core::exits::TraceContext;
use perf_trace_core::{Emitter, LineFormat, LineSink};
use perf_trace_otel::{OtlpConfig, OtlpSink};

#[path = "../../perf-trace-core/tests/seed_example/mod.rs"]
mod seed_example;

fn line_only() -> Emitter {
    Emitter::new(
        LineFormat::scion("scion-hub"),
        LineSink::new(std::io::sink()),
    )
}

#[derive(Debug)]
struct Discard;

impl SpanExporter for Discard {
    async fn export(&self, batch: Vec<SpanData>) -> OTelSdkResult {
        black_box(batch.len());
        Ok(())
    }
}

/// One span with the figures of the example line as fields.
#[inline(never)]
fn tracing_otel_span() {
    let span = tracing::info_span!(
        "agents.project.legacy",
        otel.kind = "server",
        endpoint = "agents.project.legacy",
        elapsed_us = 557495u64,
        phase_capabilities_us = 484223u64,
        phase_capabilities_n = 1u64,
        phase_enrich_us = 43829u64,
        phase_enrich_n = 1u64,
        phase_list_db_read_us = 16435u64,
        phase_list_db_read_n = 2u64,
        phase_list_read_authz_us = 2695u64,
        phase_list_read_authz_n = 2u64,
        phase_list_scope_authz_us = 1793u64,
        phase_list_scope_authz_n = 1u64,
        phase_serialize_us = 2917u64,
        phase_serialize_n = 1u64,
        store_get_user_n = 84u64,
        store_get_user_us = 472801u64,
        store_get_effective_groups_n = 1u64,
        store_get_effective_groups_us = 631u64,
        authz_store_calls = 88u64,
        authz_store_us = 474434u64,
        audit_records = 255u64,
        audit_allow = 162u64,
        audit_deny = 93u64,
        audit_emit_us = 188u64,
        db_wait_count = 306u64,
        db_wait_us = 1887753u64,
        http.request.method = "GET",
        request_id = "00000000-0000-4000-8000-000000000000",
    );
    drop(black_box(span));
}

fn sinks(c: &mut Criterion) {
    let snapshot = seed_example::seed_snapshot();
    let trace = TraceContext::continue_or_start(None, [7; 16], [9; 8]);
    let facts = RequestFacts {
        status: Some(200),
        perf_headers: false,
        trace: Some(trace),
    };
    let mut group = c.benchmark_group("sink");

    let emitter = line_only();
    group.bench_function("line only", |b| {
        b.iter(|| emitter.emit_request(black_box(&snapshot), &facts))
    });

    {
        use tracing_subscriber::layer::SubscriberExt;
        let emitter = line_only().with_sink(TracingSink::new());
        // A subscriber that takes every event (the registry, as a fmt or
        // OpenTelemetry layer would sit on).
        let subscriber =
            tracing_subscriber::registry().with(tracing_subscriber::filter::LevelFilter::INFO);
        tracing::subscriber::with_default(subscriber, || {
            group.bench_function("line + tracing event", |b| {
                b.iter(|| emitter.emit_request(black_box(&snapshot), &facts))
            });
        });
    }

    let gone = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap();
    let otlp =
        Arc::new(OtlpSink::start(OtlpConfig::new(format!("http://{gone}"), "bench")).unwrap());
    let emitter = line_only().with_sink(Arc::clone(&otlp));
    group.bench_function("line + OTLP span (queued)", |b| {
        b.iter(|| emitter.emit_request(black_box(&snapshot), &facts))
    });
    let stats = otlp.stats();
    eprintln!(
        "otlp: {} spans dropped because the queue was full, {} by failed exports",
        stats.dropped_queue_full, stats.dropped_export_failed
    );

    let metrics = Arc::new(MetricsSink::new("bench"));
    let emitter = line_only().with_sink(Arc::clone(&metrics));
    group.bench_function("line + metrics update", |b| {
        b.iter(|| emitter.emit_request(black_box(&snapshot), &facts))
    });

    {
        use tracing_subscriber::layer::SubscriberExt;
        let provider = SdkTracerProvider::builder()
            .with_batch_exporter(Discard)
            .build();
        let tracer = provider.tracer("bench");
        let subscriber =
            tracing_subscriber::registry().with(tracing_opentelemetry::layer().with_tracer(tracer));
        tracing::subscriber::with_default(subscriber, || {
            group.bench_function("tracing-opentelemetry span, same figures", |b| {
                b.iter(tracing_otel_span)
            });
        });
        let _ = provider.shutdown();
    }
    group.finish();
}

criterion_group!(benches, sinks);
criterion_main!(benches);
