//! End-to-end tests of apibench and load against an in-process mock hub.
//!
//! The mock serves the endpoints the harness uses, answers every request with
//! an `X-Request-ID`, writes one `perf_trace` JSON line per request to a log
//! file (with fixed, known figures), and returns `X-Scion-Perf-*` headers to
//! any caller that sends `X-Scion-Perf-Trace: 1` (the real hub restricts them
//! to admins; the mock does not, so the header path can be tested).

use std::collections::BTreeMap;
use std::io::Write as _;
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use axum::extract::{Path as UrlPath, Request, State};
use axum::http::{HeaderMap, HeaderValue, StatusCode};
use axum::middleware::{self, Next};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, put};
use axum::{Json, Router};
use hub_bench::apibench::{self, ApibenchArgs};
use hub_bench::load::{run_load, LoadArgs, DEFAULT_MAX_REQUESTS};
use hub_bench::report::{PerfTraceSource, Report};
use serde_json::{json, Value};

const MEMBER_TOKEN: &str = "member-token-s3cr3t";
const SESSION_SECRET: &str = "mock-session-secret";
const PROJECT_ID: &str = "p-bench";
const AGENTS: [&str; 3] = [
    "11111111-1111-4111-8111-000000000001",
    "11111111-1111-4111-8111-000000000002",
    "11111111-1111-4111-8111-000000000003",
];

#[derive(Clone, Copy, Default)]
struct MockOptions {
    /// Write log lines in GCP format (`message` instead of `msg`).
    gcp: bool,
    /// Answer `/healthz` with 500.
    broken_health: bool,
}

struct MockState {
    options: MockOptions,
    log: Mutex<std::fs::File>,
    next_id: AtomicU64,
    hits: Mutex<BTreeMap<String, u64>>,
}

struct MockHub {
    addr: SocketAddr,
    state: Arc<MockState>,
    dir: tempfile::TempDir,
    server: tokio::task::JoinHandle<()>,
}

impl Drop for MockHub {
    fn drop(&mut self) {
        self.server.abort();
    }
}

impl MockHub {
    async fn start(options: MockOptions) -> MockHub {
        let dir = tempfile::tempdir().unwrap();
        let mut log = std::fs::File::create(dir.path().join("hub.log")).unwrap();
        writeln!(log, "hub starting (plain text)").unwrap();
        writeln!(
            log,
            r#"{{"time":"2026-01-01T00:00:00Z","level":"WARN","msg":"Request performance tracing is on (server.hub.perf_trace); per-request perf_trace lines are logged"}}"#
        )
        .unwrap();
        let seed = json!({
            "phaseCounts": {"running": 2, "stopped": 1},
            "activityCounts": {"idle": 3},
            "creatorCounts": {"u-owner": 3},
            "projectId": PROJECT_ID,
            "projectSlug": "bench-3",
            "otherProjectId": "p-other",
            "ownerUserId": "u-owner",
            "ownerEmail": "owner@example.test",
            "ownerToken": "owner-token-s3cr3t",
            "memberUserId": "u-member",
            "memberEmail": "member@example.test",
            "memberToken": MEMBER_TOKEN,
            "adminUserId": "u-admin",
            "adminEmail": "admin@example.test",
            "adminToken": "admin-token-s3cr3t",
            "agentCount": AGENTS.len(),
            "randSeed": 42,
            "dbPath": "/tmp/hub3.db",
            "seededAt": "2026-01-01T00:00:00Z",
            "sessionSecret": SESSION_SECRET,
        });
        std::fs::write(dir.path().join("seed.json"), seed.to_string()).unwrap();

        let state = Arc::new(MockState {
            options,
            log: Mutex::new(log),
            next_id: AtomicU64::new(1),
            hits: Mutex::new(BTreeMap::new()),
        });
        let app = Router::new()
            .route("/healthz", get(healthz))
            .route("/api/v1/settings/public", get(settings_public))
            .route("/api/v1/projects/{id}/agents", get(project_agents))
            .route("/api/v1/agents", get(global_agents))
            .route("/api/v1/agents/{id}", get(agent_by_id))
            .route("/api/v1/admin/server-config", put(server_config))
            .layer(middleware::from_fn_with_state(state.clone(), trace))
            .with_state(state.clone());
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        let server = tokio::spawn(async move {
            axum::serve(listener, app).await.unwrap();
        });
        MockHub {
            addr,
            state,
            dir,
            server,
        }
    }

