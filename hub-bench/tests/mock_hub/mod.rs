//! An in-process mock Hub for the apibench and load tests.
//!
//! The mock serves the endpoints the harness uses, answers every request with
//! an `X-Request-ID`, writes one `perf_trace` JSON line per request to a log
//! file (with fixed, known figures), and returns `X-Scion-Perf-*` headers to
//! any caller that sends `X-Scion-Perf-Trace: 1` (the real hub restricts them
//! to admins; the mock does not, so the header path can be tested).
// Shared by two test binaries, each of which uses only part of it.
#![allow(dead_code)]

use std::collections::BTreeMap;
use std::io::Write as _;
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

use axum::extract::{Path as UrlPath, Request, State};
use axum::http::{HeaderMap, HeaderValue, StatusCode};
use axum::middleware::{self, Next};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, put};
use axum::{Json, Router};
use hub_bench::apibench::ApibenchArgs;
use serde_json::{json, Value};

pub const MEMBER_TOKEN: &str = "member-token-s3cr3t";
pub const SESSION_SECRET: &str = "mock-session-secret";
pub const PROJECT_ID: &str = "p-bench";
pub const AGENTS: [&str; 3] = [
    "11111111-1111-4111-8111-000000000001",
    "11111111-1111-4111-8111-000000000002",
    "11111111-1111-4111-8111-000000000003",
];

#[derive(Clone, Copy, Default)]
pub struct MockOptions {
    /// Write log lines in GCP format (`message` instead of `msg`).
    pub gcp: bool,
    /// Answer `/healthz` with 500.
    pub broken_health: bool,
}

pub struct MockState {
    pub options: MockOptions,
    pub log: Mutex<std::fs::File>,
    pub next_id: AtomicU64,
    pub hits: Mutex<BTreeMap<String, u64>>,
}

pub struct MockHub {
    pub addr: SocketAddr,
    pub state: Arc<MockState>,
    pub dir: tempfile::TempDir,
    pub server: tokio::task::JoinHandle<()>,
}

impl Drop for MockHub {
    fn drop(&mut self) {
        self.server.abort();
    }
}

impl MockHub {
    pub async fn start(options: MockOptions) -> MockHub {
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

    pub fn url(&self) -> String {
        format!("http://{}", self.addr)
    }

    pub fn seed(&self) -> PathBuf {
        self.dir.path().join("seed.json")
    }

    pub fn log(&self) -> PathBuf {
        self.dir.path().join("hub.log")
    }

    pub fn out(&self, name: &str) -> PathBuf {
        self.dir.path().join(name)
    }

    pub fn hits(&self) -> BTreeMap<String, u64> {
        self.state.hits.lock().unwrap().clone()
    }

    pub fn total_hits(&self) -> u64 {
        self.hits().values().sum()
    }
}

pub fn member(headers: &HeaderMap) -> bool {
    headers.get("authorization").and_then(|v| v.to_str().ok())
        == Some(&format!("Bearer {MEMBER_TOKEN}"))
}

/// The mock's error answer: `status` with `{"error": message}`.
pub fn error(status: StatusCode, message: &str) -> Response {
    (status, Json(json!({ "error": message }))).into_response()
}

pub fn agent_list() -> Value {
    json!({
        "agents": AGENTS.iter().map(|id| json!({"id": id, "name": format!("agent {id}")})).collect::<Vec<_>>(),
        "capabilities": {"create": false},
    })
}

pub async fn healthz(State(st): State<Arc<MockState>>) -> Response {
    if st.options.broken_health {
        return error(StatusCode::INTERNAL_SERVER_ERROR, "down");
    }
    Json(json!({"status": "ok"})).into_response()
}

pub async fn settings_public() -> Response {
    Json(json!({"version": "0.1.0-mock", "name": "mock hub"})).into_response()
}

pub async fn project_agents(headers: HeaderMap, UrlPath(id): UrlPath<String>) -> Response {
    if !member(&headers) {
        return error(StatusCode::UNAUTHORIZED, "unauthenticated");
    }
    if id != PROJECT_ID {
        return error(StatusCode::FORBIDDEN, "forbidden");
    }
    Json(agent_list()).into_response()
}

pub async fn global_agents(headers: HeaderMap) -> Response {
    if !member(&headers) {
        return error(StatusCode::UNAUTHORIZED, "unauthenticated");
    }
    Json(agent_list()).into_response()
}

pub async fn agent_by_id(headers: HeaderMap, UrlPath(id): UrlPath<String>) -> Response {
    if !member(&headers) {
        return error(StatusCode::UNAUTHORIZED, "unauthenticated");
    }
    if AGENTS.contains(&id.as_str()) {
        Json(json!({"id": id})).into_response()
    } else {
        error(StatusCode::NOT_FOUND, "agent not found")
    }
}

pub async fn server_config(headers: HeaderMap) -> Response {
    if !member(&headers) {
        return error(StatusCode::UNAUTHORIZED, "unauthenticated");
    }
    error(StatusCode::FORBIDDEN, "forbidden")
}

/// The mock's name for a request: the load mix's endpoint names.
pub fn route_name(method: &str, path: &str) -> String {
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
pub const PERF_HEADERS: [(&str, &str); 6] = [
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
pub async fn trace(State(st): State<Arc<MockState>>, req: Request, next: Next) -> Response {
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

pub fn apibench_args(hub: &MockHub, out: &Path) -> ApibenchArgs {
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

pub fn read_report(path: &Path) -> Value {
    serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap()
}

/// Fails unless `json` has every one of `keys`; `what` names it.
pub fn assert_keys(json: &Value, what: &str, keys: &[&str]) {
    for key in keys {
        assert!(json.get(key).is_some(), "{what} lacks {key}");
    }
}

/// `error` as one line of text, once it is checked to be one line and no
/// report is found at `out`.
pub fn one_line_error(error: anyhow::Error, out: &Path) -> String {
    let msg = format!("{error:#}");
    assert!(!msg.contains('\n'), "{msg}");
    assert!(!out.exists(), "a report was written");
    msg
}
