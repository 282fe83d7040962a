use perf_trace_core::KeySet;

#[derive(KeySet, Clone, Copy, PartialEq, Eq, Debug)]
#[key_set(endpoints)]
pub enum NoDefault {
    #[key(rename = "agents.global.legacy")]
    AgentsGlobalLegacy,
    Other,
}

#[derive(KeySet, Clone, Copy, PartialEq, Eq, Debug)]
#[key_set(endpoints)]
pub enum TwoDefaults {
    #[key(default)]
    Other,
    #[key(default)]
    SseEvents,
}

fn main() {}
