//! `GET /api/v1/projects/{id}/delegations`: the delegations limited to a
//! project (who lends which actions to whom), for the web client's graph,
//! which draws them as links beside the creator links. Allowed to whoever
//! may list the project's agents; the rows are read directly (they are
//! shown, not used to decide anything, so they are not store-counted).

use axum::extract::rejection::PathRejection;
use axum::extract::{Path, State};
use axum::response::{IntoResponse, Response};
use axum::{Extension, Json};
use serde::Serialize;

use super::params::parse_id;
use super::ApiError;
use crate::authz::{Action, AuditEmitter, Authorizer, Principal};
use crate::db::{Db, DbError};
use crate::model::Id;
use crate::state::AppState;
use crate::store::AuthzStore;

/// One end of a delegation.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct DelegationParty {
    /// `user` or `agent`.
    pub kind: String,
    /// Its id.
    pub id: String,
    /// A user's display name or an agent's name (absent once deleted).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
}

/// A delegation as the graph draws it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct DelegationView {
    /// The edge's id.
    pub id: String,
    /// The user whose permissions are lent.
    pub delegator: DelegationParty,
    /// Who may use them.
    pub delegate: DelegationParty,
    /// The actions lent.
    pub actions: Vec<String>,
}

/// The delegations limited to `project_id`, oldest first.
pub fn project_delegations(db: &Db, project_id: &str) -> Result<Vec<DelegationView>, DbError> {
    let conn = db.conn()?;
    let mut stmt = conn.prepare_cached(
        "SELECT d.id, d.delegator_user_id, u.display_name, d.delegate_kind, d.delegate_id,
                COALESCE(du.display_name, a.name), d.actions
         FROM delegation_edges d
         LEFT JOIN users u ON u.id = d.delegator_user_id
         LEFT JOIN users du ON d.delegate_kind = 'user' AND du.id = d.delegate_id
         LEFT JOIN agents a ON d.delegate_kind = 'agent' AND a.id = d.delegate_id
         WHERE d.project_id = ?1
         ORDER BY d.created_at, d.id",
    )?;
    let rows = stmt.query_map([project_id], |row| {
        Ok((
            DelegationView {
                id: row.get(0)?,
                delegator: DelegationParty {
                    kind: "user".into(),
                    id: row.get(1)?,
                    name: row.get(2)?,
                },
                delegate: DelegationParty {
                    kind: row.get(3)?,
                    id: row.get(4)?,
                    name: row.get(5)?,
                },
                actions: Vec::new(),
            },
            row.get::<_, String>(6)?,
        ))
    })?;
    let mut views = Vec::new();
    for row in rows {
        let (mut view, actions) = row?;
        view.actions = serde_json::from_str(&actions)
            .map_err(|_| DbError::Corrupt("delegation actions".into()))?;
        views.push(view);
    }
    Ok(views)
}

/// `GET /api/v1/projects/{id}/delegations`.
pub async fn get_project_delegations<S: AuthzStore, A: AuditEmitter>(
    State(state): State<AppState<S, A>>,
    Extension(principal): Extension<Principal>,
    path: Result<Path<String>, PathRejection>,
) -> Result<Response, ApiError> {
    let Path(text) = path.map_err(|_| ApiError::bad_request("invalid project id"))?;
    let project: Id = parse_id(&text, "project")?;
    let delegations = perf_trace_core::spawn_blocking(move || {
        let authz = Authorizer::new(state.store(), state.audit(), &principal);
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
