//! A stand-in web client for the browser tests: an axum server on loopback
//! that answers like the Hub's web server (session sign-in, the project page
//! and standalone graph with the page markers of `hub_bench::web::page`,
//! agent lists from the web fixture, status changes, an event stream, the
//! `X-Request-ID` header) and writes one `perf_trace` line per API request to
//! a log file, so the benchmark's every step runs in a real Chromium.

#![allow(dead_code)]

use std::collections::HashMap;
use std::convert::Infallible;
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

use axum::extract::{Path, RawQuery, Request, State};
use axum::http::{header, HeaderMap, HeaderValue, StatusCode};
use axum::middleware::{self, Next};
use axum::response::sse::{Event, Sse};
use axum::response::{Html, IntoResponse, Response};
use axum::routing::{get, post, put};
use axum::Router;
use hub_bench::web_fixture::Fixture;
use serde_json::{json, Value};
use tokio::sync::broadcast;

pub const MEMBER_TOKEN: &str = "member-token-for-tests";
pub const OWNER_TOKEN: &str = "owner-token-for-tests";

/// The page's size in the stand-in client.
pub const PAGE_SIZE: usize = 20;

pub struct WebHub {
    pub base: String,
    pub dir: tempfile::TempDir,
    pub log: PathBuf,
    pub marks: Arc<AtomicBool>,
    server: tokio::task::JoinHandle<()>,
}

impl Drop for WebHub {
    fn drop(&mut self) {
        self.server.abort();
    }
}

#[derive(Clone)]
struct Shared {
    fixture: Arc<Fixture>,
    phases: Arc<Mutex<HashMap<String, String>>>,
    events: broadcast::Sender<String>,
    marks: Arc<AtomicBool>,
    log: Arc<Mutex<std::fs::File>>,
    next_id: Arc<AtomicU64>,
}

impl WebHub {
    /// Serves the stand-in client; readiness marks on when `marks`.
    pub async fn start(marks: bool) -> WebHub {
        let dir = tempfile::tempdir().unwrap();
        let log = dir.path().join("hub.log");
        let shared = Shared {
            fixture: Arc::new(Fixture::new()),
            phases: Arc::default(),
            events: broadcast::channel(1024).0,
            marks: Arc::new(AtomicBool::new(marks)),
            log: Arc::new(Mutex::new(std::fs::File::create(&log).unwrap())),
            next_id: Arc::default(),
        };
        let marks = shared.marks.clone();
        let app = Router::new()
            .route("/healthz", get(|| async { "ok" }))
            .route("/api/v1/auth/session", post(sign_in))
            .route("/projects/{id}", get(page))
            .route("/graph", get(page))
            .route("/api/v1/projects/{id}/agents", get(agents))
            .route("/api/v1/agents/{id}/status", put(put_status))
            .route("/events", get(events))
            .layer(middleware::from_fn_with_state(shared.clone(), traced))
            .with_state(shared);
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let base = format!("http://{}", listener.local_addr().unwrap());
        let server = tokio::spawn(async move {
            axum::serve(listener, app).await.unwrap();
        });
        WebHub {
            base,
            dir,
            log,
            marks,
            server,
        }
    }

    /// A seed document for this client: the fixture's project, 100 agents.
    pub fn seed_file(&self, member_token: &str) -> PathBuf {
        let path = self.dir.path().join("seed.json");
        let doc = json!({
            "projectId": Fixture::new().project_id(),
            "memberToken": member_token,
            "ownerToken": OWNER_TOKEN,
            "agentCount": 100,
            "randSeed": 42,
        });
        std::fs::write(&path, doc.to_string()).unwrap();
        path
    }
}

