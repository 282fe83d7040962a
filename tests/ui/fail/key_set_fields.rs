use perf_trace_core::KeySet;

#[derive(KeySet, Clone, Copy, PartialEq, Eq, Debug)]
#[key_set(phases)]
pub enum Phase {
    ListDbRead,
    Enrich(u32),
    Serialize { bytes: usize },
}

#[derive(KeySet, Clone, Copy, PartialEq, Eq, Debug)]
#[key_set(phases)]
pub struct NotAnEnum;

#[derive(KeySet, Clone, Copy, PartialEq, Eq, Debug)]
#[key_set(phases)]
pub enum Generic<T> {
    A,
    B(T),
}

fn main() {}
