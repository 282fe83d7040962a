//! The PostgreSQL implementation of [`AuthzStore`], statement for statement
//! the SQLite one: one cached prepared statement per method, and one
//! statement per batch (id lists travel as a text array, `= ANY($1)` or
//! `unnest`, so the statement text never depends on how many ids there are).
//! The agent rows and the writes are here too, in the same shapes as their
//! SQLite versions in [`super::agent_rows`] and [`super::writes`].

use tokio_postgres::types::ToSql;
use tokio_postgres::Row;

use super::agent_rows::{RowPage, RowQuery, RowScope};
use super::{AuthzStore, StoreResult};
use crate::db::{Db, DbError};
use crate::model::{
    AccessConstraint, Agent, AgentActivity, AgentPhase, BindingScope, DelegationEdge, Group,
    GroupMembership, Id, PrincipalKind, PrincipalRef, Project, ProjectMembership, RoleBinding,
    RoleDefinition, User, UserAccessToken,
};
use crate::paging::{CursorPosition, SortValue};

/// The Hub's store on PostgreSQL.
#[derive(Debug, Clone)]
pub struct PostgresStore {
    db: Db,
}

impl PostgresStore {
    /// A store reading through `db`'s pool (a PostgreSQL one).
    pub fn new(db: Db) -> Self {
        PostgresStore { db }
    }

    /// The database the store reads.
    pub fn db(&self) -> &Db {
        &self.db
    }
}

fn text(row: &Row, idx: usize) -> Result<&str, DbError> {
    Ok(row.try_get::<_, &str>(idx)?)
}

fn id(row: &Row, idx: usize) -> Result<Id, DbError> {
    text(row, idx).map(Id::from)
}

fn corrupt(column: &str, e: impl std::fmt::Display) -> DbError {
    DbError::Corrupt(format!("{column}: {e}"))
}

fn json_list(row: &Row, idx: usize) -> Result<Vec<String>, DbError> {
    serde_json::from_str(text(row, idx)?).map_err(|e| corrupt(row.columns()[idx].name(), e))
}

fn parsed<T: std::str::FromStr>(row: &Row, idx: usize) -> Result<T, DbError>
where
    T::Err: std::fmt::Display,
{
    text(row, idx)?
        .parse()
        .map_err(|e| corrupt(row.columns()[idx].name(), e))
}

fn strs(ids: &[Id]) -> Vec<&str> {
    ids.iter().map(|id| &**id).collect()
}

fn group(row: &Row) -> Result<Group, DbError> {
    Ok(Group {
        id: id(row, 0)?,
        slug: row.try_get(1)?,
        name: row.try_get(2)?,
    })
}

fn role(row: &Row) -> Result<RoleDefinition, DbError> {
    Ok(RoleDefinition {
        id: id(row, 0)?,
        name: row.try_get(1)?,
        permissions: json_list(row, 2)?,
    })
}

fn binding(row: &Row) -> Result<RoleBinding, DbError> {
    let scope = match text(row, 4)? {
        "hub" => BindingScope::Hub,
        _ => BindingScope::Project(id(row, 5)?),
    };
    Ok(RoleBinding {
        id: id(row, 0)?,
        principal: PrincipalRef {
            kind: parsed(row, 1)?,
            id: id(row, 2)?,
        },
        role_id: id(row, 3)?,
        scope,
    })
}

fn agent(row: &Row) -> Result<Agent, DbError> {
    Ok(Agent {
        id: id(row, 0)?,
        project_id: id(row, 1)?,
        name: row.try_get(2)?,
        phase: parsed(row, 3)?,
        activity: parsed(row, 4)?,
        created_by: id(row, 5)?,
        created_at: row.try_get(6)?,
        updated_at: row.try_get(7)?,
        config: row.try_get(8)?,
    })
}

fn all<T>(rows: Vec<Row>, read: impl Fn(&Row) -> Result<T, DbError>) -> StoreResult<Vec<T>> {
    rows.iter().map(read).collect()
}

