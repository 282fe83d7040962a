//! Agent endpoints: the project and global lists, one agent, and status changes.

use std::rc::Rc;

use axum::extract::rejection::{BytesRejection, PathRejection};
use axum::extract::{Path, RawQuery, State};
use axum::response::{IntoResponse, Response};
use axum::Extension;
use bytes::Bytes;
use serde::Deserialize;

use super::cached::respond;
use super::params::{parse_id, parse_id_list, parse_view, Params};
use super::state::AppState;
use super::{ApiError, LazyJson};
use crate::authz::{Action, AuditEmitter, Authorizer, Principal};
use crate::cache::{normalize_query, CacheKey, CallerKey};
use crate::events::HubEvent;
use crate::listing::{self, ListRequest, ListShape, ListTarget};
use crate::model::{Agent, AgentActivity, AgentPhase, Id};
use crate::paging::PageRequest;
use crate::perf::keys::CacheRoute;
use crate::replicas::Invalidation;
use crate::store::{agents, AuthzStore};
use crate::views::CompactAgentView;

const PAGING: [&str; 3] = ["limit", "cursor", "sort"];

fn path_id(
    path: Result<Path<String>, PathRejection>,
    what: &str,
) -> Result<crate::model::Id, ApiError> {
    let Path(text) = path.map_err(|_| ApiError::bad_request(format!("invalid {what} id")))?;
    parse_id(&text, what)
}

fn shape(params: &Params, allow_ids: bool) -> Result<ListShape, ApiError> {
    if let Some(ids) = params.single("ids")?.filter(|_| allow_ids) {
        if params.has_any(&["cursor"]) {
            return Err(ApiError::bad_request("ids cannot be combined with cursor"));
        }
        return Ok(ListShape::Ids(parse_id_list(ids)?));
    }
    if !params.has_any(&PAGING) {
        return Ok(ListShape::Legacy);
    }
    let page = PageRequest::from_params(
        params.single("limit")?,
        params.single("sort")?,
        params.single("cursor")?,
    )
    .map_err(|e| ApiError::bad_request(e.to_string()))?;
    Ok(ListShape::Page(page))
}

/// The cache key of a request of `route` by `principal`, showing what
/// `stamp` covers.
fn cache_key(
    route: CacheRoute,
    path_id: Option<&crate::model::Id>,
    query: Option<&str>,
    principal: &Principal,
    stamp: (u64, u64),
) -> CacheKey {
    CacheKey {
        route,
        path_id: path_id.map(|id| id.to_string()),
        query: normalize_query(query),
        caller: CallerKey::from(principal),
        stamp,
    }
}

/// Answers a list from the cache, or computes it when the caller's quota
/// of uncached lists allows (a Hub built without one computes every miss).
async fn run_list<S: AuthzStore, A: AuditEmitter>(
    state: AppState<S, A>,
    principal: Principal,
    request: ListRequest,
    key: CacheKey,
) -> Result<Response, ApiError> {
    let cache = state.cache().clone();
    respond(&cache, key, || async move {
        if let Some(quota) = &state.guards().list_quota {
            quota.take(&principal.reference())?;
        }
        Ok(perf_trace_core::scope::spawn_blocking(move || {
            let authz = state.authorizer(&principal);
            listing::list_agents(&authz, state.db(), &request)
        })
        .await??)
    })
    .await
}

/// `GET /api/v1/projects/{id}/agents`: the full list, a sorted page
/// (`limit`, `cursor`, `sort`), or the agents named by `ids`.
pub(crate) async fn project_agents<S: AuthzStore, A: AuditEmitter>(
    State(state): State<AppState<S, A>>,
    Extension(principal): Extension<Principal>,
    path: Result<Path<String>, PathRejection>,
    RawQuery(query): RawQuery,
) -> Result<Response, ApiError> {
    let project = path_id(path, "project")?;
    let params = Params::parse(query.as_deref());
    let stamp = state.cache().generations().of_scope(&project);
    let key = cache_key(
        CacheRoute::AgentsProject,
        Some(&project),
        query.as_deref(),
        &principal,
        stamp,
    );
    let request = ListRequest {
        target: ListTarget::Project(project),
        shape: shape(&params, true)?,
        view: parse_view(params.single("view")?)?,
    };
    run_list(state, principal, request, key).await
}

