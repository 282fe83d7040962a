//! The schema migrations' port to PostgreSQL: one entry per version of
//! the SQLite list, same version, same name, same tables, columns, keys and
//! indexes. Text columns compare bytewise (`COLLATE "C"`), as SQLite's do,
//! so every `ORDER BY` gives the same order on both engines; times are
//! `BIGINT` milliseconds and the admin flag a `BOOLEAN`.
//!
//! Replicas starting together on one database take an advisory lock, so
//! each migration is applied once.

use super::PgClient;

use crate::store::db::DbError;
use crate::store::sqlite::migrations::{
    versions_after, Migration, BUILT_IN_ROLES_AND_SETTINGS, LATEST_VERSION, MIGRATIONS,
};

const POSTGRES_MIGRATIONS: &[Migration] = &[
    Migration {
        version: 1,
        name: "core schema",
        sql: r#"
CREATE TABLE users (
    id                TEXT COLLATE "C" PRIMARY KEY,
    email             TEXT COLLATE "C" NOT NULL UNIQUE,
    display_name      TEXT COLLATE "C" NOT NULL,
    is_platform_admin BOOLEAN NOT NULL DEFAULT FALSE,
    created_at        BIGINT NOT NULL
);
CREATE TABLE projects (
    id         TEXT COLLATE "C" PRIMARY KEY,
    slug       TEXT COLLATE "C" NOT NULL UNIQUE,
    name       TEXT COLLATE "C" NOT NULL,
    created_by TEXT COLLATE "C" NOT NULL REFERENCES users(id),
    created_at BIGINT NOT NULL
);
CREATE TABLE project_memberships (
    project_id TEXT COLLATE "C" NOT NULL REFERENCES projects(id),
    user_id    TEXT COLLATE "C" NOT NULL REFERENCES users(id),
    role       TEXT COLLATE "C" NOT NULL,
    created_at BIGINT NOT NULL,
    PRIMARY KEY (project_id, user_id)
);
CREATE TABLE user_access_tokens (
    id         TEXT COLLATE "C" PRIMARY KEY,
    user_id    TEXT COLLATE "C" NOT NULL REFERENCES users(id),
    project_id TEXT COLLATE "C" NOT NULL REFERENCES projects(id),
    name       TEXT COLLATE "C" NOT NULL,
    token_hash BYTEA NOT NULL UNIQUE,
    created_at BIGINT NOT NULL,
    expires_at BIGINT NOT NULL,
    revoked_at BIGINT
);
CREATE TABLE groups (
    id         TEXT COLLATE "C" PRIMARY KEY,
    slug       TEXT COLLATE "C" NOT NULL UNIQUE,
    name       TEXT COLLATE "C" NOT NULL,
    created_at BIGINT NOT NULL
);
CREATE TABLE group_parents (
    group_id  TEXT COLLATE "C" NOT NULL REFERENCES groups(id),
    parent_id TEXT COLLATE "C" NOT NULL REFERENCES groups(id),
    PRIMARY KEY (group_id, parent_id)
);
CREATE TABLE group_members (
    group_id       TEXT COLLATE "C" NOT NULL REFERENCES groups(id),
    principal_kind TEXT COLLATE "C" NOT NULL CHECK (principal_kind IN ('user', 'agent')),
    principal_id   TEXT COLLATE "C" NOT NULL,
    role           TEXT COLLATE "C" NOT NULL DEFAULT 'member',
    PRIMARY KEY (group_id, principal_kind, principal_id)
);
CREATE INDEX group_members_by_principal ON group_members (principal_kind, principal_id);
CREATE TABLE role_definitions (
    id          TEXT COLLATE "C" PRIMARY KEY,
    name        TEXT COLLATE "C" NOT NULL UNIQUE,
    description TEXT COLLATE "C" NOT NULL DEFAULT '',
    permissions TEXT COLLATE "C" NOT NULL
);
CREATE TABLE role_bindings (
    id             TEXT COLLATE "C" PRIMARY KEY,
    principal_kind TEXT COLLATE "C" NOT NULL CHECK (principal_kind IN ('user', 'group', 'agent')),
    principal_id   TEXT COLLATE "C" NOT NULL,
    role_id        TEXT COLLATE "C" NOT NULL REFERENCES role_definitions(id),
    scope_kind     TEXT COLLATE "C" NOT NULL CHECK (scope_kind IN ('hub', 'project')),
    scope_id       TEXT COLLATE "C" NOT NULL DEFAULT '',
    created_at     BIGINT NOT NULL
);
CREATE INDEX role_bindings_by_principal ON role_bindings (principal_kind, principal_id);
CREATE TABLE access_constraints (
    id          TEXT COLLATE "C" PRIMARY KEY,
    project_id  TEXT COLLATE "C" NOT NULL REFERENCES projects(id),
    action      TEXT COLLATE "C" NOT NULL,
    deny_phases TEXT COLLATE "C" NOT NULL,
    description TEXT COLLATE "C" NOT NULL DEFAULT ''
);
CREATE INDEX access_constraints_by_project ON access_constraints (project_id);
CREATE TABLE delegation_edges (
    id                TEXT COLLATE "C" PRIMARY KEY,
    delegator_user_id TEXT COLLATE "C" NOT NULL REFERENCES users(id),
    delegate_kind     TEXT COLLATE "C" NOT NULL CHECK (delegate_kind IN ('user', 'agent')),
    delegate_id       TEXT COLLATE "C" NOT NULL,
    project_id        TEXT COLLATE "C" REFERENCES projects(id),
    actions           TEXT COLLATE "C" NOT NULL,
    created_at        BIGINT NOT NULL
);
CREATE INDEX delegation_edges_by_delegate ON delegation_edges (delegate_kind, delegate_id);
CREATE TABLE hub_settings (
    key        TEXT COLLATE "C" PRIMARY KEY,
    value      TEXT COLLATE "C" NOT NULL,
    updated_at BIGINT NOT NULL
);
CREATE TABLE agents (
    id         TEXT COLLATE "C" PRIMARY KEY,
    project_id TEXT COLLATE "C" NOT NULL REFERENCES projects(id),
    name       TEXT COLLATE "C" NOT NULL,
    phase      TEXT COLLATE "C" NOT NULL,
    activity   TEXT COLLATE "C" NOT NULL,
    created_by TEXT COLLATE "C" NOT NULL REFERENCES users(id),
    created_at BIGINT NOT NULL,
    updated_at BIGINT NOT NULL,
    config     TEXT COLLATE "C" NOT NULL
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
    // Ported ahead of their SQLite entries, which are written alongside
    // the features that need them; a port is applied only once its SQLite
    // entry is in the build (see `ported`).
    Migration {
        version: 3,
        name: "audit events",
        sql: r#"
CREATE TABLE audit_events (
    id             BIGSERIAL PRIMARY KEY,
    at_ms          BIGINT NOT NULL,
    principal_kind TEXT COLLATE "C" NOT NULL,
    principal_id   TEXT COLLATE "C" NOT NULL,
    action         TEXT COLLATE "C" NOT NULL,
    resource_kind  TEXT COLLATE "C" NOT NULL,
    resource_id    TEXT COLLATE "C",
    outcome        TEXT COLLATE "C" NOT NULL CHECK (outcome IN ('allow', 'deny', 'error'))
);
CREATE INDEX audit_events_by_time ON audit_events (at_ms, id);
"#,
    },
    Migration {
        version: 4,
        name: "browser sessions",
        sql: r#"
CREATE TABLE web_sessions (
    session_hash BYTEA PRIMARY KEY,
    user_id      TEXT COLLATE "C" NOT NULL REFERENCES users(id),
    created_at   BIGINT NOT NULL,
    expires_at   BIGINT NOT NULL,
    revoked_at   BIGINT
);
CREATE INDEX web_sessions_by_user ON web_sessions (user_id);
"#,
    },
    Migration {
        version: 5,
        name: "audit event tallies",
        sql: r#"
ALTER TABLE audit_events ADD COLUMN allowed BIGINT NOT NULL DEFAULT 0;
ALTER TABLE audit_events ADD COLUMN denied BIGINT NOT NULL DEFAULT 0;
ALTER TABLE audit_events ADD COLUMN errors BIGINT NOT NULL DEFAULT 0;
ALTER TABLE audit_events ADD COLUMN denied_ids TEXT COLLATE "C";
UPDATE audit_events SET
    allowed = CASE WHEN outcome = 'allow' THEN 1 ELSE 0 END,
    denied = CASE WHEN outcome = 'deny' THEN 1 ELSE 0 END,
    errors = CASE WHEN outcome = 'error' THEN 1 ELSE 0 END;
"#,
    },
    Migration {
        version: 6,
        name: "audit summaries",
        sql: r#"
ALTER TABLE audit_events ADD COLUMN last_ms BIGINT;
"#,
    },
];

/// The ports this build applies: those of the versions it has an SQLite
/// entry for (at most [`LATEST_VERSION`]).
fn ported() -> impl Iterator<Item = &'static Migration> {
    POSTGRES_MIGRATIONS
        .iter()
        .filter(|m| m.version <= LATEST_VERSION)
}

const BOOKKEEPING: &str = "CREATE TABLE IF NOT EXISTS schema_migrations (
    version    INTEGER PRIMARY KEY,
    name       TEXT NOT NULL,
    applied_at BIGINT NOT NULL
)";

