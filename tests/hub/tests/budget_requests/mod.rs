//! The requests of the count budgets and the count snapshots: the agent
//! endpoints' request shapes on the budget fixture (rand seed 42, 100 agents
//! in the main project and 10 in the second), the callers that send them,
//! and a Hub whose store makes one extra read per agent (an N+1 regression)
//! to show that both catch it.

#![allow(dead_code)]

use std::fmt;

use axum::body::Body;
use axum::http::{Request, StatusCode};
use axum::Router;
use hub_example::auth::tokens::TokenSigner;
use hub_example::authz::{ChannelAuditSink, TracedAuditEmitter};
use hub_example::events::EventBus;
use hub_example::log::{CaptureBuffer, Logger};
use hub_example::model::{
    AccessConstraint, Agent, DelegationEdge, Group, GroupMembership, Id, PrincipalRef, Project,
    ProjectMembership, RoleBinding, RoleDefinition, User, UserAccessToken,
};
use hub_example::perf::exits::HubExits;
use hub_example::perf::keys::HubSchema;
use hub_example::perf::trace_layer;
use hub_example::seed::SeedDocument;
use hub_example::settings::hub::Stored;
use hub_example::store::agents::{read_agents, RowQuery, RowScope};
use hub_example::store::db::Db;
use hub_example::store::{AuthzStore, CountedAuthzStore, Store, StoreResult};
use hub_example::{build_router, AppState};
use perf_trace_core::testing::{perf_traced_request, TracedResponse};

use crate::hub_support::{Seeded, SECRET};

/// Agents in the main project of the budget fixture.
pub const AGENTS: u32 = 100;

/// Agents in the main project of the second size, for the growth checks.
pub const SMALL_AGENTS: u32 = 25;

/// Who sends the requests.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Caller {
    /// The seeded non-admin member of the main project (the budgets' caller).
    Member,
    /// The seeded unscoped platform admin.
    Admin,
}

impl Caller {
    fn token(self, doc: &SeedDocument) -> &str {
        match self {
            Caller::Member => &doc.member_token,
            Caller::Admin => &doc.admin_token,
        }
    }
}

impl fmt::Display for Caller {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Caller::Member => "member",
            Caller::Admin => "admin",
        })
    }
}

/// One request of the budget set.
#[derive(Debug, Clone)]
pub struct Shape {
    pub name: &'static str,
    pub uri: String,
    /// Whether it lists agents (every request but the single agent).
    pub list: bool,
}

/// The agents the by-id requests name: those the seeder writes first, by
/// index, so they are the same kind of agent at every size (the first four
/// have one creator each).
#[derive(Debug, Clone)]
pub struct Picks {
    /// Three agents of the main project, with three different creators.
    pub page_ids: [String; 3],
    /// One agent of the main project, created by the member.
    pub agent: String,
}

/// The budget set's requests, in the order they run.
pub fn shapes(doc: &SeedDocument, picks: &Picks) -> Vec<Shape> {
    let project = format!("/api/v1/projects/{}/agents", doc.project_id);
    let list = |name, uri: String| Shape {
        name,
        uri,
        list: true,
    };
    vec![
        list("project-first-page", format!("{project}?limit=50")),
        list(
            "project-page-by-ids",
            format!("{project}?ids={}", picks.page_ids.join(",")),
        ),
        list("project-graph", format!("{project}?limit=500")),
        list("global-first-page", "/api/v1/agents?limit=50".into()),
        list("global-legacy-full", "/api/v1/agents".into()),
        list("global-compact", "/api/v1/agents?view=compact".into()),
        Shape {
            name: "agent-by-id",
            uri: format!("/api/v1/agents/{}", picks.agent),
            list: false,
        },
    ]
}

/// A GET as `caller`, the way a client sends it.
pub fn get_as(doc: &SeedDocument, caller: Caller, uri: &str) -> Request<Body> {
    Request::get(uri)
        .header("authorization", format!("Bearer {}", caller.token(doc)))
        .body(Body::empty())
        .unwrap()
}

/// Serves `shape`'s request as `caller` in-process with a fresh recorder,
/// checked to be a 200.
pub async fn traced_shape(
    router: &Router,
    doc: &SeedDocument,
    caller: Caller,
    shape: &Shape,
) -> TracedResponse {
    let response =
        perf_traced_request::<HubSchema, _, _, _>(router.clone(), get_as(doc, caller, &shape.uri))
            .await
            .unwrap_or_else(|e| panic!("{caller} {}: {e}", shape.name));
    assert_eq!(
        response.status,
        StatusCode::OK,
        "{caller} {} ({}): {}",
        shape.name,
        shape.uri,
        String::from_utf8_lossy(&response.body)
    );
    response
}

