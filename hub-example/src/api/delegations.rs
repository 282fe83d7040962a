//! `GET /api/v1/projects/{id}/delegations`: the delegations limited to a
//! project (who lends which actions to whom), for the web client's graph,
//! which draws them as links beside the creator links. Allowed to whoever
//! may list the project's agents; the rows are read directly (they are
//! shown, not used to decide anything, so they are not store-counted).

use axum::extract::rejection::PathRejection;
use axum::extract::{Path, State};
use axum::response::{IntoResponse, Response};
use axum::{Extension, Json};

use super::params::parse_id;
use super::state::AppState;
use super::ApiError;
use crate::authz::{Action, AuditEmitter, Principal};
use crate::model::Id;
pub(crate) use crate::store::agents::project_delegations;
use crate::store::AuthzStore;

/// `GET /api/v1/projects/{id}/delegations`.
pub(crate) async fn get_project_delegations<S: AuthzStore, A: AuditEmitter>(
    State(state): State<AppState<S, A>>,
    Extension(principal): Extension<Principal>,
    path: Result<Path<String>, PathRejection>,
) -> Result<Response, ApiError> {
    let Path(text) = path.map_err(|_| ApiError::bad_request("invalid project id"))?;
    let project: Id = parse_id(&text, "project")?;
    let delegations = perf_trace_core::scope::spawn_blocking(move || {
        let authz = state.authorizer(&principal);
        if authz.memo().project(&project)?.is_none() {
            return Err(ApiError::not_found("project"));
        }
        if !authz.allow_project(Action::AgentList, &project)? {
            return Err(ApiError::forbidden());
        }
        Ok(project_delegations(state.db(), &project)?)
    })
    .await??;
    Ok(Json(serde_json::json!({ "delegations": delegations })).into_response())
}