/// The advisory lock replicas take while migrating (any fixed number the
/// Hub alone uses).
const MIGRATION_LOCK: i64 = 0x5C10_0001;

/// The schema version recorded in the database's current schema (0 when
/// never migrated).
pub(crate) fn schema_version(client: &mut PgClient) -> Result<u32, DbError> {
    let has_table = client
        .query_one("SELECT to_regclass('schema_migrations') IS NOT NULL", &[])?
        .try_get::<_, bool>(0)?;
    if !has_table {
        return Ok(0);
    }
    let version: Option<i32> = client
        .query_one("SELECT MAX(version) FROM schema_migrations", &[])?
        .try_get(0)?;
    Ok(version.map_or(0, |v| v as u32))
}

/// The versions not yet applied; an error when the database is newer than
/// this build, or when a version has no PostgreSQL port.
pub(crate) fn pending_migrations(client: &mut PgClient) -> Result<Vec<u32>, DbError> {
    check_ported()?;
    versions_after(schema_version(client)?, ported())
}

/// Applies every pending migration, each in its own transaction, under an
/// advisory lock, and returns the versions applied. `applied_at` is `now_ms`.
pub(crate) fn migrate(client: &mut PgClient, now_ms: i64) -> Result<Vec<u32>, DbError> {
    client.execute("SELECT pg_advisory_lock($1)", &[&MIGRATION_LOCK])?;
    let result = apply_pending(client, now_ms);
    let unlocked = client.execute("SELECT pg_advisory_unlock($1)", &[&MIGRATION_LOCK]);
    let applied = result?;
    unlocked?;
    Ok(applied)
}

