//! The `hub-bench` binary's command line: help for every subcommand, and
//! bad flags and missing files as one-line errors that write nothing.

mod support;

use support::{against_nothing, assert_one_line_error, path_in, run};

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
    let missing_seed = path_in(&dir, "missing-seed.json");
    let out = path_in(&dir, "report.json");
    for (args, code) in [
        (vec!["apibench", "--bogus"], 2),
        (vec!["demo", "--sizes", "0"], 2),
        (vec!["demo", "--runs", "many"], 2),
        (vec!["load", "--duration", "0s"], 2),
        // Hub commands are `hub-example`'s.
        (vec!["serve"], 2),
        (against_nothing("apibench", &missing_seed, &out), 1),
        (against_nothing("load", &missing_seed, &out), 1),
    ] {
        assert_one_line_error(&args, code);
    }
    assert!(
        !std::path::Path::new(&out).exists(),
        "a failed run wrote a report"
    );
}