    fn url(&self) -> String {
        format!("http://{}", self.addr)
    }

    fn seed(&self) -> PathBuf {
        self.dir.path().join("seed.json")
    }

    fn log(&self) -> PathBuf {
        self.dir.path().join("hub.log")
    }

    fn out(&self, name: &str) -> PathBuf {
        self.dir.path().join(name)
    }

    fn hits(&self) -> BTreeMap<String, u64> {
        self.state.hits.lock().unwrap().clone()
    }

    fn total_hits(&self) -> u64 {
        self.hits().values().sum()
    }
}

fn member(headers: &HeaderMap) -> bool {
    headers.get("authorization").and_then(|v| v.to_str().ok())
        == Some(&format!("Bearer {MEMBER_TOKEN}"))
}

/// The mock's error answer: `status` with `{"error": message}`.
fn error(status: StatusCode, message: &str) -> Response {
    (status, Json(json!({ "error": message }))).into_response()
}

fn agent_list() -> Value {
    json!({
        "agents": AGENTS.iter().map(|id| json!({"id": id, "name": format!("agent {id}")})).collect::<Vec<_>>(),
        "capabilities": {"create": false},
    })
}

async fn healthz(State(st): State<Arc<MockState>>) -> Response {
    if st.options.broken_health {
        return error(StatusCode::INTERNAL_SERVER_ERROR, "down");
    }
    Json(json!({"status": "ok"})).into_response()
}

async fn settings_public() -> Response {
    Json(json!({"version": "0.1.0-mock", "name": "mock hub"})).into_response()
}

async fn project_agents(headers: HeaderMap, UrlPath(id): UrlPath<String>) -> Response {
    if !member(&headers) {
        return error(StatusCode::UNAUTHORIZED, "unauthenticated");
    }
    if id != PROJECT_ID {
        return error(StatusCode::FORBIDDEN, "forbidden");
    }
    Json(agent_list()).into_response()
}

async fn global_agents(headers: HeaderMap) -> Response {
    if !member(&headers) {
        return error(StatusCode::UNAUTHORIZED, "unauthenticated");
    }
    Json(agent_list()).into_response()
}

async fn agent_by_id(headers: HeaderMap, UrlPath(id): UrlPath<String>) -> Response {
    if !member(&headers) {
        return error(StatusCode::UNAUTHORIZED, "unauthenticated");
    }
    if AGENTS.contains(&id.as_str()) {
        Json(json!({"id": id})).into_response()
    } else {
        error(StatusCode::NOT_FOUND, "agent not found")
    }
}

async fn server_config(headers: HeaderMap) -> Response {
    if !member(&headers) {
        return error(StatusCode::UNAUTHORIZED, "unauthenticated");
    }
    error(StatusCode::FORBIDDEN, "forbidden")
}

/// The mock's name for a request: the load mix's endpoint names.
fn route_name(method: &str, path: &str) -> String {
    let parts: Vec<&str> = path.trim_matches('/').split('/').collect();
    match (method, parts.as_slice()) {
        ("GET", ["healthz"]) => "healthz".into(),
        ("GET", ["api", "v1", "settings", "public"]) => "settings-public".into(),
        ("GET", ["api", "v1", "projects", _, "agents"]) => "project-agents-list".into(),
        ("GET", ["api", "v1", "agents"]) => "global-agents-list".into(),
        ("GET", ["api", "v1", "agents", id]) if AGENTS.contains(id) => "agent-by-id".into(),
        ("GET", ["api", "v1", "agents", _]) => "missing-agent".into(),
        ("PUT", ["api", "v1", "admin", "server-config"]) => "server-config-forbidden".into(),
        _ => format!("{method} {path}"),
    }
}

/// The trace headers the mock returns beside `x-scion-perf-endpoint`: the
/// same figures as its log line.
const PERF_HEADERS: [(&str, &str); 6] = [
    ("x-scion-perf-phases", "list_db_read=10"),
    ("x-scion-perf-phase-counts", "list_db_read=2"),
    ("x-scion-perf-store-calls", "GetEffectiveGroups=1,GetUser=3"),
    ("x-scion-perf-store-us", "GetEffectiveGroups=7,GetUser=9"),
    (
        "x-scion-perf-decisions",
        "count=6,allow=4,deny=2,other=0,audit_us=1",
    ),
    ("x-scion-perf-db", "wait_count=0,wait_us=0,in_use=1,open=2"),
];