/// Gives every response an `X-Request-ID` and writes a `perf_trace` line
/// for each API request, as a traced Hub does.
async fn traced(State(shared): State<Shared>, request: Request, next: Next) -> Response {
    let n = shared.next_id.fetch_add(1, Ordering::Relaxed);
    let id = format!("00000000-0000-4000-8000-{n:012}");
    let method = request.method().to_string();
    let api = request.uri().path().starts_with("/api/") || request.uri().path() == "/events";
    let mut response = next.run(request).await;
    response
        .headers_mut()
        .insert("x-request-id", HeaderValue::from_str(&id).unwrap());
    if api {
        use std::io::Write;
        let line = json!({
            "time": "2026-01-01T00:00:00.000000000Z", "level": "INFO", "msg": "perf_trace",
            "component": "scion-hub", "subsystem": "hub.perf-trace", "endpoint": "other",
            "elapsed_us": 100, "store_GetUser_n": 3, "store_GetUser_us": 40,
            "authz_store_calls": 3, "authz_store_us": 40,
            "method": method, "request_id": id,
        });
        writeln!(shared.log.lock().unwrap(), "{line}").unwrap();
    }
    response
}

fn signed_in(headers: &HeaderMap) -> bool {
    headers
        .get_all(header::COOKIE)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .any(|v| v.split(';').any(|c| c.trim() == "session=member"))
}

async fn sign_in(headers: HeaderMap) -> Response {
    if headers
        .get(header::AUTHORIZATION)
        .and_then(|v| v.to_str().ok())
        != Some(&format!("Bearer {MEMBER_TOKEN}"))
    {
        return (StatusCode::UNAUTHORIZED, "{\"error\":\"bad token\"}").into_response();
    }
    (
        StatusCode::NO_CONTENT,
        [(
            header::SET_COOKIE,
            "session=member; Path=/; HttpOnly; SameSite=Strict",
        )],
    )
        .into_response()
}

async fn page(State(shared): State<Shared>, headers: HeaderMap) -> Response {
    if !signed_in(&headers) {
        return (StatusCode::UNAUTHORIZED, "sign in first").into_response();
    }
    let initial = json!({
        "readinessMarks": shared.marks.load(Ordering::Relaxed),
        "pageSize": PAGE_SIZE,
        "agentCount": shared.fixture.agents().len(),
    });
    Html(PAGE.replace("__INITIAL__", &initial.to_string())).into_response()
}

async fn agents(
    State(shared): State<Shared>,
    Path(project): Path<String>,
    RawQuery(query): RawQuery,
    headers: HeaderMap,
) -> Response {
    if !signed_in(&headers) {
        return StatusCode::UNAUTHORIZED.into_response();
    }
    let path = format!("/api/v1/projects/{project}/agents");
    let Some(mut answer) = shared
        .fixture
        .answer("GET", &path, query.as_deref().unwrap_or(""))
    else {
        return StatusCode::NOT_FOUND.into_response();
    };
    let phases = shared.phases.lock().unwrap();
    for agent in answer["agents"].as_array_mut().unwrap() {
        if let Some(phase) = phases.get(agent["id"].as_str().unwrap()) {
            agent["phase"] = json!(phase);
        }
    }
    axum::Json(answer).into_response()
}

async fn put_status(
    State(shared): State<Shared>,
    Path(id): Path<String>,
    headers: HeaderMap,
    body: String,
) -> Response {
    if headers
        .get(header::AUTHORIZATION)
        .and_then(|v| v.to_str().ok())
        != Some(&format!("Bearer {OWNER_TOKEN}"))
    {
        return StatusCode::FORBIDDEN.into_response();
    }
    let change: Value = serde_json::from_str(&body).unwrap_or_default();
    let Some(phase) = change["phase"].as_str() else {
        return StatusCode::BAD_REQUEST.into_response();
    };
    shared
        .phases
        .lock()
        .unwrap()
        .insert(id.clone(), phase.to_owned());
    let _ = shared
        .events
        .send(json!({ "id": id, "phase": phase }).to_string());
    axum::Json(json!({ "id": id, "phase": phase })).into_response()
}

