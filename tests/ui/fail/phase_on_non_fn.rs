use perf_trace_core::{traced_phase, KeySet};

#[derive(KeySet, Clone, Copy, PartialEq, Eq, Debug)]
#[key_set(phases)]
pub enum Phase {
    ListScopeAuthz,
    ListDbRead,
    Enrich,
}

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
