//! The `perf-trace` binary on the Hub's and a plain service's lines: each
//! subcommand, malformed input, a gzip'd file and standard input, and
//! `diff`'s exit status on a planted change and on a log against itself.

mod fixtures;

use std::io::Write as _;
use std::process::{Command, Output, Stdio};

use fixtures::{arg, sample_text, write, HUB};
use perf_trace_cli::sample::Profile;
use serde_json::Value;

fn gzip(bytes: &[u8]) -> Vec<u8> {
    let mut enc = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
    enc.write_all(bytes).expect("compress");
    enc.finish().expect("compress")
}

fn run(args: &[&str], stdin: Option<&[u8]>) -> Output {
    let mut child = Command::new(env!("CARGO_BIN_EXE_perf-trace"))
        .args(args)
        .stdin(if stdin.is_some() {
            Stdio::piped()
        } else {
            Stdio::null()
        })
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("start perf-trace");
    if let Some(bytes) = stdin {
        child
            .stdin
            .take()
            .expect("piped")
            .write_all(bytes)
            .expect("feed stdin");
    }
    child.wait_with_output().expect("perf-trace ends")
}

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

fn json_summary(args: &[&str], stdin: Option<&[u8]>) -> Value {
    let mut all = vec!["summary", "--format", "json"];
    all.extend_from_slice(args);
    let out = run(&all, stdin);
    assert!(out.status.success(), "{}", text(&out.stderr));
    serde_json::from_slice(&out.stdout).expect("JSON")
}

fn class<'a>(summary: &'a Value, name: &str) -> &'a Value {
    summary["classes"]
        .as_array()
        .expect("classes")
        .iter()
        .find(|c| c["endpoint"] == name)
        .unwrap_or_else(|| panic!("no class {name} in {summary}"))
}

fn store_row<'a>(class: &'a Value, method: &str) -> &'a Value {
    class["store"]
        .as_array()
        .unwrap()
        .iter()
        .find(|s| s["method"] == method)
        .expect("a store row")
}

/// The `name` of each row of a JSON array of rows.
fn names(rows: &Value) -> Vec<&str> {
    texts_of(rows, |row| &row["name"])
}

/// Each item of a JSON array of strings.
fn texts(items: &Value) -> Vec<&str> {
    texts_of(items, |item| item)
}

/// The string `text` picks out of each item of a JSON array.
fn texts_of(array: &Value, text: impl Fn(&Value) -> &Value) -> Vec<&str> {
    array
        .as_array()
        .expect("a JSON array")
        .iter()
        .map(|item| text(item).as_str().expect("a string"))
        .collect()
}

#[test]
fn summary_of_the_hubs_lines() {
    let dir = tempfile::tempdir().unwrap();
    let log = write(&dir, "hub.log", &sample_text(HUB, 400, 1, 0, 0));
    let s = json_summary(&[arg(&log)], None);
    assert_eq!(s["input"]["counted"], 400);
    assert_eq!(s["input"]["malformed"], 0);
    let legacy = class(&s, "agents.project.legacy");
    assert_eq!(legacy["requests"], 200);
    assert_eq!(legacy["statuses"], serde_json::json!({}));
    assert_eq!(store_row(legacy, "GetUser")["calls"]["p50"], 84);
    // Five methods: 84 GetUser and one each of four others.
    assert_eq!(legacy["store_calls"]["p50"], 88);
    let phases = names(&legacy["phases"]);
    assert_eq!(
        phases,
        [
            "capabilities",
            "enrich",
            "list_db_read",
            "list_read_authz",
            "list_scope_authz",
            "serialize"
        ]
    );
    let read = &legacy["phases"][2];
    assert_eq!(read["calls"]["p50"], 2);
    assert!(read["share"].as_f64().unwrap() > 0.0);
    let counters = names(&legacy["counters"]);
    assert!(
        counters.contains(&"audit_records") && counters.contains(&"authz_store_calls"),
        "{counters:?}"
    );
    assert_eq!(legacy["slowest"].as_array().unwrap().len(), 5);
    let sse = class(&s, "sse.events");
    assert_eq!(
        sse["counters"]
            .as_array()
            .unwrap()
            .iter()
            .find(|c| c["name"] == "sse_events")
            .unwrap()["per_request"]["p50"],
        3
    );

    let table = run(&["summary", arg(&log), "--top", "2"], None);
    let table = text(&table.stdout);
    assert!(
        table.contains("== agents.project.legacy: 200 requests"),
        "{table}"
    );
    assert!(
        table.contains("GetUser") && table.contains("(total)") && table.contains("slowest:\n"),
        "{table}"
    );
    assert_eq!(
        table.matches(" ms  00000000-0000-4000-8000-").count(),
        3 * 2,
        "two per class: {table}"
    );
}

