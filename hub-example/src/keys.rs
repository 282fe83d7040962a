//! The Hub's perf-trace key sets: its phases, its endpoint classes, and the
//! schema that ties them to the authorization store's methods.
//!
//! Names and order follow the contract: phases render snake_case, endpoint
//! classes carry their dotted names, and store methods come from
//! `#[counted_store]` on [`AuthzStore`](crate::store::AuthzStore).

use perf_trace_core::keys::{CounterSet, Groups};
use perf_trace_core::{KeySet, Schema};

use crate::store::AuthzStoreMethod;

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
#[derive(KeySet, Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[key_set(endpoints)]
pub enum EndpointClass {
    /// Anything that is not an agent list or an event stream.
    #[key(default)]
    Other,
    /// `GET /api/v1/agents` without paging parameters.
    #[key(rename = "agents.global.legacy")]
    GlobalLegacy,
    /// `GET /api/v1/agents` with `limit`, `cursor` or `sort`.
    #[key(rename = "agents.global.sorted")]
    GlobalSorted,
    /// `GET /api/v1/projects/{id}/agents` without paging parameters.
    #[key(rename = "agents.project.legacy")]
    ProjectLegacy,
    /// `GET /api/v1/projects/{id}/agents` with `limit`, `cursor` or `sort`.
    #[key(rename = "agents.project.sorted")]
    ProjectSorted,
    /// `GET /api/v1/projects/{id}/agents?ids=...`.
    #[key(rename = "agents.project.sorted_agent")]
    ProjectSortedAgent,
    /// `GET /events`.
    #[key(rename = "sse.events")]
    SseEvents,
    /// The web client's pages (`/`, `/projects/{id}`, `/graph`), on the
    /// web listener.
    #[key(rename = "web.page")]
    WebPage,
    /// The web client's assets (`/assets/{name}`), on the web listener.
    #[key(rename = "web.asset")]
    WebAsset,
    /// Browser sign-in, sign-out and the test login
    /// (`/api/v1/auth/...`), on the web listener.
    #[key(rename = "web.auth")]
    WebAuth,
}

/// The routes whose responses the Hub caches (see [`crate::cache`]): the
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
pub enum AuthzBatch {
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

/// Query parameters that turn a legacy full list into a sorted page.
const PAGING_PARAMS: [&str; 3] = ["limit", "cursor", "sort"];

/// Classifies a request from its method, path and query string alone (the
/// tracing layer asks before any handler runs).
pub fn classify(method: &http::Method, path: &str, query: Option<&str>) -> EndpointClass {
    if method != http::Method::GET {
        return EndpointClass::Other;
    }
    let has = |names: &[&str]| query.is_some_and(|q| query_has_key(q, names));
    match path.trim_end_matches('/') {
        "/events" => EndpointClass::SseEvents,
        "/api/v1/agents" => {
            if has(&PAGING_PARAMS) {
                EndpointClass::GlobalSorted
            } else {
                EndpointClass::GlobalLegacy
            }
        }
        p => match p
            .strip_prefix("/api/v1/projects/")
            .and_then(|rest| rest.strip_suffix("/agents"))
        {
            // Every byte looked at, with no early exit, which the compiler
            // turns into a few vector compares: `contains('/')` calls a
            // general search whose set-up costs more than a short id.
            Some(id) if !id.is_empty() && !id.bytes().fold(false, |seen, b| seen | (b == b'/')) => {
                if has(&["ids"]) {
                    EndpointClass::ProjectSortedAgent
                } else if has(&PAGING_PARAMS) {
                    EndpointClass::ProjectSorted
                } else {
                    EndpointClass::ProjectLegacy
                }
            }
            _ => EndpointClass::Other,
        },
    }
}

/// Classifies a request to one of the web client's own routes (the web
/// listener's tracing layer sits on those routes alone, so every other path
/// it is asked about is a page).
pub fn classify_web(path: &str) -> EndpointClass {
    if path.starts_with("/assets/") {
        EndpointClass::WebAsset
    } else if path.starts_with("/api/v1/auth/") {
        EndpointClass::WebAuth
    } else {
        EndpointClass::WebPage
    }
}

/// Whether `query` has a parameter named one of `names` (ASCII names with
/// nothing to decode). Every traced request is classified: a key that needs
/// no decoding, nearly all of them, is compared as it is, with no copy.
fn query_has_key(query: &str, names: &[&str]) -> bool {
    // One pass over the bytes, each pair's key compared as it ends: the
    // general `split` searches cost more than the short query itself.
    let bytes = query.as_bytes();
    let mut start = 0;
    while start <= bytes.len() {
        let rest = &bytes[start..];
        let pair_len = rest.iter().position(|&b| b == b'&').unwrap_or(rest.len());
        let pair = &rest[..pair_len];
        let key = &pair[..pair.iter().position(|&b| b == b'=').unwrap_or(pair.len())];
        let found = if key.iter().any(|&b| b == b'%' || b == b'+') {
            let decoded = form_urlencoded::parse(key).next();
            decoded.is_some_and(|(key, _)| names.contains(&key.as_ref()))
        } else {
            names.iter().any(|name| name.as_bytes() == key)
        };
        if found {
            return true;
        }
        start += pair_len + 1;
    }
    false
}

#[cfg(test)]
mod tests {
    use super::*;
    use http::Method;
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

