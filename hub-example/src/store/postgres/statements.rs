//! PostgreSQL's own statements (id lists are text arrays, `= ANY` or
//! `unnest`); the shared ones are used as written.

use crate::store::statements::{agent_columns, binding_columns, EngineStatements, Statements};

const OWN: EngineStatements = EngineStatements {
    role_bindings_for_principals: concat!(
        "SELECT ",
        binding_columns!(),
        " FROM unnest($1::text[], $2::text[]) AS j(kind, id)
         JOIN role_bindings rb ON rb.principal_kind = j.kind AND rb.principal_id = j.id
         ORDER BY rb.id"
    ),
    role_definitions_by_ids:
        "SELECT id, name, permissions FROM role_definitions WHERE id = ANY($1) ORDER BY id",
    access_constraints: "SELECT id, project_id, action, deny_phases FROM access_constraints
         WHERE project_id = ANY($1) ORDER BY id",
    update_agent_status: concat!(
        "UPDATE agents SET phase = $2, activity = COALESCE($3, activity),
         updated_at = GREATEST(updated_at, $4)
         WHERE id = $1 RETURNING ",
        agent_columns!()
    ),
    // TOAST keeps an oversized value apart: its size is read, not its text.
    hub_setting: "SELECT CASE WHEN CAST(octet_length(value) AS BIGINT) <= $2 THEN value END,
         CAST(octet_length(value) AS BIGINT) FROM hub_settings WHERE key = $1",
    // `NO KEY UPDATE`: other inserts referencing the user (its tokens)
    // take only a key share and are not held up.
    lock_user_sessions: "SELECT id FROM users WHERE id = $1 FOR NO KEY UPDATE",
    in_ids: "= ANY(?)",
    placeholder: "$",
};

/// The table.
pub(crate) static STATEMENTS: Statements = Statements::with(OWN);
