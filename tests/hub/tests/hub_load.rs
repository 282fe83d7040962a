//! Load under tracing, CI-sized: 50 virtual users for 5 seconds against a
//! traced Hub served in-process. Nothing is lost (one line per request
//! served), nothing is mixed (every line carries its scenario's baseline
//! counts), memory stays put, and no secret reaches the log or the report.

mod hub_support;
mod served;

use std::collections::{BTreeMap, BTreeSet, HashSet};
use std::path::Path;
use std::time::Duration;

use hub_bench::client::parse_hub_url;
use hub_bench::load::mix;
use hub_bench::report::{EndpointLoad, LoadReport};
use hub_bench::{run_load, LoadArgs};
use hub_example::seed::SeedDocument;
use hub_support::{counts, TestHub, SECRET};
use serde_json::Value;
use served::Served;

const USERS: u32 = 50;
const DURATION: Duration = Duration::from_secs(5);
/// Generous: the run must not leave a lasting cost per request.
const RSS_BOUND_KIB: i64 = 200 * 1024;

/// The resident set of this process, in KiB.
fn vm_rss_kib() -> i64 {
    let status = std::fs::read_to_string("/proc/self/status").unwrap();
    status
        .lines()
        .find_map(|l| l.strip_prefix("VmRSS:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
        .unwrap()
}

/// What makes a line's scenario, as far as the line tells: class and method.
type ClassKey = (String, String);
/// A line's host-independent counts.
type Counts = Vec<(String, i64)>;

fn class_of(line: &Value) -> ClassKey {
    (
        line["endpoint"].as_str().unwrap().to_owned(),
        line["method"].as_str().unwrap().to_owned(),
    )
}

/// The counts of each scenario's requests sent alone, before the run.
struct Baselines {
    /// The request ids of the baseline requests (their lines are not the run's).
    ids: HashSet<String>,
    /// Each scenario's class.
    scenario_class: BTreeMap<&'static str, ClassKey>,
    /// The counts a line of each class may carry.
    counts: BTreeMap<ClassKey, BTreeSet<Counts>>,
}

/// Baselines: every URL of the load mix, as the member, one request at a
/// time. The second attempt of each is the baseline (counts are stable
/// after the first request); the two must agree anyway here.
async fn measure_baselines(hub: &TestHub, served: &Served, doc: &SeedDocument) -> Baselines {
    let base = parse_hub_url(&served.url()).unwrap();
    let first = hub
        .get(&hub.project_agents_uri(), Some(&doc.member_token))
        .await;
    let list = first.json();
    let agent_ids: Vec<String> = list["agents"]
        .as_array()
        .unwrap()
        .iter()
        .map(|a| a["id"].as_str().unwrap().to_owned())
        .collect();
    let client = reqwest::Client::new();
    let mut baselines = Baselines {
        ids: HashSet::new(),
        scenario_class: BTreeMap::new(),
        counts: BTreeMap::new(),
    };
    baselines
        .ids
        .insert(first.headers["x-request-id"].to_str().unwrap().to_owned());
    for entry in mix(&base, &doc.project_id, &agent_ids) {
        for url in &entry.urls {
            let mut seen = Vec::new();
            for _ in 0..2 {
                let mut request = client.request(entry.method.clone(), url.clone());
                if entry.member {
                    request = request.bearer_auth(&doc.member_token);
                }
                if let Some(body) = entry.body {
                    request = request
                        .header("content-type", "application/json")
                        .body(body);
                }
                let response = request.send().await.unwrap();
                assert!(
                    entry.expected.contains(&response.status().as_u16()),
                    "{}: {}",
                    entry.name,
                    response.status()
                );
                let id = response.headers()["x-request-id"]
                    .to_str()
                    .unwrap()
                    .to_owned();
                response.bytes().await.unwrap();
                let line = served::wait_for_lines(&hub.log, 500, |lines| {
                    lines.iter().any(|l| l["request_id"] == id.as_str())
                })
                .await
                .into_iter()
                .find(|l| l["request_id"] == id.as_str())
                .unwrap();
                baselines.ids.insert(id);
                seen.push((class_of(&line), counts(&line)));
            }
            assert_eq!(seen[0], seen[1], "{} {url}: counts changed", entry.name);
            let (class, counts) = seen.pop().unwrap();
            baselines.scenario_class.insert(entry.name, class.clone());
            baselines.counts.entry(class).or_default().insert(counts);
        }
    }
    baselines
}

/// Completed requests of an endpoint that got a status.
fn answered(e: &EndpointLoad) -> u64 {
    e.status_counts
        .iter()
        .filter(|(s, _)| s.as_str() != "0")
        .map(|(_, n)| n)
        .sum()
}

/// Zero unexpected failures; the expected ones are the 404 and the 403.
fn assert_no_unexpected_failures(report: &LoadReport) {
    assert_eq!(
        report.unexpected_failures,
        0,
        "{:?}",
        report
            .endpoints
            .iter()
            .filter_map(|e| e.first_unexpected.as_deref())
            .collect::<Vec<_>>()
    );
    assert_eq!(report.users_started, USERS);
    assert!(report.total_requests > 0);
}

/// The lines of the run's requests: every line but the baselines' and the
/// reads after the run. No request id has two lines.
fn the_runs_lines<'a>(lines: &'a [Value], baselines: &Baselines) -> Vec<&'a Value> {
    let ids: Vec<&str> = lines
        .iter()
        .map(|l| l["request_id"].as_str().unwrap())
        .collect();
    let unique: HashSet<&str> = ids.iter().copied().collect();
    assert_eq!(unique.len(), ids.len(), "a request id has two lines");
    let run_lines: Vec<&Value> = lines
        .iter()
        .filter(|l| !baselines.ids.contains(l["request_id"].as_str().unwrap()))
        .collect();
    // The last two lines are the reads after every user finished: the cache
    // table, then /healthz (for the audit health).
    let (run_lines, end_reads) = run_lines.split_at(run_lines.len() - 2);
    assert_eq!(class_of(end_reads[1]), baselines.scenario_class["healthz"]);
    run_lines.to_vec()
}

