use perf_trace_core::traced_phase;

#[path = "../support/phases.rs"]
mod phases;
use phases::Phase;

fn phase_for(kind: u8) -> Phase {
    if kind == 0 { Phase::ListDbRead } else { Phase::Enrich }
}

#[traced_phase(phase_for(0))]
fn list() -> usize {
    1
}

#[traced_phase(if true { Phase::Enrich } else { Phase::ListDbRead })]
fn enrich() {}

fn main() {
    let _ = phase_for(1);
    list();
    enrich();
}
