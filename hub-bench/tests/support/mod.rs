//! What the tests of the `hub-bench` binary share: running it to the end.

use std::process::Command;

/// Runs the `hub-bench` binary of this build with `args` to the end;
/// returns its exit code, stdout and stderr.
pub fn run(args: &[&str]) -> (i32, String, String) {
    let out = Command::new(env!("CARGO_BIN_EXE_hub-bench"))
        .args(args)
        .output()
        .unwrap();
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

/// The arguments of `command` against a Hub address nothing answers on,
/// with `seed` and `out`: a run that must fail before any request.
#[allow(dead_code)] // Not every test binary that shares this module uses it.
pub fn against_nothing<'a>(command: &'a str, seed: &'a str, out: &'a str) -> Vec<&'a str> {
    vec![
        command,
        "--hub",
        "http://127.0.0.1:9",
        "--seed",
        seed,
        "--out",
        out,
    ]
}

/// The arguments of the guide's `apibench` step, traced and joined to the
/// Hub's log: against `hub`, with the `seed`, `log` and `out` paths.
#[allow(dead_code)] // Not every test binary that shares this module uses it.
pub fn guide_apibench<'a>(hub: &'a str, seed: &'a str, log: &'a str, out: &'a str) -> Vec<&'a str> {
    vec![
        "apibench",
        "--hub",
        hub,
        "--seed",
        seed,
        "--runs",
        "5",
        "--warmup",
        "1",
        "--want-perf-trace",
        "--hub-perf-log",
        log,
        "--out",
        out,
        "--notes",
        "one hub, otherwise idle host",
    ]
}

/// The path of `name` in `dir`, as text.
#[allow(dead_code)] // Not every test binary that shares this module uses it.
pub fn path_in(dir: &tempfile::TempDir, name: &str) -> String {
    dir.path().join(name).to_str().unwrap().to_owned()
}

/// Asserts that a run of `args` ended with `code` and wrote nothing but one
/// `hub-bench: error: …` line (to stderr) and no panic.
#[allow(dead_code)] // Not every test binary that shares this module uses it.
pub fn assert_one_line_error(args: &[&str], code: i32) -> String {
    let (got, stdout, stderr) = run(args);
    assert_eq!(got, code, "{args:?}: {stderr}");
    assert!(stdout.is_empty(), "{args:?}: {stdout}");
    assert_eq!(stderr.lines().count(), 1, "{args:?}: {stderr}");
    assert!(stderr.starts_with("hub-bench: error: "), "{stderr}");
    assert!(!stderr.contains("panicked"), "{stderr}");
    stderr
}
