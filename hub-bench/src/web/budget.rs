//! The web counter budgets' measurements: the project page's views loaded
//! against the web fixture ([`crate::web_fixture`]), their DOM element
//! count and their long tasks.
//!
//! [`FixtureServer`] serves the page's API requests from the generator and
//! everything else (the page shell, its assets, the sign-in) from a real
//! Hub with its web client, so the page is the Hub's own and its data the
//! fixture's. A request the generator does not answer is answered 404 and
//! recorded, and the budget test fails on it.
//!
//! [`measure_view`] counts elements once the view has written its readiness
//! marks, its lazily shown parts have been scrolled into view and the count
//! is the same on three reads in a row; it counts shadow roots' elements
//! too. Long tasks are counted by an observer installed before any page
//! script.

use std::convert::Infallible;
use std::sync::Arc;
use std::time::{Duration, Instant};

use anyhow::{bail, Context};
use axum::body::{Body, Bytes};
use axum::extract::{Request, State};
use axum::http::{HeaderMap, HeaderName, Method, StatusCode, Uri};
use axum::response::sse::{Event, Sse};
use axum::response::{IntoResponse, Response};
use axum::Router;
use parking_lot::Mutex;
use perf_trace_core::budget::Margin;
use serde_json::json;

use super::browser::Browser;
use super::page::{self, View, AGENTS_DATA_MARK};
use crate::web_fixture::Fixture;

/// Serves the page's API from the fixture and the rest from a Hub.
pub struct FixtureServer {
    url: String,
    unanswered: Arc<Mutex<Vec<String>>>,
    task: tokio::task::JoinHandle<()>,
}

impl Drop for FixtureServer {
    fn drop(&mut self) {
        self.task.abort();
    }
}

#[derive(Clone)]
struct Forward {
    fixture: Arc<Fixture>,
    hub: String,
    http: reqwest::Client,
    unanswered: Arc<Mutex<Vec<String>>>,
}

/// Request headers passed on to the Hub.
const FORWARDED_REQUEST_HEADERS: &[&str] = &[
    "authorization",
    "cookie",
    "content-type",
    "x-scion-client",
    "origin",
];

/// Response headers passed back from the Hub.
const FORWARDED_RESPONSE_HEADERS: &[&str] = &["content-type", "set-cookie", "cache-control"];

impl FixtureServer {
    /// Serves on a free loopback port; `hub` is the base URL of a Hub with
    /// its web client (for the shell, the assets and the sign-in).
    pub async fn start(hub: &str) -> anyhow::Result<FixtureServer> {
        let state = Forward {
            fixture: Arc::new(Fixture::new()),
            hub: hub.trim_end_matches('/').to_owned(),
            http: reqwest::Client::new(),
            unanswered: Arc::default(),
        };
        let unanswered = state.unanswered.clone();
        let app = Router::new().fallback(route).with_state(state);
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
        let url = format!("http://{}", listener.local_addr()?);
        let task = tokio::spawn(async move {
            let _ = axum::serve(listener, app).await;
        });
        Ok(FixtureServer {
            url,
            unanswered,
            task,
        })
    }

    /// The base URL the browser opens.
    pub fn url(&self) -> &str {
        &self.url
    }

    /// The fixture's project.
    pub fn project_id(&self) -> String {
        Fixture::new().project_id().to_owned()
    }

    /// The API requests the generator did not answer (`GET /api/...`).
    pub fn unanswered(&self) -> Vec<String> {
        self.unanswered.lock().clone()
    }
}

async fn route(State(state): State<Forward>, request: Request) -> Response {
    let method = request.method().clone();
    let uri = request.uri().clone();
    let path = uri.path();
    if path == "/events" {
        // The fixture has no events: an open stream that stays idle.
        let idle = futures_util::stream::pending::<Result<Event, Infallible>>();
        return Sse::new(idle).into_response();
    }
    if path.starts_with("/api/") && path != page::SIGN_IN_PATH {
        let query = uri.query().unwrap_or("");
        return match state.fixture.answer(method.as_str(), path, query) {
            Some(answer) => axum::Json(answer).into_response(),
            None => {
                state.unanswered.lock().push(format!("{method} {uri}"));
                (
                    StatusCode::NOT_FOUND,
                    axum::Json(json!({ "error": "not answered by the web fixture" })),
                )
                    .into_response()
            }
        };
    }
    let headers = request.headers().clone();
    let body = axum::body::to_bytes(request.into_body(), 1 << 20)
        .await
        .unwrap_or_default();
    match forward(&state, method, &uri, &headers, body).await {
        Ok(response) => response,
        Err(e) => (StatusCode::BAD_GATEWAY, format!("{e:#}")).into_response(),
    }
}

