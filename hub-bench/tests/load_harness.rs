//! End-to-end tests of load against an in-process mock Hub ([`mock_hub`]):
//! its counts, failures and cap, its process figures, `--csv`, `--compare`
//! and replicas.

mod mock_hub;

use std::collections::BTreeMap;
use std::time::Duration;

use hub_bench::load::hub_process::HubProcessReport;
use hub_bench::load::{run_load, LoadArgs, DEFAULT_MAX_REQUESTS};
use mock_hub::*;
use serde_json::{json, Value};

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

/// The process `who` ran in, sampled: this test's own, found the way
/// `found_by` says, over two samples or more.
fn sampled_here<'a>(
    sampled: Option<&'a HubProcessReport>,
    who: &str,
    found_by: &str,
) -> &'a HubProcessReport {
    let process = sampled.unwrap_or_else(|| panic!("{who} process not sampled"));
    assert_eq!(process.pid, std::process::id(), "{who}");
    assert_eq!(process.found_by, found_by, "{who}");
    assert!(process.samples >= 2 && process.rss_mib_max > 0.0, "{who}");
    process
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
    let process = sampled_here(report.hub_process.as_ref(), "the Hub", "port");
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
    let client = sampled_here(report.load_process.as_ref(), "the load client", "self");
    assert!(client.cpu_percent_avg >= 0.0);
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
