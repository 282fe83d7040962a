//! What a report records about how it was produced: the host and the
//! harness's own commit.

use std::path::Path;
use std::process::Command;
use std::time::SystemTime;

use crate::report::{CommitSource, HarnessCommit, Machine};

/// A commit embedded at build time, for builds made outside a git checkout
/// (set `PERF_TRACE_HARNESS_COMMIT` when building).
const BUILD_COMMIT: Option<&str> = option_env!("PERF_TRACE_HARNESS_COMMIT");

/// The source tree this crate was built from.
const SOURCE_DIR: &str = env!("CARGO_MANIFEST_DIR");

fn run(dir: &Path, program: &str, args: &[&str]) -> Option<String> {
    let out = Command::new(program)
        .args(args)
        .current_dir(dir)
        .stdin(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .output()
        .ok()?;
    out.status
        .success()
        .then(|| String::from_utf8_lossy(&out.stdout).into_owned())
}

/// The harness's commit: read with `git rev-parse HEAD` and
/// `git status --porcelain` in the source tree the harness was built from
/// (source `git`, dirty when `git status` lists anything, untracked files
/// included); otherwise the commit embedded at build time (source `build`);
/// otherwise an empty commit with source `unknown`.
pub fn harness_commit() -> HarnessCommit {
    let dir = Path::new(SOURCE_DIR);
    if dir.is_dir() {
        if let Some(head) = run(dir, "git", &["rev-parse", "HEAD"]) {
            let head = head.trim();
            if head.len() >= 40 && head.bytes().all(|b| b.is_ascii_hexdigit()) {
                let dirty = run(dir, "git", &["status", "--porcelain"])
                    .is_some_and(|s| !s.trim().is_empty());
                return HarnessCommit {
                    harness_commit: head.to_owned(),
                    harness_commit_dirty: dirty,
                    harness_commit_source: CommitSource::Git,
                };
            }
        }
    }
    match BUILD_COMMIT.map(str::trim).filter(|c| !c.is_empty()) {
        Some(commit) => HarnessCommit {
            harness_commit: commit.trim_end_matches("-dirty").to_owned(),
            harness_commit_dirty: commit.ends_with("-dirty"),
            harness_commit_source: CommitSource::Build,
        },
        None => HarnessCommit {
            harness_commit: String::new(),
            harness_commit_dirty: false,
            harness_commit_source: CommitSource::Unknown,
        },
    }
}

/// Parses the first three fields of `/proc/loadavg`.
pub fn parse_loadavg(text: &str) -> Option<[f64; 3]> {
    let mut it = text.split_whitespace().map(|f| f.parse::<f64>().ok());
    Some([it.next()??, it.next()??, it.next()??])
}

/// Parses the first field of `/proc/uptime`.
pub fn parse_uptime(text: &str) -> Option<f64> {
    text.split_whitespace().next()?.parse().ok()
}

/// The 1, 5 and 15 minute load averages; zeros where `/proc/loadavg` is unavailable.
pub fn load_avg() -> [f64; 3] {
    std::fs::read_to_string("/proc/loadavg")
        .ok()
        .and_then(|t| parse_loadavg(&t))
        .unwrap_or([0.0; 3])
}

fn uptime_seconds() -> f64 {
    std::fs::read_to_string("/proc/uptime")
        .ok()
        .and_then(|t| parse_uptime(&t))
        .unwrap_or(0.0)
}

fn hostname() -> String {
    for path in ["/proc/sys/kernel/hostname", "/etc/hostname"] {
        if let Ok(name) = std::fs::read_to_string(path) {
            let name = name.trim();
            if !name.is_empty() {
                return name.to_owned();
            }
        }
    }
    if let Ok(name) = std::env::var("HOSTNAME") {
        return name;
    }
    run(Path::new("."), "hostname", &[])
        .map(|s| s.trim().to_owned())
        .unwrap_or_default()
}

fn rust_version() -> String {
    run(Path::new("."), "rustc", &["--version"])
        .map(|s| s.trim().to_owned())
        .unwrap_or_default()
}

/// The host as it is when a run starts; `load_avg_end` is filled in with
/// [`finish`] when it ends.
pub fn machine_at_start(notes: &str) -> Machine {
    let load = load_avg();
    Machine {
        os: std::env::consts::OS.to_owned(),
        arch: std::env::consts::ARCH.to_owned(),
        num_cpu: std::thread::available_parallelism().map_or(1, |n| n.get()),
        rust_version: rust_version(),
        hostname: hostname(),
        notes: notes.to_owned(),
        load_avg_start: load,
        load_avg_end: load,
        uptime_seconds: uptime_seconds(),
    }
}

/// Records the load averages at the end of the run.
pub fn finish(machine: &mut Machine) {
    machine.load_avg_end = load_avg();
}

/// Now as RFC 3339 in UTC with millisecond precision.
pub fn now_rfc3339() -> String {
    humantime::format_rfc3339_millis(SystemTime::now()).to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_proc_files() {
        assert_eq!(
            parse_loadavg("0.52 1.25 2.00 3/456 7890\n"),
            Some([0.52, 1.25, 2.0])
        );
        assert_eq!(parse_loadavg("0.52 x 2.00"), None);
        assert_eq!(parse_loadavg(""), None);
        assert_eq!(parse_uptime("12345.67 2345.10\n"), Some(12345.67));
        assert_eq!(parse_uptime("abc"), None);
    }

    #[test]
    fn machine_block_is_filled() {
        let m = machine_at_start("quiet host");
        assert_eq!(m.notes, "quiet host");
        assert!(m.num_cpu >= 1);
        assert!(!m.os.is_empty());
        assert!(!m.arch.is_empty());
    }

    #[test]
    fn harness_commit_is_consistent() {
        let c = harness_commit();
        match c.harness_commit_source {
            CommitSource::Git | CommitSource::Build => assert!(!c.harness_commit.is_empty()),
            CommitSource::Unknown => {
                assert!(c.harness_commit.is_empty());
                assert!(!c.harness_commit_dirty);
            }
        }
    }

    #[test]
    fn timestamp_is_rfc3339_utc() {
        let t = now_rfc3339();
        assert!(t.ends_with('Z') && t.contains('T'), "{t}");
    }
}