/// One line per request served. Requests answered: every completed request
/// with a status; the run's agent-id lookup adds one list. Abandoned
/// requests (in flight past the grace period) may or may not have reached
/// the Hub; none is expected on loopback. Returns the run's line count.
fn assert_one_line_per_request(report: &LoadReport, run_lines: &[&Value]) -> u64 {
    let answered: u64 = report.endpoints.iter().map(answered).sum();
    let abandoned = report.abandoned_requests;
    let served_lines = run_lines.len() as u64;
    println!(
        "load: {} users, {:.1}s, {} requests answered ({:.1} rps), {abandoned} abandoned, {} expected failures; hub lines for the run: {served_lines}",
        report.users_started,
        report.duration_seconds,
        answered,
        report.rps,
        report.expected_failures
    );
    assert!(
        (answered + 1..=answered + 1 + abandoned).contains(&served_lines),
        "{served_lines} lines for {answered} answered (+1 lookup, {abandoned} abandoned)"
    );
    served_lines
}

/// Per class (endpoint and method), lines match the tool's own counts.
fn assert_lines_per_class(report: &LoadReport, baselines: &Baselines, run_lines: &[&Value]) {
    let scenario_class = &baselines.scenario_class;
    let mut expected_per_class: BTreeMap<ClassKey, u64> = BTreeMap::new();
    for e in &report.endpoints {
        let class = scenario_class[e.name.as_str()].clone();
        *expected_per_class.entry(class).or_default() += answered(e);
    }
    *expected_per_class
        .get_mut(&scenario_class["project-agents-list"])
        .unwrap() += 1;
    let mut got_per_class: BTreeMap<ClassKey, u64> = BTreeMap::new();
    for line in run_lines {
        *got_per_class.entry(class_of(line)).or_default() += 1;
    }
    assert_eq!(
        got_per_class.keys().collect::<Vec<_>>(),
        expected_per_class.keys().collect::<Vec<_>>()
    );
    let abandoned = report.abandoned_requests;
    for (class, expected) in &expected_per_class {
        let got = got_per_class[class];
        assert!(
            got >= *expected && got <= expected + abandoned,
            "{class:?}: {got} lines, {expected} answered"
        );
    }
}

