//! Agent rows for the lists (the `list_db_read` phase). These are data
//! reads, not authorization inputs, so they go straight to the database and
//! are not store-counted. One statement per shape; id lists travel as a JSON
//! array so the statement text does not depend on their length.

use rusqlite::types::Value;

use super::sqlite::{agent, AGENT_COLUMNS};
use crate::db::{Db, DbError, Dialect};
use crate::model::{Agent, Id};
use crate::paging::{CursorPosition, PageRequest, SortValue};

/// Which projects' agents to read.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum RowScope {
    /// One project.
    Project(Id),
    /// Several projects.
    Projects(Vec<Id>),
    /// Every project.
    All,
}

/// What to read.
#[derive(Debug, Clone)]
pub struct RowQuery<'a> {
    /// The projects.
    pub scope: &'a RowScope,
    /// Only these agents, when given.
    pub ids: Option<&'a [Id]>,
    /// One page, when given; otherwise every row, by name.
    pub page: Option<&'a PageRequest>,
}

/// The rows read, and where the next page starts.
#[derive(Debug, Clone)]
pub struct RowPage {
    /// The agents, in order.
    pub agents: Vec<Agent>,
    /// The last agent's position when more rows follow.
    pub next: Option<CursorPosition>,
}

fn json_ids(ids: &[Id]) -> Value {
    Value::Text(serde_json::to_string(ids).expect("ids serialize"))
}

/// Reads the agent rows `query` asks for, in one statement.
pub fn read_agents(db: &Db, query: &RowQuery<'_>) -> Result<RowPage, DbError> {
    if db.dialect() == Dialect::Postgres {
        return super::postgres::read_agents(db, query);
    }
    let mut sql = format!("SELECT {AGENT_COLUMNS} FROM agents WHERE 1 = 1");
    let mut params: Vec<Value> = Vec::with_capacity(5);
    let mut bind = |sql: &mut String, clause: &str, value: Value| {
        params.push(value);
        sql.push_str(&clause.replace('?', &format!("?{}", params.len())));
    };
    match query.scope {
        RowScope::Project(id) => bind(&mut sql, " AND project_id = ?", Value::Text(id.to_string())),
        RowScope::Projects(ids) => bind(
            &mut sql,
            " AND project_id IN (SELECT value FROM json_each(?))",
            json_ids(ids),
        ),
        RowScope::All => {}
    }
    if let Some(ids) = query.ids {
        bind(
            &mut sql,
            " AND id IN (SELECT value FROM json_each(?))",
            json_ids(ids),
        );
    }
    let (column, descending) = match query.page {
        Some(page) => (page.sort.field.column(), page.sort.descending),
        None => ("name", false),
    };
    if let Some(after) = query.page.and_then(|p| p.after.as_ref()) {
        let op = if descending { "<" } else { ">" };
        let value = match &after.value {
            SortValue::Text(s) => Value::Text(s.clone()),
            SortValue::Int(n) => Value::Integer(*n),
        };
        bind(&mut sql, &format!(" AND ({column}, id) {op} (?,"), value);
        bind(&mut sql, " ?)", Value::Text(after.id.to_string()));
    }
    let dir = if descending { "DESC" } else { "ASC" };
    sql.push_str(&format!(" ORDER BY {column} {dir}, id {dir}"));
    if let Some(page) = query.page {
        bind(
            &mut sql,
            " LIMIT ?",
            Value::Integer(i64::from(page.limit) + 1),
        );
    }

    let conn = db.conn()?;
    let mut stmt = conn.prepare_cached(&sql)?;
    let mut agents = stmt
        .query_map(rusqlite::params_from_iter(params), agent)?
        .collect::<Result<Vec<_>, _>>()?;
    let next = match query.page {
        Some(page) if agents.len() > page.limit as usize => {
            agents.truncate(page.limit as usize);
            agents.last().map(|a| CursorPosition::after(a, page.sort))
        }
        _ => None,
    };
    Ok(RowPage { agents, next })
}
