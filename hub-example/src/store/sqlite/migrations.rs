//! Versioned schema migrations, applied in order inside one transaction each
//! and recorded in `schema_migrations`.

use rusqlite::{Connection, OptionalExtension};

use crate::store::db::DbError;

/// One schema change on one engine. Each version has one entry here
/// (SQLite) and one in `postgres::migrations` (PostgreSQL), with the same
/// version and name; [`Db::migrate`](crate::store::db::Db::migrate) applies
/// the list of the database's engine.
pub(crate) struct Migration {
    pub(crate) version: u32,
    pub(crate) name: &'static str,
    pub(crate) sql: &'static str,
}

pub(crate) const MIGRATIONS: &[Migration] = &[
    Migration {
        version: 1,
        name: "core schema",
        sql: r#"
CREATE TABLE users (
    id                TEXT PRIMARY KEY,
    email             TEXT NOT NULL UNIQUE,
    display_name      TEXT NOT NULL,
    is_platform_admin INTEGER NOT NULL DEFAULT 0,
    created_at        INTEGER NOT NULL
);
CREATE TABLE projects (
    id         TEXT PRIMARY KEY,
    slug       TEXT NOT NULL UNIQUE,
    name       TEXT NOT NULL,
    created_by TEXT NOT NULL REFERENCES users(id),
    created_at INTEGER NOT NULL
);
CREATE TABLE project_memberships (
    project_id TEXT NOT NULL REFERENCES projects(id),
    user_id    TEXT NOT NULL REFERENCES users(id),
    role       TEXT NOT NULL,
    created_at INTEGER NOT NULL,
    PRIMARY KEY (project_id, user_id)
) WITHOUT ROWID;
CREATE TABLE user_access_tokens (
    id         TEXT PRIMARY KEY,
    user_id    TEXT NOT NULL REFERENCES users(id),
    project_id TEXT NOT NULL REFERENCES projects(id),
    name       TEXT NOT NULL,
    token_hash BLOB NOT NULL UNIQUE,
    created_at INTEGER NOT NULL,
    expires_at INTEGER NOT NULL,
    revoked_at INTEGER
);
CREATE TABLE groups (
    id         TEXT PRIMARY KEY,
    slug       TEXT NOT NULL UNIQUE,
    name       TEXT NOT NULL,
    created_at INTEGER NOT NULL
);
CREATE TABLE group_parents (
    group_id  TEXT NOT NULL REFERENCES groups(id),
    parent_id TEXT NOT NULL REFERENCES groups(id),
    PRIMARY KEY (group_id, parent_id)
) WITHOUT ROWID;
CREATE TABLE group_members (
    group_id       TEXT NOT NULL REFERENCES groups(id),
    principal_kind TEXT NOT NULL CHECK (principal_kind IN ('user', 'agent')),
    principal_id   TEXT NOT NULL,
    role           TEXT NOT NULL DEFAULT 'member',
    PRIMARY KEY (group_id, principal_kind, principal_id)
) WITHOUT ROWID;
CREATE INDEX group_members_by_principal ON group_members (principal_kind, principal_id);
CREATE TABLE role_definitions (
    id          TEXT PRIMARY KEY,
    name        TEXT NOT NULL UNIQUE,
    description TEXT NOT NULL DEFAULT '',
    permissions TEXT NOT NULL
);
CREATE TABLE role_bindings (
    id             TEXT PRIMARY KEY,
    principal_kind TEXT NOT NULL CHECK (principal_kind IN ('user', 'group', 'agent')),
    principal_id   TEXT NOT NULL,
    role_id        TEXT NOT NULL REFERENCES role_definitions(id),
    scope_kind     TEXT NOT NULL CHECK (scope_kind IN ('hub', 'project')),
    scope_id       TEXT NOT NULL DEFAULT '',
    created_at     INTEGER NOT NULL
);
CREATE INDEX role_bindings_by_principal ON role_bindings (principal_kind, principal_id);
CREATE TABLE access_constraints (
    id          TEXT PRIMARY KEY,
    project_id  TEXT NOT NULL REFERENCES projects(id),
    action      TEXT NOT NULL,
    deny_phases TEXT NOT NULL,
    description TEXT NOT NULL DEFAULT ''
);
CREATE INDEX access_constraints_by_project ON access_constraints (project_id);
CREATE TABLE delegation_edges (
    id                TEXT PRIMARY KEY,
    delegator_user_id TEXT NOT NULL REFERENCES users(id),
    delegate_kind     TEXT NOT NULL CHECK (delegate_kind IN ('user', 'agent')),
    delegate_id       TEXT NOT NULL,
    project_id        TEXT REFERENCES projects(id),
    actions           TEXT NOT NULL,
    created_at        INTEGER NOT NULL
);
CREATE INDEX delegation_edges_by_delegate ON delegation_edges (delegate_kind, delegate_id);
CREATE TABLE hub_settings (
    key        TEXT PRIMARY KEY,
    value      TEXT NOT NULL,
    updated_at INTEGER NOT NULL
) WITHOUT ROWID;
CREATE TABLE agents (
    id         TEXT PRIMARY KEY,
    project_id TEXT NOT NULL REFERENCES projects(id),
    name       TEXT NOT NULL,
    phase      TEXT NOT NULL,
    activity   TEXT NOT NULL,
    created_by TEXT NOT NULL REFERENCES users(id),
    created_at INTEGER NOT NULL,
    updated_at INTEGER NOT NULL,
    config     TEXT NOT NULL
);
CREATE UNIQUE INDEX agents_by_project_name ON agents (project_id, name, id);
CREATE INDEX agents_by_project_created ON agents (project_id, created_at, id);
CREATE INDEX agents_by_project_updated ON agents (project_id, updated_at, id);
CREATE INDEX agents_by_name ON agents (name, id);
"#,
    },
    Migration {
        version: 2,
        name: "built-in roles and settings",
        sql: BUILT_IN_ROLES_AND_SETTINGS,
    },
    Migration {
        version: 3,
        name: "audit events",
        sql: r#"
CREATE TABLE audit_events (
    id             INTEGER PRIMARY KEY,
    at_ms          INTEGER NOT NULL,
    principal_kind TEXT NOT NULL,
    principal_id   TEXT NOT NULL,
    action         TEXT NOT NULL,
    resource_kind  TEXT NOT NULL,
    resource_id    TEXT,
    outcome        TEXT NOT NULL CHECK (outcome IN ('allow', 'deny', 'error'))
);
CREATE INDEX audit_events_by_time ON audit_events (at_ms, id);
"#,
    },
    Migration {
        version: 4,
        name: "browser sessions",
        sql: r#"
CREATE TABLE web_sessions (
    session_hash BLOB PRIMARY KEY,
    user_id      TEXT NOT NULL REFERENCES users(id),
    created_at   INTEGER NOT NULL,
    expires_at   INTEGER NOT NULL,
    revoked_at   INTEGER
) WITHOUT ROWID;
CREATE INDEX web_sessions_by_user ON web_sessions (user_id);
"#,
    },
    Migration {
        version: 5,
        name: "audit event tallies",
        // A row stands for one decision or for the decisions of one
        // question of a batch: counted by outcome, with the ids not
        // allowed. The rows written before were one decision each.
        sql: r#"
ALTER TABLE audit_events ADD COLUMN allowed INTEGER NOT NULL DEFAULT 0;
ALTER TABLE audit_events ADD COLUMN denied INTEGER NOT NULL DEFAULT 0;
ALTER TABLE audit_events ADD COLUMN errors INTEGER NOT NULL DEFAULT 0;
ALTER TABLE audit_events ADD COLUMN denied_ids TEXT;
UPDATE audit_events SET
    allowed = (outcome = 'allow'),
    denied = (outcome = 'deny'),
    errors = (outcome = 'error');
"#,
    },
    Migration {
        version: 6,
        name: "audit summaries",
        // A principal past its audit rate has its decisions folded into
        // summary rows per interval: `at_ms` the first decision, `last_ms`
        // the last. NULL on every other row.
        sql: r#"
ALTER TABLE audit_events ADD COLUMN last_ms INTEGER;
"#,
    },
];

