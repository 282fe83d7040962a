use perf_trace_core::counted_store;

#[counted_store(methods = AuthzMethod, metrics = true, methods = AuthzMethod2)]
pub trait AuthzStore {
    fn get_user(&self, id: u64) -> Option<String>;
}

#[counted_store(decorator = "CountedGroups")]
pub trait GroupStore {
    fn get_group(&self, id: u64) -> Option<String>;
}

#[counted_store(rename_all = "Pascal")]
pub trait UserStore {
    fn get_user(&self, id: u64) -> Option<String>;
}

fn main() {}