#[test]
fn the_contracts_example_line_exactly() {
    let line = format!("{}\n", perf_trace_core::line::scion::EXAMPLE_LINE);
    let s = json_summary(&["-"], Some(line.as_bytes()));
    let c = class(&s, "agents.project.legacy");
    assert_eq!(c["elapsed"]["max_us"], 557495);
    assert_eq!(c["store_calls"]["max"], 88);
    assert_eq!(c["store_time"]["sum_us"], 631 + 358 + 472801 + 303 + 340);
    assert_eq!(
        c["slowest"][0]["request_id"],
        "00000000-0000-4000-8000-000000000000"
    );
    assert_eq!(
        c["slowest"][0]["line"],
        perf_trace_core::line::scion::EXAMPLE_LINE
    );
}

#[test]
fn summary_of_a_plain_services_lines_from_stdin_and_gzip() {
    let dir = tempfile::tempdir().unwrap();
    let bytes = sample_text(Profile::Plain, 300, 2, 0, 0);
    let gz = write(&dir, "orders.log.1", &gzip(&bytes));
    let from_stdin = json_summary(&[], Some(&bytes));
    let from_gzip = json_summary(&[arg(&gz)], None);
    assert_eq!(from_stdin["classes"], from_gzip["classes"]);
    let get = class(&from_gzip, "orders.get");
    assert_eq!(get["requests"], 200);
    assert_eq!(get["statuses"]["4xx"], 10);
    assert_eq!(get["statuses"]["2xx"], 190);
    assert_eq!(store_row(get, "get_product")["calls"]["p50"], 2);
    // The line's own total, not a sum that would count it twice.
    assert_eq!(get["store_calls"]["p50"], 3);
    let counters = names(&get["counters"]);
    assert_eq!(counters, ["price_cache_hit", "price_cache_miss"]);
}

#[test]
fn gcp_lines_globs_and_filters() {
    let dir = tempfile::tempdir().unwrap();
    write(
        &dir,
        "a.log",
        &sample_text(Profile::Hub { gcp: true }, 100, 3, 0, 0),
    );
    write(&dir, "b.log", &sample_text(HUB, 100, 4, 0, 0));
    let pattern = format!("{}/*.log", dir.path().display());
    let s = json_summary(&[&pattern, "--endpoint", "agents.*"], None);
    assert_eq!(s["input"]["perf_lines"], 200);
    assert_eq!(s["input"]["other_endpoints"], 50);
    assert_eq!(s["classes"].as_array().unwrap().len(), 2);
    // The samples' lines are a millisecond apart from midnight.
    let s = json_summary(
        &[
            &pattern,
            "--since",
            "2026-01-01T00:00:00.050Z",
            "--until",
            "2026-01-01T00:00:00.060Z",
        ],
        None,
    );
    assert_eq!(s["input"]["counted"], 20);
    assert_eq!(s["input"]["outside_window"], 180);
    let csv = run(&["summary", "--format", "csv", &pattern], None);
    let csv = text(&csv.stdout);
    assert!(
        csv.starts_with("endpoint,section,key,stat,value\n"),
        "{csv}"
    );
    assert!(
        csv.contains("agents.project.legacy,store_calls,GetUser,p50,84\n"),
        "{csv}"
    );
}

