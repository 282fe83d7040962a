//! The guide's steps with this crate's binary: seed a 25-agent Hub and serve
//! it with tracing on, its output in a log file (through `hub-example`'s
//! library, the code behind its `seed` and `serve`, whose binary has its own
//! tests), run `hub-bench apibench` with `--want-perf-trace --hub-perf-log`,
//! and join a trace line to its attempt by request id (in Rust, and with the
//! guide's literal `jq` commands when `jq` is installed). Then the demo, at
//! two small sizes.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

mod support;

use hub_bench::hubs::{start_hub, Tracing};
use hub_example::app::{RunningHub, PERF_TRACE_WARNING};
use hub_example::seed::{seed_to_file, SeedOptions};
use serde_json::Value;
use support::{guide_apibench, run};

const SECRET: &str = "bench-secret-1";

fn path(p: &Path) -> &str {
    p.to_str().expect("temporary paths are UTF-8")
}

/// A Hub served by this test on its own runtime; stopped when dropped,
/// failures included.
struct Server {
    runtime: tokio::runtime::Runtime,
    hub: Option<RunningHub>,
    log: PathBuf,
}

impl Drop for Server {
    fn drop(&mut self) {
        if let Some(hub) = self.hub.take() {
            let _ = self.runtime.block_on(hub.stop());
        }
    }
}

impl Server {
    fn start(db: &Path, log: &Path) -> Server {
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .enable_all()
            .build()
            .unwrap();
        let hub = runtime
            .block_on(start_hub(db, SECRET, Tracing::On, log))
            .unwrap();
        Server {
            runtime,
            hub: Some(hub),
            log: log.to_owned(),
        }
    }

    fn url(&self) -> String {
        self.hub.as_ref().unwrap().url()
    }

    fn log_text(&self) -> String {
        std::fs::read_to_string(&self.log).unwrap_or_default()
    }
}

/// The JSON lines of a log (anything else is skipped).
fn json_lines(text: &str) -> Vec<Value> {
    text.lines()
        .filter_map(|l| serde_json::from_str::<Value>(l).ok())
        .filter(Value::is_object)
        .collect()
}

/// `name=value` pairs of a log line's keys `<prefix><name><suffix>`, sorted
/// by name and joined by `,`: the header form apibench rebuilds.
fn pairs_of(line: &Value, prefix: &str, suffix: &str) -> String {
    let found: BTreeMap<&str, u64> = line
        .as_object()
        .unwrap()
        .iter()
        .filter_map(|(k, v)| {
            let name = k.strip_prefix(prefix)?.strip_suffix(suffix)?;
            Some((name, v.as_u64().unwrap()))
        })
        .collect();
    found
        .iter()
        .map(|(k, v)| format!("{k}={v}"))
        .collect::<Vec<_>>()
        .join(",")
}

/// The `count=..,allow=..,deny=..,other=..` part of a Decisions value.
fn decision_counts(decisions: &str) -> String {
    decisions
        .split(',')
        .filter(|p| !p.starts_with("audit_us="))
        .collect::<Vec<_>>()
        .join(",")
}

fn jq_available() -> bool {
    Command::new("jq")
        .arg("--version")
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|s| s.success())
}

/// Runs a shell script with `BENCH` set to the bench folder.
fn sh(script: &str, bench: &Path) -> String {
    let out = Command::new("sh")
        .arg("-c")
        .arg(script)
        .env("BENCH", bench)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{script}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).unwrap()
}

/// The guide's jq commands on the run's files, when jq is installed: the
/// join by request id finds exactly `line`, and the per-attempt table has a
/// row per attempt of the scenarios `names`.
fn the_guides_jq_commands(bench: &Path, line: &Value, names: &[&str]) {
    if jq_available() {
        let joined = sh(
            r#"id=$(jq -r '.scenarios[] | select(.name == "project-agents-list") | .attempts[0].requestId' "$BENCH/api-25.json")
jq -c --arg id "$id" 'select(.msg == "perf_trace" and .request_id == $id)' "$BENCH/hub25.log""#,
            bench,
        );
        let jq_lines: Vec<Value> = joined
            .lines()
            .map(|l| serde_json::from_str(l).unwrap())
            .collect();
        assert_eq!(
            jq_lines,
            std::slice::from_ref(line),
            "jq found another line"
        );

        let tsv = sh(
            r#"jq -r '.scenarios[] | .name as $s | .attempts[] |
  [$s, .perfTrace["X-Scion-Perf-Store-Calls"], .perfTrace["X-Scion-Perf-Decisions"]] | @tsv' \
  "$BENCH/api-25.json""#,
            bench,
        );
        let rows: Vec<Vec<&str>> = tsv.lines().map(|l| l.split('\t').collect()).collect();
        assert_eq!(rows.len(), 15, "{tsv}");
        for row in &rows {
            assert_eq!(row.len(), 3, "{row:?}");
            assert!(names.contains(&row[0]), "{row:?}");
            assert!(row[1].contains('='), "{row:?}");
            assert!(row[2].starts_with("count="), "{row:?}");
        }
    } else {
        println!("jq is not installed: skipped the guide's literal jq commands");
    }
}

