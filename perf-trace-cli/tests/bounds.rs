//! The binary's memory stays bounded on hostile input: one line hundreds of
//! megabytes long, a gzip bomb, and a log where every line brings a new
//! class and key. Each input is streamed through a pipe (nothing that size
//! is held or written), and the child's peak resident memory is read from
//! its own resource usage when it is reaped.

use std::io::Write as _;
use std::process::{Command, Stdio};

use serde_json::Value;

/// The bound every run is held to.
const RSS_BOUND_KIB: i64 = 64 << 10;

/// What a run left: its exit code, output, and peak resident memory.
struct Run {
    code: i32,
    stdout: String,
    stderr: String,
    max_rss_kib: i64,
}

/// Runs `perf-trace args`, feeding standard input from `feed` on another
/// thread, and reaps it with `wait4` for its own peak RSS.
// `Child::wait` cannot give the child's resource usage: `wait4` reaps it.
#[allow(clippy::zombie_processes)]
fn run_fed(args: &[&str], feed: impl FnOnce(&mut dyn std::io::Write) + Send + 'static) -> Run {
    let dir = tempfile::tempdir().unwrap();
    let (out_path, err_path) = (dir.path().join("out"), dir.path().join("err"));
    let mut child = Command::new(env!("CARGO_BIN_EXE_perf-trace"))
        .args(args)
        .stdin(Stdio::piped())
        .stdout(std::fs::File::create(&out_path).unwrap())
        .stderr(std::fs::File::create(&err_path).unwrap())
        .spawn()
        .expect("start perf-trace");
    let mut stdin = child.stdin.take().expect("piped");
    let feeder = std::thread::spawn(move || {
        feed(&mut stdin);
        // Dropping `stdin` closes the pipe: the end of the input.
    });
    let pid = child.id() as libc::pid_t;
    let mut status = 0;
    // SAFETY: an all-zero rusage is a valid value for wait4 to fill in.
    let mut usage: libc::rusage = unsafe { std::mem::zeroed() };
    // SAFETY: `pid` is this process's own unreaped child, and both out
    // pointers are valid for the call.
    let reaped = unsafe { libc::wait4(pid, &mut status, 0, &mut usage) };
    assert_eq!(reaped, pid, "wait4: {}", std::io::Error::last_os_error());
    feeder.join().expect("the feeder ends");
    assert!(libc::WIFEXITED(status), "perf-trace ended by a signal");
    Run {
        code: libc::WEXITSTATUS(status),
        stdout: std::fs::read_to_string(&out_path).unwrap(),
        stderr: std::fs::read_to_string(&err_path).unwrap(),
        max_rss_kib: usage.ru_maxrss,
    }
}

/// Writes `total` bytes of `byte` in 1 MiB pieces.
fn write_repeated(out: &mut dyn std::io::Write, byte: u8, total: usize) {
    let piece = vec![byte; 1 << 20];
    let mut left = total;
    while left > 0 {
        let n = left.min(piece.len());
        out.write_all(&piece[..n]).expect("feed perf-trace");
        left -= n;
    }
}

fn summary_json(run: &Run) -> Value {
    assert_eq!(run.code, 0, "{}", run.stderr);
    serde_json::from_str(&run.stdout).expect("JSON")
}

/// The text field `name` of each object of a JSON array.
fn field_of_each<'a>(array: &'a Value, name: &str) -> Vec<&'a str> {
    let items = array.as_array().expect("a JSON array");
    items
        .iter()
        .map(|item| item[name].as_str().unwrap())
        .collect()
}

fn assert_bounded(run: &Run) {
    assert!(
        run.max_rss_kib < RSS_BOUND_KIB,
        "peak RSS {} KiB, over {RSS_BOUND_KIB} KiB",
        run.max_rss_kib
    );
}

const LINE: &[u8] = br#"{"msg":"perf_trace","endpoint":"a.b","elapsed_us":7,"store_GetX_n":2}"#;

const LONG_HEAD: &[u8] = br#"{"msg":"perf_trace","endpoint":"a.b","elapsed_us":9,"note":""#;

