//! The Hub's exits beyond the line, each behind its setting: Prometheus
//! metrics (admin route; series fixed by the key sets whatever the input),
//! OTLP export to an in-process collector (and a failing one), and tail
//! sampling.

mod hub_support;

#[path = "../../../perf-trace-otel/tests/common/mod.rs"]
mod collector;
#[path = "../../../perf-trace-core/tests/common/metric_series.rs"]
mod metric_series;

use std::sync::Arc;
use std::time::Duration;

use axum::http::{Method, StatusCode};
use collector::Collector;
use hub_example::app::Hub;
use hub_example::log::CaptureBuffer;
use hub_example::perf::exits::{HubExits, OPENMETRICS_CONTENT_TYPE};
use hub_example::settings::ExitSettings;
use hub_example::settings::Settings;
use hub_support::{hub_options, Seeded, TestHub};
use metric_series::{series, Rng};
use opentelemetry_proto::tonic::common::v1::any_value::Value as AnyValue;
use perf_trace_otel::{OtlpConfig, OtlpSink};

/// A traced Hub with `exits`: every request is served afresh (no response
/// cache), so every one reaches the exits with its figures.
fn traced_with(exits: HubExits) -> TestHub {
    TestHub::traced_built(10, |builder| builder.exits(exits))
}

/// A traced Hub whose spans go to `collector`, and its OTLP exit.
fn traced_to(collector: &Collector) -> (TestHub, Arc<OtlpSink>) {
    let otlp =
        Arc::new(OtlpSink::start(OtlpConfig::new(collector.endpoint(), "scion-hub")).unwrap());
    let exits = HubExits {
        otlp: Some(Arc::clone(&otlp)),
        ..HubExits::default()
    };
    (traced_with(exits), otlp)
}

fn metrics_on() -> HubExits {
    let settings = ExitSettings {
        metrics: true,
        ..ExitSettings::default()
    };
    HubExits::start(&settings).unwrap()
}