const GROUP_COLUMNS: &str = "g.id, g.slug, g.name";
const ROLE_COLUMNS: &str = "id, name, permissions";
const BINDING_COLUMNS: &str =
    "rb.id, rb.principal_kind, rb.principal_id, rb.role_id, rb.scope_kind, rb.scope_id";
const AGENT_COLUMNS: &str =
    "id, project_id, name, phase, activity, created_by, created_at, updated_at, config";

const EFFECTIVE_GROUPS: &str = "WITH RECURSIVE g(id) AS (
        SELECT group_id FROM group_members WHERE principal_kind = $1 AND principal_id = $2
        UNION
        SELECT gp.parent_id FROM group_parents gp JOIN g ON gp.group_id = g.id
    ) SELECT id FROM g ORDER BY id";

impl PostgresStore {
    fn effective_groups(&self, kind: PrincipalKind, principal_id: &str) -> StoreResult<Vec<Id>> {
        let rows = self
            .db
            .pg_conn()?
            .query(EFFECTIVE_GROUPS, &[&kind.as_str(), &principal_id])?;
        all(rows, |r| id(r, 0))
    }
}

impl AuthzStore for PostgresStore {
    fn get_effective_groups(&self, user_id: &str) -> StoreResult<Vec<Id>> {
        self.effective_groups(PrincipalKind::User, user_id)
    }

    fn get_effective_groups_for_agent(&self, agent_id: &str) -> StoreResult<Vec<Id>> {
        self.effective_groups(PrincipalKind::Agent, agent_id)
    }

    fn get_parent_groups(&self, group_id: &str) -> StoreResult<Vec<Group>> {
        let rows = self.db.pg_conn()?.query(
            &format!(
                "SELECT {GROUP_COLUMNS} FROM group_parents gp JOIN groups g ON g.id = gp.parent_id
                 WHERE gp.group_id = $1 ORDER BY g.slug"
            ),
            &[&group_id],
        )?;
        all(rows, group)
    }

    fn get_user_groups(&self, user_id: &str) -> StoreResult<Vec<Group>> {
        let rows = self.db.pg_conn()?.query(
            &format!(
                "SELECT {GROUP_COLUMNS} FROM group_members m JOIN groups g ON g.id = m.group_id
                 WHERE m.principal_kind = 'user' AND m.principal_id = $1 ORDER BY g.slug"
            ),
            &[&user_id],
        )?;
        all(rows, group)
    }

    fn get_group_membership(
        &self,
        group_id: &str,
        principal: &PrincipalRef,
    ) -> StoreResult<Option<GroupMembership>> {
        let row = self.db.pg_conn()?.query_opt(
            "SELECT role FROM group_members
             WHERE group_id = $1 AND principal_kind = $2 AND principal_id = $3",
            &[&group_id, &principal.kind.as_str(), &&*principal.id],
        )?;
        row.map(|r| {
            Ok(GroupMembership {
                group_id: Id::from(group_id),
                principal: principal.clone(),
                role: r.try_get(0)?,
            })
        })
        .transpose()
    }

    fn get_group_by_slug(&self, slug: &str) -> StoreResult<Option<Group>> {
        let row = self.db.pg_conn()?.query_opt(
            &format!("SELECT {GROUP_COLUMNS} FROM groups g WHERE g.slug = $1"),
            &[&slug],
        )?;
        row.as_ref().map(group).transpose()
    }

    fn list_role_bindings_for_principals(
        &self,
        principals: &[PrincipalRef],
    ) -> StoreResult<Vec<RoleBinding>> {
        let kinds: Vec<&str> = principals.iter().map(|p| p.kind.as_str()).collect();
        let ids: Vec<&str> = principals.iter().map(|p| &*p.id).collect();
        let rows = self.db.pg_conn()?.query(
            &format!(
                "SELECT {BINDING_COLUMNS} FROM unnest($1::text[], $2::text[]) AS j(kind, id)
                 JOIN role_bindings rb ON rb.principal_kind = j.kind AND rb.principal_id = j.id
                 ORDER BY rb.id"
            ),
            &[&kinds, &ids],
        )?;
        all(rows, binding)
    }

