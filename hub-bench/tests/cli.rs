//! The `hub-bench` binary's command line: help for every subcommand, and
//! bad flags and missing files as one-line errors that write nothing.

mod support;

use support::{against_nothing, run};

#[test]
fn every_subcommand_has_help() {
    let (code, top, _) = run(&["--help"]);
    assert_eq!(code, 0);
    for subcommand in ["demo", "apibench", "load"] {
        assert!(top.contains(subcommand), "{subcommand}: {top}");
    }
    for (subcommand, flags) in [
        (
            "demo",
            &["--sizes", "--runs", "--compare-rounds", "--out-dir"][..],
        ),
        (
            "apibench",
            &[
                "--hub",
                "--seed",
                "--runs",
                "--warmup",
                "--want-perf-trace",
                "--hub-perf-log",
                "--out",
                "--notes",
            ],
        ),
        (
            "load",
            &[
                "--hub",
                "--seed",
                "--users",
                "--duration",
                "--spawn-rate",
                "--max-requests",
                "--out",
            ],
        ),
    ] {
        let (code, help, _) = run(&[subcommand, "--help"]);
        assert_eq!(code, 0, "{subcommand}");
        for flag in flags {
            assert!(help.contains(flag), "{subcommand} {flag}: {help}");
        }
    }
}

#[test]
fn bad_flags_and_missing_files_are_one_line_errors() {
    let dir = tempfile::tempdir().unwrap();
    let missing_seed = dir.path().join("missing-seed.json");
    let missing_seed = missing_seed.to_str().unwrap();
    let out = dir.path().join("report.json");
    let out_text = out.to_str().unwrap();
    for (args, code) in [
        (vec!["apibench", "--bogus"], 2),
        (vec!["demo", "--sizes", "0"], 2),
        (vec!["demo", "--runs", "many"], 2),
        (vec!["load", "--duration", "0s"], 2),
        // Hub commands are `hub-example`'s.
        (vec!["serve"], 2),
        (against_nothing("apibench", missing_seed, out_text), 1),
        (against_nothing("load", missing_seed, out_text), 1),
    ] {
        let (got, stdout, stderr) = run(&args);
        assert_eq!(got, code, "{args:?}: {stderr}");
        assert!(stdout.is_empty(), "{args:?}: {stdout}");
        assert_eq!(stderr.trim_end().lines().count(), 1, "{args:?}: {stderr}");
        assert!(stderr.starts_with("hub-bench: error: "), "{stderr}");
        assert!(!stderr.contains("panicked"), "{stderr}");
    }
    assert!(!out.exists(), "a failed run wrote a report");
}
