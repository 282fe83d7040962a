//! Web counter budgets: the project page's grid, list and graph views,
//! loaded in headless Chromium with the web fixture's deterministic
//! 100-agent project, bound their DOM element count (shadow roots
//! included) at baseline + 10 on every load, and their long tasks (the
//! median of three loads) at baseline + max(50%, 3). One more load of each
//! view with the CPU slowed 4x must count the same elements: the DOM must
//! not depend on how fast the page loads. Any API request the fixture does
//! not answer fails the test.
//!
//! Updating a baseline for an intended change: run
//!
//! ```text
//! cargo test -p hub-bench --test web_budgets -- --nocapture
//! ```
//!
//! read each view's `measured:` line, set its row of [`VIEWS`] and
//! [`BASELINE_COMMIT`] (`main <sha>`, or a short description of the change),
//! and give the reason in the commit message. Base the long-task baseline on
//! several runs. A value below its baseline by more than the margin prints a
//! note (never a failure): lower the baseline so the improvement is held.
//! Skipped with a one-line note on a machine without Chromium; never with
//! `CI=true`.

use std::time::Duration;

use hub_bench::hubs::{seeded_hub, Tracing, WebHub};
use hub_bench::web::budget::{
    measure_view, observe_long_tasks, stable_element_count, throttle_cpu, FixtureServer,
    LoadCounts, DOM_ELEMENTS_MARGIN, LONG_TASKS_MARGIN,
};
use hub_bench::web::page::{self, View};
use hub_bench::web::{Browser, BrowserPaths};
use hub_example::seed::{seed_to_file, SeedOptions};
use perf_trace_core::budget::BudgetCheck;

/// Where the baselines below were measured.
const BASELINE_COMMIT: &str =
    "webbench, after merging web be9c151: the graph draws the delegation link";

/// One view's baseline.
struct ViewBudget {
    view: View,
    /// Elements, shadow roots' included.
    dom_elements: u64,
    /// Long tasks, the median of three loads.
    long_tasks: u64,
}

/// The baselines, measured at [`BASELINE_COMMIT`].
const VIEWS: &[ViewBudget] = &[
    ViewBudget {
        view: View::Grid,
        dom_elements: 185,
        long_tasks: 0,
    },
    ViewBudget {
        view: View::List,
        dom_elements: 192,
        long_tasks: 0,
    },
    ViewBudget {
        view: View::Graph,
        dom_elements: 441,
        long_tasks: 0,
    },
];

const STEP: Duration = Duration::from_secs(60);
const SECRET: &str = "web-budget-secret";

fn median(mut values: Vec<u64>) -> u64 {
    values.sort_unstable();
    values[values.len() / 2]
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn project_page_views_stay_within_their_budgets() {
    let Some(paths) = BrowserPaths::for_test("project_page_views_stay_within_their_budgets") else {
        return;
    };
    // A Hub with its web client serves the shell, the assets and the
    // sign-in; the fixture answers the page's API.
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("hub.db");
    let doc = seed_to_file(
        &SeedOptions {
            db_path: db.clone(),
            session_secret: SECRET.into(),
            agents: 1,
            project_slug: "shell".into(),
            rand_seed: 42,
        },
        &dir.path().join("seed.json"),
    )
    .unwrap();
    let log = dir.path().join("hub.log");
    let hub = WebHub::serve(seeded_hub(&db, SECRET, Tracing::Off, &log).unwrap())
        .await
        .unwrap();
    hub.set_readiness_marks(true).unwrap();
    let server = FixtureServer::start(hub.url()).await.unwrap();
    let browser = Browser::launch(&paths, STEP).await.unwrap();
    observe_long_tasks(&browser).await.unwrap();
    page::sign_in(browser.client(), server.url(), &doc.member_token)
        .await
        .unwrap();

    let mut failures = Vec::new();
    for budget in VIEWS {
        let url = format!(
            "{}{}",
            server.url(),
            page::project_path(&server.project_id(), budget.view)
        );
        let mut loads: Vec<LoadCounts> = Vec::new();
        for _ in 0..3 {
            loads.push(
                measure_view(&browser, &url, budget.view, STEP)
                    .await
                    .unwrap(),
            );
        }
        throttle_cpu(&browser, 4).await.unwrap();
        let slow = measure_view(&browser, &url, budget.view, STEP).await;
        throttle_cpu(&browser, 1).await.unwrap();
        let slow = slow.unwrap();
        let name = format!("project-{}", budget.view.name());
        for load in &loads {
            assert_eq!(
                load.dom_elements, slow.dom_elements,
                "{name}: a load with the CPU slowed 4x counts {} elements, a normal load {}",
                slow.dom_elements, load.dom_elements
            );
        }
        let dom_elements = loads.iter().map(|l| l.dom_elements).max().unwrap();
        let long_tasks = median(loads.iter().map(|l| l.long_tasks).collect());
        let check = BudgetCheck::new(name, BASELINE_COMMIT)
            .bounded(
                "dom_elements",
                dom_elements,
                budget.dom_elements,
                DOM_ELEMENTS_MARGIN,
            )
            .bounded(
                "long_tasks",
                long_tasks,
                budget.long_tasks,
                LONG_TASKS_MARGIN,
            );
        if let Err(over) = check.check() {
            failures.extend(over.failures);
        }
    }
    browser.close().await;
    let unanswered = server.unanswered();
    assert!(
        unanswered.is_empty(),
        "the page sent requests the web fixture does not answer (add them to \
         hub_bench::web_fixture and its schema): {unanswered:?}"
    );
    assert!(
        failures.is_empty(),
        "over budget (baselines from {BASELINE_COMMIT}):\n{}",
        failures.join("\n")
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_element_count_includes_shadow_roots() {
    let Some(paths) = BrowserPaths::for_test("the_element_count_includes_shadow_roots") else {
        return;
    };
    let browser = Browser::launch(&paths, STEP).await.unwrap();
    // html, head, body, div, script and, in the shadow root, p, b and i.
    let html = "<html><head></head><body><div id=h></div><script>\
                h.attachShadow({mode:'open'}).innerHTML='<p><b>x</b></p><i></i>'\
                </script></body></html>";
    browser
        .client()
        .goto(&format!("data:text/html,{html}"))
        .await
        .unwrap();
    let count = stable_element_count(&browser, STEP).await.unwrap();
    browser.close().await;
    assert_eq!(count, 8);
}
