use perf_trace_core::counted_store;

#[counted_store]
pub trait AuthzStore {
    #[counted(sampled)]
    fn get_user(&self, id: u64) -> Option<String>;

    #[counted(skip, skip)]
    fn get_agent(&self, id: u64) -> Option<String>;

    #[counted(rename = "Get Project")]
    fn get_project(&self, id: u64) -> Option<String>;

    #[counted(skip, rename = "GetHub")]
    fn get_hub_setting(&self, key: &str) -> Option<String>;
}

fn main() {}