    #[test]
    fn classifies_agent_lists_by_path_and_query() {
        let get = Method::GET;
        let p = "/api/v1/projects/0b7f1f2e-1c1d-4a7e-9a51-0f5b6c0c1d2e/agents";
        assert_eq!(classify(&get, p, None), EndpointClass::ProjectLegacy);
        assert_eq!(
            classify(&get, p, Some("limit=5")),
            EndpointClass::ProjectSorted
        );
        assert_eq!(
            classify(&get, p, Some("sort=name")),
            EndpointClass::ProjectSorted
        );
        assert_eq!(
            classify(&get, p, Some("ids=a,b&limit=2")),
            EndpointClass::ProjectSortedAgent
        );
        assert_eq!(
            classify(&get, "/api/v1/agents", None),
            EndpointClass::GlobalLegacy
        );
        assert_eq!(
            classify(&get, "/api/v1/agents", Some("projectId=x")),
            EndpointClass::GlobalLegacy
        );
        assert_eq!(
            classify(&get, "/api/v1/agents", Some("cursor=abc")),
            EndpointClass::GlobalSorted
        );
        assert_eq!(
            classify(&get, "/events", Some("sub=x")),
            EndpointClass::SseEvents
        );
    }

    #[test]
    fn query_keys_are_found_as_a_full_decoding_finds_them() {
        let names = ["limit", "ids"];
        let decoded = |q: &str| {
            form_urlencoded::parse(q.as_bytes()).any(|(k, _)| names.contains(&k.as_ref()))
        };
        for query in [
            "",
            "&",
            "=",
            "limit",
            "limit=",
            "=limit",
            "a=limit",
            "limit=1&b=2",
            "b=2&ids=x",
            "&&ids",
            "li%6Dit=3",
            "i%64s",
            "%69ds=1&x",
            "limit+=1",
            "lim+it=1",
            "limi%74",
            "%ZZ=1",
            "x=1&li%6dit",
            "idsx=1",
            "xids=1",
            "a=b=limit",
        ] {
            assert_eq!(query_has_key(query, &names), decoded(query), "{query:?}");
        }
    }

    #[test]
    fn web_routes_are_classified_by_kind() {
        assert_eq!(classify_web("/"), EndpointClass::WebPage);
        assert_eq!(classify_web("/projects/p1"), EndpointClass::WebPage);
        assert_eq!(classify_web("/graph"), EndpointClass::WebPage);
        assert_eq!(classify_web("/assets/app.js"), EndpointClass::WebAsset);
        assert_eq!(
            classify_web("/api/v1/auth/test-login"),
            EndpointClass::WebAuth
        );
        // The API's own classifier never gives a web class.
        for path in ["/", "/assets/app.js", "/api/v1/auth/session"] {
            assert_eq!(classify(&Method::GET, path, None), EndpointClass::Other);
        }
    }

    #[test]
    fn everything_else_is_other() {
        assert_eq!(
            classify(&Method::GET, "/healthz", None),
            EndpointClass::Other
        );
        assert_eq!(
            classify(&Method::GET, "/api/v1/agents/abc", None),
            EndpointClass::Other
        );
        assert_eq!(
            classify(&Method::PUT, "/api/v1/agents", None),
            EndpointClass::Other
        );
        assert_eq!(
            classify(&Method::GET, "/api/v1/projects//agents", None),
            EndpointClass::Other
        );
    }
}