    fn list_role_bindings_for_principal(
        &self,
        principal: &PrincipalRef,
    ) -> StoreResult<Vec<RoleBinding>> {
        let rows = self.db.pg_conn()?.query(
            &format!(
                "SELECT {BINDING_COLUMNS} FROM role_bindings rb
                 WHERE rb.principal_kind = $1 AND rb.principal_id = $2 ORDER BY rb.id"
            ),
            &[&principal.kind.as_str(), &&*principal.id],
        )?;
        all(rows, binding)
    }

    fn get_role_definition(&self, role_id: &str) -> StoreResult<Option<RoleDefinition>> {
        let row = self.db.pg_conn()?.query_opt(
            &format!("SELECT {ROLE_COLUMNS} FROM role_definitions WHERE id = $1"),
            &[&role_id],
        )?;
        row.as_ref().map(role).transpose()
    }

    fn get_role_definitions_by_ids(&self, ids: &[Id]) -> StoreResult<Vec<RoleDefinition>> {
        let rows = self.db.pg_conn()?.query(
            &format!("SELECT {ROLE_COLUMNS} FROM role_definitions WHERE id = ANY($1) ORDER BY id"),
            &[&strs(ids)],
        )?;
        all(rows, role)
    }

    fn get_role_definition_by_name(&self, name: &str) -> StoreResult<Option<RoleDefinition>> {
        let row = self.db.pg_conn()?.query_opt(
            &format!("SELECT {ROLE_COLUMNS} FROM role_definitions WHERE name = $1"),
            &[&name],
        )?;
        row.as_ref().map(role).transpose()
    }

    fn list_access_constraints(&self, project_ids: &[Id]) -> StoreResult<Vec<AccessConstraint>> {
        let rows = self.db.pg_conn()?.query(
            "SELECT id, project_id, action, deny_phases FROM access_constraints
             WHERE project_id = ANY($1) ORDER BY id",
            &[&strs(project_ids)],
        )?;
        all(rows, |r| {
            let deny_phases = json_list(r, 3)?
                .iter()
                .map(|p| p.parse::<AgentPhase>())
                .collect::<Result<_, _>>()
                .map_err(|e| corrupt("deny_phases", e))?;
            Ok(AccessConstraint {
                id: id(r, 0)?,
                project_id: id(r, 1)?,
                action: r.try_get(2)?,
                deny_phases,
            })
        })
    }

    fn get_delegation_edges_for_delegate(
        &self,
        delegate: &PrincipalRef,
    ) -> StoreResult<Vec<DelegationEdge>> {
        let rows = self.db.pg_conn()?.query(
            "SELECT id, delegator_user_id, project_id, actions FROM delegation_edges
             WHERE delegate_kind = $1 AND delegate_id = $2 ORDER BY id",
            &[&delegate.kind.as_str(), &&*delegate.id],
        )?;
        all(rows, |r| {
            Ok(DelegationEdge {
                id: id(r, 0)?,
                delegator_user_id: id(r, 1)?,
                delegate: delegate.clone(),
                project_id: r.try_get::<_, Option<&str>>(2)?.map(Id::from),
                actions: json_list(r, 3)?,
            })
        })
    }

    fn get_user(&self, user_id: &str) -> StoreResult<Option<User>> {
        let row = self.db.pg_conn()?.query_opt(
            "SELECT id, email, display_name, is_platform_admin, created_at FROM users WHERE id = $1",
            &[&user_id],
        )?;
        row.map(|r| {
            Ok(User {
                id: id(&r, 0)?,
                email: r.try_get(1)?,
                display_name: r.try_get(2)?,
                is_platform_admin: r.try_get(3)?,
                created_at: r.try_get(4)?,
            })
        })
        .transpose()
    }

