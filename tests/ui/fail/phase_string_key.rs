use perf_trace_core::traced_phase;

#[path = "../support/phases.rs"]
mod phases;

#[traced_phase("list_db_read")]
fn list() -> usize {
    1
}

fn main() {
    list();
}
