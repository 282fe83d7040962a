//! What the browser benchmark and the web budgets read from the Hub's web
//! client: the pages' paths, the markers in their DOM, and the scripts run in
//! the page. Kept in one place so the client and its measurements change
//! together.
//!
//! | marker | meaning |
//! | --- | --- |
//! | `.agent-card[data-agent-id]` | one card of the grid |
//! | `.agent-row[data-agent-id]` | one row of the list |
//! | `g.node-agent[data-agent-id]` | one agent of a graph (SVG) |
//! | `svg.agent-graph[viewBox]` | the graph, laid out and fitted to the viewport |
//! | `[data-field="phase"]` | an agent's phase, inside its card or row |
//! | `nav.pager` | the pager, with `data-page` and `data-page-size` |
//! | `#next-page` | its Next-page control, disabled on the last page |
//! | `.empty` | a view's empty state |
//! | `[data-lazy]` | a part mounted only once scrolled into view |

use std::time::Duration;

use anyhow::{anyhow, bail, Context};
use fantoccini::Client;
use serde::Deserialize;
use serde_json::{json, Value};

/// Where a browser signs in: the member's bearer token posted once in an
/// `Authorization` header, answered with the session cookie.
pub const SIGN_IN_PATH: &str = "/api/v1/auth/session";

/// Signs the browser in at `base` with the bearer `token`, as a person
/// would once: the token posted to [`SIGN_IN_PATH`] from a page of the
/// Hub's origin, so the session cookie is the browser's own and no token is
/// ever in a URL.
pub async fn sign_in(client: &Client, base: &str, token: &str) -> anyhow::Result<()> {
    client
        .goto(&format!("{base}/healthz"))
        .await
        .context("open the hub")?;
    let status = client
        .execute_async(
            "const [path, token, done] = arguments;
             fetch(path, { method: 'POST', credentials: 'same-origin',
                           headers: { Authorization: 'Bearer ' + token, 'X-Scion-Client': 'web' } })
               .then((r) => done(r.status), (e) => done(String(e)));",
            vec![json!(SIGN_IN_PATH), json!(token)],
        )
        .await
        .context("sign in")?;
    match status.as_u64() {
        Some(200..=299) => Ok(()),
        _ => bail!(
            "sign-in as the seeded member was refused ({status} from POST {SIGN_IN_PATH}): is the hub served with --enable-web?"
        ),
    }
}

/// The prefix of the readiness marks.
pub const MARK_PREFIX: &str = "scion:ready:";

/// A view of the project page.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "lowercase")]
pub enum View {
    /// Cards, paged.
    Grid,
    /// Rows, paged.
    List,
    /// The project's agents and their links, in SVG.
    Graph,
}

impl View {
    /// The name pages and marks use (`grid`, `list`, `graph`).
    pub fn name(self) -> &'static str {
        match self {
            View::Grid => "grid",
            View::List => "list",
            View::Graph => "graph",
        }
    }

    /// The selector of one shown agent.
    pub fn item_selector(self) -> &'static str {
        match self {
            View::Grid => ".agent-card[data-agent-id]",
            View::List => ".agent-row[data-agent-id]",
            View::Graph => "g.node-agent[data-agent-id]",
        }
    }

    /// The readiness mark this view writes besides `agents-data`.
    pub fn rows_mark(self) -> &'static str {
        match self {
            View::Grid => "scion:ready:rows-grid",
            View::List => "scion:ready:rows-list",
            View::Graph => "scion:ready:graph",
        }
    }
}

/// The mark written when the first agent result is adopted.
pub const AGENTS_DATA_MARK: &str = "scion:ready:agents-data";

/// The project page in `view`.
pub fn project_path(project_id: &str, view: View) -> String {
    format!("/projects/{project_id}?view={}", view.name())
}

/// The standalone graph page, filtered to one project.
pub fn standalone_graph_path(project_id: &str) -> String {
    format!("/graph?project={project_id}")
}

/// What a view showed when it was populated.
#[derive(Debug, Clone, Deserialize, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct Populated {
    /// Milliseconds since navigation start when it was first seen.
    pub at_ms: f64,
    /// Agents shown.
    pub items: u32,
    /// The pager's page size (paged views).
    pub page_size: Option<u32>,
    /// Whether the Next-page control was disabled (the last page).
    pub last_page: bool,
    /// Whether the view showed its empty state.
    pub empty: bool,
}

/// Polls every frame until `check()` returns a value, or `timeout_ms` passes
/// (then `null`). Shared by the waiting scripts below.
const POLL: &str = r#"
const poll = (check, timeoutMs, done) => {
  const until = performance.now() + timeoutMs;
  const step = () => {
    let found = null;
    try { found = check(); } catch (e) { found = null; }
    if (found !== null && found !== undefined) return done(found);
    if (performance.now() > until) return done(null);
    requestAnimationFrame(step);
  };
  step();
};
"#;

/// Runs `body` after [`POLL`] with `args`, then the timeout in ms, as its
/// arguments; answers what it passed to `done`. `what` names a failure.
async fn run_polling(
    client: &Client,
    body: &str,
    mut args: Vec<Value>,
    timeout: Duration,
    what: &'static str,
) -> anyhow::Result<Value> {
    args.push(json!(timeout.as_millis() as u64));
    client
        .execute_async(&format!("{POLL}\n{body}"), args)
        .await
        .context(what)
}