#[test]
fn malformed_lines_are_counted_and_reported_once() {
    let mut bytes = sample_text(HUB, 40, 5, 0, 0);
    let example = perf_trace_core::line::scion::EXAMPLE_LINE;
    bytes.extend_from_slice(format!("{}\n", &example[..example.len() / 2]).as_bytes());
    bytes.extend_from_slice(
        format!(
            "{}\n",
            example.replace("\"elapsed_us\":557495", "\"elapsed_us\":-1")
        )
        .as_bytes(),
    );
    bytes.extend_from_slice(b"\xff\xfe \"perf_trace\" not utf-8\nplain text\n");
    let out = run(&["summary", "--format", "json"], Some(&bytes));
    assert!(out.status.success());
    let err = text(&out.stderr);
    assert_eq!(err.matches("malformed").count(), 1, "{err}");
    assert!(
        err.contains("3 malformed perf_trace lines skipped (first at <stdin>:"),
        "{err}"
    );
    assert!(err.contains("not a whole JSON object"), "{err}");
    let s: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(s["input"]["malformed"], 3);
    assert_eq!(s["input"]["counted"], 40);

    let nothing = run(&["summary"], Some(b"no perf lines here\n"));
    assert!(nothing.status.success());
    assert!(text(&nothing.stderr).contains("no perf_trace line in 1 lines read"));
    let missing = run(&["summary", "/nonexistent/perf-*.log"], None);
    assert_eq!(missing.status.code(), Some(2));
    assert!(text(&missing.stderr).contains("no file matches"));
}

#[test]
fn diff_of_a_log_against_itself_passes() {
    let dir = tempfile::tempdir().unwrap();
    for (name, profile) in [("hub.log", HUB), ("orders.log", Profile::Plain)] {
        let log = write(&dir, name, &sample_text(profile, 400, 6, 0, 0));
        let log = arg(&log);
        let out = run(&["diff", log, log, "--fail-on", "counts,time:10%"], None);
        assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
        let stdout = text(&out.stdout);
        assert!(stdout.contains("nothing moved"), "{stdout}");
        assert!(stdout.contains("measured: "), "{stdout}");
    }
}

#[test]
fn diff_fails_on_a_planted_count_change() {
    let dir = tempfile::tempdir().unwrap();
    let before = write(&dir, "before.log", &sample_text(HUB, 400, 7, 0, 0));
    // The same workload, timed differently, with one more GetUser call.
    let after = write(&dir, "after.log.gz", &gzip(&sample_text(HUB, 400, 8, 1, 0)));
    let out = run(&["diff", arg(&before), arg(&after)], None);
    assert_eq!(out.status.code(), Some(1));
    let err = text(&out.stderr);
    assert!(
        err.contains(
            "agents.project.legacy: store_GetUser_n per request min 84 -> 85, p50 84 -> 85"
        ),
        "{err}"
    );
    assert!(
        err.contains("agents.project.legacy: store_calls per request"),
        "{err}"
    );
    assert!(!err.contains("sse.events"), "{err}");

    let plain_before = write(
        &dir,
        "orders-before.log",
        &sample_text(Profile::Plain, 300, 7, 0, 0),
    );
    let plain_after = sample_text(Profile::Plain, 300, 8, 1, 0);
    let out = run(
        &["diff", arg(&plain_before), "-", "--json"],
        Some(&plain_after),
    );
    assert_eq!(out.status.code(), Some(1));
    let d: Value = serde_json::from_slice(&out.stdout).unwrap();
    let failures = texts(&d["failures"]);
    assert!(
        failures
            .iter()
            .any(|f| f.starts_with("orders.get: store_get_product_n per request")),
        "{failures:?}"
    );
    assert!(
        failures
            .iter()
            .any(|f| f.starts_with("orders.get: price_cache_miss per request")),
        "{failures:?}"
    );
}

