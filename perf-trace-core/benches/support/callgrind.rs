//! Instructions counted under valgrind's callgrind between two marks the
//! measured program enters: shared by this crate's `overhead_instructions`
//! and the Hub's `on_off_instructions` (hub-bench), which include this file.

use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::atomic::{AtomicU32, Ordering};

/// How often each mark was entered. Each mark touches its own counter, so
/// the linker cannot fold the two into one address (callgrind would then
/// see one name for both and never zero).
static MARKS: [AtomicU32; 2] = [AtomicU32::new(0), AtomicU32::new(0)];

/// Entered after the warm-up: callgrind zeroes its counts here.
#[inline(never)]
#[no_mangle]
pub extern "C" fn measure_start() {
    MARKS[0].fetch_add(1, Ordering::Relaxed);
}

/// Entered after the measured work: callgrind dumps its counts here.
#[inline(never)]
#[no_mangle]
pub extern "C" fn measure_end() {
    MARKS[1].fetch_add(1, Ordering::Relaxed);
}

/// Runs `program` with `args` under `valgrind`'s callgrind (its own
/// `options` first), writing callgrind's files at `out`; the instructions
/// counted between [`measure_start`] and [`measure_end`].
pub fn instructions_between_marks(
    valgrind: &Path,
    options: &[&str],
    out: &Path,
    program: &Path,
    args: &[OsString],
) -> Result<u64, String> {
    let status = Command::new(valgrind)
        .arg("--tool=callgrind")
        .arg("--zero-before=measure_start")
        .arg("--dump-before=measure_end")
        .args(options)
        .arg(format!("--callgrind-out-file={}", out.display()))
        .arg(program)
        .args(args)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .map_err(|e| format!("run {}: {e}", valgrind.display()))?;
    if !status.success() {
        return Err(format!("under callgrind: {status}"));
    }
    // The first dump (`<out>.1`) is what ran between the two marks.
    let dump = PathBuf::from(format!("{}.1", out.display()));
    let text = std::fs::read_to_string(&dump)
        .map_err(|e| format!("read {}: {e} (was measure_end reached?)", dump.display()))?;
    text.lines()
        .find_map(|line| line.strip_prefix("totals:"))
        .and_then(|total| total.split_whitespace().next()?.parse().ok())
        .ok_or_else(|| format!("no totals in {}", dump.display()))
}
