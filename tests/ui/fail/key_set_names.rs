use perf_trace_core::KeySet;

#[derive(KeySet, Clone, Copy, PartialEq, Eq, Debug)]
#[key_set(phases)]
pub enum Phase {
    ListDbRead,
    #[key(rename = "list_db_read")]
    ListDbReadAgain,
    #[key(rename = "sse write")]
    SseWrite,
    #[key(rename = "a=b")]
    Assign,
    #[key(rename = "")]
    Empty,
}

#[derive(KeySet, Clone, Copy, PartialEq, Eq, Debug)]
#[key_set(phases)]
pub enum Phase2 {
    GetUserIDs,
    GetUserIds,
}

fn main() {}
