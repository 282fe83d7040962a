use std::sync::Arc;

use perf_trace_core::counted_store;

macro_rules! getter {
    ($name:ident) => {
        fn $name(&self) -> u32;
    };
}

#[counted_store]
pub trait AuthzStore {
    fn get_user(&self, id: u64) -> Option<String>;

    fn open(path: &str) -> Self
    where
        Self: Sized;

    fn get_shared(self: Arc<Self>, id: u64) -> Option<String>;

    fn merge(&self, other: &Self) -> u32;

    getter!(get_count);
}

fn main() {}
