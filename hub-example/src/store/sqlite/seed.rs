//! The seeder's writes. The seeder always writes SQLite: a PostgreSQL
//! target is seeded through an in-memory SQLite database copied over
//! afterwards, so both engines get the same rows.

use rusqlite::{params_from_iter, Transaction};

use crate::store::db::DbError;
use crate::store::executor::Param;

/// The tables a seed writes, each with the columns its rows give, in order.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum SeedTable {
    /// `id, email, display_name, is_platform_admin (0 or 1), created_at`.
    Users,
    /// `id, slug, name, created_by, created_at`.
    Projects,
    /// `project_id, user_id, role, created_at`.
    ProjectMembers,
    /// `id, slug, name, created_at`.
    Groups,
    /// `group_id, parent_id`.
    GroupParents,
    /// `group_id, user_id, role`: a user's membership.
    GroupMembers,
    /// `id, principal_kind, principal_id, role_id, project_id, created_at`:
    /// a binding limited to a project.
    ProjectRoleBindings,
    /// `id, delegator_user_id, delegate_user_id, project_id, actions,
    /// created_at`: a user's delegation to another user.
    UserDelegations,
    /// `id, project_id, action, deny_phases, description`.
    AccessConstraints,
    /// The agent columns, `id` to `config`.
    Agents,
}

impl SeedTable {
    fn statement(self) -> &'static str {
        match self {
            SeedTable::Users => "INSERT INTO users (id, email, display_name, is_platform_admin, created_at) VALUES (?1, ?2, ?3, ?4, ?5)",
            SeedTable::Projects => "INSERT INTO projects (id, slug, name, created_by, created_at) VALUES (?1, ?2, ?3, ?4, ?5)",
            SeedTable::ProjectMembers => "INSERT INTO project_memberships (project_id, user_id, role, created_at) VALUES (?1, ?2, ?3, ?4)",
            SeedTable::Groups => "INSERT INTO groups (id, slug, name, created_at) VALUES (?1, ?2, ?3, ?4)",
            SeedTable::GroupParents => "INSERT INTO group_parents (group_id, parent_id) VALUES (?1, ?2)",
            SeedTable::GroupMembers => "INSERT INTO group_members (group_id, principal_kind, principal_id, role) VALUES (?1, 'user', ?2, ?3)",
            SeedTable::ProjectRoleBindings => "INSERT INTO role_bindings (id, principal_kind, principal_id, role_id, scope_kind, scope_id, created_at)
                 VALUES (?1, ?2, ?3, ?4, 'project', ?5, ?6)",
            SeedTable::UserDelegations => "INSERT INTO delegation_edges (id, delegator_user_id, delegate_kind, delegate_id, project_id, actions, created_at)
                 VALUES (?1, ?2, 'user', ?3, ?4, ?5, ?6)",
            SeedTable::AccessConstraints => "INSERT INTO access_constraints (id, project_id, action, deny_phases, description) VALUES (?1, ?2, ?3, ?4, ?5)",
            SeedTable::Agents => "INSERT INTO agents (id, project_id, name, phase, activity, created_by, created_at, updated_at, config)
                 VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9)",
        }
    }
}

/// The rows of one seed, written in one transaction.
pub(crate) struct SeedWriter<'c> {
    tx: Transaction<'c>,
}

impl std::fmt::Debug for SeedWriter<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SeedWriter").finish_non_exhaustive()
    }
}

impl<'c> SeedWriter<'c> {
    pub(crate) fn new(tx: Transaction<'c>) -> Self {
        SeedWriter { tx }
    }

    pub(crate) fn commit(self) -> Result<(), DbError> {
        Ok(self.tx.commit()?)
    }

    /// Writes one row of `table`, its columns' `values` in the table's
    /// order.
    pub fn row(&self, table: SeedTable, values: &[Param<'_>]) -> Result<(), DbError> {
        self.tx
            .prepare_cached(table.statement())?
            .execute(params_from_iter(values))?;
        Ok(())
    }
}

/// Every row of every table of the SQLite file at `path`, in a stable
/// order: what two seeds are compared by.
#[cfg(test)]
pub(crate) fn every_row(path: &std::path::Path) -> Result<Vec<String>, DbError> {
    let conn = rusqlite::Connection::open(path)?;
    let tables: Vec<String> = conn
        .prepare("SELECT name FROM sqlite_master WHERE type = 'table' ORDER BY name")?
        .query_map([], |r| r.get(0))?
        .collect::<Result<_, _>>()?;
    let mut rows = Vec::new();
    for table in tables {
        let mut stmt = conn.prepare(&format!("SELECT * FROM {table} ORDER BY 1, 2"))?;
        let n = stmt.column_count();
        let mut q = stmt.query([])?;
        while let Some(row) = q.next()? {
            let values: Vec<String> = (0..n)
                .map(|i| row.get_ref(i).map(|v| format!("{v:?}")))
                .collect::<Result<_, _>>()?;
            rows.push(format!("{table}: {}", values.join("|")));
        }
    }
    Ok(rows)
}
