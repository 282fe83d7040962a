use perf_trace_core::{counted_store, key, KeySet};

#[counted_store]
pub trait OrderStore {
    fn get_order(&self, id: u64) -> Option<String>;
    fn list_orders(&self) -> Vec<String>;
}

fn main() {
    let _ = key!(OrderStoreMethod::GetOrdr).name();
}
