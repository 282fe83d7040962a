use perf_trace_core::{traced_phase, KeySet};

#[path = "../support/phases.rs"]
mod phases;

#[derive(KeySet, Clone, Copy, PartialEq, Eq, Debug)]
#[key_set(endpoints)]
pub enum Endpoint {
    #[key(default)]
    Other,
    #[key(rename = "agents.project.sorted")]
    AgentsProjectSorted,
}

#[traced_phase(Endpoint::AgentsProjectSorted)]
fn list() -> usize {
    1
}

fn main() {
    list();
}
