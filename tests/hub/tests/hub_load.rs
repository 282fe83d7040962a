//! Load under tracing, CI-sized: 50 virtual users for 5 seconds against a
//! traced Hub served in-process. Nothing is lost (one line per request
//! served), nothing is mixed (every line carries its scenario's baseline
//! counts), memory stays put, and no secret reaches the log or the report.

mod hub_support;
mod served;

use std::collections::{BTreeMap, BTreeSet, HashSet};
use std::time::Duration;

use hub_bench::client::parse_hub_url;
use hub_bench::load::mix;
use hub_bench::{run_load, LoadArgs};
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

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn fifty_users_for_five_seconds_lose_nothing_and_mix_nothing() {
    let rss_start = vm_rss_kib();
    let hub = TestHub::traced(50);
    let doc = hub.doc().clone();
    let dir = hub.seeded.dir.path().to_owned();
    let seed_path = dir.join("seed.json");
    std::fs::write(&seed_path, serde_json::to_vec_pretty(&doc).unwrap()).unwrap();
    let served = Served::start(hub.router.clone()).await;

    // Baselines: every URL of the load mix, as the member, one request at a
    // time. The second attempt of each is the baseline (counts are stable
    // after the first request); the two must agree anyway here.
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
    let mut baseline_ids = HashSet::new();
    baseline_ids.insert(first.headers["x-request-id"].to_str().unwrap().to_owned());
    let mut scenario_class: BTreeMap<&str, ClassKey> = BTreeMap::new();
    let mut baselines: BTreeMap<ClassKey, BTreeSet<Counts>> = BTreeMap::new();
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
                baseline_ids.insert(id);
                seen.push((class_of(&line), counts(&line)));
            }
            assert_eq!(seen[0], seen[1], "{} {url}: counts changed", entry.name);
            let (class, counts) = seen.pop().unwrap();
            scenario_class.insert(entry.name, class.clone());
            baselines.entry(class).or_default().insert(counts);
        }
    }

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

    // Zero unexpected failures; the expected ones are the 404 and the 403.
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

    // One line per request served. Requests answered: every completed
    // request with a status; the run's agent-id lookup adds one list.
    // Abandoned requests (in flight past the grace period) may or may not
    // have reached the Hub; none is expected on loopback.
    let lines = served::perf_values(&hub.log);
    let ids: Vec<&str> = lines
        .iter()
        .map(|l| l["request_id"].as_str().unwrap())
        .collect();
    let unique: HashSet<&str> = ids.iter().copied().collect();
    assert_eq!(unique.len(), ids.len(), "a request id has two lines");
    let run_lines: Vec<&Value> = lines
        .iter()
        .filter(|l| !baseline_ids.contains(l["request_id"].as_str().unwrap()))
        .collect();
    // The last two lines are the reads after every user finished: the cache
    // table, then /healthz (for the audit health).
    let (run_lines, end_reads) = run_lines.split_at(run_lines.len() - 2);
    let run_lines = run_lines.to_vec();
    assert_eq!(class_of(end_reads[1]), scenario_class["healthz"]);
    let answered: u64 = report
        .endpoints
        .iter()
        .flat_map(|e| e.status_counts.iter())
        .filter(|(status, _)| status.as_str() != "0")
        .map(|(_, n)| n)
        .sum();
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

    // Per class (endpoint and method), lines match the tool's own counts.
    let mut expected_per_class: BTreeMap<ClassKey, u64> = BTreeMap::new();
    for e in &report.endpoints {
        let class = scenario_class[e.name.as_str()].clone();
        let answered: u64 = e
            .status_counts
            .iter()
            .filter(|(s, _)| s.as_str() != "0")
            .map(|(_, n)| n)
            .sum();
        *expected_per_class.entry(class).or_default() += answered;
    }
    *expected_per_class
        .get_mut(&scenario_class["project-agents-list"])
        .unwrap() += 1;
    let mut got_per_class: BTreeMap<ClassKey, u64> = BTreeMap::new();
    for line in &run_lines {
        *got_per_class.entry(class_of(line)).or_default() += 1;
    }
    assert_eq!(
        got_per_class.keys().collect::<Vec<_>>(),
        expected_per_class.keys().collect::<Vec<_>>()
    );
    for (class, expected) in &expected_per_class {
        let got = got_per_class[class];
        assert!(
            got >= *expected && got <= expected + abandoned,
            "{class:?}: {got} lines, {expected} answered"
        );
    }

    // No cross-talk: every line carries exactly the counts of a single
    // request of its scenario, measured alone before the run.
    for line in &run_lines {
        let class = class_of(line);
        let allowed = &baselines[&class];
        let got = counts(line);
        assert!(
            allowed.contains(&got),
            "{class:?} line with counts {got:?} matches no baseline {allowed:?}"
        );
    }

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

    // No secret, credential or identity in the log or the report.
    let log = hub.log.contents();
    let report_text = std::fs::read_to_string(&out).unwrap();
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
