use perf_trace_core::KeySet;

#[derive(KeySet, Clone, Copy, PartialEq, Eq, Debug)]
pub enum NoRole {
    ListDbRead,
}

#[derive(KeySet, Clone, Copy, PartialEq, Eq, Debug)]
#[key_set(phases, endpoints)]
pub enum TwoRoles {
    ListDbRead,
}

#[derive(KeySet, Clone, Copy, PartialEq, Eq, Debug)]
#[key_set(phases, phases, rename_all = "lowercase", sorted)]
pub enum BadOptions {
    ListDbRead,
}

#[derive(KeySet, Clone, Copy, PartialEq, Eq, Debug)]
#[key_set(phases)]
pub enum DefaultPhase {
    #[key(default)]
    ListDbRead,
    #[key(hidden)]
    Enrich,
}

fn main() {}
