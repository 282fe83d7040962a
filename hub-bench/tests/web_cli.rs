//! `hub-bench web`'s command line: its help names every flag, and bad flags
//! and missing files are one-line errors that write no report.

mod support;

use support::{against_nothing, assert_one_line_error, path_in, run};

#[test]
fn help_names_every_flag_and_its_default() {
    let (code, help, _) = run(&["web", "--help"]);
    assert_eq!(code, 0);
    for flag in [
        "--hub",
        "--seed",
        "--out",
        "--runs",
        "--page-changes",
        "--burst-runs",
        "--burst-count",
        "--burst-only",
        "--nav-timeout-ms",
        "--populate-timeout-ms",
        "--settle-timeout-ms",
        "--expect-readiness-marks",
        "--hub-perf-log",
        "--notes",
    ] {
        assert!(help.contains(flag), "{flag}: {help}");
    }
    for default in [
        "[default: 5]",
        "[default: 3]",
        "[default: 15]",
        "[default: 120000]",
        "[default: 30000]",
    ] {
        assert!(help.contains(default), "{default}: {help}");
    }
    let (_, top, _) = run(&["--help"]);
    assert!(top.contains("web"), "{top}");
}

#[test]
fn bad_flags_are_usage_errors() {
    let dir = tempfile::tempdir().unwrap();
    let out = path_in(&dir, "browser.json");
    let out = out.as_str();
    let base = [
        "web",
        "--hub",
        "http://127.0.0.1:9",
        "--seed",
        "s.json",
        "--out",
        out,
    ];
    for (extra, expected) in [
        (&["--runs", "0"][..], "--runs"),
        (&["--burst-count", "many"][..], "--burst-count"),
        (&["--page-changes=-1"][..], "--page-changes"),
        (&["--settle-timeout-ms", "0"][..], "--settle-timeout-ms"),
        (&["--colour"][..], "--colour"),
    ] {
        let args: Vec<&str> = base.iter().chain(extra).copied().collect();
        let stderr = assert_one_line_error(&args, 2);
        assert!(stderr.contains(expected), "{extra:?}: {stderr}");
    }
    let (code, _, stderr) = run(&["web", "--seed", "s.json", "--out", out]);
    assert_eq!(code, 2, "{stderr}");
    assert!(stderr.contains("--hub"), "{stderr}");
    assert!(!std::path::Path::new(out).exists());
}

#[test]
fn a_missing_seed_or_log_fails_before_a_report() {
    let dir = tempfile::tempdir().unwrap();
    let out = path_in(&dir, "browser.json");
    let out = out.as_str();
    let missing = path_in(&dir, "absent.json");
    let (code, _, stderr) = run(&against_nothing("web", &missing, out));
    assert_eq!(code, 1, "{stderr}");
    assert_eq!(stderr.lines().count(), 1, "{stderr}");
    assert!(stderr.contains("read seed file"), "{stderr}");

    let seed = dir.path().join("seed.json");
    std::fs::write(&seed, r#"{"projectId":"p","memberToken":"t"}"#).unwrap();
    let absent_log = dir.path().join("absent.log");
    let mut args = against_nothing("web", seed.to_str().unwrap(), out);
    args.extend(["--hub-perf-log", absent_log.to_str().unwrap()]);
    let (code, _, stderr) = run(&args);
    assert_eq!(code, 1, "{stderr}");
    assert!(stderr.contains("read hub perf log"), "{stderr}");
    assert!(!std::path::Path::new(out).exists());
}
