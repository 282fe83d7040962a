//! The `hub-bench` binary's command line: its subcommands parsed (the
//! guide's `apibench` step among them), help for every subcommand, and bad
//! flags and missing files as one-line errors that write nothing.

mod support;

use clap::{CommandFactory as _, Parser as _};
use hub_bench::cli::{Cli, Command};
use support::{against_nothing, assert_one_line_error, guide_apibench, path_in, run};

#[test]
fn subcommands_parse() {
    Cli::command().debug_assert();
    let guide = guide_apibench(
        "http://127.0.0.1:19810",
        "seed-25.json",
        "hub25.log",
        "api-25.json",
    );
    let cli = Cli::try_parse_from(std::iter::once("hub-bench").chain(guide)).unwrap();
    assert!(
        matches!(cli.command, Some(Command::Apibench(ref a)) if a.want_perf_trace && a.runs == 5)
    );
    let cli = Cli::try_parse_from([
        "hub-bench",
        "load",
        "--hub",
        "http://127.0.0.1:19810",
        "--seed",
        "seed.json",
        "--users",
        "300",
        "--duration",
        "30s",
        "--out",
        "load.json",
    ])
    .unwrap();
    assert!(matches!(cli.command, Some(Command::Load(ref a)) if a.users == 300));
    let help = Cli::try_parse_from(["hub-bench", "apibench", "--help"]).unwrap_err();
    assert_eq!(help.kind(), clap::error::ErrorKind::DisplayHelp);
    assert!(help.to_string().contains("--hub-perf-log <LOG>"));
}

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
