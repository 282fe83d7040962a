//! The seeder's writes. The seeder always writes SQLite: a PostgreSQL
//! target is seeded through an in-memory SQLite database copied over
//! afterwards, so both dialects get the same rows.

use rusqlite::{params, Transaction};

use crate::db::DbError;

/// An agent row to write.
#[derive(Debug, Clone, Copy)]
pub struct SeedAgent<'a> {
    /// Its id.
    pub id: &'a str,
    /// Its project.
    pub project_id: &'a str,
    /// Its name.
    pub name: &'a str,
    /// Its phase.
    pub phase: &'a str,
    /// Its activity.
    pub activity: &'a str,
    /// The user who created it.
    pub created_by: &'a str,
    /// Created at, Unix ms.
    pub created_at: i64,
    /// Updated at, Unix ms.
    pub updated_at: i64,
    /// Its configuration (JSON).
    pub config: &'a str,
}

/// The rows of one seed, written in one transaction.
pub struct SeedWriter<'c> {
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

    fn run(&self, sql: &str, params: impl rusqlite::Params) -> Result<(), DbError> {
        self.tx.prepare_cached(sql)?.execute(params)?;
        Ok(())
    }

    /// A user.
    pub fn user(
        &self,
        id: &str,
        email: &str,
        name: &str,
        admin: bool,
        at: i64,
    ) -> Result<(), DbError> {
        self.run(
            "INSERT INTO users (id, email, display_name, is_platform_admin, created_at) VALUES (?1, ?2, ?3, ?4, ?5)",
            params![id, email, name, admin, at],
        )
    }

    /// A project.
    pub fn project(
        &self,
        id: &str,
        slug: &str,
        name: &str,
        owner: &str,
        at: i64,
    ) -> Result<(), DbError> {
        self.run(
            "INSERT INTO projects (id, slug, name, created_by, created_at) VALUES (?1, ?2, ?3, ?4, ?5)",
            params![id, slug, name, owner, at],
        )
    }

    /// A user's membership of a project.
    pub fn project_member(
        &self,
        project: &str,
        user: &str,
        role: &str,
        at: i64,
    ) -> Result<(), DbError> {
        self.run(
            "INSERT INTO project_memberships (project_id, user_id, role, created_at) VALUES (?1, ?2, ?3, ?4)",
            params![project, user, role, at],
        )
    }

    /// A group.
    pub fn group(&self, id: &str, slug: &str, name: &str, at: i64) -> Result<(), DbError> {
        self.run(
            "INSERT INTO groups (id, slug, name, created_at) VALUES (?1, ?2, ?3, ?4)",
            params![id, slug, name, at],
        )
    }

    /// A group's parent.
    pub fn group_parent(&self, group: &str, parent: &str) -> Result<(), DbError> {
        self.run(
            "INSERT INTO group_parents (group_id, parent_id) VALUES (?1, ?2)",
            params![group, parent],
        )
    }

    /// A user's membership of a group.
    pub fn group_member(&self, group: &str, user: &str, role: &str) -> Result<(), DbError> {
        self.run(
            "INSERT INTO group_members (group_id, principal_kind, principal_id, role) VALUES (?1, 'user', ?2, ?3)",
            params![group, user, role],
        )
    }

    /// A role binding limited to a project.
    pub fn project_role_binding(
        &self,
        id: &str,
        principal: (&str, &str),
        role: &str,
        project: &str,
        at: i64,
    ) -> Result<(), DbError> {
        self.run(
            "INSERT INTO role_bindings (id, principal_kind, principal_id, role_id, scope_kind, scope_id, created_at)
             VALUES (?1, ?2, ?3, ?4, 'project', ?5, ?6)",
            params![id, principal.0, principal.1, role, project, at],
        )
    }

    /// A user's delegation of `actions` (a JSON list) to another user in a
    /// project.
    pub fn user_delegation(
        &self,
        id: &str,
        delegator: &str,
        delegate: &str,
        project: &str,
        actions: &str,
        at: i64,
    ) -> Result<(), DbError> {
        self.run(
            "INSERT INTO delegation_edges (id, delegator_user_id, delegate_kind, delegate_id, project_id, actions, created_at)
             VALUES (?1, ?2, 'user', ?3, ?4, ?5, ?6)",
            params![id, delegator, delegate, project, actions, at],
        )
    }

    /// An access constraint: `action` refused in `phases` (a JSON list).
    pub fn access_constraint(
        &self,
        id: &str,
        project: &str,
        action: &str,
        phases: &str,
        description: &str,
    ) -> Result<(), DbError> {
        self.run(
            "INSERT INTO access_constraints (id, project_id, action, deny_phases, description) VALUES (?1, ?2, ?3, ?4, ?5)",
            params![id, project, action, phases, description],
        )
    }

    /// An agent.
    pub fn agent(&self, agent: &SeedAgent<'_>) -> Result<(), DbError> {
        self.run(
            "INSERT INTO agents (id, project_id, name, phase, activity, created_by, created_at, updated_at, config)
             VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9)",
            params![
                agent.id,
                agent.project_id,
                agent.name,
                agent.phase,
                agent.activity,
                agent.created_by,
                agent.created_at,
                agent.updated_at,
                agent.config
            ],
        )
    }
}

/// Every row of every table of the SQLite file at `path`, in a stable
/// order: what two seeds are compared by.
pub fn every_row(path: &std::path::Path) -> Result<Vec<String>, DbError> {
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