fn apply_pending(client: &mut PgClient, now_ms: i64) -> Result<Vec<u32>, DbError> {
    client.batch_execute(BOOKKEEPING)?;
    let pending = pending_migrations(client)?;
    for migration in ported().filter(|m| pending.contains(&m.version)) {
        let mut tx = client.transaction()?;
        tx.batch_execute(migration.sql)?;
        tx.execute(
            "INSERT INTO schema_migrations (version, name, applied_at) VALUES ($1, $2, $3)",
            &[&(migration.version as i32), &migration.name, &now_ms],
        )?;
        tx.commit()?;
    }
    Ok(pending)
}

/// Every SQLite migration has its PostgreSQL entry, same version and name.
fn check_ported() -> Result<(), DbError> {
    for sqlite in MIGRATIONS {
        let has_port = ported().any(|pg| pg.version == sqlite.version && pg.name == sqlite.name);
        if !has_port {
            return Err(DbError::Corrupt(format!(
                "migration {} ({}) has no PostgreSQL port in this build",
                sqlite.version, sqlite.name
            )));
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_migration_is_ported_with_its_version_and_name() {
        check_ported().unwrap();
        let sqlite: Vec<(u32, &str)> = MIGRATIONS.iter().map(|m| (m.version, m.name)).collect();
        let pg: Vec<(u32, &str)> = ported().map(|m| (m.version, m.name)).collect();
        assert_eq!(sqlite, pg);
        assert!(POSTGRES_MIGRATIONS
            .windows(2)
            .all(|w| w[0].version < w[1].version));
    }

    #[test]
    fn the_port_creates_the_same_tables() {
        let tables = |sql: &str| -> Vec<String> {
            let mut names: Vec<String> = sql
                .split("CREATE TABLE ")
                .skip(1)
                .map(|rest| rest.split_whitespace().next().unwrap().to_owned())
                .collect();
            names.sort();
            names
        };
        for (sqlite, pg) in MIGRATIONS.iter().zip(ported()) {
            assert_eq!(tables(sqlite.sql), tables(pg.sql), "version {}", pg.version);
        }
    }
}