    fn get_user_access_token(&self, token_hash: &[u8; 32]) -> StoreResult<Option<UserAccessToken>> {
        let row = self.db.pg_conn()?.query_opt(
            "SELECT id, user_id, project_id, token_hash, expires_at, revoked_at
             FROM user_access_tokens WHERE token_hash = $1",
            &[&&token_hash[..]],
        )?;
        row.map(|r| {
            let stored: &[u8] = r.try_get(3)?;
            let token_hash = <[u8; 32]>::try_from(stored)
                .map_err(|_| DbError::Corrupt("token hash is not 32 bytes".into()))?;
            Ok(UserAccessToken {
                id: id(&r, 0)?,
                user_id: id(&r, 1)?,
                project_id: id(&r, 2)?,
                token_hash,
                expires_at: r.try_get(4)?,
                revoked_at: r.try_get(5)?,
            })
        })
        .transpose()
    }

    fn get_agent(&self, agent_id: &str) -> StoreResult<Option<Agent>> {
        let row = self.db.pg_conn()?.query_opt(
            &format!("SELECT {AGENT_COLUMNS} FROM agents WHERE id = $1"),
            &[&agent_id],
        )?;
        row.as_ref().map(agent).transpose()
    }

    fn get_project(&self, project_id: &str) -> StoreResult<Option<Project>> {
        let row = self.db.pg_conn()?.query_opt(
            "SELECT id, slug, name, created_by, created_at FROM projects WHERE id = $1",
            &[&project_id],
        )?;
        row.map(|r| {
            Ok(Project {
                id: id(&r, 0)?,
                slug: r.try_get(1)?,
                name: r.try_get(2)?,
                created_by: id(&r, 3)?,
                created_at: r.try_get(4)?,
            })
        })
        .transpose()
    }

    fn get_project_membership(
        &self,
        project_id: &str,
        user_id: &str,
    ) -> StoreResult<Option<ProjectMembership>> {
        let row = self.db.pg_conn()?.query_opt(
            "SELECT role FROM project_memberships WHERE project_id = $1 AND user_id = $2",
            &[&project_id, &user_id],
        )?;
        row.map(|r| {
            Ok(ProjectMembership {
                project_id: Id::from(project_id),
                user_id: Id::from(user_id),
                role: r.try_get(0)?,
            })
        })
        .transpose()
    }

    fn get_hub_setting(&self, key: &str) -> StoreResult<Option<String>> {
        let row = self
            .db
            .pg_conn()?
            .query_opt("SELECT value FROM hub_settings WHERE key = $1", &[&key])?;
        Ok(row.map(|r| r.try_get(0)).transpose()?)
    }
}

/// [`super::agent_rows::read_agents`] on PostgreSQL: the same clauses in the
/// same order, so the rows and the pages are the same.
pub(crate) fn read_agents(db: &Db, query: &RowQuery<'_>) -> Result<RowPage, DbError> {
    let mut sql = format!("SELECT {AGENT_COLUMNS} FROM agents WHERE 1 = 1");
    let mut params: Vec<Box<dyn ToSql + Sync>> = Vec::with_capacity(5);
    let mut bind = |sql: &mut String, clause: &str, value: Box<dyn ToSql + Sync>| {
        params.push(value);
        sql.push_str(&clause.replace('?', &format!("${}", params.len())));
    };
    let texts = |ids: &[Id]| -> Box<dyn ToSql + Sync> {
        Box::new(ids.iter().map(|id| id.to_string()).collect::<Vec<String>>())
    };
    match query.scope {
        RowScope::Project(id) => bind(&mut sql, " AND project_id = ?", Box::new(id.to_string())),
        RowScope::Projects(ids) => bind(&mut sql, " AND project_id = ANY(?)", texts(ids)),
        RowScope::All => {}
    }
    if let Some(ids) = query.ids {
        bind(&mut sql, " AND id = ANY(?)", texts(ids));
    }
    let (column, descending) = match query.page {
        Some(page) => (page.sort.field.column(), page.sort.descending),
        None => ("name", false),
    };
    if let Some(after) = query.page.and_then(|p| p.after.as_ref()) {
        let op = if descending { "<" } else { ">" };
        let value: Box<dyn ToSql + Sync> = match &after.value {
            SortValue::Text(s) => Box::new(s.clone()),
            SortValue::Int(n) => Box::new(*n),
        };
        bind(&mut sql, &format!(" AND ({column}, id) {op} (?,"), value);
        bind(&mut sql, " ?)", Box::new(after.id.to_string()));
    }
    let dir = if descending { "DESC" } else { "ASC" };
    sql.push_str(&format!(" ORDER BY {column} {dir}, id {dir}"));
    if let Some(page) = query.page {
        bind(&mut sql, " LIMIT ?", Box::new(i64::from(page.limit) + 1));
    }

    let refs: Vec<&(dyn ToSql + Sync)> = params.iter().map(|p| p.as_ref()).collect();
    let rows = db.pg_conn()?.query(&sql, &refs)?;
    let mut agents = all(rows, agent)?;
    let next = match query.page {
        Some(page) if agents.len() > page.limit as usize => {
            agents.truncate(page.limit as usize);
            agents.last().map(|a| CursorPosition::after(a, page.sort))
        }
        _ => None,
    };
    Ok(RowPage { agents, next })
}

