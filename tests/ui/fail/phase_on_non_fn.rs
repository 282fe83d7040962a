use perf_trace_core::traced_phase;

#[path = "../support/phases.rs"]
mod phases;

#[traced_phase(Phase::Enrich)]
struct Enricher {
    rows: usize,
}

#[traced_phase(Phase::Enrich)]
const LIMIT: usize = 10;

fn main() {
    let e = Enricher { rows: LIMIT };
    let _ = e.rows;
}
