//! What a recorded phase, a counted store call, a counter and the seed's
//! line rendered cost in instructions: the figure that repeats from run to
//! run, where a few nanoseconds of time move with the machine. Each call
//! is made 100,000 times in a process of its own under valgrind's
//! callgrind, counted only between a mark after a warm-up and a mark after
//! the calls, with a recorder in scope; the table gives instructions per call and what each
//! adds over the call it wraps (a plain call, or the store's own method).
//!
//! ```text
//! cargo bench -p perf-trace-core --bench overhead_instructions
//! ```
//!
//! It needs valgrind; without it, it says so and counts nothing.

use std::cell::RefCell;
use std::hint::black_box;
use std::path::Path;
use std::process::{Command, ExitCode, Stdio};
use std::time::{Duration, UNIX_EPOCH};

#[path = "support/callgrind.rs"]
mod callgrind;
#[path = "support/calls.rs"]
mod calls;
#[path = "../tests/common/mod.rs"]
mod common;
#[path = "../tests/seed_example/mod.rs"]
mod seed_example;
use callgrind::{measure_end, measure_start};
use calls::*;
use perf_trace_core::{LineFormat, Recorder, Snapshot};

/// Calls counted per kind.
const CALLS: u64 = 100_000;
/// Calls made first and not counted (the recorder's first touch, the
/// clock's calibration, the thread-locals).
const WARMUP: u64 = 1_000;

/// A counted call: its argument varies, so nothing is folded away.
type Call = fn(u64) -> u64;

/// What is counted: a name and the call.
const KINDS: &[(&str, Call)] = &[
    ("plain call", plain),
    (
        "floor: two raw TSC reads + thread-local add",
        floor_or_plain,
    ),
    ("phase, recorded", traced),
    ("phase! block, recorded", traced_block),
    ("store call, direct", direct),
    ("store call, counted, recorded", counted_store_call),
    ("phase around the same call, recorded", traced_store_call),
    ("count, recorded", counted),
    ("count_n of a max key, recorded", counted_max),
    ("count_by, recorded", counted_by),
    ("time (timer set), recorded", timed),
    (SEED_LINE, seed_line),
];

/// The kind that renders a whole line rather than wrapping a call.
const SEED_LINE: &str = "seed line, rendered (LineFormat::render)";

thread_local! {
    /// The seed's example line as a snapshot, its format, and the string
    /// it is rendered into, made once per thread.
    static SEED: (Snapshot, LineFormat, RefCell<String>) = (
        seed_example::seed_snapshot(),
        LineFormat::scion("scion-hub"),
        RefCell::new(String::with_capacity(2048)),
    );
}

/// Renders the seed's line, stamped `x` nanoseconds after the epoch.
#[inline(never)]
fn seed_line(x: u64) -> u64 {
    SEED.with(|(snapshot, format, out)| {
        let out = &mut *out.borrow_mut();
        format.render(
            black_box(snapshot),
            UNIX_EPOCH + Duration::from_nanos(x),
            out,
        );
        out.len() as u64
    })
}

#[cfg(target_arch = "x86_64")]
fn floor_or_plain(x: u64) -> u64 {
    floor(x)
}

#[cfg(not(target_arch = "x86_64"))]
fn floor_or_plain(x: u64) -> u64 {
    plain(x)
}

#[inline(never)]
fn direct(x: u64) -> u64 {
    Direct.get_user(x)
}

/// A phase around the store's own method, to set beside the counted store
/// call: both time a call that may unwind.
#[inline(never)]
#[perf_trace_core::traced_phase(Phase::Load)]
fn traced_store_call(x: u64) -> u64 {
    Direct.get_user(x)
}

#[inline(never)]
fn counted_store_call(x: u64) -> u64 {
    // A unit struct: making the wrapper costs nothing.
    CountedThingStore::new(Direct).get_user(x)
}

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().collect();
    if let Some(at) = args.iter().position(|a| a == "--measure") {
        let Some(kind) = args.get(at + 1).and_then(|k| k.parse::<usize>().ok()) else {
            eprintln!("--measure takes the index of a kind");
            return ExitCode::from(2);
        };
        measure(KINDS[kind].1);
        return ExitCode::SUCCESS;
    }
    if args.iter().any(|a| a == "--list") {
        // `cargo bench -- --list`: nothing here is a test.
        return ExitCode::SUCCESS;
    }
    match drive() {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("overhead_instructions: {e}");
            ExitCode::FAILURE
        }
    }
}

/// One kind, in this process (what runs under callgrind).
fn measure(call: Call) {
    let recorder = Recorder::new::<TestSchema>();
    recorder.in_scope(|| {
        for i in 0..WARMUP {
            black_box(call(black_box(i)));
        }
        measure_start();
        for i in 0..CALLS {
            black_box(call(black_box(i)));
        }
        measure_end();
    });
    black_box(recorder.snapshot());
}

/// Runs every kind under callgrind and prints the table.
fn drive() -> Result<(), String> {
    let valgrind = Command::new("valgrind")
        .arg("--version")
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status();
    if !valgrind.is_ok_and(|status| status.success()) {
        println!("overhead_instructions: skipped, valgrind is not installed");
        return Ok(());
    }
    let me = std::env::current_exe().map_err(|e| e.to_string())?;
    let dir = std::env::temp_dir().join(format!("overhead-instructions-{}", std::process::id()));
    std::fs::create_dir_all(&dir).map_err(|e| e.to_string())?;
    let counted: Result<Vec<f64>, String> = (0..KINDS.len())
        .map(|kind| instructions(&me, &dir, kind).map(|total| total as f64 / CALLS as f64))
        .collect();
    let _ = std::fs::remove_dir_all(&dir);
    let per_call = counted?;
    let of = |name: &str| per_call[KINDS.iter().position(|(n, _)| *n == name).expect("a kind")];
    let plain = of("plain call");
    println!("{:<45}  {:>16}  {:>10}", "call", "instr/call", "added");
    println!("{:-<45}  {:->16}  {:->10}", "", "", "");
    for ((name, _), &n) in KINDS.iter().zip(&per_call) {
        if *name == SEED_LINE {
            // A line wraps no call: nothing added to show.
            println!("{name:<45}  {n:>16.2}  {:>10}", "");
            continue;
        }
        let wraps_the_store = name.starts_with("store call") || name.contains("same call");
        let wrapped = match wraps_the_store {
            true => of("store call, direct"),
            false => plain,
        };
        println!("{name:<45}  {n:>16.2}  {:>10.2}", n - wrapped);
    }
    let phase = of("phase, recorded") - plain;
    let direct = of("store call, direct");
    println!(
        "\nadded, against a recorded phase ({phase:.2}): floor {:.2}, count {:.2}; \
         a counted store call against a phase around the same call {:.2}",
        (of("floor: two raw TSC reads + thread-local add") - plain) / phase,
        (of("count, recorded") - plain) / phase,
        (of("store call, counted, recorded") - direct)
            / (of("phase around the same call, recorded") - direct),
    );
    Ok(())
}

/// Runs kind `kind` under callgrind; the instructions between the marks.
fn instructions(me: &Path, dir: &Path, kind: usize) -> Result<u64, String> {
    let out = dir.join(format!("callgrind-{kind}"));
    let args = ["--measure".into(), kind.to_string().into()];
    callgrind::instructions_between_marks(Path::new("valgrind"), &[], &out, me, &args)
        .map_err(|e| format!("{}: {e}", KINDS[kind].0))
}
