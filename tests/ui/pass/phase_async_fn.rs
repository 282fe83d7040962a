use std::future::Future;

use perf_trace_core::{traced_phase, KeySet};

#[derive(KeySet, Clone, Copy, PartialEq, Eq, Debug)]
#[key_set(phases)]
pub enum Phase {
    ListDbRead,
    Enrich,
    Serialize,
}

#[derive(Debug)]
pub struct DbError;

impl From<std::num::ParseIntError> for DbError {
    fn from(_: std::num::ParseIntError) -> Self {
        DbError
    }
}

async fn fetch(id: &str) -> Result<u32, std::num::ParseIntError> {
    id.parse()
}

// `?` converts through `From` into the declared error type.
#[traced_phase(Phase::ListDbRead)]
pub async fn list(ids: &[&str]) -> Result<Vec<u32>, DbError> {
    let mut out = Vec::new();
    for id in ids {
        if id.is_empty() {
            return Err(DbError);
        }
        out.push(fetch(id).await?);
    }
    Ok(out)
}

// A boxed error: `?` needs the declared type to infer the conversion.
#[traced_phase(Phase::Enrich)]
async fn enrich(id: &str) -> Result<u32, Box<dyn std::error::Error + Send + Sync>> {
    let n = fetch(id).await?;
    Ok(n + 1)
}

#[traced_phase(Phase::Serialize)]
async fn render(n: u32) -> impl std::fmt::Display {
    n * 2
}

#[traced_phase(Phase::Serialize)]
fn render_later(n: u32) -> impl Future<Output = String> + Send {
    async move { format!("{n}") }
}

struct Worker {
    factor: u32,
}

impl Worker {
    #[traced_phase(Phase::Enrich)]
    async fn scale(&mut self, n: u32) -> Option<u32> {
        let scaled = n.checked_mul(self.factor)?;
        self.factor += 1;
        Some(scaled)
    }
}

fn assert_send<T: Send>(_: &T) {}

fn main() {
    let future = list(&["1"]);
    assert_send(&future);
    drop(future);
    let _ = enrich("1");
    let _ = render(1);
    let _ = render_later(1);
    let mut worker = Worker { factor: 2 };
    let _ = worker.scale(3);
}
