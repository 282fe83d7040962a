use perf_trace_core::{traced_phase, KeySet};

#[derive(KeySet, Clone, Copy, PartialEq, Eq, Debug)]
#[key_set(phases)]
pub enum Phase {
    ListScopeAuthz,
    ListDbRead,
    Enrich,
}

#[traced_phase("list_db_read")]
fn list() -> usize {
    1
}

fn main() {
    list();
}
