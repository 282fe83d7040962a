use perf_trace_core::{phase, KeySet};

#[derive(KeySet, Clone, Copy, PartialEq, Eq, Debug)]
#[key_set(phases)]
pub enum Phase {
    Reserve,
    Ship,
}

fn reserve() -> u32 {
    phase!(Phase::Reserv, { 1 })
}

async fn ship() -> u32 {
    phase!(Phase::Ship, async { 2 }).await
}

fn main() {
    let _ = reserve();
    let _ = phase!("reserve", { 3 });
    let _ = ship();
}
