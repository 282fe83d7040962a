use perf_trace_core::traced_phase;

#[path = "../support/phases.rs"]
mod phases;
use phases::Phase;

use Phase::ListDbRead;

#[traced_phase(ListDbRead)]
fn list() -> usize {
    let _ = ListDbRead;
    1
}

fn main() {
    list();
}
