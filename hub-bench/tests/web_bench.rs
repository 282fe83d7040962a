//! `hub-bench web` in a real headless Chromium against the Hub's own web
//! client, served in-process over a seeded 100-agent database with tracing
//! on: every scenario populates, pages and updates, the marks are read and
//! classified against the setting, the page's API requests are joined to
//! their `perf_trace` lines, and a refused sign-in writes no report. Skipped
//! with a one-line note on a machine without Chromium; never with `CI=true`.

use std::path::PathBuf;

use hub_bench::hubs::{seeded_hub, Tracing, WebHub};
use hub_bench::web::{self, BrowserPaths, WebArgs};
use hub_example::seed::{seed_to_file, SeedOptions};

const SECRET: &str = "web-bench-secret";

struct Served {
    dir: tempfile::TempDir,
    seed: PathBuf,
    log: PathBuf,
    hub: WebHub,
}

async fn served(agents: u32) -> Served {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("hub.db");
    let seed = dir.path().join("seed.json");
    let options = SeedOptions {
        db_path: db.clone(),
        session_secret: SECRET.into(),
        agents,
        project_slug: "bench".into(),
        rand_seed: 42,
    };
    seed_to_file(&options, &seed).unwrap();
    let log = dir.path().join("hub.log");
    let hub = WebHub::serve(seeded_hub(&db, SECRET, Tracing::On, &log).unwrap())
        .await
        .unwrap();
    Served {
        dir,
        seed,
        log,
        hub,
    }
}

fn args(served: &Served, seed: PathBuf) -> WebArgs {
    WebArgs {
        hub: served.hub.url().to_owned(),
        seed,
        out: served.dir.path().join("browser.json"),
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
        notes: "in-process hub".into(),
        quiet: true,
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_scenario_is_measured_with_marks_on() {
    if BrowserPaths::for_test("every_scenario_is_measured_with_marks_on").is_none() {
        return;
    }
    let served = served(100).await;
    served.hub.set_readiness_marks(true).unwrap();
    let mut args = args(&served, served.seed.clone());
    args.expect_readiness_marks = true;
    args.hub_perf_log = Some(served.log.clone());
    let out = args.out.clone();
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
        assert_eq!(s.agent_count, 100);
        assert_eq!(s.readiness_marks_missing_run_count, 0, "{}", s.name);
        assert!(s.first_page.median_ms.unwrap() > 0.0, "{}", s.name);
        assert!(s.perf_trace_available, "{}: no joined request", s.name);
        let rows_mark = match s.view.as_str() {
            "grid" => "scion:ready:rows-grid",
            "list" => "scion:ready:rows-list",
            _ => "scion:ready:graph",
        };
        // Run 0 is cold, the others warm; every run writes the view's two marks.
        assert!(s.readiness_marks.cold[rows_mark].count == 1, "{}", s.name);
        if s.runs > 1 {
            assert_eq!(s.readiness_marks.warm[rows_mark].count, s.runs - 1);
        }
        for run in &s.attempts {
            assert!(
                run.readiness_marks["scion:ready:agents-data"] <= run.readiness_marks[rows_mark],
                "{}: {:?}",
                s.name,
                run.readiness_marks
            );
            let joined = run
                .api_requests
                .iter()
                .filter(|q| q.path.starts_with("/api/v1/") && q.perf_trace.is_some())
                .count();
            assert!(joined > 0, "{}: {:?}", s.name, run.api_requests);
            for request in run.api_requests.iter().filter(|q| q.perf_trace.is_some()) {
                assert_eq!(request.perf_trace_source.as_deref(), Some("hub-log"));
                assert!(request.request_id.is_some());
            }
        }
    }
    for paged in &report.scenarios[..2] {
        assert_eq!(paged.page_size, Some(25), "{}", paged.name);
        assert_eq!(paged.page_count, Some(4), "{}", paged.name);
        assert_eq!(
            paged.page_change.count, 4,
            "two changes in each of two runs"
        );
        for run in &paged.attempts {
            assert_eq!(run.items, Some(25));
            let list = run
                .api_requests
                .iter()
                .find(|q| q.path.contains("/agents?") && q.perf_trace.is_some())
                .unwrap();
            assert!(list.perf_trace.as_ref().unwrap()["X-Scion-Perf-Endpoint"]
                .starts_with("agents.project"));
        }
    }
    for graph in &report.scenarios[2..4] {
        assert_eq!(graph.page_size, None);
        assert_eq!(graph.attempts[0].items, Some(100), "{}", graph.name);
        assert_eq!(graph.page_change.count, 0);
    }
    let burst = &report.scenarios[4];
    assert_eq!(burst.burst_missing_count, Some(0));
    assert_eq!(burst.burst_update.as_ref().unwrap().count, 5);
    let requests = &burst.attempts[0].api_requests;
    assert_eq!(
        requests
            .iter()
            .filter(|q| q.method == "PUT" && q.status == 200)
            .count(),
        5,
        "{requests:?}"
    );
    assert!(requests
        .iter()
        .any(|q| q.path.starts_with("/events") && q.request_id.is_some()));

    let written: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&out).unwrap()).unwrap();
    assert_eq!(written["seed"]["memberToken"], "REDACTED");
    assert_eq!(written["seed"]["ownerToken"], "REDACTED");
    assert_eq!(written["effectiveSettings"]["burstCount"], 5);
    assert_eq!(written["machine"]["notes"], "in-process hub");
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
    let served = served(30).await;
    let mut args = args(&served, served.seed.clone());
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

    // On, but not expected: every populated run found marks.
    served.hub.set_readiness_marks(true).unwrap();
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
    let served = served(5).await;
    let mut doc: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&served.seed).unwrap()).unwrap();
    doc["memberToken"] = "scb1.not-a-token".into();
    let bad_seed = served.dir.path().join("bad-seed.json");
    std::fs::write(&bad_seed, doc.to_string()).unwrap();
    let mut args = args(&served, bad_seed);
    args.burst_only = true;
    let out = args.out.clone();
    let error = web::run(args).await.unwrap_err();
    let message = format!("{error:#}");
    assert!(
        message.contains("sign-in as the seeded member was refused (401"),
        "{message}"
    );
    assert!(!out.exists());
}