/// [`super::writes::update_agent_status`] on PostgreSQL.
pub(crate) fn update_agent_status(
    db: &Db,
    agent_id: &str,
    phase: AgentPhase,
    activity: Option<AgentActivity>,
    now_ms: i64,
) -> Result<Option<Agent>, DbError> {
    let row = db.pg_conn()?.query_opt(
        &format!(
            "UPDATE agents SET phase = $2, activity = COALESCE($3, activity),
             updated_at = GREATEST(updated_at, $4)
             WHERE id = $1 RETURNING {AGENT_COLUMNS}"
        ),
        &[
            &agent_id,
            &phase.as_str(),
            &activity.map(AgentActivity::as_str),
            &now_ms,
        ],
    )?;
    row.as_ref().map(agent).transpose()
}

/// [`super::writes::put_hub_settings`] on PostgreSQL: one transaction.
pub(crate) fn put_hub_settings(
    db: &Db,
    settings: &[(String, String)],
    now_ms: i64,
) -> Result<(), DbError> {
    let mut conn = db.pg_conn()?;
    let mut tx = conn.transaction()?;
    for (key, value) in settings {
        tx.execute(
            "INSERT INTO hub_settings (key, value, updated_at) VALUES ($1, $2, $3)
             ON CONFLICT (key) DO UPDATE SET value = excluded.value, updated_at = excluded.updated_at",
            &[key, value, &now_ms],
        )?;
    }
    tx.commit()?;
    Ok(())
}

/// [`super::writes::insert_user_access_token`] on PostgreSQL.
pub(crate) fn insert_user_access_token(
    db: &Db,
    token: &super::writes::NewAccessToken<'_>,
    now_ms: i64,
) -> Result<(), DbError> {
    db.pg_conn()?.execute(
        "INSERT INTO user_access_tokens (id, user_id, project_id, name, token_hash, created_at, expires_at)
         VALUES ($1, $2, $3, $4, $5, $6, $7)",
        &[
            &token.id,
            &token.user_id,
            &token.project_id,
            &token.name,
            &&crate::auth::tokens::token_hash(token.token)[..],
            &now_ms,
            &token.expires_at_ms,
        ],
    )?;
    Ok(())
}

/// [`super::writes::revoke_user_access_token`] on PostgreSQL.
pub(crate) fn revoke_user_access_token(
    db: &Db,
    token_id: &str,
    now_ms: i64,
) -> Result<bool, DbError> {
    let changed = db.pg_conn()?.execute(
        "UPDATE user_access_tokens SET revoked_at = $2 WHERE id = $1 AND revoked_at IS NULL",
        &[&token_id, &now_ms],
    )?;
    Ok(changed == 1)
}