#[tokio::test]
async fn metrics_are_for_platform_admins_only() {
    let hub = traced_with(metrics_on());
    let doc = hub.doc().clone();
    hub.get(&hub.project_agents_uri(), Some(&doc.member_token))
        .await;
    let admin = hub
        .get("/api/v1/admin/metrics", Some(&doc.admin_token))
        .await;
    assert_eq!(admin.status, StatusCode::OK);
    assert_eq!(admin.headers["content-type"], OPENMETRICS_CONTENT_TYPE);
    let text = String::from_utf8(admin.body.clone()).unwrap();
    assert!(text.ends_with("# EOF\n"));
    assert!(text
        .contains(r#"scion_hub_requests_total{endpoint="agents.project.legacy",status="2xx"} 1"#));
    assert!(
        text.contains(
            r#"scion_hub_store_calls_total{endpoint="agents.project.legacy",method="GetAgent"}"#
        ) || text.contains(r#"scion_hub_store_calls_total{endpoint="agents.project.legacy""#)
    );
    let member = hub
        .get("/api/v1/admin/metrics", Some(&doc.member_token))
        .await;
    assert_eq!(member.status, StatusCode::FORBIDDEN);
    assert_eq!(member.json()["error"], "forbidden");
    let anonymous = hub.get("/api/v1/admin/metrics", None).await;
    assert_eq!(anonymous.status, StatusCode::UNAUTHORIZED);
    assert!(anonymous.json()["error"].is_string());
    // Each request past authentication has its line, the metrics requests
    // too; the refused one has none (authentication answers it first).
    assert_eq!(hub.perf_values().len(), 3);
}

#[tokio::test]
async fn without_the_setting_there_is_no_metrics_route() {
    let hub = TestHub::traced(10);
    let token = hub.doc().admin_token.clone();
    let reply = hub.get("/api/v1/admin/metrics", Some(&token)).await;
    assert_eq!(reply.status, StatusCode::NOT_FOUND);
}

#[tokio::test]
async fn metric_series_are_fixed_by_the_key_sets_whatever_the_requests() {
    let hub = traced_with(metrics_on());
    let doc = hub.doc().clone();
    let tokens = [
        Some(doc.member_token.clone()),
        Some(doc.owner_token.clone()),
        Some(doc.admin_token.clone()),
        Some("garbage-token".to_owned()),
        None,
    ];
    let mut rng = Rng(0x2545_f491_4f6c_dd1d);
    let mut words = Vec::new();
    let mut counts = Vec::new();
    for _ in 0..3 {
        for _ in 0..60 {
            let word = rng.word(4..=11);
            let token = tokens[(rng.next() % tokens.len() as u64) as usize].as_deref();
            let uri = match rng.next() % 5 {
                0 => format!("{}?{word}={}", hub.project_agents_uri(), rng.word(4..=11)),
                1 => format!("/api/v1/agents?limit=5&q{word}=1"),
                2 => format!("/api/v1/agents/{word}"),
                3 => format!("/{word}/{}", rng.word(4..=11)),
                _ => format!("/healthz?{word}"),
            };
            words.push(word);
            hub.get(&uri, token).await;
        }
        let text = String::from_utf8(
            hub.get("/api/v1/admin/metrics", Some(&doc.admin_token))
                .await
                .body,
        )
        .unwrap();
        counts.push(series(&text).len());
        for word in &words {
            assert!(
                !text.contains(&format!("\"{word}\"")),
                "request text {word} became a label"
            );
        }
    }
    // The first round has met every class the random requests reach; more
    // requests add counts, never series.
    assert_eq!(counts[1], counts[2], "series after each round: {counts:?}");
    assert!(counts[0] <= counts[1]);
}

fn string_attribute(
    span: &opentelemetry_proto::tonic::trace::v1::Span,
    key: &str,
) -> Option<String> {
    span.attributes.iter().find(|a| a.key == key).and_then(|a| {
        match a.value.as_ref()?.value.as_ref()? {
            AnyValue::StringValue(s) => Some(s.clone()),
            _ => None,
        }
    })
}

#[tokio::test]
async fn otlp_spans_reach_the_collector_parented_and_named_by_class() {
    let collector = Collector::start(200);
    let (hub, otlp) = traced_to(&collector);
    let doc = hub.doc().clone();
    let uri = hub.project_agents_uri();
    let reply = hub
        .call(
            Method::GET,
            &uri,
            Some(&doc.member_token),
            &[(
                "traceparent",
                "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01",
            )],
            "",
        )
        .await;
    assert_eq!(reply.status, StatusCode::OK);
    let traceresponse = reply.headers["traceresponse"].to_str().unwrap().to_owned();
    assert!(traceresponse.starts_with("00-0af7651916cd43dd8448eb211c80319c-"));
    assert!(otlp.flush(Duration::from_secs(10)));
    let spans = collector.spans();
    assert_eq!(spans.len(), 1);
    let span = &spans[0];
    assert_eq!(span.name, "agents.project.legacy");
    let hex = |b: &[u8]| b.iter().map(|x| format!("{x:02x}")).collect::<String>();
    assert_eq!(hex(&span.parent_span_id), "b7ad6b7169203331");
    assert_eq!(
        traceresponse,
        format!("00-{}-{}-01", hex(&span.trace_id), hex(&span.span_id))
    );
    let line = hub.line_of(reply.headers["x-request-id"].to_str().unwrap());
    assert_eq!(
        string_attribute(span, "perf_trace.request_id").as_deref(),
        line["request_id"].as_str()
    );
    let exported = format!("{:?}", collector.requests());
    for private in [
        doc.project_id.as_str(),
        doc.member_token.as_str(),
        "/api/v1",
    ] {
        assert!(!exported.contains(private), "{private} leaked into a span");
    }
}

#[tokio::test]
async fn a_failing_collector_costs_requests_nothing_and_is_counted() {
    let collector = Collector::start(503);
    let (hub, otlp) = traced_to(&collector);
    let token = hub.doc().member_token.clone();
    for _ in 0..5 {
        let reply = hub.get(&hub.project_agents_uri(), Some(&token)).await;
        assert_eq!(reply.status, StatusCode::OK);
    }
    assert_eq!(hub.perf_values().len(), 5);
    assert!(otlp.flush(Duration::from_secs(30)));
    assert_eq!(otlp.stats().dropped_export_failed, 5);
    assert_eq!(otlp.stats().exported, 0);
}

#[tokio::test]
async fn tail_sampling_keeps_failures_perf_header_requests_and_one_in_n() {
    let settings = ExitSettings {
        metrics: true,
        sampling_one_in: Some(1_000),
        slow_ms: 60_000,
        ..ExitSettings::default()
    };
    let hub = traced_with(HubExits::start(&settings).unwrap());
    let doc = hub.doc().clone();
    for _ in 0..20 {
        hub.get("/healthz", None).await;
    }
    let asked = hub
        .call(
            Method::GET,
            &hub.project_agents_uri(),
            Some(&doc.admin_token),
            &[("x-scion-perf-trace", "1")],
            "",
        )
        .await;
    assert!(asked.headers.contains_key("x-scion-perf-endpoint"));
    let lines = hub.perf_values();
    // The first health check is the 1 in 1000; the perf-header request is kept.
    assert_eq!(lines.len(), 2, "{lines:?}");
    assert_eq!(lines[1]["endpoint"], "agents.project.legacy");
    let text = String::from_utf8(
        hub.get("/api/v1/admin/metrics", Some(&doc.admin_token))
            .await
            .body,
    )
    .unwrap();
    // Metrics count every request, sampled or not.
    assert!(text.contains(r#"scion_hub_requests_total{endpoint="other",status="2xx"} 20"#));
    assert!(text.contains("scion_hub_sampled_out_total 19"));
}

#[test]
fn exits_without_tracing_are_ignored_with_a_warning() {
    let seeded = Seeded::new(5);
    let log = CaptureBuffer::new();
    let hub = Hub::builder(seeded.db(), hub_options(Settings::default(), &log))
        .exits(metrics_on())
        .build();
    assert!(hub.exits().metrics.is_none());
    assert!(log
        .lines()
        .iter()
        .any(|l| l.contains("need tracing on") && l.contains("server.hub.perf_trace")));
}
