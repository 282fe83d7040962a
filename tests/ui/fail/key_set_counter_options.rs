use perf_trace_core::KeySet;

#[derive(KeySet, Clone, Copy, PartialEq, Eq, Debug)]
#[key_set(counters)]
pub enum NoPrefix {
    Hit,
}

#[derive(KeySet, Clone, Copy, PartialEq, Eq, Debug)]
#[key_set(timers, prefix = "Render-")]
pub enum BadPrefix {
    Invoice,
}

#[derive(KeySet, Clone, Copy, PartialEq, Eq, Debug)]
#[key_set(counters, prefix = "store")]
pub enum ContractPrefix {
    Hit,
}

#[derive(KeySet, Clone, Copy, PartialEq, Eq, Debug)]
#[key_set(phases, prefix = "price", by = NoPrefix)]
pub enum PhaseWithOptions {
    Price,
}

#[derive(KeySet, Clone, Copy, PartialEq, Eq, Debug)]
#[key_set(timers, prefix = "render")]
pub enum MaxTimer {
    #[key(max)]
    Invoice,
}

fn main() {}
