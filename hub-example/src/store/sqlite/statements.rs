//! SQLite's statements: the shared ones with `?N` placeholders, and its own
//! (id lists are a JSON array read with `json_each`).

use std::sync::LazyLock;

use crate::store::statements::{binding_columns, question_marks, EngineStatements, Statements};

const OWN: EngineStatements = EngineStatements {
    role_bindings_for_principals: concat!(
        "SELECT ", binding_columns!(), " FROM json_each($1) j
         JOIN role_bindings rb
           ON rb.principal_kind = (j.value ->> 0) AND rb.principal_id = (j.value ->> 1)
         ORDER BY rb.id"
    ),
    role_definitions_by_ids: "SELECT id, name, permissions FROM role_definitions
         WHERE id IN (SELECT value FROM json_each($1)) ORDER BY id",
    access_constraints: "SELECT id, project_id, action, deny_phases FROM access_constraints
         WHERE project_id IN (SELECT value FROM json_each($1)) ORDER BY id",
    update_agent_status: concat!(
        "UPDATE agents SET phase = $2, activity = COALESCE($3, activity), updated_at = MAX(updated_at, $4)
         WHERE id = $1 RETURNING ", crate::store::statements::agent_columns!()
    ),
    // A scan, not a seek (`+key`): `hub_settings` is WITHOUT ROWID, and a
    // seek loads every whole row it compares its key with, an oversized
    // one included (100 ms for 48 MB, for any key); a scan of its few rows
    // reads each value's header only.
    hub_setting: "SELECT CASE WHEN octet_length(value) <= $2 THEN value END,
         octet_length(value) FROM hub_settings WHERE +key = $1",
    // The transaction's first write takes the database's one write lock.
    lock_user_sessions: "",
    in_ids: "IN (SELECT value FROM json_each(?))",
    placeholder: "?",
};

/// The table, made on first use.
pub(crate) static STATEMENTS: LazyLock<Statements> =
    LazyLock::new(|| Statements::with(OWN).map(question_marks));
