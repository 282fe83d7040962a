use perf_trace_core::traced_phase;

#[path = "../support/phases.rs"]
mod phases;
use phases::Phase;

mod handlers {
    use super::*;

    #[traced_phase(crate::Phase::ListDbReed)]
    pub async fn list() -> Result<usize, String> {
        Ok(1)
    }
}

fn main() {
    let _ = handlers::list();
}
