use perf_trace_core::{traced_phase, KeySet};

#[derive(KeySet, Clone, Copy, PartialEq, Eq, Debug)]
#[key_set(phases)]
pub enum Phase {
    ListScopeAuthz,
    ListDbRead,
    Enrich,
}

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
