use perf_trace_core::keys::{EndpointKey, PhaseKey, StoreMethodKey};
use perf_trace_core::KeySet;

#[derive(KeySet, Clone, Copy, PartialEq, Eq, Hash, Debug)]
#[key_set(phases)]
pub enum Phase {
    ListScopeAuthz,
    ListDbRead,
    ListReadAuthz,
    Enrich,
    Capabilities,
    Messageability,
    ScopeCapabilities,
    Serialize,
    SseExpand,
    SseAuthorize,
    SseWrite,
}

#[derive(KeySet, Clone, Copy, PartialEq, Eq, Debug)]
#[key_set(store_methods, rename_all = "PascalCase")]
pub enum StoreMethod {
    ListRoleBindingsForPrincipals,
    GetRoleDefinitionsByIDs,
    GetUser,
}

#[derive(KeySet, Clone, Copy, PartialEq, Eq, Debug)]
#[key_set(endpoints)]
pub enum Endpoint {
    #[key(default)]
    Other,
    #[key(rename = "agents.global.legacy")]
    AgentsGlobalLegacy,
    #[key(rename = "agents.project.sorted_agent")]
    AgentsProjectSortedAgent,
    #[key(rename = "sse.events")]
    SseEvents,
}

#[derive(KeySet, Clone, Copy, PartialEq, Eq, Debug)]
#[key_set(phases, rename_all = "kebab-case")]
pub enum Kebab {
    SseWrite,
    #[key(rename = "custom")]
    Other,
}

#[derive(KeySet, Clone, Copy, PartialEq, Eq, Debug)]
#[key_set(rename_all = "SCREAMING_SNAKE_CASE")]
#[key_set(store_methods)]
enum Loud {
    GetUser = 10,
    HTTPGet = 3,
}

#[derive(KeySet, Clone, Copy, PartialEq, Eq, Debug)]
#[key_set(phases, rename_all = "camelCase")]
enum Camel {
    GetUserIDs,
}

fn phase<P: PhaseKey>(_: P) {}
fn store<M: StoreMethodKey>(_: M) {}

fn main() {
    assert_eq!(Phase::NAMES[0], "list_scope_authz");
    assert_eq!(Phase::NAMES.len(), 11);
    assert_eq!(Phase::SseWrite.name(), "sse_write");
    assert_eq!(Phase::SseWrite.index(), 10);
    let sorted: Vec<_> = Phase::SORTED.iter().map(|&i| Phase::NAMES[i as usize]).collect();
    let mut expected = Phase::NAMES.to_vec();
    expected.sort();
    assert_eq!(sorted, expected);
    assert_eq!(
        StoreMethod::NAMES,
        ["ListRoleBindingsForPrincipals", "GetRoleDefinitionsByIDs", "GetUser"]
    );
    assert_eq!(StoreMethod::SORTED, [1, 2, 0]);
    assert_eq!(Endpoint::DEFAULT, Endpoint::Other);
    assert_eq!(
        Endpoint::NAMES,
        ["other", "agents.global.legacy", "agents.project.sorted_agent", "sse.events"]
    );
    assert_eq!(Kebab::NAMES, ["sse-write", "custom"]);
    assert_eq!(Loud::NAMES, ["GET_USER", "HTTP_GET"]);
    assert_eq!(Loud::HTTPGet.index(), 1);
    assert_eq!(Camel::NAMES, ["getUserIDs"]);
    phase(Phase::Enrich);
    phase(Kebab::Other);
    phase(Camel::GetUserIDs);
    store(StoreMethod::GetUser);
    store(Loud::GetUser);
}
