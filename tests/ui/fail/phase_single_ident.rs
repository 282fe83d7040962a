use perf_trace_core::{traced_phase, KeySet};

#[derive(KeySet, Clone, Copy, PartialEq, Eq, Debug)]
#[key_set(phases)]
pub enum Phase {
    ListScopeAuthz,
    ListDbRead,
    Enrich,
}

use Phase::ListDbRead;

#[traced_phase(ListDbRead)]
fn list() -> usize {
    let _ = ListDbRead;
    1
}

fn main() {
    list();
}