/// No cross-talk: every line carries exactly the counts of a single request
/// of its scenario, measured alone before the run.
fn assert_no_cross_talk(baselines: &Baselines, run_lines: &[&Value]) {
    for line in run_lines {
        let class = class_of(line);
        let allowed = &baselines.counts[&class];
        let got = counts(line);
        assert!(
            allowed.contains(&got),
            "{class:?} line with counts {got:?} matches no baseline {allowed:?}"
        );
    }
}

/// No secret, credential or identity in the log or the report.
fn assert_no_secrets(hub: &TestHub, doc: &SeedDocument, report_path: &Path, served_lines: u64) {
    let log = hub.log.contents();
    let report_text = std::fs::read_to_string(report_path).unwrap();
    for (what, secret) in [
        ("session secret", SECRET),
        ("owner token", doc.owner_token.as_str()),
        ("member token", doc.member_token.as_str()),
        ("admin token", doc.admin_token.as_str()),
    ] {
        assert!(!log.contains(secret), "the hub log holds the {what}");
        assert!(!report_text.contains(secret), "the report holds the {what}");
    }
    for email in [&doc.owner_email, &doc.member_email, &doc.admin_email] {
        assert!(!log.contains(email.as_str()), "the hub log holds {email}");
    }
    assert!(log.lines().count() as u64 >= served_lines);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn fifty_users_for_five_seconds_lose_nothing_and_mix_nothing() {
    let rss_start = vm_rss_kib();
    let hub = TestHub::traced(50);
    let doc = hub.doc().clone();
    let dir = hub.seeded.dir.path().to_owned();
    let seed_path = dir.join("seed.json");
    std::fs::write(&seed_path, serde_json::to_vec_pretty(&doc).unwrap()).unwrap();
    let served = Served::start(hub.router.clone()).await;
    let baselines = measure_baselines(&hub, &served, &doc).await;

    let out = dir.join("load-report.json");
    let rss_before = vm_rss_kib();
    let report = run_load(LoadArgs {
        hub: served.url(),
        seed: seed_path,
        users: USERS,
        duration: DURATION,
        spawn_rate: 100,
        max_requests: 1_000_000,
        out: out.clone(),
        notes: "hub-tests load under tracing".into(),
        hub_pid: None,
        csv: None,
        compare: None,
    })
    .await
    .unwrap();
    // Every connection ends, so every line is written.
    served.stop().await;
    let rss_after = vm_rss_kib();

    assert_no_unexpected_failures(&report);
    let lines = served::perf_values(&hub.log);
    let run_lines = the_runs_lines(&lines, &baselines);
    let served_lines = assert_one_line_per_request(&report, &run_lines);
    assert_lines_per_class(&report, &baselines, &run_lines);
    assert_no_cross_talk(&baselines, &run_lines);

    // Memory: reported, with a generous bound.
    let grown = rss_after - rss_before;
    println!(
        "rss: at start {} MiB, before the run {} MiB, after {} MiB, change over the run {:+} MiB",
        rss_start / 1024,
        rss_before / 1024,
        rss_after / 1024,
        grown / 1024
    );
    assert!(grown < RSS_BOUND_KIB, "RSS grew by {grown} KiB");

    assert_no_secrets(&hub, &doc, &out, served_lines);
}
