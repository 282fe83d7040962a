//! Unauthenticated endpoints: health and public settings.

use axum::extract::State;
use axum::response::Response;
use axum::Json;
use serde_json::{json, Value};

use super::cached::respond;
use super::state::AppState;
use super::ApiError;
use crate::authz::AuditEmitter;
use crate::cache::{CacheKey, CallerKey};
use crate::perf::keys::CacheRoute;
use crate::store::AuthzStore;

/// The health check's path, which the accept loop also serves past the
/// connection cap.
pub(crate) const HEALTHZ: &str = "/healthz";

/// The public settings' path.
pub(crate) const PUBLIC_SETTINGS: &str = "/api/v1/settings/public";

/// The Hub's version, as `GET /api/v1/settings/public` reports it.
pub(crate) const HUB_VERSION: &str = env!("CARGO_PKG_VERSION");

/// `GET /healthz`: `{"status":"ok"}`, with the audit pipeline's figures
/// under `audit` when the emitter keeps them (its summaries among them),
/// and the connections' figures under `connections` while the Hub serves
/// (see [`crate::connections`]). The status is `degraded` (still 200) from
/// a rejected audit record or a failed batch until the queue has drained
/// and none has happened for
/// `RECOVERY_WINDOW`, and while the
/// audit writer is stalled (`audit.stalled`, back to `ok` once it writes
/// again): an audit outage warns and never breaks a request.
pub async fn healthz<S: AuthzStore, A: AuditEmitter>(
    State(state): State<AppState<S, A>>,
) -> Json<Value> {
    let mut health = match state.audit().health() {
        Some(audit) => json!({
            "status": if audit.is_degraded() { "degraded" } else { "ok" },
            "audit": audit,
        }),
        None => json!({ "status": "ok" }),
    };
    if let Some(connections) = state.connections().figures() {
        health["connections"] = json!(connections);
    }
    Json(health)
}

/// `GET /api/v1/settings/public`: what any client may know about the Hub.
/// The same for every caller and every query, so cached under one key.
pub(crate) async fn public_settings<S: AuthzStore, A: AuditEmitter>(
    State(state): State<AppState<S, A>>,
) -> Result<Response, ApiError> {
    let cache = state.cache();
    let key = CacheKey {
        route: CacheRoute::SettingsPublic,
        path_id: None,
        query: String::new(),
        caller: CallerKey::Anyone,
        stamp: cache.generations().of_nothing(),
    };
    respond(cache, key, || async {
        Ok(json!({ "name": "scion-hub", "version": HUB_VERSION }))
    })
    .await
}
