use perf_trace_core::traced_phase;

#[path = "../support/phases.rs"]
mod phases;
use phases::Phase;

#[traced_phase(Phase::Nope)]
fn list() -> usize {
    1
}

fn main() {
    list();
}
