//! The web client in a real browser: Chromium, headless, driven over
//! WebDriver (chromedriver, started here on a free loopback port) against a
//! Hub served in this process with `serve --enable-web`'s router.
//!
//! - sign-in with a token posted once, the HttpOnly cookie, sign-out; the
//!   profiling setting (a member and an access token refused, the admin's
//!   browser session allowed); clear error pages for a malformed, unknown or
//!   forbidden project;
//! - readiness marks: none at all while off (`performance.mark` is wrapped
//!   before any page script runs, to prove there is no call), and while on
//!   each mark once per load, with only `{view}` as detail, kept across a
//!   view switch and a page change, cleared on navigation and on a filter
//!   change of the standalone graph;
//! - paging with the page size read from the pager, and a live status
//!   update applied to the same card in place.
//!
//! Without Chromium and chromedriver the tests print one line saying they
//! were skipped, unless `CI=true`, where a missing browser fails them.
//! `SCION_WEB_SCREENSHOTS=DIR` also saves a PNG of each view into DIR.

mod hub_support;

use std::path::PathBuf;
use std::time::{Duration, Instant};

use fantoccini::{Client, ClientBuilder, Locator};
use hub_bench::web::browser::{CHROMIUM_FLAGS, WINDOW_SIZE};
use hub_bench::web::driver::Chromedriver;
use hub_bench::web::SessionPost;
use hub_example::api::profiling::{readiness_marks, set_readiness_marks};
use hub_example::auth::tokens::access_token_from_bytes;
use hub_example::seed::SeedDocument;
use hub_example::settings::Settings;
use hub_example::store::tokens::{insert_user_access_token, NewAccessToken};
use hub_example::web::{self, WebOptions};
use hub_example::Hub;
use hub_support::{hub_options, Seeded};
use serde_json::{json, Value};
use tokio::sync::oneshot;

/// Where Debian installs the browser and its driver.
const CHROMIUM: &str = "/usr/bin/chromium";
const CHROMEDRIVER: &str = "/usr/bin/chromedriver";
/// How long a page may take to show what a step waits for.
const STEP_TIMEOUT: Duration = Duration::from_secs(30);

/// Runs before any page script: records every `performance.mark` call.
const MARK_SPY: &str = r#"
window.__markCalls = [];
const __mark = performance.mark.bind(performance);
performance.mark = function (name, options) {
  window.__markCalls.push({ name: String(name), detail: options ? options.detail : undefined });
  return __mark(name, options);
};
"#;

/// The readiness marks in the performance timeline.
const READ_MARKS: &str = "return performance.getEntriesByType('mark')
  .filter((m) => m.name.startsWith('scion:ready:'))
  .map((m) => ({ name: m.name, detail: m.detail, startTime: m.startTime }));";

/// A Hub serving the web client (with the test login) on a loopback port.
struct WebHub {
    seeded: Seeded,
    hub: Hub,
    url: String,
    _stop: oneshot::Sender<()>,
}

async fn web_hub(agents: u32) -> WebHub {
    let seeded = Seeded::new(agents);
    let hub = Hub::new(
        seeded.db(),
        hub_options(Settings::default(), &hub_example::log::CaptureBuffer::new()),
    );
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}", listener.local_addr().unwrap());
    let (stop, stopped) = oneshot::channel::<()>();
    let router = web::router(&hub, WebOptions { test_login: true });
    tokio::spawn(hub.serving_router(listener, router, async {
        let _ = stopped.await;
    }));
    WebHub {
        seeded,
        hub,
        url,
        _stop: stop,
    }
}

/// The browser, and a Hub of `agents` agents serving the web client with
/// its seed document; `None` where [`Browser::start`] says so.
async fn browser_and_hub(test: &str, agents: u32) -> Option<(Browser, WebHub, SeedDocument)> {
    let browser = Browser::start(test).await?;
    let hub = web_hub(agents).await;
    let doc = hub.seeded.doc.clone();
    Some((browser, hub, doc))
}