/// Step 2: seeds 25 agents into `db`, the seed file at `seed`; returns the
/// member's token.
fn seed_25_agents(db: &Path, seed: &Path) -> String {
    let seeded = seed_to_file(
        &SeedOptions {
            db_path: db.to_owned(),
            session_secret: SECRET.into(),
            agents: 25,
            project_slug: "bench-25".into(),
            rand_seed: 42,
        },
        seed,
    )
    .unwrap();
    let seed_doc: Value = serde_json::from_slice(&std::fs::read(seed).unwrap()).unwrap();
    assert_eq!(seed_doc["agentCount"], 25);
    let member_token = seeded.member_token.clone();
    assert_eq!(seed_doc["memberToken"], member_token.as_str());
    member_token
}

/// Step 3: serves it with tracing on, output to the log file.
fn serve_traced(db: &Path, log: &Path) -> Server {
    let server = Server::start(db, log);
    let startup = json_lines(&server.log_text());
    assert!(
        startup
            .iter()
            .any(|l| l["level"] == "WARN" && l["msg"] == PERF_TRACE_WARNING),
        "no startup warning in the log: {startup:?}"
    );
    server
}

/// Step 4: apibench with the trace headers asked for and the log joined;
/// returns its report, whose secrets are redacted.
fn apibench_joined(
    hub_url: &str,
    seed: &Path,
    log: &Path,
    report_path: &Path,
    member_token: &str,
) -> Value {
    let (code, stdout, stderr) = run(&guide_apibench(
        hub_url,
        path(seed),
        path(log),
        path(report_path),
    ));
    assert_eq!(code, 0, "{stdout}\n{stderr}");
    assert!(
        stdout.contains("joined 15 of 15 attempts"),
        "stdout: {stdout}"
    );
    let report_text = std::fs::read_to_string(report_path).unwrap();
    assert!(!report_text.contains(member_token), "a token leaked");
    assert!(!report_text.contains(SECRET), "the secret leaked");
    let report: Value = serde_json::from_str(&report_text).unwrap();
    for key in ["memberToken", "ownerToken", "adminToken"] {
        assert_eq!(report["seed"][key], "REDACTED", "{key}");
    }
    assert_eq!(report["machine"]["notes"], "one hub, otherwise idle host");
    assert_eq!(report["effectiveSettings"]["wantPerfTrace"], true);
    report
}

/// A scenario's name.
fn name_of(scenario: &Value) -> &str {
    scenario["name"].as_str().unwrap()
}

/// Every attempt of a scenario traced from the log, with the same counts.
fn assert_traced_from_the_log(scenario: &Value) {
    let name = name_of(scenario);
    assert_eq!(scenario["perfTraceAvailable"], true, "{name}");
    assert_eq!(scenario["agentCount"], 25, "{name}");
    assert_eq!(scenario["successCount"], 5, "{name}");
    let attempts = scenario["attempts"].as_array().unwrap();
    assert_eq!(attempts.len(), 5, "{name}");
    for attempt in attempts {
        assert_eq!(attempt["status"], 200, "{name}");
        assert_eq!(attempt["perfTraceSource"], "hub-log", "{name}");
        let calls = attempt["perfTrace"]["X-Scion-Perf-Store-Calls"]
            .as_str()
            .unwrap_or_else(|| panic!("{name}: no store calls: {attempt}"));
        assert!(!calls.is_empty(), "{name}");
        // The member is no admin: the trace came from the log, so it
        // includes serialize, which headers never carry.
        assert!(
            attempt["perfTrace"]["X-Scion-Perf-Phase-Counts"]
                .as_str()
                .unwrap()
                .contains("serialize=1"),
            "{name}"
        );
    }
    // Counts repeat exactly on every attempt (the warm-up took the first request).
    let counts: Vec<(&Value, String)> = attempts
        .iter()
        .map(|a| {
            (
                &a["perfTrace"]["X-Scion-Perf-Store-Calls"],
                decision_counts(a["perfTrace"]["X-Scion-Perf-Decisions"].as_str().unwrap()),
            )
        })
        .collect();
    assert!(counts.iter().all(|c| *c == counts[0]), "{name}: {counts:?}");
}