async fn forward(
    state: &Forward,
    method: Method,
    uri: &Uri,
    headers: &HeaderMap,
    body: Bytes,
) -> anyhow::Result<Response> {
    let target = format!(
        "{}{}",
        state.hub,
        uri.path_and_query().map_or("/", |p| p.as_str())
    );
    let mut outgoing = state.http.request(method, target).body(body);
    for name in FORWARDED_REQUEST_HEADERS {
        for value in headers.get_all(*name) {
            // The Hub checks a write's Origin against its own.
            if *name == "origin" {
                outgoing = outgoing.header(*name, state.hub.as_str());
            } else {
                outgoing = outgoing.header(*name, value);
            }
        }
    }
    let reply = outgoing.send().await?;
    let mut response = Response::builder().status(reply.status().as_u16());
    for name in FORWARDED_RESPONSE_HEADERS {
        for value in reply.headers().get_all(*name) {
            response = response.header(HeaderName::from_static(name), value.as_bytes());
        }
    }
    Ok(response.body(Body::from(reply.bytes().await?))?)
}

/// One load's figures.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct LoadCounts {
    /// Elements, shadow roots' included, once stable.
    pub dom_elements: u64,
    /// Long tasks seen by then.
    pub long_tasks: u64,
}

/// Installs the long-task observer in every document the browser opens
/// from now on.
pub async fn observe_long_tasks(browser: &Browser) -> anyhow::Result<()> {
    browser
        .cdp(
            "Page.addScriptToEvaluateOnNewDocument",
            json!({ "source": page::LONG_TASK_OBSERVER_JS }),
        )
        .await?;
    Ok(())
}

/// Slows the CPU by `rate` (1: not at all).
pub async fn throttle_cpu(browser: &Browser, rate: u32) -> anyhow::Result<()> {
    browser
        .cdp("Emulation.setCPUThrottlingRate", json!({ "rate": rate }))
        .await?;
    Ok(())
}

/// The element count once it is the same on three reads in a row (read
/// every 100 ms, for up to `timeout`).
pub async fn stable_element_count(browser: &Browser, timeout: Duration) -> anyhow::Result<u64> {
    let client = browser.client();
    let until = Instant::now() + timeout;
    let mut reads: Vec<u64> = Vec::new();
    loop {
        let count = client
            .execute(page::COUNT_ELEMENTS_JS, vec![])
            .await?
            .as_u64()
            .context("the element count is a number")?;
        reads.push(count);
        if reads.len() >= 3 && reads[reads.len() - 3..].iter().all(|c| *c == count) {
            return Ok(count);
        }
        if Instant::now() >= until {
            bail!("the element count did not settle within {timeout:?}: {reads:?}");
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

/// Loads `url` (a view of the project page) and measures it: waits for the
/// view's two readiness marks, scrolls its lazily shown parts into view,
/// then takes the stable element count and the long tasks.
pub async fn measure_view(
    browser: &Browser,
    url: &str,
    view: View,
    timeout: Duration,
) -> anyhow::Result<LoadCounts> {
    let client = browser.client();
    client
        .goto(url)
        .await
        .with_context(|| format!("open {url}"))?;
    let wanted = [AGENTS_DATA_MARK, view.rows_mark()];
    let marks = page::wait_for_marks(client, &wanted, timeout).await?;
    for mark in wanted {
        if !marks.iter().any(|(name, _, _)| name == mark) {
            bail!("{url}: no {mark} within {timeout:?} (is profiling.readiness_marks on?)");
        }
    }
    client.execute(page::SCROLL_LAZY_JS, vec![]).await?;
    let dom_elements = stable_element_count(browser, timeout).await?;
    let long_tasks = client
        .execute(page::LONG_TASKS_JS, vec![])
        .await?
        .as_u64()
        .context("the long-task observer is installed")?;
    Ok(LoadCounts {
        dom_elements,
        long_tasks,
    })
}

/// A page's DOM element count may exceed its baseline by 10 elements.
pub const DOM_ELEMENTS_MARGIN: Margin = Margin::Fixed(10);

/// A page's long tasks (the median of three loads), the one figure that
/// depends on the runner's CPU, may exceed its baseline by
/// `max(3, ceil(50%))`.
pub const LONG_TASKS_MARGIN: Margin = Margin::Share {
    at_least: 3,
    percent: 50,
};
