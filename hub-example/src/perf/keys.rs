//! The Hub's perf-trace key sets: its phases, its endpoint classes, its
//! counters, and the schema that ties them to the authorization store's
//! methods. How a request gets its endpoint class is the policy's
//! (`policy.rs`).
//!
//! Names and order follow the contract: phases render snake_case, endpoint
//! classes carry their dotted names, and store methods come from
//! `#[counted_store]` on [`AuthzStore`](crate::store::AuthzStore).

use perf_trace_core::keys::{CounterSet, Groups};
use perf_trace_core::{KeySet, Schema};

use crate::store::AuthzStoreMethod;
// The routes of the endpoint classes, read at compile time.
use perf_trace_core::keys::EndpointKey;

/// The phases of the Hub's request paths, in the order an agent list or an
/// event stream runs them.
#[derive(KeySet, Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[key_set(phases)]
pub enum Phase {
    /// Deciding whether the caller may list agents in the requested scope.
    ListScopeAuthz,
    /// Reading agent rows from the database.
    ListDbRead,
    /// Deciding, per agent row, whether the caller may read it.
    ListReadAuthz,
    /// Adding each agent's creator display name.
    Enrich,
    /// Deciding which actions the caller may take on each agent.
    Capabilities,
    /// Deciding whether each agent can be messaged by the caller.
    Messageability,
    /// Deciding which actions the caller may take on the scope itself.
    ScopeCapabilities,
    /// Encoding the response body (timed by the tracing layer).
    Serialize,
    /// Expanding the requested event subjects.
    SseExpand,
    /// Deciding whether the caller may subscribe to each expanded subject.
    SseAuthorize,
    /// Writing one event to a stream.
    SseWrite,
}

/// The class of a request, as it appears in the `endpoint` key.
///
/// The agent lists, the event stream and the web client's routes carry
/// their routes (`#[key(route = ..)]`): the routers serve them at those
/// paths and the policies classify by them (`route_path`), so each path is
/// written once. A list's sorted shapes share its legacy class's route: the
/// query, not the path, tells them apart.
#[derive(KeySet, Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[key_set(endpoints)]
pub enum EndpointClass {
    /// Anything that is not an agent list or an event stream.
    #[key(default)]
    Other,
    /// `GET /api/v1/agents` without paging parameters.
    #[key(rename = "agents.global.legacy", route = "GET /api/v1/agents")]
    GlobalLegacy,
    /// `GET /api/v1/agents` with `limit`, `cursor` or `sort`.
    #[key(rename = "agents.global.sorted")]
    GlobalSorted,
    /// `GET /api/v1/projects/{id}/agents` without paging parameters.
    #[key(
        rename = "agents.project.legacy",
        route = "GET /api/v1/projects/{id}/agents"
    )]
    ProjectLegacy,
    /// `GET /api/v1/projects/{id}/agents` with `limit`, `cursor` or `sort`.
    #[key(rename = "agents.project.sorted")]
    ProjectSorted,
    /// `GET /api/v1/projects/{id}/agents?ids=...`.
    #[key(rename = "agents.project.sorted_agent")]
    ProjectSortedAgent,
    /// `GET /events`.
    #[key(rename = "sse.events", route = "GET /events")]
    SseEvents,
    /// The web client's pages (`/`, `/projects/{id}`, `/graph`), on the
    /// web listener.
    #[key(
        rename = "web.page",
        route = "GET /",
        route = "GET /projects/{id}",
        route = "GET /graph"
    )]
    WebPage,
    /// The web client's assets (`/assets/{name}`), on the web listener.
    #[key(rename = "web.asset", route = "GET /assets/{name}")]
    WebAsset,
    /// Browser sign-in, sign-out and the test login
    /// (`/api/v1/auth/...`), on the web listener.
    #[key(
        rename = "web.auth",
        route = "POST /api/v1/auth/session",
        route = "DELETE /api/v1/auth/session",
        route = "POST /api/v1/auth/test-login"
    )]
    WebAuth,
}

/// The path of `class`'s route (`#[key(route = ..)]`), as the router spells
/// it. A constant function, so the policy matches against constants, as it
/// did against literals; a class without a route fails the build.
pub(crate) const fn route_path(class: EndpointClass) -> &'static str {
    route_at(class, 0)
}

/// The path of `class`'s route number `n` (from 0, in the order its
/// `#[key(route = ..)]` lists them); a class with fewer fails the build.
pub(crate) const fn route_at(class: EndpointClass, n: usize) -> &'static str {
    let routes = <EndpointClass as EndpointKey>::ROUTES;
    let mut i = 0;
    let mut seen = 0;
    while i < routes.len() {
        let (_, path, routed) = routes[i];
        if routed as u8 == class as u8 {
            if seen == n {
                return path;
            }
            seen += 1;
        }
        i += 1;
    }
    panic!("the endpoint class has no such `#[key(route = ..)]`")
}