async fn events(State(shared): State<Shared>, headers: HeaderMap) -> Response {
    if !signed_in(&headers) {
        return StatusCode::UNAUTHORIZED.into_response();
    }
    let receiver = shared.events.subscribe();
    let stream = futures_util::stream::unfold(receiver, |mut receiver| async move {
        loop {
            match receiver.recv().await {
                Ok(data) => {
                    let event = Event::default().event("agent-status").data(data);
                    return Some((Ok::<_, Infallible>(event), receiver));
                }
                Err(broadcast::error::RecvError::Lagged(_)) => continue,
                Err(broadcast::error::RecvError::Closed) => return None,
            }
        }
    });
    Sse::new(stream).into_response()
}

/// A minimal client with the real one's markers and marks.
const PAGE: &str = r#"<!doctype html>
<html><head><meta charset="utf-8"><title>project</title></head>
<body>
<script id="initial-data" type="application/json">__INITIAL__</script>
<main id="app"></main>
<script>
const initial = JSON.parse(document.getElementById('initial-data').textContent);
const params = new URLSearchParams(location.search);
const standalone = location.pathname === '/graph';
const project = standalone ? params.get('project') : location.pathname.split('/')[2];
const view = standalone ? 'graph' : (params.get('view') || 'grid');
const app = document.getElementById('app');
const marked = new Set();
const mark = (name) => {
  if (!initial.readinessMarks || marked.has(name)) return;
  marked.add(name);
  performance.mark('scion:ready:' + name, { detail: { view } });
};
const api = (query) => fetch(`/api/v1/projects/${project}/agents?${query}`,
  { credentials: 'same-origin' }).then((r) => r.json());
let page = 1, cursors = [''];
const pageCount = Math.ceil(initial.agentCount / initial.pageSize);
function renderPaged(body) {
  const itemAttr = view === 'grid' ? 'data-agent-card' : 'data-agent-row';
  const items = body.agents.map((a) =>
    `<div ${itemAttr} data-agent-id="${a.id}" data-phase="${a.phase}"><b>${a.name}</b><span>${a.phase}</span></div>`).join('');
  app.innerHTML = `<section>${items}</section>
    <nav data-pager data-page="${page}" data-page-size="${initial.pageSize}" data-page-count="${pageCount}">
      <button data-pager-next ${body.nextCursor ? '' : 'disabled'}>Next</button></nav>
    <section data-lazy>files</section>`;
  app.querySelector('[data-pager-next]').onclick = () => {
    cursors[page] = body.nextCursor;
    page += 1;
    api(`limit=${initial.pageSize}&cursor=${cursors[page - 1]}`).then(renderPaged);
  };
}
function renderGraph(body) {
  const nodes = body.agents.map((a, i) =>
    `<circle data-agent-node data-agent-id="${a.id}" cx="${20 + (i % 10) * 40}" cy="${20 + Math.floor(i / 10) * 40}" r="8"></circle>`).join('');
  app.innerHTML = `<svg width="420" height="420" viewBox="0 0 420 420">${nodes}</svg>`;
  requestAnimationFrame(() => {
    app.querySelector('svg').setAttribute('data-graph-fitted', '');
    mark('graph');
  });
}
const first = view === 'graph' ? api('limit=500') : api(`limit=${initial.pageSize}`);
first.then((body) => {
  mark('agents-data');
  if (view === 'graph') return renderGraph(body);
  renderPaged(body);
  requestAnimationFrame(() => mark('rows-' + view));
});
const events = new EventSource('/events');
events.addEventListener('agent-status', (e) => {
  const change = JSON.parse(e.data);
  for (const el of document.querySelectorAll(`[data-agent-id="${change.id}"]`)) {
    el.dataset.phase = change.phase;
    const label = el.querySelector('span');
    if (label) label.textContent = change.phase;
  }
});
</script>
</body></html>
"#;
