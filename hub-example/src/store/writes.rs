//! The Hub's writes: agent status changes and hub settings. Writes are not
//! authorization inputs and are never store-counted.

use rusqlite::OptionalExtension;

use super::sqlite::{agent, AGENT_COLUMNS};
use crate::db::{Db, DbError, Dialect};
use crate::model::{Agent, AgentActivity, AgentPhase};

/// Sets an agent's phase (and activity, when given) and returns the agent as
/// stored; `None` when there is no such agent. `updated_at` never goes
/// back, even if the clock does.
pub fn update_agent_status(
    db: &Db,
    agent_id: &str,
    phase: AgentPhase,
    activity: Option<AgentActivity>,
    now_ms: i64,
) -> Result<Option<Agent>, DbError> {
    if db.dialect() == Dialect::Postgres {
        return super::postgres::update_agent_status(db, agent_id, phase, activity, now_ms);
    }
    let conn = db.conn()?;
    let mut stmt = conn.prepare_cached(&format!(
        "UPDATE agents SET phase = ?2, activity = COALESCE(?3, activity), updated_at = MAX(updated_at, ?4)
         WHERE id = ?1 RETURNING {AGENT_COLUMNS}"
    ))?;
    Ok(stmt
        .query_row(
            (
                agent_id,
                phase.as_str(),
                activity.map(AgentActivity::as_str),
                now_ms,
            ),
            agent,
        )
        .optional()?)
}

/// Stores hub settings (key, JSON value) in one transaction.
pub fn put_hub_settings(
    db: &Db,
    settings: &[(String, String)],
    now_ms: i64,
) -> Result<(), DbError> {
    if db.dialect() == Dialect::Postgres {
        return super::postgres::put_hub_settings(db, settings, now_ms);
    }
    let mut conn = db.conn()?;
    let tx = conn.transaction()?;
    {
        let mut stmt = tx.prepare_cached(
            "INSERT INTO hub_settings (key, value, updated_at) VALUES (?1, ?2, ?3)
             ON CONFLICT (key) DO UPDATE SET value = excluded.value, updated_at = excluded.updated_at",
        )?;
        for (key, value) in settings {
            stmt.execute((key, value, now_ms))?;
        }
    }
    tx.commit()?;
    Ok(())
}

/// A user access token to store.
#[derive(Debug, Clone, Copy)]
pub struct NewAccessToken<'a> {
    /// The token's id.
    pub id: &'a str,
    /// The user it acts as.
    pub user_id: &'a str,
    /// The project it is limited to.
    pub project_id: &'a str,
    /// A label.
    pub name: &'a str,
    /// The token itself (only its hash is stored).
    pub token: &'a str,
    /// Expiry, Unix milliseconds.
    pub expires_at_ms: i64,
}

/// Stores a user access token, keeping only its SHA-256 hash.
pub fn insert_user_access_token(
    db: &Db,
    token: &NewAccessToken<'_>,
    now_ms: i64,
) -> Result<(), DbError> {
    if db.dialect() == Dialect::Postgres {
        return super::postgres::insert_user_access_token(db, token, now_ms);
    }
    let conn = db.conn()?;
    conn.prepare_cached(
        "INSERT INTO user_access_tokens (id, user_id, project_id, name, token_hash, created_at, expires_at)
         VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7)",
    )?
    .execute((
        token.id,
        token.user_id,
        token.project_id,
        token.name,
        &crate::auth::tokens::token_hash(token.token)[..],
        now_ms,
        token.expires_at_ms,
    ))?;
    Ok(())
}

/// Revokes a user access token.
pub fn revoke_user_access_token(db: &Db, token_id: &str, now_ms: i64) -> Result<bool, DbError> {
    if db.dialect() == Dialect::Postgres {
        return super::postgres::revoke_user_access_token(db, token_id, now_ms);
    }
    let conn = db.conn()?;
    let changed = conn
        .prepare_cached(
            "UPDATE user_access_tokens SET revoked_at = ?2 WHERE id = ?1 AND revoked_at IS NULL",
        )?
        .execute((token_id, now_ms))?;
    Ok(changed == 1)
}