#[test]
fn diff_fails_on_time_only_when_asked() {
    let dir = tempfile::tempdir().unwrap();
    let before = write(&dir, "before.log", &sample_text(HUB, 800, 9, 0, 0));
    let same = write(&dir, "same.log", &sample_text(HUB, 800, 10, 0, 0));
    let slower = write(&dir, "slower.log", &sample_text(HUB, 800, 10, 0, 50));
    let (b, s, slow) = (arg(&before), arg(&same), arg(&slower));
    // Other durations of the same workload: nothing moved beyond 10 %. The
    // pool's wait count is pool-wide and moves with concurrency: left out.
    let out = run(
        &[
            "diff",
            b,
            s,
            "--fail-on",
            "counts,time:10%",
            "--ignore",
            "db_*",
        ],
        None,
    );
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}{}",
        text(&out.stdout),
        text(&out.stderr)
    );
    // 50 % slower: the counts alone pass, the time gate fails.
    assert_eq!(
        run(&["diff", b, slow, "--ignore", "db_*"], None)
            .status
            .code(),
        Some(0)
    );
    let out = run(&["diff", b, s], None);
    assert_eq!(out.status.code(), Some(1), "db_wait_count moved");
    assert!(text(&out.stderr).contains("db_wait_count per request"));
    let out = run(&["diff", b, slow, "--fail-on", "time:10%"], None);
    assert_eq!(out.status.code(), Some(1));
    let err = text(&out.stderr);
    assert!(
        err.contains("agents.project.legacy: elapsed_us median"),
        "{err}"
    );
    assert!(err.contains(" x1.5"), "{err}");
    let bad = run(&["diff", b, s, "--fail-on", "speed"], None);
    assert_eq!(bad.status.code(), Some(2));
}

#[test]
fn report_and_diff_write_self_contained_pages() {
    let dir = tempfile::tempdir().unwrap();
    let hub = write(&dir, "hub.log", &sample_text(HUB, 200, 11, 0, 0));
    let orders = write(
        &dir,
        "orders.log",
        &sample_text(Profile::Plain, 200, 11, 0, 0),
    );
    let page = dir.path().join("report.html");
    let out = run(&["report", arg(&hub), arg(&orders), "-o", arg(&page)], None);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let html = std::fs::read_to_string(&page).unwrap();
    for class in [
        "agents.project.legacy",
        "agents.global.sorted",
        "sse.events",
        "orders.get",
        "orders.list",
    ] {
        assert!(html.contains(&format!("<h2 id=\"{class}\">")), "{class}");
    }
    assert!(
        html.contains("<svg class=\"bar\"")
            && html.contains("<svg class=\"hist\"")
            && html.contains("<svg class=\"spread\"")
    );
    assert!(
        html.contains("00000000-0000-4000-8000-"),
        "the slowest requests' lines"
    );
    assert_self_contained(&html);

    let after = write(&dir, "after.log", &sample_text(HUB, 200, 12, 1, 0));
    let diff_page = dir.path().join("diff.html");
    let out = run(
        &["diff", arg(&hub), arg(&after), "--html", arg(&diff_page)],
        None,
    );
    assert_eq!(out.status.code(), Some(1));
    let html = std::fs::read_to_string(&diff_page).unwrap();
    assert!(
        html.contains("store_GetUser_n per request min 84 -&gt; 85"),
        "the moved keys on top"
    );
    assert_eq!(html.matches("<div class=\"sides\">").count(), 3);
    assert_self_contained(&html);
}

fn assert_self_contained(html: &str) {
    assert!(html.starts_with("<!DOCTYPE html>"));
    assert!(!html.contains("<script"), "no script");
    assert!(!html.contains("<link"), "no outside style");
    assert!(!html.contains("src="), "nothing loaded");
    assert!(
        !html.contains("http://") && !html.contains("https://"),
        "nothing from elsewhere"
    );
}

#[test]
fn report_reads_stdin_and_gzip_and_notes_malformed_lines() {
    let dir = tempfile::tempdir().unwrap();
    let mut bytes = sample_text(Profile::Plain, 60, 13, 0, 0);
    bytes.extend_from_slice(b"{\"msg\":\"perf_trace\",\"endpoint\":\"orders.get\"}\n");
    let page = dir.path().join("stdin.html");
    let out = run(&["report", "-o", arg(&page)], Some(&bytes));
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert!(text(&out.stderr).contains("1 malformed perf_trace line skipped (first at <stdin>:"));
    let html = std::fs::read_to_string(&page).unwrap();
    assert!(
        html.contains("60 perf_trace lines counted · 1 malformed perf_trace line skipped"),
        "the page says so too"
    );
    assert!(html.contains("<h2 id=\"orders.get\">"));

    let gz = write(&dir, "hub.log.gz", &gzip(&sample_text(HUB, 60, 13, 0, 0)));
    let page = dir.path().join("gz.html");
    let out = run(&["report", arg(&gz), "-o", arg(&page)], None);
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert!(std::fs::read_to_string(&page)
        .unwrap()
        .contains("<h2 id=\"agents.project.legacy\">"));
}