#[test]
fn a_200_mb_line_is_skipped_unread() {
    let run = run_fed(&["summary", "--format", "json"], |out| {
        out.write_all(LINE).unwrap();
        out.write_all(b"\n").unwrap();
        // A perf line with a 200 MB field and no end until the next line.
        out.write_all(LONG_HEAD).unwrap();
        write_repeated(out, b'x', 200 << 20);
        out.write_all(b"\"}\n").unwrap();
        out.write_all(LINE).unwrap();
    });
    assert_bounded(&run);
    let s = summary_json(&run);
    assert_eq!(s["input"]["lines"], 3);
    assert_eq!(s["input"]["counted"], 2, "the lines around it are read");
    assert_eq!(s["input"]["too_long"], 1);
    let length = LONG_HEAD.len() + (200 << 20) + br#""}"#.len();
    let note = format!(
        "1 line longer than the 1.0 MiB line bound skipped unread (first at <stdin>:2: {length} bytes; --max-line-bytes)"
    );
    assert!(run.stderr.contains(&note), "{}", run.stderr);
}

#[test]
fn the_line_bound_is_a_flag() {
    let long = format!(
        r#"{{"msg":"perf_trace","endpoint":"a.b","elapsed_us":9,"note":"{}"}}"#,
        "x".repeat(2000)
    );
    let feed = format!("{long}\n{}\n", String::from_utf8_lossy(LINE));
    let with = |bound: &'static str| {
        let feed = feed.clone();
        summary_json(&run_fed(
            &["summary", "--format", "json", "--max-line-bytes", bound],
            move |out| out.write_all(feed.as_bytes()).unwrap(),
        ))
    };
    assert_eq!(with("1000")["input"]["too_long"], 1);
    assert_eq!(with("1000")["input"]["counted"], 1);
    assert_eq!(with("4096")["input"]["too_long"], 0);
    assert_eq!(with("4096")["input"]["counted"], 2);
    let bad = run_fed(&["summary", "--max-line-bytes", "0"], |_| {});
    assert_eq!(bad.code, 2, "a usage error");
    assert!(bad.stderr.contains("--max-line-bytes"), "{}", bad.stderr);
}

#[test]
fn a_gzip_bomb_is_one_over_long_line() {
    // 1 MiB of zeros compresses to about a kilobyte; gzip members follow one
    // another as one stream, so 200 of them read as 200 MiB of zeros with
    // no line end.
    let mut enc = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::best());
    enc.write_all(&vec![0u8; 1 << 20]).unwrap();
    let member = enc.finish().unwrap();
    assert!(member.len() < 4096);
    let run = run_fed(&["summary", "--format", "json"], move |out| {
        for _ in 0..200 {
            out.write_all(&member).unwrap();
        }
    });
    assert_bounded(&run);
    let s = summary_json(&run);
    assert_eq!(s["input"]["too_long"], 1);
    assert!(
        run.stderr
            .contains("1 line longer than the 1.0 MiB line bound skipped unread (first at <stdin>:1: 209715200 bytes"),
        "{}",
        run.stderr
    );
    assert!(run.stderr.contains("no perf_trace line in 1 lines read"));
}

/// Writes `n` lines, the `i`th of class `c<i>` with a timer and a count
/// of its own.
fn write_fresh(out: &mut dyn std::io::Write, n: u64) {
    for i in 0..n {
        writeln!(
            out,
            r#"{{"msg":"perf_trace","endpoint":"c{i}","elapsed_us":{},"k{i}_us":3600000000,"n{i}":{i}}}"#,
            3_600_000_000 + i
        )
        .unwrap();
    }
}

