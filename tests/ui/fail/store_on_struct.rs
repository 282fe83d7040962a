use perf_trace_core::counted_store;

#[counted_store]
pub struct AuthzStore {
    users: Vec<String>,
}

#[counted_store]
impl AuthzStore {
    pub fn get_user(&self, i: usize) -> &str {
        &self.users[i]
    }
}

fn main() {
    let store = AuthzStore { users: vec!["a".into()] };
    let _ = store.get_user(0);
}
