//! The Hub's API routes: each path and the handler that answers it. The
//! traced classes' paths are their keys' routes (`#[key(route = ..)]` in
//! `perf/keys.rs`), the ones the policy classifies by.

use std::sync::Arc;

use axum::routing::{get, put};
use axum::Router;

use crate::api::state::AppState;
use crate::api::{
    admin, agents, audit_events, delegations, events, method_not_allowed, not_found, profiling,
    public,
};
use crate::authz::AuditEmitter;
use crate::perf::keys::{route_path, EndpointClass};
use crate::perf::HubTraceLayer;
use crate::store::AuthzStore;

use super::layers::{self, Scope};

/// Builds the router over `state`. With `trace`, the tracing layer wraps
/// every route inside authentication (the one place it is installed).
pub fn build_router<S: AuthzStore, A: AuditEmitter>(
    state: AppState<S, A>,
    trace: Option<HubTraceLayer>,
) -> Router {
    build_router_with(state, trace, None)
}

/// [`build_router`] with `extra` routes merged in beside the Hub's own, so
/// they are authenticated, traced and guarded like them. The Hub's command
/// line never adds any; tests use it for routes the real Hub does not have
/// (a handler that panics).
///
/// The routes get the API's layers (the `layers` module's order): the
/// request timeout of the state's limits; a handler panic becomes a JSON
/// 500; oversized paths, queries and headers are refused; authentication;
/// tracing; the answer to a failure of the Hub's own while
/// authenticating.
pub(crate) fn build_router_with<S: AuthzStore, A: AuditEmitter>(
    state: AppState<S, A>,
    trace: Option<HubTraceLayer>,
    extra: Option<Router>,
) -> Router {
    let routes: Router = Router::new()
        .route(public::HEALTHZ, get(public::healthz::<S, A>))
        .route(
            public::PUBLIC_SETTINGS,
            get(public::public_settings::<S, A>),
        )
        .route(
            route_path(EndpointClass::ProjectLegacy),
            get(agents::project_agents::<S, A>),
        )
        .route(
            route_path(EndpointClass::GlobalLegacy),
            get(agents::global_agents::<S, A>),
        )
        .route("/api/v1/agents/{id}", get(agents::get_agent::<S, A>))
        .route(
            "/api/v1/agents/{id}/status",
            put(agents::put_status::<S, A>),
        )
        .route(
            route_path(EndpointClass::SseEvents),
            get(events::events::<S, A>),
        )
        .route(
            "/api/v1/admin/server-config",
            put(admin::put_server_config::<S, A>),
        )
        .route(
            "/api/v1/projects/{id}/delegations",
            get(delegations::get_project_delegations::<S, A>),
        )
        .route("/api/v1/profiling", get(profiling::get_profiling::<S, A>))
        .route(
            "/api/v1/admin/profiling",
            put(profiling::put_profiling::<S, A>),
        )
        .route("/api/v1/admin/cache", get(admin::get_cache::<S, A>))
        .route(
            "/api/v1/admin/audit-events",
            get(audit_events::audit_events::<S, A>),
        )
        .fallback(not_found)
        .method_not_allowed_fallback(method_not_allowed)
        .with_state(state.clone());
    let routes = match extra {
        Some(extra) => routes.merge(extra),
        None => routes,
    };
    let request_timeout = state.guards().limits.request_timeout;
    // Authenticating reads the database before the tracing layer
    // starts: its pool waits belong to the request's line too.
    let state = match trace.is_some() {
        true => state.noting_pool_baseline(),
        false => state,
    };
    let scope = Scope::Api {
        authenticate: Arc::new(state),
        trace,
    };
    layers::stack(routes, request_timeout, scope)
}