#[test]
fn twenty_thousand_new_classes_and_keys_fold_into_other() {
    let run = run_fed(&["summary", "--format", "json", "--top", "1"], |out| {
        write_fresh(out, 20_000)
    });
    assert_bounded(&run);
    let s = summary_json(&run);
    let classes = s["classes"].as_array().unwrap();
    assert_eq!(classes.len(), 1001, "1,000 classes and (other)");
    let other = classes.iter().find(|c| c["endpoint"] == "(other)").unwrap();
    assert_eq!(other["requests"], 19_000);
    assert_eq!(s["input"]["counted"], 20_000, "nothing is lost");
    assert_eq!(s["input"]["folded_class_lines"], 19_000);
    // 1,000 classes hold 2,000 keys; (other) takes 8,000 more (4,000
    // lines' two), then folds the remaining 15,000 lines' two keys.
    assert_eq!(s["input"]["folded_key_values"], 30_000);
    let counters = field_of_each(&other["counters"], "name");
    assert!(counters.contains(&"(other)"), "{counters:?}");
    assert_eq!(
        s["suspects"],
        serde_json::json!([]),
        "(other) is not judged"
    );
    for note in [
        "19000 perf_trace line(s) of classes past the 1000-class bound read as (other) (--max-classes)",
        "30000 figure(s) of keys past the 10000-key bound added to their class's (other) (--max-keys)",
    ] {
        assert!(run.stderr.contains(note), "{}", run.stderr);
    }
}

#[test]
fn class_and_key_bounds_are_flags() {
    let run = run_fed(
        &[
            "summary",
            "--format",
            "json",
            "--max-classes",
            "2",
            "--max-keys",
            "3",
        ],
        |out| write_fresh(out, 5),
    );
    let s = summary_json(&run);
    let names = field_of_each(&s["classes"], "endpoint");
    assert_eq!(names, ["(other)", "c0", "c1"]);
    // c0 takes two keys, c1 one; its count and the rest are folded.
    assert_eq!(s["input"]["folded_key_values"], 1 + 3 * 2);
    let bad = run_fed(&["summary", "--max-classes", "none"], |_| {});
    assert_eq!(bad.code, 2);
}

#[test]
fn the_report_page_says_what_was_folded_and_skipped() {
    let dir = tempfile::tempdir().unwrap();
    let page = dir.path().join("report.html");
    let page_arg = page.to_str().unwrap().to_owned();
    let run = run_fed(
        &[
            "report",
            "-o",
            &page_arg,
            "--max-classes",
            "1",
            "--max-line-bytes",
            "200",
        ],
        |out| {
            write_fresh(out, 3);
            writeln!(out, "{}", "x".repeat(300)).unwrap();
        },
    );
    assert_eq!(run.code, 0, "{}", run.stderr);
    let html = std::fs::read_to_string(&page).unwrap();
    for said in [
        " · 1 over-long lines skipped unread",
        " · 2 lines of classes past the bound read as (other)",
    ] {
        assert!(html.contains(said), "{said}");
    }
}

#[test]
fn ten_thousand_hour_long_timers_over_a_thousand_classes_stay_bounded() {
    // 1,000 classes of 40 requests, each with nine timers of its own and
    // values reaching an hour, and 3 KB lines among the slowest kept: a
    // histogram each would be over 250 MiB. Past the figures' bytes the
    // values are recorded in place.
    let run = run_fed(&["summary", "--format", "json"], |out| {
        let pad = "p".repeat(3000);
        for round in 1..=40u64 {
            for class in 0..1000u64 {
                let mut line = format!(
                    r#"{{"msg":"perf_trace","endpoint":"c{class}","elapsed_us":{},"store_s_n":{round}"#,
                    round * 90_000_000
                );
                for key in 0..9 {
                    let us = round * 90_000_000 + key;
                    line.push_str(&format!(r#","k{}_us":{us}"#, class * 10 + key));
                }
                writeln!(out, r#"{line},"pad":"{pad}"}}"#).unwrap();
            }
        }
    });
    assert_bounded(&run);
    let s = summary_json(&run);
    assert_eq!(s["input"]["counted"], 40_000);
    let approximated = s["input"]["approximated_values"].as_u64().unwrap();
    assert!(approximated > 0, "the figures' bytes were reached");
    assert!(
        run.stderr.contains(
            "figure value(s) recorded approximately: the figures reached their 16.0 MiB bound"
        ),
        "{}",
        run.stderr
    );
    // Counts, sums and the largest stay exact.
    let class = &s["classes"][0];
    assert_eq!(class["requests"], 40);
    assert_eq!(class["elapsed"]["max_us"], 3_600_000_000u64);
    assert_eq!(class["elapsed"]["sum_us"], 90_000_000u64 * 820);
}