/// Version 2's rows, written alike in both engines' lists.
pub(crate) const BUILT_IN_ROLES_AND_SETTINGS: &str = r#"
INSERT INTO role_definitions (id, name, description, permissions) VALUES
  ('00000000-0000-4000-8000-000000000001', 'hub-admin', 'Everything, everywhere', '["*"]'),
  ('00000000-0000-4000-8000-000000000002', 'project-owner', 'Runs a project',
   '["project.*","agent.*","events.subscribe","group.read"]'),
  ('00000000-0000-4000-8000-000000000003', 'project-member', 'Works in a project',
   '["project.read","agent.list","agent.read","agent.create","agent.message","events.subscribe"]'),
  ('00000000-0000-4000-8000-000000000004', 'project-viewer', 'Watches a project',
   '["project.read","agent.list","agent.read","events.subscribe"]'),
  ('00000000-0000-4000-8000-000000000005', 'agent-creator', 'What a user may do with the agents they created',
   '["agent.read","agent.update","agent.start","agent.stop","agent.attach","agent.delete","agent.message"]');
INSERT INTO hub_settings (key, value, updated_at) VALUES
  ('authz.creator_role', '"agent-creator"', 0);
"#;

/// The schema version this build needs.
pub const LATEST_VERSION: u32 = MIGRATIONS[MIGRATIONS.len() - 1].version;

