//! Compile-time behaviour of the macros: every refused input is an error that
//! points at the offending key or item, held in `ui/fail/*.stderr`; the
//! accepted forms compile and run (`ui/pass`). Key sets that several cases
//! declare alike are in `ui/support`, brought in with `#[path]`.
//!
//! Compiler messages change between rustc releases, so the `.stderr` files are
//! pinned to one: on any other rustc this test prints a note and passes.

use std::process::Command;

/// The rustc release the `.stderr` files were written with.
const PINNED: &str = "rustc 1.95.";

fn rustc_version() -> Option<String> {
    let rustc = std::env::var_os("RUSTC").unwrap_or_else(|| "rustc".into());
    let output = Command::new(rustc).arg("--version").output().ok()?;
    Some(String::from_utf8_lossy(&output.stdout).trim().to_owned())
}

#[test]
fn ui() {
    match rustc_version() {
        Some(version) if version.starts_with(PINNED) => {}
        other => {
            eprintln!(
                "note: skipping the UI tests: their .stderr files are pinned to {PINNED}x, \
                 and this compiler is {}",
                other.as_deref().unwrap_or("unknown")
            );
            return;
        }
    }
    let t = trybuild::TestCases::new();
    t.compile_fail("ui/fail/*.rs");
    t.pass("ui/pass/*.rs");
}
