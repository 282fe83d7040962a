//! End-to-end tests of apibench against an in-process mock Hub
//! ([`mock_hub`]): its report, the trace headers, the join to the Hub's log
//! by request id, and its one-line errors.

mod mock_hub;

use hub_bench::apibench;
use hub_bench::report::{PerfTraceSource, Report};
use mock_hub::*;
use serde_json::{json, Value};
use std::path::PathBuf;

fn assert_report_shape(json: &Value) {
    assert_keys(
        json,
        "report",
        &[
            "generatedAt",
            "harnessCommit",
            "harnessCommitDirty",
            "harnessCommitSource",
            "hubScionVersion",
            "hubBaseUrl",
            "effectiveSettings",
            "seed",
            "scenarios",
            "machine",
        ],
    );
    assert_keys(
        &json["machine"],
        "machine",
        &[
            "os",
            "arch",
            "numCpu",
            "rustVersion",
            "hostname",
            "notes",
            "loadAvgStart",
            "loadAvgEnd",
            "uptimeSeconds",
        ],
    );
    for s in json["scenarios"].as_array().unwrap() {
        assert_keys(
            s,
            "scenario",
            &[
                "name",
                "endpoint",
                "agentCount",
                "runs",
                "attempts",
                "successCount",
                "failureCount",
                "medianTtfbMs",
                "medianTotalMs",
                "minTotalMs",
                "maxTotalMs",
                "stddevTotalMs",
                "perfTraceAvailable",
            ],
        );
        for a in s["attempts"].as_array().unwrap() {
            assert_keys(
                a,
                "attempt",
                &[
                    "index",
                    "status",
                    "success",
                    "error",
                    "bytes",
                    "ttfbMs",
                    "totalMs",
                    "requestId",
                ],
            );
        }
    }
    let text = json.to_string();
    for secret in [
        MEMBER_TOKEN,
        SESSION_SECRET,
        "owner-token-s3cr3t",
        "admin-token-s3cr3t",
    ] {
        assert!(!text.contains(secret), "report leaks {secret}");
    }
    assert_eq!(json["seed"]["memberToken"], "REDACTED");
    assert_eq!(json["seed"]["sessionSecret"], "REDACTED");
    assert_eq!(json["seed"]["projectId"], PROJECT_ID);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn apibench_keeps_perf_headers() {
    let hub = MockHub::start(MockOptions::default()).await;
    let out = hub.out("api.json");
    let mut args = apibench_args(&hub, &out);
    args.want_perf_trace = true;
    let report = apibench::run(args).await.unwrap();

    let json = read_report(&out);
    assert_report_shape(&json);
    assert_eq!(
        serde_json::from_value::<Report>(json.clone()).unwrap(),
        report
    );
    assert_eq!(report.hub_scion_version, "0.1.0-mock");
    assert_eq!(report.hub_base_url, hub.url());
    assert_eq!(
        json["effectiveSettings"],
        json!({"runs": 3, "warmup": 1, "timeoutSeconds": 10, "wantPerfTrace": true})
    );
    assert_eq!(report.machine.notes, "mock hub");

    let names: Vec<&str> = report.scenarios.iter().map(|s| s.name.as_str()).collect();
    assert_eq!(
        names,
        [
            "project-agents-list",
            "global-agents-list-unscoped",
            "global-agents-list-scoped"
        ]
    );
    assert_eq!(
        report.scenarios[0].endpoint,
        format!("GET /api/v1/projects/{PROJECT_ID}/agents")
    );
    assert_eq!(
        report.scenarios[2].endpoint,
        format!("GET /api/v1/agents?projectId={PROJECT_ID}")
    );
    for s in &report.scenarios {
        assert_eq!(
            (s.runs, s.success_count, s.failure_count),
            (3, 3, 0),
            "{}",
            s.name
        );
        assert_eq!(s.agent_count, 3);
        assert!(s.perf_trace_available);
        assert!(s.median_total_ms.is_some() && s.stddev_total_ms.is_some());
        for (i, a) in s.attempts.iter().enumerate() {
            assert_eq!(a.index as usize, i);
            assert_eq!(a.status, 200);
            assert!(a.success && a.error.is_none());
            assert!(a.bytes > 0);
            assert!(a.ttfb_ms <= a.total_ms);
            assert!(a.request_id.starts_with("00000000-0000-4000-8000-"));
            assert_eq!(a.perf_trace_source, Some(PerfTraceSource::Headers));
            let t = a.perf_trace.as_ref().unwrap();
            assert_eq!(t["X-Scion-Perf-Phases"], "list_db_read=10");
            assert_eq!(
                t["X-Scion-Perf-DB"],
                "wait_count=0,wait_us=0,in_use=1,open=2"
            );
            assert_eq!(t.len(), 7);
        }
    }
    assert_eq!(
        json["scenarios"][0]["attempts"][0]["perfTraceSource"],
        "headers"
    );
    // Warmups were sent (not recorded): 3 scenarios x (1 + 3), plus the version lookup.
    let hits = hub.hits();
    assert_eq!(hits["project-agents-list"], 4);
    assert_eq!(hits["global-agents-list"], 8);
    assert_eq!(hits["settings-public"], 1);
}

/// An apibench run against a mock Hub with its log joined; the Hub, the
/// report's path and the report.
async fn apibench_joined(
    options: MockOptions,
    want_perf_trace: bool,
) -> (MockHub, PathBuf, Report) {
    let hub = MockHub::start(options).await;
    let out = hub.out("api.json");
    let mut args = apibench_args(&hub, &out);
    args.want_perf_trace = want_perf_trace;
    args.hub_perf_log = Some(hub.log());
    let report = apibench::run(args).await.unwrap();
    (hub, out, report)
}

/// Every attempt of every scenario has its trace from the Hub's log.
fn every_attempt_joined(report: &Report) {
    for s in &report.scenarios {
        assert!(s.perf_trace_available);
        for a in &s.attempts {
            assert_eq!(a.perf_trace_source, Some(PerfTraceSource::HubLog));
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn apibench_joins_the_hub_log() {
    let (hub, out, report) = apibench_joined(MockOptions::default(), true).await;
    // The log wins over the headers, and carries serialize.
    every_attempt_joined(&report);
    for s in &report.scenarios {
        for a in &s.attempts {
            let t = a.perf_trace.as_ref().unwrap();
            assert_eq!(t["X-Scion-Perf-Phases"], "list_db_read=10,serialize=5");
            assert_eq!(t["X-Scion-Perf-Phase-Counts"], "list_db_read=2,serialize=1");
            assert_eq!(
                t["X-Scion-Perf-Store-Calls"],
                "GetEffectiveGroups=1,GetUser=3"
            );
            assert_eq!(t["X-Scion-Perf-Store-Us"], "GetEffectiveGroups=7,GetUser=9");
            assert_eq!(
                t["X-Scion-Perf-Decisions"],
                "count=6,allow=4,deny=2,other=0,audit_us=1"
            );
            assert_eq!(
                t["X-Scion-Perf-DB"],
                "wait_count=0,wait_us=0,in_use=1,open=2"
            );
        }
    }
    assert_eq!(
        report.scenarios[0].attempts[0].perf_trace.as_ref().unwrap()["X-Scion-Perf-Endpoint"],
        "agents.project.legacy"
    );
    assert_eq!(
        report.scenarios[1].attempts[0].perf_trace.as_ref().unwrap()["X-Scion-Perf-Endpoint"],
        "agents.global.legacy"
    );
    let json = read_report(&out);
    assert_eq!(
        json["scenarios"][1]["attempts"][2]["perfTraceSource"],
        "hub-log"
    );
    // The guide's jq join: the attempt's request id finds exactly its raw line.
    let id = json["scenarios"][0]["attempts"][0]["requestId"]
        .as_str()
        .unwrap()
        .to_owned();
    let log = std::fs::read_to_string(hub.log()).unwrap();
    let matching: Vec<&str> = log
        .lines()
        .filter(|l| {
            serde_json::from_str::<Value>(l)
                .is_ok_and(|v| v["msg"] == "perf_trace" && v["request_id"] == id.as_str())
        })
        .collect();
    assert_eq!(matching.len(), 1);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn apibench_log_join_without_headers() {
    let (_hub, _out, report) = apibench_joined(MockOptions::default(), false).await;
    every_attempt_joined(&report);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn apibench_gcp_log_is_not_joined() {
    let gcp = MockOptions {
        gcp: true,
        ..MockOptions::default()
    };
    let (_hub, out, report) = apibench_joined(gcp, false).await;
    for s in &report.scenarios {
        assert!(!s.perf_trace_available);
        assert!(s.attempts.iter().all(|a| a.perf_trace.is_none()));
    }
    let json = read_report(&out);
    assert_eq!(json["scenarios"][0]["perfTraceAvailable"], false);
    assert!(json["scenarios"][0]["attempts"][0]
        .get("perfTrace")
        .is_none());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn apibench_missing_log_fails_before_any_request_or_report() {
    let hub = MockHub::start(MockOptions::default()).await;
    let out = hub.out("api.json");
    let mut args = apibench_args(&hub, &out);
    args.hub_perf_log = Some(hub.out("no-such.log"));
    let msg = one_line_error(apibench::run(args).await.unwrap_err(), &out);
    assert!(msg.starts_with("read hub perf log: "), "{msg}");
    assert_eq!(hub.total_hits(), 0, "requests were sent");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn apibench_missing_seed_is_one_line_error() {
    let hub = MockHub::start(MockOptions::default()).await;
    let out = hub.out("api.json");
    let mut args = apibench_args(&hub, &out);
    args.seed = hub.out("no-such-seed.json");
    let msg = one_line_error(apibench::run(args).await.unwrap_err(), &out);
    assert!(msg.starts_with("read seed file "), "{msg}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn apibench_records_failures_when_the_hub_is_down() {
    let hub = MockHub::start(MockOptions::default()).await;
    // A port nothing listens on.
    let closed = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = closed.local_addr().unwrap().port();
    drop(closed);
    let out = hub.out("api.json");
    let mut args = apibench_args(&hub, &out);
    args.hub = format!("http://127.0.0.1:{port}");
    args.warmup = 0;
    args.runs = 2;
    let report = apibench::run(args).await.unwrap();
    assert_eq!(report.hub_scion_version, "");
    for s in &report.scenarios {
        assert_eq!((s.success_count, s.failure_count), (0, 2));
        assert_eq!(s.median_total_ms, None);
        assert_eq!(s.stddev_total_ms, None);
        assert!(!s.perf_trace_available);
        for a in &s.attempts {
            assert_eq!(a.status, 0);
            assert!(!a.success);
            let err = a.error.as_deref().unwrap();
            assert!(!err.is_empty() && !err.contains('\n'), "{err}");
            assert_eq!(a.request_id, "");
        }
    }
    let json = read_report(&out);
    assert_eq!(json["scenarios"][0]["medianTotalMs"], Value::Null);
    assert_eq!(json["scenarios"][0]["attempts"][0]["status"], 0);
}