/// `GET /api/v1/agents`: every agent the caller may list, or one project's
/// (`projectId`), in full or as sorted pages, full or compact (`view`).
pub(crate) async fn global_agents<S: AuthzStore, A: AuditEmitter>(
    State(state): State<AppState<S, A>>,
    Extension(principal): Extension<Principal>,
    RawQuery(query): RawQuery,
) -> Result<Response, ApiError> {
    let params = Params::parse(query.as_deref());
    let target = match params.single("projectId")? {
        Some(id) => ListTarget::Project(parse_id(id, "project")?),
        None => ListTarget::Global,
    };
    let request = ListRequest {
        target,
        shape: shape(&params, false)?,
        view: parse_view(params.single("view")?)?,
    };
    // Any agent write moves this stamp: a global list shows every project.
    let stamp = state.cache().generations().of_all_agents();
    let key = cache_key(
        CacheRoute::AgentsGlobal,
        None,
        query.as_deref(),
        &principal,
        stamp,
    );
    run_list(state, principal, request, key).await
}

/// `GET /api/v1/agents/{id}`.
pub(crate) async fn get_agent<S: AuthzStore, A: AuditEmitter>(
    State(state): State<AppState<S, A>>,
    Extension(principal): Extension<Principal>,
    path: Result<Path<String>, PathRejection>,
) -> Result<Response, ApiError> {
    let id = path_id(path, "agent")?;
    // The handler reads no query, so the key has none.
    let stamp = state.cache().generations().of_scope(&id);
    let key = cache_key(CacheRoute::AgentsById, Some(&id), None, &principal, stamp);
    let cache = state.cache().clone();
    respond(&cache, key, || async move {
        perf_trace_core::scope::spawn_blocking(move || {
            let authz = state.authorizer(&principal);
            let agent = allowed_agent(&authz, &id, Action::AgentRead)?;
            let agents = [agent.as_ref().clone()];
            let creators = listing::enrich(&authz, &agents)?;
            let caps = listing::capabilities(&authz, &agents)?;
            let messageable = listing::messageability(&authz, &agents)?;
            let [agent] = agents;
            Ok(listing::full_view(
                agent,
                &creators,
                caps[0],
                messageable[0],
            ))
        })
        .await?
    })
    .await
}

/// The agent `id`, when the caller may take `action` on it: a 404 when
/// there is none, a 403 when the caller may not.
fn allowed_agent<S: AuthzStore, A: AuditEmitter>(
    authz: &Authorizer<'_, S, A>,
    id: &Id,
    action: Action,
) -> Result<Rc<Agent>, ApiError> {
    let agent = authz
        .memo()
        .agent(id)?
        .ok_or_else(|| ApiError::not_found("agent"))?;
    if !authz.allow_agent(action, &agent)? {
        return Err(ApiError::forbidden());
    }
    Ok(agent)
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct StatusChange {
    phase: AgentPhase,
    #[serde(default)]
    activity: Option<AgentActivity>,
}

/// `PUT /api/v1/agents/{id}/status` with `{"phase": ..., "activity": ...}`:
/// changes the agent's status and publishes an `agent.status` event.
pub(crate) async fn put_status<S: AuthzStore, A: AuditEmitter>(
    State(state): State<AppState<S, A>>,
    Extension(principal): Extension<Principal>,
    path: Result<Path<String>, PathRejection>,
    body: Result<Bytes, BytesRejection>,
) -> Result<Response, ApiError> {
    let id = path_id(path, "agent")?;
    let body = body?;
    let change: StatusChange = serde_json::from_slice(&body).map_err(|_| {
        ApiError::bad_request(
            "body must be {\"phase\": created|provisioning|running|stopped|error, \"activity\"?: idle|working|waiting_for_input|completed|blocked}",
        )
    })?;
    let bus = state.bus().clone();
    let updated = perf_trace_core::scope::spawn_blocking(move || {
        let authz = state.authorizer(&principal);
        allowed_agent(&authz, &id, Action::AgentUpdate)?;
        // The time is taken, the row written and the event published in
        // one turn, and the event carries the committed row.
        let _order = bus.write_order();
        let updated = agents::update_agent_status(
            state.db(),
            &id,
            change.phase,
            change.activity,
            crate::clock::now_ms(),
        )?
        .ok_or_else(|| ApiError::not_found("agent"))?;
        // Committed: cached reads of the agent, of its project's lists and
        // of the global lists are not found again, here and on the other
        // replicas, before the event tells anyone to read them.
        state.invalidate(Invalidation::agent(&updated));
        bus.publish(HubEvent::agent_status(&updated));
        Ok::<_, ApiError>(updated)
    })
    .await??;
    Ok(LazyJson::new(CompactAgentView::from(updated)).into_response())
}