/// Answers when the view's first page (or whole graph) is on screen.
const WAIT_POPULATED_JS: &str = r#"
const [view, selector, timeoutMs, done] = arguments;
poll(() => {
  if (document.querySelector('.empty')) {
    return { atMs: performance.now(), items: 0, pageSize: null, lastPage: true, empty: true };
  }
  const items = document.querySelectorAll(selector).length;
  if (items === 0) return null;
  if (view === 'graph') {
    if (!document.querySelector('svg.agent-graph[viewBox]')) return null;
    return { atMs: performance.now(), items, pageSize: null, lastPage: true, empty: false };
  }
  const pager = document.querySelector('nav.pager');
  const next = document.querySelector('#next-page');
  if (!pager || !next) return null;
  const size = Number(pager.dataset.pageSize);
  if (!(size > 0)) return null;
  if (items !== size && !next.disabled) return null;
  return { atMs: performance.now(), items, pageSize: size, lastPage: next.disabled, empty: false };
}, timeoutMs, done);
"#;

/// Clicks Next and answers when the next page is shown.
const NEXT_PAGE_JS: &str = r#"
const [selector, timeoutMs, done] = arguments;
const pager = document.querySelector('nav.pager');
const next = document.querySelector('#next-page');
if (!pager || !next || next.disabled) return done({ last: true });
const page = pager.dataset.page;
const firstId = document.querySelector(selector)?.dataset.agentId;
const start = performance.now();
next.click();
poll(() => {
  const now = document.querySelector('nav.pager');
  const first = document.querySelector(selector);
  if (!now || now.dataset.page === page || !first || first.dataset.agentId === firstId) return null;
  return { ms: performance.now() - start };
}, timeoutMs, (found) => done(found ?? { timedOut: true }));
"#;

/// Answers when every one of the names is marked.
const WAIT_FOR_MARKS_JS: &str = r#"
const [names, timeoutMs, done] = arguments;
poll(() => {
  const have = new Set(performance.getEntriesByType('mark').map((m) => m.name));
  return names.every((n) => have.has(n)) ? true : null;
}, timeoutMs, () => done(true));
"#;

/// Waits until the view's first page (or whole graph) is on screen.
pub async fn wait_populated(
    client: &Client,
    view: View,
    timeout: Duration,
) -> anyhow::Result<Option<Populated>> {
    let args = vec![json!(view.name()), json!(view.item_selector())];
    let found = run_polling(
        client,
        WAIT_POPULATED_JS,
        args,
        timeout,
        "wait for the view to populate",
    )
    .await?;
    if found.is_null() {
        return Ok(None);
    }
    Ok(Some(serde_json::from_value(found)?))
}

/// Clicks Next and waits until the next page is shown; the milliseconds from
/// the click to the first frame showing it, or `None` on the last page.
pub async fn next_page(
    client: &Client,
    view: View,
    timeout: Duration,
) -> anyhow::Result<Option<f64>> {
    let args = vec![json!(view.item_selector())];
    let found = run_polling(client, NEXT_PAGE_JS, args, timeout, "change page").await?;
    if found["last"] == true {
        return Ok(None);
    }
    if found["timedOut"] == true {
        bail!(
            "the next page was not shown within {} ms",
            timeout.as_millis()
        );
    }
    found["ms"]
        .as_f64()
        .map(Some)
        .ok_or_else(|| anyhow!("page change: unexpected answer {found}"))
}

/// The readiness marks of the current document: name to start time (ms
/// since navigation start), and each mark's detail.
pub async fn readiness_marks(client: &Client) -> anyhow::Result<Vec<(String, f64, Value)>> {
    let marks = client
        .execute(
            "return performance.getEntriesByType('mark')
               .filter((m) => m.name.startsWith(arguments[0]))
               .map((m) => [m.name, m.startTime, m.detail ?? null]);",
            vec![json!(MARK_PREFIX)],
        )
        .await
        .context("read the readiness marks")?;
    let marks: Vec<(String, f64, Value)> = serde_json::from_value(marks)?;
    Ok(marks)
}

/// Waits up to `timeout` for every one of `names` to be marked; the marks
/// found by then.
pub async fn wait_for_marks(
    client: &Client,
    names: &[&str],
    timeout: Duration,
) -> anyhow::Result<Vec<(String, f64, Value)>> {
    let args = vec![json!(names)];
    run_polling(
        client,
        WAIT_FOR_MARKS_JS,
        args,
        timeout,
        "wait for the readiness marks",
    )
    .await?;
    readiness_marks(client).await
}

/// Counts every element of the document, shadow roots included.
pub const COUNT_ELEMENTS_JS: &str = r#"
const count = (root) => {
  let n = 0;
  for (const el of root.querySelectorAll('*')) {
    n += 1;
    if (el.shadowRoot) n += count(el.shadowRoot);
  }
  return n;
};
return count(document);
"#;

/// Scrolls every lazily shown part into view, then back to the top.
pub const SCROLL_LAZY_JS: &str = r#"
for (const el of document.querySelectorAll('[data-lazy]')) el.scrollIntoView();
window.scrollTo(0, document.documentElement.scrollHeight);
window.scrollTo(0, 0);
return document.querySelectorAll('[data-lazy]').length;
"#;

/// Installed before any script of a new document: records long tasks in
/// `window.__hubBenchLongTasks`.
pub const LONG_TASK_OBSERVER_JS: &str = r#"
window.__hubBenchLongTasks = 0;
try {
  new PerformanceObserver((list) => { window.__hubBenchLongTasks += list.getEntries().length; })
    .observe({ type: 'longtask', buffered: true });
} catch (e) {}
"#;

/// Reads the long tasks the observer has seen.
pub const LONG_TASKS_JS: &str = "return window.__hubBenchLongTasks ?? null;";
