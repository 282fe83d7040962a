//! N+1 suspects: `summary` and `report` name a planted per-row read and a
//! repeated SQL statement, with the figures that made them suspects, and
//! name none on the same service with both batched; `diff` says nothing of
//! them.

mod fixtures;

use std::process::{Command, Output};

use fixtures::{arg, sample_text, write, HUB};
use perf_trace_cli::sample::Profile;
use serde_json::Value;

const PLANTED: Profile = Profile::Catalog { n_plus_one: true };
const FIXED: Profile = Profile::Catalog { n_plus_one: false };

fn run(args: &[&str]) -> Output {
    let out = Command::new(env!("CARGO_BIN_EXE_perf-trace"))
        .args(args)
        .output()
        .expect("run perf-trace");
    assert!(
        out.status.code().is_some_and(|c| c < 2),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    out
}

fn stdout(args: &[&str]) -> String {
    String::from_utf8(run(args).stdout).expect("UTF-8")
}

fn suspects(log: &str, extra: &[&str]) -> Vec<Value> {
    let mut args = vec!["summary", "--format", "json", log];
    args.extend_from_slice(extra);
    let s: Value = serde_json::from_str(&stdout(&args)).expect("JSON");
    s["suspects"].as_array().expect("a suspects array").clone()
}

fn keys(suspects: &[Value]) -> Vec<String> {
    suspects
        .iter()
        .map(|s| {
            format!(
                "{} {}",
                s["endpoint"].as_str().unwrap(),
                s["key"].as_str().unwrap()
            )
        })
        .collect()
}

#[test]
fn the_planted_n_plus_one_is_named_with_its_figures() {
    let dir = tempfile::tempdir().unwrap();
    let log = write(&dir, "planted.log", &sample_text(PLANTED, 400, 1, 0, 0));
    let found = suspects(arg(&log), &[]);
    assert_eq!(
        keys(&found),
        [
            "catalog.list store_get_price_n",
            "catalog.search sql_repeated_n"
        ]
    );
    // A price read per listed row (1 to 40 rows): high at p95, and growing
    // with the response.
    let list = &found[0];
    assert_eq!(list["requests"], 200);
    assert_eq!(list["calls"]["max"], 40);
    assert!(list["calls"]["p95"].as_u64().unwrap() >= 30, "{list}");
    assert!(list["rho"].as_f64().unwrap() > 0.95, "{list}");
    assert_eq!(list["size_key"], "response_bytes");
    let why: Vec<&str> = list["why"]
        .as_array()
        .unwrap()
        .iter()
        .map(|w| w.as_str().unwrap())
        .collect();
    assert!(
        why[0].starts_with("p95 ") && why[0].ends_with(" >= 20"),
        "{why:?}"
    );
    assert!(
        why[1].starts_with("grows with response_bytes (rho "),
        "{why:?}"
    );
    // A repeated SELECT per hit (0 to 12): under the p95 bound, found by
    // its growth alone.
    let search = &found[1];
    assert!(search["calls"]["p95"].as_u64().unwrap() < 20, "{search}");
    assert_eq!(search["why"].as_array().unwrap().len(), 1, "{search}");

    let table = stdout(&["summary", arg(&log)]);
    let section = table
        .split("== N+1 suspects: 2 ")
        .nth(1)
        .expect("the section");
    assert!(section.contains("catalog.list"), "{section}");
    assert!(section.contains("store_get_price_n"), "{section}");
    assert!(section.contains("sql_repeated_n"), "{section}");
    let csv = stdout(&["summary", "--format", "csv", arg(&log)]);
    assert!(
        csv.contains("catalog.list,suspect,store_get_price_n,size_key,response_bytes\n"),
        "{csv}"
    );
}

#[test]
fn the_fixed_log_has_no_suspect() {
    let dir = tempfile::tempdir().unwrap();
    let log = write(&dir, "fixed.log", &sample_text(FIXED, 400, 2, 0, 0));
    assert_eq!(keys(&suspects(arg(&log), &[])), Vec::<String>::new());
    assert!(stdout(&["summary", arg(&log)]).ends_with("== N+1 suspects: none\n"));
}

#[test]
fn the_rule_is_set_by_flags() {
    let dir = tempfile::tempdir().unwrap();
    let log = write(&dir, "planted.log", &sample_text(PLANTED, 400, 3, 0, 0));
    let log = arg(&log);
    // Too few requests per class to judge.
    assert!(suspects(log, &["--n1-min-requests", "201"]).is_empty());
    // Growth alone, with the bound on p95 out of reach.
    let growth = suspects(log, &["--n1-p95", "1000"]);
    assert_eq!(growth.len(), 2);
    // The bound on p95 alone: only the per-row read reaches 20.
    assert_eq!(
        keys(&suspects(log, &["--n1-rho", "1"])),
        ["catalog.list store_get_price_n"]
    );
    // The size named: the listed rows.
    let by_rows = suspects(log, &["--n1-size", "rows"]);
    assert!(
        by_rows.iter().all(|s| s["size_key"] == "rows"),
        "{by_rows:?}"
    );
    for bad in [["--n1-rho", "2"], ["--n1-p95", "many"]] {
        let mut args = vec!["summary", log];
        args.extend_from_slice(&bad);
        let out = Command::new(env!("CARGO_BIN_EXE_perf-trace"))
            .args(&args)
            .output()
            .unwrap();
        assert_eq!(out.status.code(), Some(2), "{bad:?}");
        assert!(
            String::from_utf8_lossy(&out.stderr).contains(bad[0]),
            "{bad:?}"
        );
    }
}

#[test]
fn the_hubs_legacy_listing_is_a_suspect_by_its_p95() {
    let dir = tempfile::tempdir().unwrap();
    let log = write(&dir, "hub.log", &sample_text(HUB, 400, 4, 0, 0));
    let found = suspects(arg(&log), &[]);
    assert_eq!(keys(&found), ["agents.project.legacy store_GetUser_n"]);
    assert_eq!(found[0]["calls"]["p95"], 84);
    assert_eq!(
        found[0]["size_key"],
        Value::Null,
        "the Hub's lines carry no size"
    );
    assert_eq!(found[0]["rho"], Value::Null);
}

#[test]
fn the_report_marks_suspects_and_diff_says_nothing_of_them() {
    let dir = tempfile::tempdir().unwrap();
    let planted = write(&dir, "planted.log", &sample_text(PLANTED, 200, 5, 0, 0));
    let fixed = write(&dir, "fixed.log", &sample_text(FIXED, 200, 5, 0, 0));
    let page = dir.path().join("report.html");
    run(&["report", arg(&planted), "-o", arg(&page)]);
    let html = std::fs::read_to_string(&page).unwrap();
    assert!(
        html.contains("N+1 suspects: <a href=\"#catalog.list\">catalog.list</a> store_get_price_n"),
        "the list on top"
    );
    assert_eq!(
        html.matches("<h3 class=\"moved\">N+1 suspects").count(),
        2,
        "a table in each class"
    );
    run(&["report", arg(&fixed), "-o", arg(&page)]);
    assert!(std::fs::read_to_string(&page)
        .unwrap()
        .contains("No N+1 suspects."));

    let diff_page = dir.path().join("diff.html");
    let out = run(&[
        "diff",
        arg(&fixed),
        arg(&planted),
        "--html",
        arg(&diff_page),
    ]);
    assert_eq!(out.status.code(), Some(1), "the counts moved");
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(!text.contains("suspect"), "{text}");
    assert!(!std::fs::read_to_string(&diff_page)
        .unwrap()
        .contains("suspect"));
}