/// The tracing middleware of the mock: request id, optional headers, one line.
async fn trace(State(st): State<Arc<MockState>>, req: Request, next: Next) -> Response {
    let n = st.next_id.fetch_add(1, Ordering::Relaxed);
    let request_id = format!("00000000-0000-4000-8000-{n:012}");
    let want = req
        .headers()
        .get("x-scion-perf-trace")
        .is_some_and(|v| v == "1");
    let method = req.method().to_string();
    let route = route_name(&method, req.uri().path());
    *st.hits.lock().unwrap().entry(route.clone()).or_default() += 1;
    let mut resp = next.run(req).await;
    let endpoint = match route.as_str() {
        "project-agents-list" => "agents.project.legacy",
        "global-agents-list" => "agents.global.legacy",
        _ => "other",
    };
    let h = resp.headers_mut();
    h.insert("x-request-id", HeaderValue::from_str(&request_id).unwrap());
    if want {
        h.insert("x-scion-perf-endpoint", HeaderValue::from_static(endpoint));
        for (name, value) in PERF_HEADERS {
            h.insert(name, HeaderValue::from_static(value));
        }
    }
    let msg_key = if st.options.gcp { "message" } else { "msg" };
    let line = format!(
        r#"{{"time":"2026-01-01T00:00:00.000000000Z","level":"INFO","{msg_key}":"perf_trace","component":"scion-hub","subsystem":"hub.perf-trace","endpoint":"{endpoint}","elapsed_us":42,"phase_list_db_read_us":10,"phase_list_db_read_n":2,"phase_serialize_us":5,"phase_serialize_n":1,"store_GetEffectiveGroups_n":1,"store_GetEffectiveGroups_us":7,"store_GetUser_n":3,"store_GetUser_us":9,"authz_store_calls":4,"authz_store_us":16,"audit_records":6,"audit_allow":4,"audit_deny":2,"audit_other":0,"audit_emit_us":1,"db_wait_count":0,"db_wait_us":0,"db_in_use":1,"db_open":2,"method":"{method}","request_id":"{request_id}","mock_route":"{route}"}}"#
    );
    let mut log = st.log.lock().unwrap();
    writeln!(log, "{line}").unwrap();
    if n % 2 == 0 {
        writeln!(
            log,
            r#"{{"level":"INFO","msg":"request served","request_id":"{request_id}"}}"#
        )
        .unwrap();
    }
    resp
}

fn apibench_args(hub: &MockHub, out: &Path) -> ApibenchArgs {
    ApibenchArgs {
        hub: hub.url(),
        seed: hub.seed(),
        runs: 3,
        warmup: 1,
        timeout_seconds: 10,
        want_perf_trace: false,
        hub_perf_log: None,
        out: out.to_path_buf(),
        notes: "mock hub".into(),
        quiet: false,
    }
}

fn read_report(path: &Path) -> Value {
    serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap()
}

/// Fails unless `json` has every one of `keys`; `what` names it.
fn assert_keys(json: &Value, what: &str, keys: &[&str]) {
    for key in keys {
        assert!(json.get(key).is_some(), "{what} lacks {key}");
    }
}

/// `error` as one line of text, once it is checked to be one line and no
/// report is found at `out`.
fn one_line_error(error: anyhow::Error, out: &Path) -> String {
    let msg = format!("{error:#}");
    assert!(!msg.contains('\n'), "{msg}");
    assert!(!out.exists(), "a report was written");
    msg
}

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

