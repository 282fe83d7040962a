//! Agents and delegations: the agent rows of the lists (the `list_db_read`
//! phase), status changes, and a project's delegations for the graph. These
//! are data reads and writes, not authorization inputs, so they are never
//! store-counted. One statement per shape; id lists travel as one value, so
//! the statement text does not depend on their length.

use super::either::Store;
use super::executor::{Executor, Param, SqlRow};
use super::mapping;
pub(crate) use super::rows::RowPage;
pub(crate) use super::rows::{DelegationParty, DelegationView};
pub use super::rows::{RowQuery, RowScope};
use crate::model::{Agent, AgentActivity, AgentPhase};
use crate::paging::{CursorPosition, SortValue};
use crate::store::db::{Db, DbError};

/// Reads the agent rows `query` asks for, in one statement.
pub fn read_agents(db: &Db, query: &RowQuery<'_>) -> Result<RowPage, DbError> {
    read_agents_on(&Store::open(db), query)
}

/// [`read_agents`] on `executor`: the same clauses in the same order on
/// either engine, so the rows and the pages are the same.
fn read_agents_on<E: Executor>(executor: &E, query: &RowQuery<'_>) -> Result<RowPage, DbError> {
    let statements = executor.statements();
    let mut sql = statements.agent_rows.to_owned();
    let mut params: Vec<Param<'_>> = Vec::with_capacity(5);
    let mut bind = |sql: &mut String, clause: &str, value| {
        params.push(value);
        let placeholder = format!("{}{}", statements.placeholder, params.len());
        sql.push_str(&clause.replace('?', &placeholder));
    };
    match query.scope {
        RowScope::Project(id) => bind(&mut sql, " AND project_id = ?", Param::Text(id)),
        RowScope::Projects(ids) => {
            let clause = format!(" AND project_id {}", statements.in_ids);
            bind(&mut sql, &clause, Param::Ids(ids))
        }
        RowScope::All => {}
    }
    if let Some(ids) = query.ids {
        let clause = format!(" AND id {}", statements.in_ids);
        bind(&mut sql, &clause, Param::Ids(ids));
    }
    let (column, descending) = match query.page {
        Some(page) => (page.sort.field.column(), page.sort.descending),
        None => ("name", false),
    };
    if let Some(after) = query.page.and_then(|p| p.after.as_ref()) {
        let op = if descending { "<" } else { ">" };
        let value = match &after.value {
            SortValue::Text(s) => Param::Text(s),
            SortValue::Int(n) => Param::Int(*n),
        };
        bind(&mut sql, &format!(" AND ({column}, id) {op} (?,"), value);
        bind(&mut sql, " ?)", Param::Text(&after.id));
    }
    let dir = if descending { "DESC" } else { "ASC" };
    sql.push_str(&format!(" ORDER BY {column} {dir}, id {dir}"));
    let limit = query.page.map(|page| i64::from(page.limit) + 1);
    if let Some(limit) = limit {
        bind(&mut sql, " LIMIT ?", Param::Int(limit));
    }

    let mut agents = executor.query(&sql, &params, |r| mapping::agent(r))?;
    let next = match query.page {
        Some(page) if agents.len() > page.limit as usize => {
            agents.truncate(page.limit as usize);
            agents.last().map(|a| CursorPosition::after(a, page.sort))
        }
        _ => None,
    };
    Ok(RowPage { agents, next })
}

/// Sets an agent's phase (and activity, when given) and returns the agent as
/// stored; `None` when there is no such agent. `updated_at` never goes
/// back, even if the clock does.
pub(crate) fn update_agent_status(
    db: &Db,
    agent_id: &str,
    phase: AgentPhase,
    activity: Option<AgentActivity>,
    now_ms: i64,
) -> Result<Option<Agent>, DbError> {
    let store = Store::open(db);
    let params = [
        Param::Text(agent_id),
        Param::Text(phase.as_str()),
        Param::OptText(activity.map(AgentActivity::as_str)),
        Param::Int(now_ms),
    ];
    store.query_opt(store.statements().update_agent_status, &params, |r| {
        mapping::agent(r)
    })
}

/// The delegations limited to `project_id`, oldest first.
pub(crate) fn project_delegations(
    db: &Db,
    project_id: &str,
) -> Result<Vec<DelegationView>, DbError> {
    let store = Store::open(db);
    let sql = store.statements().project_delegations;
    store.query(sql, &[Param::Text(project_id)], |r| delegation_view(r))
}

fn delegation_view(row: &impl SqlRow) -> Result<DelegationView, DbError> {
    Ok(DelegationView {
        id: row.text(0)?.to_owned(),
        delegator: DelegationParty {
            kind: "user".into(),
            id: row.text(1)?.to_owned(),
            name: row.opt_text(2)?.map(str::to_owned),
        },
        delegate: DelegationParty {
            kind: row.text(3)?.to_owned(),
            id: row.text(4)?.to_owned(),
            name: row.opt_text(5)?.map(str::to_owned),
        },
        actions: serde_json::from_str(row.text(6)?)
            .map_err(|_| DbError::Corrupt("delegation actions".into()))?,
    })
}