/// Headless Chromium and the chromedriver process that drives it; dropping
/// it ends the driver and every process of the browser.
struct Browser {
    client: Client,
    driver: Chromedriver,
    _profile: tempfile::TempDir,
}

/// The browser and driver, when installed; `None` (after one line saying
/// so) when not, except under `CI=true`, where that is a failure.
fn installed_browser(test: &str) -> Option<(PathBuf, PathBuf)> {
    let chromium = PathBuf::from(std::env::var("SCION_CHROMIUM").unwrap_or(CHROMIUM.into()));
    let driver = PathBuf::from(std::env::var("SCION_CHROMEDRIVER").unwrap_or(CHROMEDRIVER.into()));
    if chromium.exists() && driver.exists() {
        return Some((chromium, driver));
    }
    if std::env::var("CI").as_deref() == Ok("true") {
        panic!(
            "CI=true but {} or {} is missing: install Debian's chromium and chromium-driver",
            chromium.display(),
            driver.display()
        );
    }
    // One line for the whole file, written past the test harness's capture
    // so a developer sees it.
    static NOTED: std::sync::Once = std::sync::Once::new();
    NOTED.call_once(|| {
        use std::io::Write;
        let _ = writeln!(
            std::io::stderr(),
            "web_browser: browser tests skipped (first: {test}): no Chromium at {} or no chromedriver at {}",
            chromium.display(),
            driver.display()
        );
    });
    None
}

impl Browser {
    async fn start(test: &str) -> Option<Browser> {
        let (chromium, driver_path) = installed_browser(test)?;
        let driver = Chromedriver::start(&driver_path)
            .await
            .expect("chromedriver starts");
        let profile = tempfile::tempdir().unwrap();
        // The benchmark's flags and window, and shared memory in /tmp
        // rather than a container's small /dev/shm.
        let (width, height) = WINDOW_SIZE;
        let args: Vec<String> = CHROMIUM_FLAGS
            .iter()
            .map(|flag| flag.to_string())
            .chain([
                "--disable-dev-shm-usage".to_owned(),
                format!("--window-size={width},{height}"),
                format!("--user-data-dir={}", profile.path().display()),
            ])
            .collect();
        let mut caps = serde_json::Map::new();
        caps.insert(
            "goog:chromeOptions".into(),
            json!({ "binary": chromium, "args": args }),
        );
        let client = ClientBuilder::new(hyper_util::client::legacy::connect::HttpConnector::new())
            .capabilities(caps)
            .connect(&driver.url())
            .await
            .expect("a Chromium session");
        Some(Browser {
            client,
            driver,
            _profile: profile,
        })
    }

    /// Wraps `performance.mark` in every document loaded from now on.
    async fn spy_on_marks(&self) {
        self.client
            .issue_cmd(SessionPost {
                path: "goog/cdp/execute",
                body: json!({
                    "cmd": "Page.addScriptToEvaluateOnNewDocument",
                    "params": { "source": MARK_SPY },
                }),
            })
            .await
            .expect("the mark spy is installed");
    }

    async fn goto(&self, url: &str) {
        self.client.goto(url).await.unwrap();
    }

    async fn js(&self, script: &str) -> Value {
        self.client.execute(script, vec![]).await.unwrap()
    }

    /// Runs `body` (an async function body) in the page and returns its value.
    async fn js_async(&self, body: &str) -> Value {
        let script = format!(
            "const done = arguments[arguments.length - 1];
             (async () => {{ {body} }})().then(done, (e) => done({{ thrown: String(e) }}));"
        );
        self.client.execute_async(&script, vec![]).await.unwrap()
    }