const BOOKKEEPING: &str = "CREATE TABLE IF NOT EXISTS schema_migrations (
    version    INTEGER PRIMARY KEY,
    name       TEXT NOT NULL,
    applied_at INTEGER NOT NULL
)";

/// The schema version recorded in the file (0 for a file never migrated).
pub(crate) fn schema_version(conn: &Connection) -> Result<u32, DbError> {
    let has_table: bool = conn
        .query_row(
            "SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'schema_migrations'",
            [],
            |_| Ok(true),
        )
        .optional()?
        .unwrap_or(false);
    if !has_table {
        return Ok(0);
    }
    let version: Option<u32> =
        conn.query_row("SELECT MAX(version) FROM schema_migrations", [], |r| {
            r.get(0)
        })?;
    Ok(version.unwrap_or(0))
}

/// The versions not yet applied; an error when the file is newer than this build.
pub(crate) fn pending_migrations(conn: &Connection) -> Result<Vec<u32>, DbError> {
    versions_after(schema_version(conn)?, MIGRATIONS)
}

/// The versions of `migrations` above `current`, the version a database
/// records; an error when that database is newer than this build.
pub(crate) fn versions_after<'m>(
    current: u32,
    migrations: impl IntoIterator<Item = &'m Migration>,
) -> Result<Vec<u32>, DbError> {
    if current > LATEST_VERSION {
        return Err(DbError::SchemaTooNew {
            found: current,
            expected: LATEST_VERSION,
        });
    }
    Ok(migrations
        .into_iter()
        .filter(|m| m.version > current)
        .map(|m| m.version)
        .collect())
}

/// Applies every pending migration, each in its own transaction, and returns
/// the versions applied. `applied_at` is `now_ms`.
pub(crate) fn migrate(conn: &mut Connection, now_ms: i64) -> Result<Vec<u32>, DbError> {
    conn.execute_batch(BOOKKEEPING)?;
    let pending = pending_migrations(conn)?;
    for migration in MIGRATIONS.iter().filter(|m| pending.contains(&m.version)) {
        let tx = conn.transaction()?;
        tx.execute_batch(migration.sql)?;
        tx.execute(
            "INSERT INTO schema_migrations (version, name, applied_at) VALUES (?1, ?2, ?3)",
            rusqlite::params![migration.version, migration.name, now_ms],
        )?;
        tx.commit()?;
    }
    Ok(pending)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn migrations_apply_once_in_order() {
        let mut conn = Connection::open_in_memory().unwrap();
        assert_eq!(schema_version(&conn).unwrap(), 0);
        assert_eq!(migrate(&mut conn, 1).unwrap(), vec![1, 2, 3, 4, 5, 6]);
        assert_eq!(schema_version(&conn).unwrap(), LATEST_VERSION);
        assert!(migrate(&mut conn, 2).unwrap().is_empty());
        let roles: u32 = conn
            .query_row("SELECT COUNT(*) FROM role_definitions", [], |r| r.get(0))
            .unwrap();
        assert_eq!(roles, 5);
    }

    #[test]
    fn versions_are_increasing() {
        assert!(MIGRATIONS.windows(2).all(|w| w[0].version < w[1].version));
    }
}