/// Step 5: the raw line of `attempt`, by request id, is the trace the
/// attempt carries; returns it.
fn the_attempts_line(server: &Server, attempt: &Value) -> Value {
    let request_id = attempt["requestId"].as_str().unwrap();
    assert!(!request_id.is_empty());
    let lines = json_lines(&server.log_text());
    let matching: Vec<&Value> = lines
        .iter()
        .filter(|l| l["msg"] == "perf_trace" && l["request_id"] == request_id)
        .collect();
    assert_eq!(matching.len(), 1, "one line for {request_id}");
    let line = matching[0];
    let trace = &attempt["perfTrace"];
    assert_eq!(line["endpoint"], "agents.project.legacy");
    assert_eq!(trace["X-Scion-Perf-Endpoint"], line["endpoint"]);
    assert_eq!(
        trace["X-Scion-Perf-Store-Calls"],
        pairs_of(line, "store_", "_n").as_str()
    );
    assert_eq!(
        trace["X-Scion-Perf-Phase-Counts"],
        pairs_of(line, "phase_", "_n").as_str()
    );
    assert_eq!(
        decision_counts(trace["X-Scion-Perf-Decisions"].as_str().unwrap()),
        format!(
            "count={},allow={},deny={},other={}",
            line["audit_records"], line["audit_allow"], line["audit_deny"], line["audit_other"]
        )
    );
    let per_method: u64 = line
        .as_object()
        .unwrap()
        .iter()
        .filter(|(k, _)| k.starts_with("store_") && k.ends_with("_n"))
        .map(|(_, v)| v.as_u64().unwrap())
        .sum();
    assert_eq!(line["authz_store_calls"].as_u64(), Some(per_method));
    line.clone()
}

#[test]
fn the_guides_steps_work_with_this_binary() {
    let tmp = tempfile::tempdir().unwrap();
    let bench = tmp.path();
    let db = bench.join("hub25.db");
    let seed = bench.join("seed-25.json");
    let log = bench.join("hub25.log");
    let report_path = bench.join("api-25.json");

    let member_token = seed_25_agents(&db, &seed);
    let server = serve_traced(&db, &log);
    let report = apibench_joined(&server.url(), &seed, &log, &report_path, &member_token);
    let scenarios = report["scenarios"].as_array().unwrap();
    let names: Vec<&str> = scenarios.iter().map(name_of).collect();
    assert_eq!(
        names,
        [
            "project-agents-list",
            "global-agents-list-unscoped",
            "global-agents-list-scoped"
        ]
    );
    scenarios.iter().for_each(assert_traced_from_the_log);

    // The first project-list attempt.
    let line = the_attempts_line(&server, &scenarios[0]["attempts"][0]);

    // The same join with the guide's jq commands, when jq is installed.
    the_guides_jq_commands(bench, &line, &names);

    drop(server);
}

#[test]
fn the_demo_prints_its_table_and_keeps_its_files() {
    let tmp = tempfile::tempdir().unwrap();
    let out_dir = tmp.path().join("demo");
    let (code, stdout, stderr) = run(&[
        "demo",
        "--sizes",
        "5,12",
        "--runs",
        "2",
        "--compare-rounds",
        "5",
        "--out-dir",
        path(&out_dir),
    ]);
    assert_eq!(code, 0, "{stdout}\n{stderr}");

    let header = stdout
        .lines()
        .position(|l| l.starts_with("scenario") && l.contains("store calls"))
        .unwrap_or_else(|| panic!("no table: {stdout}"));
    let scenarios = [
        "project-agents-list",
        "global-agents-list-unscoped",
        "global-agents-list-scoped",
    ];
    let mut rows = Vec::new();
    for line in stdout.lines().skip(header + 2) {
        let cells: Vec<&str> = line.split_whitespace().collect();
        if cells.len() != 6 || !scenarios.contains(&cells[0]) {
            break;
        }
        rows.push((cells[0].to_owned(), cells[1].to_owned()));
    }
    let mut expected = Vec::new();
    for size in ["5", "12"] {
        for scenario in scenarios {
            expected.push((scenario.to_owned(), size.to_owned()));
        }
    }
    assert_eq!(rows, expected, "{stdout}");
    assert!(
        stdout.contains("store calls equal at every size: yes"),
        "{stdout}"
    );

    for name in [
        "api-5.json",
        "api-12.json",
        "seed-5.json",
        "seed-12.json",
        "hub5.log",
        "hub12.log",
        "hub5-off.log",
        "hub12-off.log",
    ] {
        assert!(out_dir.join(name).is_file(), "{name} missing");
    }
    for size in [5, 12] {
        let report: Value = serde_json::from_slice(
            &std::fs::read(out_dir.join(format!("api-{size}.json"))).unwrap(),
        )
        .unwrap();
        for scenario in report["scenarios"].as_array().unwrap() {
            assert_eq!(scenario["agentCount"], size);
            assert_eq!(scenario["perfTraceAvailable"], true);
            assert_eq!(scenario["successCount"], 2);
        }
        let log = std::fs::read_to_string(out_dir.join(format!("hub{size}.log"))).unwrap();
        assert!(json_lines(&log).iter().any(|l| l["msg"] == "perf_trace"));
    }
}
