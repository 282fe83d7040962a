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
use crate::db::{Db, DbError, Dialect};
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

/// The statement of [`project_delegations`], with the project id's
/// placeholder of each dialect (`?1`, `$1`): the one text both run.
macro_rules! delegations_sql {
    ($project:literal) => {
        concat!(
            "SELECT d.id, d.delegator_user_id, u.display_name, d.delegate_kind, d.delegate_id,
                    COALESCE(du.display_name, a.name), d.actions
             FROM delegation_edges d
             LEFT JOIN users u ON u.id = d.delegator_user_id
             LEFT JOIN users du ON d.delegate_kind = 'user' AND du.id = d.delegate_id
             LEFT JOIN agents a ON d.delegate_kind = 'agent' AND a.id = d.delegate_id
             WHERE d.project_id = ",
            $project,
            " ORDER BY d.created_at, d.id"
        )
    };
}

/// One row of the statement, in its column order.
type DelegationRow = (
    String,
    String,
    Option<String>,
    String,
    String,
    Option<String>,
    String,
);

/// The delegations limited to `project_id`, oldest first.
pub fn project_delegations(db: &Db, project_id: &str) -> Result<Vec<DelegationView>, DbError> {
    let rows: Vec<DelegationRow> = match db.dialect() {
        Dialect::Sqlite => db
            .conn()?
            .prepare_cached(delegations_sql!("?1"))?
            .query_map([project_id], |r| {
                Ok((
                    r.get(0)?,
                    r.get(1)?,
                    r.get(2)?,
                    r.get(3)?,
                    r.get(4)?,
                    r.get(5)?,
                    r.get(6)?,
                ))
            })?
            .collect::<Result<_, _>>()?,
        Dialect::Postgres => db
            .pg_conn()?
            .query(delegations_sql!("$1"), &[&project_id])?
            .iter()
            .map(|r| {
                Ok((
                    r.try_get(0)?,
                    r.try_get(1)?,
                    r.try_get(2)?,
                    r.try_get(3)?,
                    r.try_get(4)?,
                    r.try_get(5)?,
                    r.try_get(6)?,
                ))
            })
            .collect::<Result<_, DbError>>()?,
    };
    rows.into_iter().map(delegation_view).collect()
}

fn delegation_view(row: DelegationRow) -> Result<DelegationView, DbError> {
    let (id, delegator_id, delegator_name, delegate_kind, delegate_id, delegate_name, actions) =
        row;
    Ok(DelegationView {
        id,
        delegator: DelegationParty {
            kind: "user".into(),
            id: delegator_id,
            name: delegator_name,
        },
        delegate: DelegationParty {
            kind: delegate_kind,
            id: delegate_id,
            name: delegate_name,
        },
        actions: serde_json::from_str(&actions)
            .map_err(|_| DbError::Corrupt("delegation actions".into()))?,
    })
}

/// `GET /api/v1/projects/{id}/delegations`.
pub async fn get_project_delegations<S: AuthzStore, A: AuditEmitter>(
    State(state): State<AppState<S, A>>,
    Extension(principal): Extension<Principal>,
    path: Result<Path<String>, PathRejection>,
) -> Result<Response, ApiError> {
    let Path(text) = path.map_err(|_| ApiError::bad_request("invalid project id"))?;
    let project: Id = parse_id(&text, "project")?;
    let delegations = perf_trace_core::scope::spawn_blocking(move || {
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
