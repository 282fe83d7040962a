//! Every statement the store runs, written once with PostgreSQL's numbered
//! placeholders (`$1`); SQLite's table is the same text with `?1`, made once
//! when first used. Only what the engines say differently (id lists, the
//! larger of two values) is written per engine, in the [`EngineStatements`]
//! of `sqlite/` and `postgres/`.

/// The columns of an agent row, in the order `mapping::agent` reads them.
macro_rules! agent_columns {
    () => {
        "id, project_id, name, phase, activity, created_by, created_at, updated_at, config"
    };
}
pub(crate) use agent_columns;

/// The columns of a role binding (`rb`), in the order `mapping::binding`
/// reads them.
macro_rules! binding_columns {
    () => {
        "rb.id, rb.principal_kind, rb.principal_id, rb.role_id, rb.scope_kind, rb.scope_id"
    };
}
pub(crate) use binding_columns;

macro_rules! statements {
    (
        shared { $($shared:ident = $text:expr,)* }
        per_engine { $($(#[$doc:meta])* $own:ident,)* }
    ) => {
        /// The statements of one engine.
        #[derive(Debug, Clone)]
        pub struct Statements {
            $(pub(crate) $shared: &'static str,)*
            $(pub(crate) $own: &'static str,)*
        }

        /// The statements each engine writes its own way.
        #[derive(Debug, Clone, Copy)]
        pub(crate) struct EngineStatements {
            $($(#[$doc])* pub(crate) $own: &'static str,)*
        }

        impl Statements {
            /// The shared statements with a engine's own.
            pub(crate) const fn with(own: EngineStatements) -> Statements {
                Statements {
                    $($shared: $text,)*
                    $($own: own.$own,)*
                }
            }

            /// Every statement passed through `f`.
            pub(crate) fn map(self, f: impl Fn(&'static str) -> &'static str) -> Statements {
                Statements {
                    $($shared: f(self.$shared),)*
                    $($own: f(self.$own),)*
                }
            }
        }
    };
}

statements! {
    shared {
        effective_groups = "WITH RECURSIVE g(id) AS (
                SELECT group_id FROM group_members WHERE principal_kind = $1 AND principal_id = $2
                UNION
                SELECT gp.parent_id FROM group_parents gp JOIN g ON gp.group_id = g.id
            ) SELECT id FROM g ORDER BY id",
        parent_groups = "SELECT g.id, g.slug, g.name FROM group_parents gp JOIN groups g ON g.id = gp.parent_id
             WHERE gp.group_id = $1 ORDER BY g.slug",
        user_groups = "SELECT g.id, g.slug, g.name FROM group_members m JOIN groups g ON g.id = m.group_id
             WHERE m.principal_kind = 'user' AND m.principal_id = $1 ORDER BY g.slug",
        group_membership = "SELECT role FROM group_members
             WHERE group_id = $1 AND principal_kind = $2 AND principal_id = $3",
        group_by_slug = "SELECT g.id, g.slug, g.name FROM groups g WHERE g.slug = $1",
        role_bindings_for_principal = concat!(
            "SELECT ", binding_columns!(), " FROM role_bindings rb
             WHERE rb.principal_kind = $1 AND rb.principal_id = $2 ORDER BY rb.id"
        ),
        role_definition = "SELECT id, name, permissions FROM role_definitions WHERE id = $1",
        role_definition_by_name = "SELECT id, name, permissions FROM role_definitions WHERE name = $1",
        delegation_edges_for_delegate = "SELECT id, delegator_user_id, project_id, actions FROM delegation_edges
             WHERE delegate_kind = $1 AND delegate_id = $2 ORDER BY id",
        user = "SELECT id, email, display_name, is_platform_admin, created_at FROM users WHERE id = $1",
        user_id_by_email = "SELECT id FROM users WHERE email = $1",
        user_access_token = "SELECT id, user_id, project_id, token_hash, expires_at, revoked_at
             FROM user_access_tokens WHERE token_hash = $1",
        agent = concat!("SELECT ", agent_columns!(), " FROM agents WHERE id = $1"),
        project = "SELECT id, slug, name, created_by, created_at FROM projects WHERE id = $1",
        project_membership = "SELECT role FROM project_memberships WHERE project_id = $1 AND user_id = $2",
        hub_setting_keys = "SELECT key FROM hub_settings",
        put_hub_setting = "INSERT INTO hub_settings (key, value, updated_at) VALUES ($1, $2, $3)
             ON CONFLICT (key) DO UPDATE SET value = excluded.value, updated_at = excluded.updated_at",
        insert_access_token = "INSERT INTO user_access_tokens (id, user_id, project_id, name, token_hash, created_at, expires_at)
             VALUES ($1, $2, $3, $4, $5, $6, $7)",
        revoke_access_token = "UPDATE user_access_tokens SET revoked_at = $2 WHERE id = $1 AND revoked_at IS NULL",
        insert_session = "INSERT INTO web_sessions (session_hash, user_id, created_at, expires_at)
             VALUES ($1, $2, $3, $4)",
        live_session = "SELECT user_id, expires_at FROM web_sessions
             WHERE session_hash = $1 AND revoked_at IS NULL AND expires_at > $2",
        revoke_session = "UPDATE web_sessions SET revoked_at = $2 WHERE session_hash = $1 AND revoked_at IS NULL",
        cap_user_sessions = "DELETE FROM web_sessions WHERE user_id = $1 AND session_hash <> $2
             AND session_hash NOT IN (SELECT session_hash FROM web_sessions
                 WHERE user_id = $1 AND session_hash <> $2 AND revoked_at IS NULL AND expires_at > $3
                 ORDER BY created_at DESC, session_hash DESC LIMIT $4)",
        prune_sessions = "DELETE FROM web_sessions WHERE expires_at <= $1 OR revoked_at IS NOT NULL",
        project_delegations = "SELECT d.id, d.delegator_user_id, u.display_name, d.delegate_kind, d.delegate_id,
                    COALESCE(du.display_name, a.name), d.actions
             FROM delegation_edges d
             LEFT JOIN users u ON u.id = d.delegator_user_id
             LEFT JOIN users du ON d.delegate_kind = 'user' AND du.id = d.delegate_id
             LEFT JOIN agents a ON d.delegate_kind = 'agent' AND a.id = d.delegate_id
             WHERE d.project_id = $1 ORDER BY d.created_at, d.id",
        agent_rows = concat!("SELECT ", agent_columns!(), " FROM agents WHERE 1 = 1"),
    }
    per_engine {
        /// The role bindings of several principals (`Param::Principals`).
        role_bindings_for_principals,
        /// Several role definitions (`Param::Ids`).
        role_definitions_by_ids,
        /// The access constraints of several projects (`Param::Ids`).
        access_constraints,
        /// An agent's status change; `updated_at` never goes back.
        update_agent_status,
        /// A hub setting's value when it is at most `$2` bytes, and its
        /// size: `octet_length` reads a value's header, not its text, so an
        /// oversized row stored by hand is skipped without being read.
        hub_setting,
        /// Serializes one user's sign-ins until the transaction ends (its
        /// `users` row locked); empty where the transaction's write lock
        /// already does (SQLite).
        lock_user_sessions,
        /// A column's membership of an id list (`Param::Ids`), its
        /// placeholder written `?`.
        in_ids,
        /// What a placeholder's number follows: `?` or `$`.
        placeholder,
    }
}

/// `sql` with each `$N` placeholder written `?N`, kept for the life of the
/// process (a statement table is made once).
pub(crate) fn question_marks(sql: &'static str) -> &'static str {
    let bytes = sql.as_bytes();
    let numbered = |i: usize| bytes.get(i + 1).is_some_and(u8::is_ascii_digit);
    if !(0..bytes.len()).any(|i| bytes[i] == b'$' && numbered(i)) {
        return sql;
    }
    let text: String = sql
        .char_indices()
        .map(|(i, c)| if c == '$' && numbered(i) { '?' } else { c })
        .collect();
    Box::leak(text.into_boxed_str())
}

#[cfg(test)]
mod tests {
    use super::question_marks;

    #[test]
    fn numbered_placeholders_become_question_marks() {
        assert_eq!(
            question_marks("UPDATE t SET a = $2 WHERE b = $1 AND c = '$x'"),
            "UPDATE t SET a = ?2 WHERE b = ?1 AND c = '$x'"
        );
        assert_eq!(question_marks("SELECT 1"), "SELECT 1");
    }
}
