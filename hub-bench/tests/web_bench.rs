//! `hub-bench web` in a real headless Chromium against a stand-in web client
//! (`web_support`): every scenario populates, pages and updates, the marks
//! are read and classified, the page's API requests are joined to their
//! `perf_trace` lines, and a refused sign-in writes no report. Skipped with a
//! one-line note on a machine without Chromium; never with `CI=true`.

mod web_support;

use std::sync::atomic::Ordering;

use hub_bench::web::{self, BrowserPaths, WebArgs};
use web_support::{WebHub, MEMBER_TOKEN, PAGE_SIZE};

fn args(hub: &WebHub, seed: std::path::PathBuf, out: std::path::PathBuf) -> WebArgs {
    WebArgs {
        hub: hub.base.clone(),
        seed,
        out,
        runs: 2,
        page_changes: 2,
        burst_runs: 1,
        burst_count: 5,
        burst_only: false,
        nav_timeout_ms: 30_000,
        populate_timeout_ms: 30_000,
        settle_timeout_ms: 10_000,
        expect_readiness_marks: false,
        hub_perf_log: None,
        notes: "stand-in client".into(),
        quiet: true,
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_scenario_is_measured_with_marks_on() {
    if BrowserPaths::for_test("every_scenario_is_measured_with_marks_on").is_none() {
        return;
    }
    let hub = WebHub::start(true).await;
    let out = hub.dir.path().join("browser.json");
    let mut args = args(&hub, hub.seed_file(MEMBER_TOKEN), out.clone());
    args.expect_readiness_marks = true;
    args.hub_perf_log = Some(hub.log.clone());
    let report = web::run(args).await.unwrap();

    let names: Vec<&str> = report.scenarios.iter().map(|s| s.name.as_str()).collect();
    assert_eq!(
        names,
        [
            "project-grid",
            "project-list",
            "project-graph-embedded",
            "standalone-graph",
            "sse-burst"
        ]
    );
    for s in &report.scenarios {
        let errors: Vec<_> = s.attempts.iter().filter_map(|r| r.error.as_ref()).collect();
        assert!(errors.is_empty(), "{}: {errors:?}", s.name);
        assert_eq!(s.populated_run_count, s.runs, "{}", s.name);
        assert_eq!(s.readiness_marks_missing_run_count, 0, "{}", s.name);
        assert!(s.first_page.median_ms.unwrap() > 0.0, "{}", s.name);
        assert!(s.perf_trace_available, "{}: no joined request", s.name);
        // Run 0 is cold, the others warm; both write the view's two marks.
        let rows_mark = match s.view.as_str() {
            "grid" => "scion:ready:rows-grid",
            "list" => "scion:ready:rows-list",
            _ => "scion:ready:graph",
        };
        for side in [&s.readiness_marks.cold, &s.readiness_marks.warm] {
            if s.runs > 1 || std::ptr::eq(side, &s.readiness_marks.cold) {
                assert!(side.contains_key("scion:ready:agents-data"), "{}", s.name);
                assert!(side.contains_key(rows_mark), "{}: {side:?}", s.name);
            }
        }
        for run in &s.attempts {
            assert!(
                run.readiness_marks["scion:ready:agents-data"] <= run.readiness_marks[rows_mark]
            );
            let agents = run
                .api_requests
                .iter()
                .find(|q| q.path.contains("/agents?"))
                .unwrap_or_else(|| panic!("{}: no agent list in {:?}", s.name, run.api_requests));
            assert_eq!(agents.status, 200);
            assert_eq!(agents.perf_trace_source.as_deref(), Some("hub-log"));
            assert_eq!(
                agents.perf_trace.as_ref().unwrap()["X-Scion-Perf-Store-Calls"],
                "GetUser=3"
            );
        }
    }
    for paged in &report.scenarios[..2] {
        assert_eq!(paged.page_size, Some(PAGE_SIZE as u32));
        assert_eq!(paged.page_count, Some(5));
        assert_eq!(
            paged.page_change.count, 4,
            "two changes in each of two runs"
        );
        for run in &paged.attempts {
            assert_eq!(run.items, Some(PAGE_SIZE as u32));
        }
    }
    for graph in &report.scenarios[2..4] {
        assert_eq!(graph.page_size, None);
        assert_eq!(graph.attempts[0].items, Some(100));
        assert_eq!(graph.page_change.count, 0);
    }
    let burst = &report.scenarios[4];
    assert_eq!(burst.burst_missing_count, Some(0));
    assert_eq!(burst.burst_update.as_ref().unwrap().count, 5);
    assert!(burst.attempts[0]
        .api_requests
        .iter()
        .any(|q| q.method == "PUT" && q.status == 200));
    assert!(burst.attempts[0]
        .api_requests
        .iter()
        .any(|q| q.path == "/events" && q.request_id.is_some()));

    let written: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&out).unwrap()).unwrap();
    assert_eq!(written["seed"]["memberToken"], "REDACTED");
    assert_eq!(written["effectiveSettings"]["burstCount"], 5);
    assert_eq!(written["machine"]["notes"], "stand-in client");
    assert!(written["browserVersion"]
        .as_str()
        .unwrap()
        .contains("Chromium"));
    assert!(written["harnessCommitSource"].is_string());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn marks_are_counted_against_the_setting() {
    if BrowserPaths::for_test("marks_are_counted_against_the_setting").is_none() {
        return;
    }
    let hub = WebHub::start(false).await;
    let out = hub.dir.path().join("browser.json");
    let mut args = args(&hub, hub.seed_file(MEMBER_TOKEN), out);
    args.burst_only = true;
    args.burst_runs = 2;
    args.burst_count = 3;

    // Off, and not expected: nothing is written and nothing is unexpected.
    let off = web::run(args.clone()).await.unwrap();
    let burst = &off.scenarios[0];
    assert_eq!(burst.populated_run_count, 2);
    assert_eq!(burst.readiness_marks_unexpected_run_count, 0);
    assert!(burst.attempts.iter().all(|r| r.readiness_marks.is_empty()));

    // Off, but expected: every populated run misses its marks.
    args.expect_readiness_marks = true;
    let missing = web::run(args.clone()).await.unwrap();
    assert_eq!(missing.scenarios[0].readiness_marks_missing_run_count, 2);

    // On, but not expected: every populated run found marks it should not have.
    hub.marks.store(true, Ordering::Relaxed);
    args.expect_readiness_marks = false;
    let unexpected = web::run(args).await.unwrap();
    assert_eq!(
        unexpected.scenarios[0].readiness_marks_unexpected_run_count,
        2
    );
    assert_eq!(unexpected.scenarios[0].readiness_marks_missing_run_count, 0);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_refused_sign_in_writes_no_report() {
    if BrowserPaths::for_test("a_refused_sign_in_writes_no_report").is_none() {
        return;
    }
    let hub = WebHub::start(false).await;
    let out = hub.dir.path().join("browser.json");
    let mut args = args(&hub, hub.seed_file("not-the-member"), out.clone());
    args.burst_only = true;
    let error = web::run(args).await.unwrap_err();
    let message = format!("{error:#}");
    assert!(
        message.contains("sign-in as the seeded member was refused (401"),
        "{message}"
    );
    assert!(!out.exists());
}
