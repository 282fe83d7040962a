use async_trait::async_trait;
use perf_trace_core::{traced_phase, KeySet};

#[derive(KeySet, Clone, Copy, PartialEq, Eq, Debug)]
#[key_set(phases)]
pub enum Phase {
    SseExpand,
    SseAuthorize,
}

#[async_trait]
pub trait Expander {
    async fn expand(&self, subjects: &[&str]) -> Result<Vec<String>, String>;

    #[traced_phase(Phase::SseAuthorize)]
    async fn authorize(&self, subject: &str) -> bool {
        !subject.is_empty()
    }
}

pub struct Hub;

#[async_trait]
impl Expander for Hub {
    #[traced_phase(Phase::SseExpand)]
    async fn expand(&self, subjects: &[&str]) -> Result<Vec<String>, String> {
        let mut out = Vec::new();
        for s in subjects {
            let n: u32 = s.parse().map_err(|_| format!("bad subject {s}"))?;
            if n == 0 {
                return Ok(out);
            }
            out.push(format!("agent/{n}"));
        }
        Ok(out)
    }
}

fn assert_send<T: Send>(_: &T) {}

fn main() {
    let hub = Hub;
    let future = hub.expand(&["1"]);
    assert_send(&future);
    drop(future);
    let _ = hub.authorize("a");
}