fn load_args(hub: &MockHub, users: u32, duration: Duration) -> LoadArgs {
    LoadArgs {
        hub: hub.url(),
        seed: hub.seed(),
        users,
        duration,
        spawn_rate: 100,
        max_requests: DEFAULT_MAX_REQUESTS,
        out: hub.out("load.json"),
        notes: String::new(),
        hub_pid: None,
        csv: None,
        compare: None,
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn load_counts_add_up() {
    let hub = MockHub::start(MockOptions::default()).await;
    let args = load_args(&hub, 5, Duration::from_secs(2));
    let out = args.out.clone();
    let started = std::time::Instant::now();
    let report = run_load(args).await.unwrap();
    assert!(
        started.elapsed() < Duration::from_secs(10),
        "the run did not stop by itself"
    );

    assert_eq!(report.users_started, 5);
    assert_eq!(report.unexpected_failures, 0, "{:#?}", report.endpoints);
    assert_eq!(report.abandoned_requests, 0);
    assert!(!report.request_cap_reached);
    assert!(report.total_requests > 0);
    assert!(report.duration_seconds >= 2.0 && report.duration_seconds < 5.0);
    assert!(report.rps > 0.0);

    let names: Vec<&str> = report.endpoints.iter().map(|e| e.name.as_str()).collect();
    assert_eq!(
        names,
        [
            "project-agents-list",
            "global-agents-list",
            "agent-by-id",
            "missing-agent",
            "healthz",
            "settings-public",
            "server-config-forbidden"
        ]
    );
    let by_name: BTreeMap<&str, _> = report
        .endpoints
        .iter()
        .map(|e| (e.name.as_str(), e))
        .collect();
    // Counts per endpoint add up to the totals.
    assert_eq!(
        report
            .endpoints
            .iter()
            .map(|e| e.latency.count)
            .sum::<u64>(),
        report.total_requests
    );
    assert_eq!(report.overall.count, report.total_requests);
    assert_eq!(
        report.sent_requests,
        report.total_requests + report.abandoned_requests
    );
    for e in &report.endpoints {
        assert!(e.latency.count > 0, "{} never ran", e.name);
        assert_eq!(e.sent, e.latency.count + e.abandoned, "{}", e.name);
        assert_eq!(
            e.status_counts.values().sum::<u64>(),
            e.latency.count,
            "{}",
            e.name
        );
        assert_eq!(e.unexpected_failures, 0);
        assert!(e.latency.p50_ms <= e.latency.p95_ms && e.latency.p95_ms <= e.latency.max_ms);
    }
    // Expected 4xx are counted as expected failures, and only those.
    let missing = by_name["missing-agent"];
    let forbidden = by_name["server-config-forbidden"];
    assert_eq!(missing.expected_failures, missing.latency.count);
    assert_eq!(missing.status_counts["404"], missing.latency.count);
    assert_eq!(forbidden.expected_failures, forbidden.latency.count);
    assert_eq!(forbidden.status_counts["403"], forbidden.latency.count);
    assert_eq!(
        report.expected_failures,
        missing.latency.count + forbidden.latency.count
    );
    assert_eq!(by_name["healthz"].expected_failures, 0);
    // The mix's proportions hold (each user walks the 17-step schedule).
    let project = by_name["project-agents-list"].sent as f64;
    let health = by_name["healthz"].sent as f64;
    assert!(project > 2.0 * health, "{project} vs {health}");

    // What the hub saw matches what the tool sent, endpoint by endpoint (the
    // project list once more: the agent-id lookup at the start; /healthz once
    // more: the audit health read at the end).
    let hits = hub.hits();
    for e in &report.endpoints {
        let extra = u64::from(e.name == "project-agents-list" || e.name == "healthz");
        assert_eq!(hits[&e.name], e.sent + extra, "{}", e.name);
    }
    // One perf_trace line per request served.
    let log = std::fs::read_to_string(hub.log()).unwrap();
    let lines = log
        .lines()
        .filter(|l| hub_bench::parse_perf_line(l).is_some())
        .count() as u64;
    // Beside the run's requests: the agent-id lookup, and the cache table
    // and /healthz read at the end.
    assert_eq!(lines, report.sent_requests + 3);

    let json = read_report(&out);
    assert_keys(
        &json,
        "load report",
        &[
            "totalRequests",
            "durationSeconds",
            "rps",
            "expectedFailures",
            "unexpectedFailures",
            "overall",
            "endpoints",
            "machine",
        ],
    );
    let latency = [
        "count", "avgMs", "p50Ms", "p90Ms", "p95Ms", "p99Ms", "maxMs",
    ];
    assert_keys(&json["overall"], "overall", &latency);
    assert_keys(&json["endpoints"][0], "endpoint", &latency);
    assert!(!json.to_string().contains(MEMBER_TOKEN));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn load_counts_unexpected_failures_and_respects_the_cap() {
    let hub = MockHub::start(MockOptions {
        broken_health: true,
        ..MockOptions::default()
    })
    .await;
    let mut args = load_args(&hub, 2, Duration::from_secs(30));
    args.max_requests = 40;
    let started = std::time::Instant::now();
    let report = run_load(args).await.unwrap();
    assert!(
        started.elapsed() < Duration::from_secs(10),
        "the cap did not stop the run"
    );
    assert!(report.request_cap_reached);
    assert_eq!(report.sent_requests, 40);
    let health = report
        .endpoints
        .iter()
        .find(|e| e.name == "healthz")
        .unwrap();
    assert!(health.latency.count > 0);
    assert_eq!(health.unexpected_failures, health.latency.count);
    assert_eq!(report.unexpected_failures, health.unexpected_failures);
    assert_eq!(health.status_counts["500"], health.latency.count);
    assert!(health
        .first_unexpected
        .as_deref()
        .unwrap()
        .starts_with("HTTP 500"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn load_refuses_a_hub_that_does_not_list_the_project() {
    let hub = MockHub::start(MockOptions::default()).await;
    let seed = hub.out("other-seed.json");
    let mut v: Value = serde_json::from_str(&std::fs::read_to_string(hub.seed()).unwrap()).unwrap();
    v["memberToken"] = json!("wrong");
    std::fs::write(&seed, v.to_string()).unwrap();
    let mut args = load_args(&hub, 1, Duration::from_secs(1));
    args.seed = seed;
    let out = args.out.clone();
    let msg = one_line_error(run_load(args).await.unwrap_err(), &out);
    assert!(msg.contains("HTTP 401"), "{msg}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn load_reports_p75_the_hub_process_csv_and_compares_with_an_earlier_run() {
    let hub = MockHub::start(MockOptions::default()).await;
    let before = run_load(load_args(&hub, 2, Duration::from_secs(1)))
        .await
        .unwrap();
    let before_path = hub.out("before.json");
    std::fs::rename(hub.out("load.json"), &before_path).unwrap();

    let csv_dir = hub.out("csv");
    let args = LoadArgs {
        csv: Some(csv_dir.clone()),
        compare: Some(before_path.clone()),
        ..load_args(&hub, 2, Duration::from_secs(1))
    };
    let report = run_load(args).await.unwrap();

    for e in report.endpoints.iter().chain([&before.endpoints[0]]) {
        let l = &e.latency;
        assert!(l.p50_ms <= l.p75_ms && l.p75_ms <= l.p90_ms, "{}", e.name);
    }
    // The mock Hub serves inside this process: found from its port.
    let process = report
        .hub_process
        .as_ref()
        .expect("the Hub process sampled");
    assert_eq!(process.pid, std::process::id());
    assert_eq!(process.found_by, "port");
    assert!(process.samples >= 2 && process.rss_mib_max > 0.0);
    // Its CPU split by thread name (this test's own threads) and kernel
    // time: no part larger than the whole, beyond rounding and the clock
    // tick or two by which the threads' readings, a moment before the
    // process's, can differ over a run this short.
    assert!(!process.threads.is_empty());
    assert!(process.system_percent_avg <= process.cpu_percent_avg + 0.1);
    let threads: f64 = process.threads.iter().map(|t| t.cpu_percent_avg).sum();
    assert!(
        threads <= process.cpu_percent_avg + 2.0 + 0.05 * process.threads.len() as f64,
        "{process:?}"
    );
    for thread in &process.threads {
        assert!(thread.threads >= 1 && !thread.name.is_empty(), "{thread:?}");
        assert!(thread.system_percent_avg <= thread.cpu_percent_avg + 0.1);
    }
    // The client's own process, over the same samples.
    let client = report
        .load_process
        .as_ref()
        .expect("the load client sampled");
    assert_eq!(client.pid, std::process::id());
    assert_eq!(client.found_by, "self");
    assert!(client.samples >= 2);
    assert!(client.rss_mib_max > 0.0 && client.cpu_percent_avg >= 0.0);
    // The mock has no cache endpoint and no audit figures.
    let cache = report.cache.as_ref().unwrap();
    assert!(!cache.available);
    assert!(cache.unavailable_reason.as_deref().unwrap().contains("404"));
    assert_eq!(report.audit, None);
    let table = hub_bench::load::load_table(&report);
    assert!(table.contains("cache table unavailable"), "{table}");
    assert!(table.contains("p75 ms"), "{table}");
    assert!(table.contains("load client process"), "{table}");

    let json = read_report(&hub.out("load.json"));
    assert_eq!(json["overall"]["p75Ms"], json!(report.overall.p75_ms));
    assert_eq!(json["hubProcess"]["pid"], std::process::id());
    assert_eq!(json["loadProcess"]["foundBy"], "self");

    let csv = std::fs::read_to_string(csv_dir.join("load.csv")).unwrap();
    let rows: Vec<&str> = csv.lines().collect();
    assert_eq!(rows[0], hub_bench::load::csv::HEADER);
    assert_eq!(rows.len(), 1 + report.endpoints.len() + 1);
    let all: Vec<&str> = rows.last().unwrap().split(',').collect();
    assert_eq!(all[0], "all");
    assert_eq!(all[3], report.total_requests.to_string());
    let first: Vec<&str> = rows[1].split(',').collect();
    assert_eq!(first[0], "project-agents-list");
    assert_eq!(first[3], report.endpoints[0].latency.count.to_string());
    // The one Hub's row of the per-Hub CSV carries the run's own figures.
    let hubs = std::fs::read_to_string(csv_dir.join("load-hubs.csv")).unwrap();
    let rows: Vec<&str> = hubs.lines().collect();
    assert_eq!(rows[0], hub_bench::load::csv::HUBS_HEADER);
    assert_eq!(rows.len(), 2, "{hubs}");
    let hub_row: Vec<&str> = rows[1].split(',').collect();
    assert_eq!(hub_row[0], report.hub_base_url);
    assert_eq!(hub_row[1], report.users_started.to_string());
    assert_eq!(hub_row[2], report.total_requests.to_string());
    assert_eq!(hub_row[6], report.abandoned_requests.to_string());
    assert_eq!(hub_row[14], std::process::id().to_string());

    let compared = hub_bench::load::compare::compare(&before, &report);
    let rps_line = compared
        .lines()
        .find(|l| l.starts_with("RPS"))
        .unwrap()
        .to_owned();
    let want = hub_bench::load::compare::change(Some(before.rps), Some(report.rps));
    assert!(rps_line.ends_with(&want), "{rps_line} vs {want}");
    for name in [
        "Overall result",
        "Endpoint result",
        "p75",
        "settings-public",
    ] {
        assert!(compared.contains(name), "{name} in {compared}");
    }
}

#[tokio::test]
async fn a_compare_file_that_is_not_a_report_fails_before_the_run() {
    let hub = MockHub::start(MockOptions::default()).await;
    let bogus = hub.out("bogus.json");
    std::fs::write(&bogus, "{\"not\":\"a report\"}").unwrap();
    let args = LoadArgs {
        compare: Some(bogus),
        ..load_args(&hub, 1, Duration::from_secs(1))
    };
    let error = run_load(args).await.unwrap_err();
    assert!(format!("{error:#}").contains("--compare"), "{error:#}");
    assert!(hub.hits().is_empty(), "no request was sent");
    let missing = LoadArgs {
        compare: Some(hub.out("absent.json")),
        ..load_args(&hub, 1, Duration::from_secs(1))
    };
    assert!(format!("{:#}", run_load(missing).await.unwrap_err()).contains("cannot read"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn load_over_replicas_samples_each_and_counts_a_dead_one_on_its_own() {
    let first = MockHub::start(MockOptions::default()).await;
    let second = MockHub::start(MockOptions::default()).await;
    // A replica that is gone: its port no longer listens.
    let dead = {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        format!("http://{}", listener.local_addr().unwrap())
    };
    let csv_dir = first.out("csv");
    let args = LoadArgs {
        hub: format!("{},{},{dead}", first.url(), second.url()),
        csv: Some(csv_dir.clone()),
        ..load_args(&first, 6, Duration::from_secs(2))
    };
    let report = run_load(args).await.unwrap();

    assert_eq!(report.hub_process, None, "per replica instead");
    assert_eq!(report.replicas.len(), 3);
    for live in &report.replicas[..2] {
        assert_eq!(live.unexpected_failures, 0, "{live:?}");
        assert!(live.total_requests > 0);
        let process = live.hub_process.as_ref().expect("found by its port");
        assert_eq!(
            (process.pid, process.found_by.as_str()),
            (std::process::id(), "port")
        );
        assert!(process.samples >= 2 && !process.exited_during_run);
        assert_eq!(live.hub_process_missing, None);
    }
    let gone = &report.replicas[2];
    assert_eq!(gone.users_started, 2);
    assert!(gone.unexpected_failures > 0);
    assert_eq!(gone.unexpected_failures, gone.total_requests);
    // Each of its users pauses after a refused connection: at most one
    // attempt per pause and user, not a tight loop.
    let bound = 2 * (2_000 / hub_bench::load::RETRY_PAUSE.as_millis() as u64 + 1);
    assert!(
        gone.total_requests <= bound,
        "{} > {bound}",
        gone.total_requests
    );
    assert_eq!(gone.hub_process, None);
    let reason = gone.hub_process_missing.as_deref().unwrap();
    assert!(reason.contains("nothing listens on port"), "{reason}");
    assert_eq!(
        report.unexpected_failures, gone.unexpected_failures,
        "only the dead replica's users failed"
    );

    let table = hub_bench::load::replica_table(&report);
    assert!(
        table.contains("cpu avg %") && table.contains("rss max MiB"),
        "{table}"
    );
    assert!(
        table.contains(&format!("{dead}/: process not sampled")),
        "{table}"
    );

    let json = read_report(&first.out("load.json"));
    assert_eq!(json["replicas"][0]["hubProcess"]["pid"], std::process::id());
    assert_eq!(json["replicas"][2]["hubProcessMissing"], json!(reason));
    let csv = std::fs::read_to_string(csv_dir.join("load-hubs.csv")).unwrap();
    let rows: Vec<Vec<&str>> = csv.lines().map(|l| l.split(',').collect()).collect();
    assert_eq!(rows[0].join(","), hub_bench::load::csv::HUBS_HEADER);
    assert_eq!(rows.len(), 4);
    let pid = rows[0].iter().position(|c| *c == "pid").unwrap();
    assert_eq!(rows[1][pid], std::process::id().to_string());
    assert_eq!(rows[3][pid], "");
    assert!(rows[3].last().unwrap().contains("nothing listens"), "{csv}");

    let one = LoadArgs {
        hub_pid: Some(std::process::id()),
        ..load_args(&first, 1, Duration::from_secs(1))
    };
    let several = LoadArgs {
        hub: format!("{},{}", first.url(), second.url()),
        ..one.clone()
    };
    let error = format!("{:#}", run_load(several).await.unwrap_err());
    assert!(error.contains("--hub-pid names one process"), "{error}");
}

#[test]
fn a_report_written_before_replicas_were_sampled_still_reads() {
    let old = json!({
        "generatedAt": "2026-01-01T00:00:00Z", "harnessCommit": "", "harnessCommitDirty": false,
        "harnessCommitSource": "unknown", "hubBaseUrl": "http://a,http://b", "users": 2,
        "usersStarted": 2, "spawnRate": 100, "requestedDurationSeconds": 1.0,
        "durationSeconds": 1.0, "totalRequests": 0, "rps": 0.0, "expectedFailures": 0,
        "unexpectedFailures": 0, "sentRequests": 0, "abandonedRequests": 0,
        "requestCapReached": false, "overall": {"count": 0, "avgMs": null, "p50Ms": null,
        "p90Ms": null, "p95Ms": null, "p99Ms": null, "maxMs": null}, "endpoints": [],
        "hubProcess": {"pid": 7, "foundBy": "port", "samples": 2, "cpuPercentAvg": 1.0,
        "cpuPercentMax": 2.0, "rssMibStart": 1.0, "rssMibMax": 2.0, "rssMibEnd": 2.0},
        "machine": {"os": "linux", "arch": "x86_64", "numCpu": 2, "rustVersion": "",
        "hostname": "", "notes": "", "loadAvgStart": [0, 0, 0], "loadAvgEnd": [0, 0, 0],
        "uptimeSeconds": 0.0},
        "replicas": [{"hubBaseUrl": "http://a/", "usersStarted": 1, "totalRequests": 0,
        "rps": 0.0, "expectedFailures": 0, "unexpectedFailures": 0, "abandonedRequests": 0,
        "latency": {"count": 0, "avgMs": null, "p50Ms": null, "p90Ms": null, "p95Ms": null,
        "p99Ms": null, "maxMs": null}}]
    });
    let report: hub_bench::report::LoadReport = serde_json::from_value(old).unwrap();
    let process = report.hub_process.as_ref().unwrap();
    assert!(!process.exited_during_run);
    assert_eq!(report.hub_process_missing, None);
    assert_eq!(report.replicas[0].hub_process, None);
    assert_eq!(report.hub_processes(), vec![None]);
}
