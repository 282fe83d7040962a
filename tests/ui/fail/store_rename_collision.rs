use perf_trace_core::counted_store;

#[counted_store]
pub trait AuthzStore {
    fn get_role_definitions_by_ids(&self, ids: &[u64]) -> Vec<String>;

    #[counted(rename = "GetRoleDefinitionsByIds")]
    fn get_role_definitions_by_ids_v2(&self, ids: &[u64]) -> Vec<String>;
}

#[counted_store]
pub trait EmptyStore {
    #[counted(skip)]
    fn name(&self) -> &str;
}

fn main() {}