/// The first request to a fresh Hub (the one the counts may differ on): the
/// project's full list as the member, from which the by-id requests pick
/// their agents.
pub async fn first_request(router: &Router, doc: &SeedDocument) -> Picks {
    let uri = format!("/api/v1/projects/{}/agents?limit=500", doc.project_id);
    let response = perf_traced_request::<HubSchema, _, _, _>(
        router.clone(),
        get_as(doc, Caller::Member, &uri),
    )
    .await
    .unwrap();
    assert_eq!(response.status, StatusCode::OK, "the first request");
    let json: serde_json::Value = serde_json::from_slice(&response.body).unwrap();
    let agents = json["agents"].as_array().unwrap();
    assert_eq!(agents.len() as u32, doc.agent_count);
    // Seeded names end in the agent's index (`amber-otter-00001`).
    let by_index = |index: u32| -> String {
        let suffix = format!("-{index:05}");
        let agent = agents
            .iter()
            .find(|a| a["name"].as_str().unwrap().ends_with(&suffix))
            .unwrap_or_else(|| panic!("no seeded agent {suffix}"));
        agent["id"].as_str().unwrap().to_owned()
    };
    let creator = |id: &str| -> String {
        let agent = agents.iter().find(|a| a["id"] == id).unwrap();
        agent["createdBy"]["id"].as_str().unwrap().to_owned()
    };
    let picks = Picks {
        page_ids: [by_index(0), by_index(1), by_index(2)],
        agent: by_index(1),
    };
    let mut creators: Vec<String> = picks.page_ids.iter().map(|id| creator(id)).collect();
    creators.sort();
    creators.dedup();
    assert_eq!(creators.len(), 3, "three creators: {creators:?}");
    assert_eq!(creator(&picks.agent), doc.member_user_id.as_str());
    picks
}

/// An authorization store with an N+1 read: its batched constraints read
/// also reads every agent of the projects asked about, one `GetAgent` round
/// trip each. Every read, the extra ones included, goes through the counting
/// decorator, as any read on the request path does.
pub struct RereadingStore<S: AuthzStore> {
    store: CountedAuthzStore<S>,
    db: Db,
}

/// Trait methods that call the counted store's own, unchanged.
macro_rules! passed_on {
    ($(fn $name:ident($($arg:ident: $ty:ty),*) -> $out:ty;)*) => {
        $(
            fn $name(&self, $($arg: $ty),*) -> StoreResult<$out> {
                self.store.$name($($arg),*)
            }
        )*
    };
}

impl<S: AuthzStore> AuthzStore for RereadingStore<S> {
    passed_on! {
        fn get_effective_groups(user_id: &str) -> Vec<Id>;
        fn get_effective_groups_for_agent(agent_id: &str) -> Vec<Id>;
        fn get_parent_groups(group_id: &str) -> Vec<Group>;
        fn get_user_groups(user_id: &str) -> Vec<Group>;
        fn get_group_membership(group_id: &str, principal: &PrincipalRef) -> Option<GroupMembership>;
        fn get_group_by_slug(slug: &str) -> Option<Group>;
        fn list_role_bindings_for_principals(principals: &[PrincipalRef]) -> Vec<RoleBinding>;
        fn list_role_bindings_for_principal(principal: &PrincipalRef) -> Vec<RoleBinding>;
        fn get_role_definition(id: &str) -> Option<RoleDefinition>;
        fn get_role_definitions_by_ids(ids: &[Id]) -> Vec<RoleDefinition>;
        fn get_role_definition_by_name(name: &str) -> Option<RoleDefinition>;
        fn get_delegation_edges_for_delegate(delegate: &PrincipalRef) -> Vec<DelegationEdge>;
        fn get_user(id: &str) -> Option<User>;
        fn get_user_access_token(token_hash: &[u8; 32]) -> Option<UserAccessToken>;
        fn get_agent(id: &str) -> Option<Agent>;
        fn get_project(id: &str) -> Option<Project>;
        fn get_project_membership(project_id: &str, user_id: &str) -> Option<ProjectMembership>;
        fn get_hub_setting(key: &str) -> Option<Stored>;
    }

    /// The N+1 read: every agent of the projects asked about, one by one.
    fn list_access_constraints(&self, project_ids: &[Id]) -> StoreResult<Vec<AccessConstraint>> {
        let constraints = self.store.list_access_constraints(project_ids)?;
        let rows = read_agents(
            &self.db,
            &RowQuery {
                scope: &RowScope::Projects(project_ids.to_vec()),
                ids: None,
                page: None,
            },
        )?;
        for agent in &rows.agents {
            self.store.get_agent(&agent.id)?;
        }
        Ok(constraints)
    }
}

/// The Hub's traced router over [`RereadingStore`]: the same assembly as a
/// Hub with tracing on, with the store swapped.
pub fn rereading_router(seeded: &Seeded) -> Router {
    let db = seeded.db();
    let inner = Store::open(&db);
    let logger = Logger::new(CaptureBuffer::new().writer(), false);
    let (sink, _audit_log) = ChannelAuditSink::start(16_384, 0);
    let store = RereadingStore {
        store: CountedAuthzStore::new(inner),
        db: db.clone(),
    };
    let layer = trace_layer(&logger, db.pool_stats(), &HubExits::default());
    let state = AppState::new(
        store,
        TracedAuditEmitter::new(sink),
        db,
        EventBus::default(),
        TokenSigner::from_session_secret(SECRET),
    );
    build_router(state, Some(layer))
}