    /// Waits until `script` returns something truthy, and returns it.
    async fn until(&self, what: &str, script: &str) -> Value {
        let started = Instant::now();
        loop {
            let value = self.js(script).await;
            if !matches!(value, Value::Null | Value::Bool(false))
                && value != json!(0)
                && value != json!("")
            {
                return value;
            }
            if started.elapsed() > STEP_TIMEOUT {
                let body = self.js("return document.body.innerText").await;
                panic!("timed out waiting for {what}; the page shows: {body}");
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    }

    /// Waits until the page shows at least one element matching `css`.
    async fn until_some(&self, what: &str, css: &str) {
        self.until(
            what,
            &format!("return document.querySelectorAll('{css}').length"),
        )
        .await;
    }

    /// Waits until the page shows exactly `n` elements matching `css`.
    async fn until_exactly(&self, what: &str, css: &str, n: usize) {
        self.until(
            what,
            &format!("return document.querySelectorAll('{css}').length === {n}"),
        )
        .await;
    }

    /// Waits until the performance timeline holds the mark `name`.
    async fn until_mark(&self, what: &str, name: &str) {
        self.until(
            what,
            &format!("return performance.getEntriesByName('{name}').length"),
        )
        .await;
    }

    /// Chooses `value` in the select element `id`, as a user's change does.
    async fn select(&self, id: &str, value: &str) {
        self.js(&format!(
            "const s = document.getElementById('{id}'); s.value = '{value}';
             s.dispatchEvent(new Event('change')); return true;"
        ))
        .await;
    }

    /// Two animation frames: whatever a view defers to its next frame has run.
    async fn frames(&self) {
        self.js_async(
            "await new Promise((r) => requestAnimationFrame(() => requestAnimationFrame(r))); return true;",
        )
        .await;
    }

    async fn click(&self, css: &str) {
        self.client
            .find(Locator::Css(css))
            .await
            .unwrap_or_else(|e| panic!("no {css}: {e}"))
            .click()
            .await
            .unwrap();
    }

    /// Types `token` into the sign-in form and sends it.
    async fn submit_token(&self, token: &str) {
        let input = self
            .client
            .wait()
            .at_most(STEP_TIMEOUT)
            .for_element(Locator::Id("token"))
            .await
            .unwrap();
        input.send_keys(token).await.unwrap();
        self.click("#sign-in button[type=submit]").await;
    }

    /// Signs in through the page's form with `token`.
    async fn sign_in(&self, hub: &WebHub, token: &str) {
        self.goto(&format!("{}/", hub.url)).await;
        self.submit_token(token).await;
        self.until(
            "the signed-in page",
            "return document.getElementById('signed-in-as')?.textContent",
        )
        .await;
    }

    async fn sign_out(&self) {
        self.click("#sign-out").await;
        self.until(
            "the sign-in form",
            "return !!document.getElementById('sign-in')",
        )
        .await;
    }

    /// `fetch` from the page; returns `{status, body}`.
    async fn fetch(&self, method: &str, path: &str, headers: Value, body: Option<&str>) -> Value {
        let body = match body {
            Some(b) => format!("body: {},", serde_json::to_string(b).unwrap()),
            None => String::new(),
        };
        self.js_async(&format!(
            "const r = await fetch({path:?}, {{ method: {method:?}, headers: {headers}, {body} credentials: 'same-origin' }});
             const text = await r.text();
             let json = null; try {{ json = JSON.parse(text); }} catch {{}}
             return {{ status: r.status, body: json }};"
        ))
        .await
    }

    /// `PUT /api/v1/admin/profiling` from the page with `body`.
    async fn put_profiling(&self, headers: Value, body: &str) -> Value {
        self.fetch("PUT", "/api/v1/admin/profiling", headers, Some(body))
            .await
    }

    async fn initial_data(&self) -> Value {
        self.js("return JSON.parse(document.getElementById('scion-initial-data').textContent)")
            .await
    }

    async fn marks(&self) -> Vec<Value> {
        self.js(READ_MARKS)
            .await
            .as_array()
            .cloned()
            .unwrap_or_default()
    }

    async fn mark_calls(&self) -> Vec<Value> {
        self.js("return window.__markCalls || null")
            .await
            .as_array()
            .cloned()
            .expect("the mark spy ran before the page")
    }

    async fn screenshot(&self, name: &str) {
        if let Ok(dir) = std::env::var("SCION_WEB_SCREENSHOTS") {
            self.frames().await;
            let png = self.client.screenshot().await.unwrap();
            std::fs::write(PathBuf::from(dir).join(name), png).unwrap();
        }
    }
}

/// The marks' names, sorted, each mark's detail checked to be exactly
/// `{view}` and its time taken from the navigation start.
fn checked(marks: &[Value], view_of: impl Fn(&str) -> &'static str) -> Vec<String> {
    let mut names = Vec::new();
    for mark in marks {
        let name = mark["name"].as_str().unwrap();
        assert_eq!(
            mark["detail"],
            json!({ "view": view_of(name) }),
            "detail of {name}"
        );
        assert!(mark["startTime"].as_f64().unwrap() > 0.0, "{name}");
        names.push(name.to_owned());
    }
    names.sort();
    names
}

/// The processes of process group `group` that have not exited (a zombie
/// waiting to be reaped does not count), as pid and name.
#[cfg(target_os = "linux")]
fn live_processes_in_group(group: u32) -> Vec<(u32, String)> {
    let mut found = Vec::new();
    for entry in std::fs::read_dir("/proc").unwrap().flatten() {
        let Some(pid) = entry.file_name().to_str().and_then(|n| n.parse().ok()) else {
            continue;
        };
        // A process may end while it is read.
        let Ok(stat) = std::fs::read_to_string(entry.path().join("stat")) else {
            continue;
        };
        // `pid (name) state ppid pgrp ...`, where the name may hold spaces
        // and parentheses.
        let Some((name, rest)) = stat
            .split_once(" (")
            .and_then(|(_, after)| after.rsplit_once(") "))
        else {
            continue;
        };
        let mut fields = rest.split_whitespace();
        let state = fields.next();
        let pgrp = fields.nth(1).and_then(|f| f.parse::<u32>().ok());
        if pgrp == Some(group) && state != Some("Z") {
            found.push((pid, name.to_owned()));
        }
    }
    found
}

/// Dropping a browser ends its driver and every process of the Chromium it
/// started: killing the driver alone left Chromium running, reparented,
/// after every test run.
#[cfg(target_os = "linux")]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_dropped_browser_leaves_no_process_behind() {
    let Some(browser) = Browser::start("a_dropped_browser_leaves_no_process_behind").await else {
        return;
    };
    browser
        .client
        .goto("about:blank")
        .await
        .expect("a blank page loads");
    let group = browser.driver.process_group();
    let running = live_processes_in_group(group);
    assert!(
        running.iter().any(|(_, name)| name.starts_with("chromium")),
        "the browser runs in the driver's group: {running:?}"
    );
    drop(browser);
    let dropped = Instant::now();
    loop {
        let left = live_processes_in_group(group);
        if left.is_empty() {
            break;
        }
        assert!(
            dropped.elapsed() < STEP_TIMEOUT,
            "still running after the browser was dropped: {left:?}"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

/// The profiling setting's body that turns readiness marks on.
const MARKS_ON: &str = r#"{"readiness_marks": true}"#;

/// Signed out, a project page is the sign-in form; a refused token says so.
async fn a_refused_token_is_said(browser: &Browser, hub: &WebHub, doc: &SeedDocument) {
    browser
        .goto(&format!("{}/projects/{}", hub.url, doc.project_id))
        .await;
    browser.submit_token("scb1.not.valid").await;
    let refused = browser
        .until(
            "the refusal",
            "return document.getElementById('sign-in-error')?.textContent",
        )
        .await;
    assert!(
        refused.as_str().unwrap().starts_with("Sign-in refused"),
        "{refused}"
    );
}

/// The member signs in: the cookie is HttpOnly, the token is kept nowhere
/// the page can read; any signed-in caller reads the profiling setting, a
/// member cannot change it.
async fn a_member_signs_in_and_may_not_change_profiling(
    browser: &Browser,
    hub: &WebHub,
    doc: &SeedDocument,
) {
    browser.sign_in(hub, &doc.member_token).await;
    let who = browser
        .js("return document.getElementById('signed-in-as').textContent")
        .await;
    assert_eq!(who, json!("Max Member"));
    // The cookie is HttpOnly, and the token is kept nowhere the page can read.
    assert_eq!(browser.js("return document.cookie").await, json!(""));
    let kept = browser
        .js("return JSON.stringify(localStorage) + JSON.stringify(sessionStorage) + location.href")
        .await;
    assert!(!kept.as_str().unwrap().contains(&doc.member_token));

    // Any signed-in caller reads the setting; a member cannot change it.
    let read = browser
        .fetch("GET", "/api/v1/profiling", json!({}), None)
        .await;
    assert_eq!(
        read,
        json!({"status": 200, "body": {"readiness_marks": false}})
    );
    let member_put = browser
        .put_profiling(json!({"X-Scion-Client": "web"}), MARKS_ON)
        .await;
    assert_eq!(member_put["status"], 403);
}

/// A malformed, an unknown and a forbidden project: clear error pages.
async fn error_pages(browser: &Browser, hub: &WebHub, doc: &SeedDocument) {
    for (path, title) in [
        (
            "/projects/not-a-project".to_owned(),
            "Not a project address",
        ),
        (
            "/projects/00000000-0000-4000-8000-00000000abcd".to_owned(),
            "Project not found",
        ),
        (
            format!("/projects/{}", doc.other_project_id),
            "No access to this project",
        ),
    ] {
        browser.goto(&format!("{}{path}", hub.url)).await;
        let shown = browser
            .until(
                title,
                "return document.querySelector('.error-page[role=alert] h1')?.textContent",
            )
            .await;
        assert_eq!(shown, json!(title), "{path}");
        let back = browser
            .js("return document.querySelector('.error-page a[href=\"/\"]') !== null")
            .await;
        assert_eq!(back, json!(true));
    }
    browser.screenshot("error-page.png").await;
}

/// The admin's browser session may change the setting; the admin's access
/// token, sent from the same browser, may not; a bad body and a request
/// without the client header change nothing.
async fn only_the_admins_session_changes_profiling(
    browser: &Browser,
    hub: &WebHub,
    doc: &SeedDocument,
) {
    let token = access_token_from_bytes([7; 32]);
    insert_user_access_token(
        hub.hub.db(),
        &NewAccessToken {
            id: "33333333-3333-4333-8333-333333333333",
            user_id: &doc.admin_user_id,
            project_id: &doc.project_id,
            name: "browser-test",
            token: &token,
            expires_at_ms: i64::MAX,
        },
        0,
    )
    .unwrap();
    browser.sign_in(hub, &doc.admin_token).await;
    let with_token = browser
        .put_profiling(
            json!({"X-Scion-Client": "web", "Authorization": format!("Bearer {token}")}),
            MARKS_ON,
        )
        .await;
    assert_eq!(with_token["status"], 403);
    assert!(with_token["body"]["error"]
        .as_str()
        .unwrap()
        .contains("access tokens"));
    let json_put = json!({"X-Scion-Client": "web", "Content-Type": "application/json"});
    let bad = browser
        .put_profiling(json_put.clone(), r#"{"readiness_marks": "yes"}"#)
        .await;
    assert_eq!(bad["status"], 400);
    let forged = browser
        .put_profiling(json!({"Content-Type": "text/plain"}), MARKS_ON)
        .await;
    assert_eq!(forged["status"], 403);
    assert!(!readiness_marks(hub.hub.db()).unwrap());
    let on = browser.put_profiling(json_put, MARKS_ON).await;
    assert_eq!(
        on,
        json!({"status": 200, "body": {"readiness_marks": true}})
    );
    assert!(readiness_marks(hub.hub.db()).unwrap());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sign_in_profiling_and_error_pages() {
    let Some((browser, hub, doc)) = browser_and_hub("sign_in_profiling_and_error_pages", 12).await
    else {
        return;
    };

    a_refused_token_is_said(&browser, &hub, &doc).await;
    a_member_signs_in_and_may_not_change_profiling(&browser, &hub, &doc).await;
    error_pages(&browser, &hub, &doc).await;

    // Sign-out ends the session: the API refuses the old cookie.
    browser.sign_out().await;
    let after = browser
        .fetch("GET", "/api/v1/profiling", json!({}), None)
        .await;
    assert_eq!(after["status"], 401);

    only_the_admins_session_changes_profiling(&browser, &hub, &doc).await;
    // Changed without a restart: the next full load's shell says so, and
    // only to a signed-in user.
    browser.goto(&format!("{}/", hub.url)).await;
    assert_eq!(browser.initial_data().await["readinessMarks"], json!(true));
    browser.sign_out().await;
    assert_eq!(
        browser.initial_data().await,
        json!({"page": "home", "signedIn": false})
    );
}

/// Off: every view and the standalone graph render, and no mark call is made.
async fn no_mark_while_off(browser: &Browser, project: &str, standalone: &str) {
    for (url, ready) in [
        (
            project.to_owned(),
            "return document.querySelectorAll('.agent-card').length",
        ),
        (
            format!("{project}?view=list"),
            "return document.querySelectorAll('.agent-row').length",
        ),
        (
            format!("{project}?view=graph"),
            "return document.querySelectorAll('g.node-agent').length",
        ),
        (
            standalone.to_owned(),
            "return document.querySelectorAll('g.node-agent').length",
        ),
    ] {
        browser.goto(&url).await;
        browser.until(&url, ready).await;
        browser.frames().await;
        let initial = browser.initial_data().await;
        assert!(initial.get("readinessMarks").is_none(), "{initial}");
        assert_eq!(browser.mark_calls().await, Vec::<Value>::new(), "{url}");
        assert!(browser.marks().await.is_empty());
    }
}

/// A view switch and a page change keep the load: rows-list and graph are
/// added, nothing is written twice.
async fn one_load_across_views_and_pages(browser: &Browser) {
    browser.click("[data-view=list]").await;
    browser
        .until_mark("the list's mark", "scion:ready:rows-list")
        .await;
    browser.click("#next-page").await;
    browser
        .until(
            "page 2",
            "return document.querySelector('.pager')?.dataset.page === '2'",
        )
        .await;
    browser.click("[data-view=graph]").await;
    browser
        .until_mark("the graph's mark", "scion:ready:graph")
        .await;
    browser.click("[data-view=grid]").await;
    browser.until_some("the grid again", ".agent-card").await;
    browser.frames().await;
    let one_load = browser.marks().await;
    assert_eq!(
        checked(&one_load, |name| match name {
            "scion:ready:rows-list" => "list",
            "scion:ready:graph" => "graph",
            _ => "grid",
        }),
        [
            "scion:ready:agents-data",
            "scion:ready:graph",
            "scion:ready:rows-grid",
            "scion:ready:rows-list"
        ]
    );
    assert_eq!(
        browser.mark_calls().await.len(),
        4,
        "each mark once per load"
    );
}

/// Once `script` holds, the timeline holds a new load's two graph marks alone.
async fn a_new_loads_graph_marks(browser: &Browser, what: &str, script: &str) {
    browser.until(what, script).await;
    browser.frames().await;
    assert_eq!(
        checked(&browser.marks().await, |_| "graph"),
        ["scion:ready:agents-data", "scion:ready:graph"]
    );
}

/// A client-side navigation ends the load: the marks are cleared and the
/// standalone graph writes its own. A project filter change ends the load
/// too.
async fn navigation_ends_the_load(browser: &Browser) {
    browser.click("a[href^='/graph']").await;
    a_new_loads_graph_marks(
        browser,
        "the standalone graph's marks",
        "return window.__markCalls.length === 6",
    )
    .await;

    // A project filter change ends the load too.
    browser.select("project-filter", "").await;
    a_new_loads_graph_marks(
        browser,
        "the new load's marks",
        "return location.search === '' && window.__markCalls.length === 8",
    )
    .await;
    assert_eq!(browser.mark_calls().await.len(), 8);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn readiness_marks_on_and_off() {
    let Some((browser, hub, doc)) = browser_and_hub("readiness_marks_on_and_off", 40).await else {
        return;
    };
    browser.spy_on_marks().await;
    browser.sign_in(&hub, &doc.member_token).await;
    let project = format!("{}/projects/{}", hub.url, doc.project_id);
    let standalone = format!("{}/graph?project={}", hub.url, doc.project_id);

    no_mark_while_off(&browser, &project, &standalone).await;

    // On (changed in the database, no restart): the next full load marks.
    set_readiness_marks(hub.hub.db(), true, 1).unwrap();
    browser.goto(&project).await;
    browser
        .until_mark("the grid's marks", "scion:ready:rows-grid")
        .await;
    let grid = browser.marks().await;
    assert_eq!(
        checked(&grid, |_| "grid"),
        ["scion:ready:agents-data", "scion:ready:rows-grid"]
    );
    let time = |name: &str| {
        grid.iter().find(|m| m["name"] == name).unwrap()["startTime"]
            .as_f64()
            .unwrap()
    };
    assert!(time("scion:ready:agents-data") <= time("scion:ready:rows-grid"));

    one_load_across_views_and_pages(&browser).await;
    navigation_ends_the_load(&browser).await;

    // A full load of the list view: its own two marks, with view list.
    browser.goto(&format!("{project}?view=list")).await;
    browser
        .until_mark("the list's marks", "scion:ready:rows-list")
        .await;
    browser.frames().await;
    assert_eq!(
        checked(&browser.marks().await, |_| "list"),
        ["scion:ready:agents-data", "scion:ready:rows-list"]
    );

    // A mark waiting for its frame is dropped when the load ends first: the
    // page's own module, driven directly.
    let dropped = browser
        .js_async(
            "const { ReadinessMarks } = await import('/assets/marks.js');
             performance.clearMarks();
             const marks = new ReadinessMarks(true);
             marks.markNextFrame('scion:ready:graph', 'graph');
             marks.endLoad();
             marks.mark('scion:ready:agents-data', 'grid');
             marks.mark('scion:ready:agents-data', 'grid');
             await new Promise((r) => requestAnimationFrame(() => requestAnimationFrame(r)));
             return performance.getEntriesByType('mark').map((m) => m.name);",
        )
        .await;
    assert_eq!(dropped, json!(["scion:ready:agents-data"]));

    // Off again: the next load calls nothing.
    set_readiness_marks(hub.hub.db(), false, 2).unwrap();
    browser.goto(&project).await;
    browser.until_some("the grid", ".agent-card").await;
    browser.frames().await;
    assert_eq!(browser.mark_calls().await, Vec::<Value>::new());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn paging_and_a_live_update() {
    let Some((browser, hub, doc)) = browser_and_hub("paging_and_a_live_update", 60).await else {
        return;
    };
    browser.sign_in(&hub, &doc.member_token).await;
    let project = format!("{}/projects/{}", hub.url, doc.project_id);
    browser.goto(&project).await;
    browser.until_some("the grid", ".agent-card").await;
    browser.screenshot("project-grid.png").await;

    // The page size is the pager's; Next fetches the following page.
    let pager = "const p = document.querySelector('.pager');
        return { size: Number(p.dataset.pageSize), page: Number(p.dataset.page),
                 cards: document.querySelectorAll('.agent-card').length,
                 first: document.querySelector('.agent-card h3').textContent,
                 next: !document.getElementById('next-page').disabled };";
    let first = browser.js(pager).await;
    assert_eq!(
        [
            &first["size"],
            &first["page"],
            &first["cards"],
            &first["next"]
        ],
        [&json!(25), &json!(1), &json!(25), &json!(true)]
    );
    let mut seen = vec![first["first"].as_str().unwrap().to_owned()];
    for (page, cards, next) in [(2, 25, true), (3, 10, false)] {
        browser.click("#next-page").await;
        browser
            .until(
                "the next page",
                &format!("return document.querySelector('.pager')?.dataset.page === '{page}'"),
            )
            .await;
        let now = browser.js(pager).await;
        assert_eq!(
            [&now["cards"], &now["next"]],
            [&json!(cards), &json!(next)],
            "page {page}"
        );
        let name = now["first"].as_str().unwrap().to_owned();
        assert!(
            seen.last().unwrap() < &name,
            "page {page} follows the name order"
        );
        seen.push(name);
    }
    // A larger page size from the pager: one page holds 50.
    browser.select("page-size", "50").await;
    browser.until_exactly("50 cards", ".agent-card", 50).await;
    assert_eq!(browser.js(pager).await["size"], json!(50));

    // A status change arrives over /events and updates the same card in place.
    let card = browser
        .js("const c = document.querySelector('.agent-card'); c.__original = true;
             return { id: c.dataset.agentId, phase: c.querySelector('[data-field=phase]').textContent };")
        .await;
    let agent_id = card["id"].as_str().unwrap();
    let new_phase = if card["phase"] == "error" {
        "stopped"
    } else {
        "error"
    };
    // A change made before the page subscribed would not reach it: wait
    // until the Hub counts the page's stream.
    let started = Instant::now();
    while hub.hub.streams().open() == 0 {
        assert!(
            started.elapsed() < STEP_TIMEOUT,
            "the page never opened its event stream"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    let response = reqwest::Client::new()
        .put(format!("{}/api/v1/agents/{agent_id}/status", hub.url))
        .bearer_auth(&doc.owner_token)
        .body(format!(r#"{{"phase":"{new_phase}","activity":"blocked"}}"#))
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), 200);
    let updated = browser
        .until(
            "the live update",
            &format!(
                "const c = document.querySelector('.agent-card[data-agent-id=\"{agent_id}\"]');
                 return c && c.querySelector('[data-field=phase]').textContent === '{new_phase}'
                   && {{ same: c.__original === true, activity: c.querySelector('[data-field=activity]').textContent }};"
            ),
        )
        .await;
    assert_eq!(updated, json!({"same": true, "activity": "blocked"}));

    // The other views, for the README.
    browser.goto(&format!("{project}?view=list")).await;
    browser.until_some("the list", ".agent-row").await;
    browser.screenshot("project-list.png").await;
    browser.goto(&format!("{project}?view=graph")).await;
    browser.until_exactly("the graph", "g.node-agent", 60).await;
    // A creator link per agent, and the seeded delegation (the owner lends
    // actions to the member) between their two users.
    let links = browser
        .js("return { creator: document.querySelectorAll('path.link-creator').length,
                      delegation: document.querySelectorAll('path.link-delegation').length,
                      fitted: document.querySelector('svg.agent-graph').getAttribute('viewBox') !== null };")
        .await;
    assert_eq!(
        links,
        json!({"creator": 60, "delegation": 1, "fitted": true})
    );
    browser.screenshot("project-graph.png").await;
    browser
        .goto(&format!("{}/graph?project={}", hub.url, doc.project_id))
        .await;
    browser
        .until_exactly("the standalone graph", "g.node-agent", 60)
        .await;
    browser.screenshot("standalone-graph.png").await;
}