/// The folder of `path`: up to and including its last `/`
/// (`/api/v1/auth/` for `/api/v1/auth/session`).
pub(crate) const fn folder(path: &'static str) -> &'static str {
    let bytes = path.as_bytes();
    let mut end = bytes.len();
    while end > 0 && bytes[end - 1] != b'/' {
        end -= 1;
    }
    path.split_at(end).0
}

/// The part of `route` before its one `{param}` segment and the part after
/// it: `("/api/v1/projects/", "/agents")` for
/// `/api/v1/projects/{id}/agents`. A route without a parameter fails the
/// build.
pub(crate) const fn around_param(route: &'static str) -> (&'static str, &'static str) {
    let bytes = route.as_bytes();
    let mut open = 0;
    while open < bytes.len() && bytes[open] != b'{' {
        open += 1;
    }
    let mut close = open;
    while close < bytes.len() && bytes[close] != b'}' {
        close += 1;
    }
    assert!(close < bytes.len(), "the route has no `{{param}}` segment");
    let (before, rest) = route.split_at(open);
    let (_, after) = rest.split_at(close + 1 - open);
    (before, after)
}

/// The routes whose responses the Hub caches (the response cache's): the
/// set [`CacheOutcome`] is counted by, and the rows of
/// `GET /api/v1/admin/cache`. Nothing classifies requests by it; it is an
/// endpoint set because its keys are classes of request, and such a set
/// names a default, here simply the first route.
#[derive(KeySet, Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[key_set(endpoints)]
pub enum CacheRoute {
    /// `GET /api/v1/settings/public`.
    #[key(default, rename = "settings.public")]
    SettingsPublic,
    /// `GET /api/v1/projects/{id}/agents`, every shape.
    #[key(rename = "agents.project")]
    AgentsProject,
    /// `GET /api/v1/agents`, every shape.
    #[key(rename = "agents.global")]
    AgentsGlobal,
    /// `GET /api/v1/agents/{id}`.
    #[key(rename = "agents.by_id")]
    AgentsById,
}

/// How the response cache answered a request of a cached route, per route:
/// `cache_<route>_<outcome>` on the line (`cache_agents.project_hit`).
#[derive(KeySet, Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[key_set(counters, prefix = "cache", by = CacheRoute)]
pub enum CacheOutcome {
    /// From a stored entry: no store call, no decision.
    Hit,
    /// Computed by this request (and stored when it was a 200).
    Miss,
    /// Joined another request's computation in flight.
    Shared,
}

/// Batched authorization: the agent lists decide a page in one batch per
/// question (read, capabilities, messageability) instead of one call per
/// agent. `authz_batch_count` batches, `authz_batch_largest` the most
/// decisions one batch made.
#[derive(KeySet, Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[key_set(counters, prefix = "authz_batch")]
pub(crate) enum AuthzBatch {
    /// Batches decided.
    Count,
    /// Decisions in the largest batch.
    #[key(max)]
    Largest,
}

/// The Hub's schema: what one request's recorder holds.
#[derive(Debug, Clone, Copy)]
pub struct HubSchema;

impl Schema for HubSchema {
    type Phase = Phase;
    type StoreMethod = AuthzStoreMethod;
    type Endpoint = EndpointClass;
    const SERIALIZE: Option<Phase> = Some(Phase::Serialize);
    const COUNTERS: &'static [CounterSet] = &[
        CounterSet::of::<CacheOutcome>(),
        CounterSet::of::<AuthzBatch>(),
    ];
    /// The Scion contract's line: decisions, store total, pool, SSE.
    const GROUPS: Groups = Groups::SCION;
}

#[cfg(test)]
mod tests {
    use super::*;
    use perf_trace_core::keys::EndpointKey;
    use perf_trace_core::KeySet;

    #[test]
    fn key_names_follow_the_contract() {
        assert_eq!(
            Phase::NAMES,
            [
                "list_scope_authz",
                "list_db_read",
                "list_read_authz",
                "enrich",
                "capabilities",
                "messageability",
                "scope_capabilities",
                "serialize",
                "sse_expand",
                "sse_authorize",
                "sse_write",
            ]
        );
        assert_eq!(
            EndpointClass::NAMES,
            [
                "other",
                "agents.global.legacy",
                "agents.global.sorted",
                "agents.project.legacy",
                "agents.project.sorted",
                "agents.project.sorted_agent",
                "sse.events",
                "web.page",
                "web.asset",
                "web.auth",
            ]
        );
        assert_eq!(EndpointClass::DEFAULT, EndpointClass::Other);
        assert_eq!(
            AuthzStoreMethod::NAMES,
            [
                "GetEffectiveGroups",
                "GetEffectiveGroupsForAgent",
                "GetParentGroups",
                "GetUserGroups",
                "GetGroupMembership",
                "GetGroupBySlug",
                "ListRoleBindingsForPrincipals",
                "ListRoleBindingsForPrincipal",
                "GetRoleDefinition",
                "GetRoleDefinitionsByIDs",
                "GetRoleDefinitionByName",
                "ListAccessConstraints",
                "GetDelegationEdgesForDelegate",
                "GetUser",
                "GetUserAccessToken",
                "GetAgent",
                "GetProject",
                "GetProjectMembership",
                "GetHubSetting",
            ]
        );
    }
}
