//! The profiling settings the web client reads: `profiling.readiness_marks`,
//! a row of the hub settings table, off by default and changed without a
//! restart.
//!
//! - `GET /api/v1/profiling` answers `{"readiness_marks": bool}` to any
//!   authenticated caller.
//! - `PUT /api/v1/admin/profiling` with `{"readiness_marks": bool}` changes it:
//!   a hub administrator on a session (a browser's cookie or a session bearer
//!   token). User access tokens are refused 403, whoever holds them, so a
//!   token handed to a script cannot turn instrumentation on.
//!
//! The page shell reads the same row once per full page load. Nothing keeps
//! the value in memory, so every Hub sharing a PostgreSQL database reads
//! what any of them last wrote.

use axum::extract::rejection::BytesRejection;
use axum::extract::State;
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use axum::{Extension, Json};
use bytes::Bytes;
use serde::{Deserialize, Serialize};

use super::state::AppState;
use super::ApiError;
use crate::authz::{AuditEmitter, Credential, Principal};
use crate::replicas::Invalidation;
use crate::settings::hub::{Stored, READINESS_MARKS};
use crate::store::db::{Db, DbError};
use crate::store::{settings, AuthzStore};

/// The hub settings key of the readiness marks.
pub(crate) const READINESS_MARKS_KEY: &str = READINESS_MARKS;

/// The profiling settings, as both endpoints write them.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct ProfilingSettings {
    /// Whether the web client writes `scion:ready:*` User Timing marks.
    pub readiness_marks: bool,
}

/// Whether readiness marks are on. A missing row, or a value that is not
/// `true`, is off. Read from the table on every call, so a change made
/// through another Hub sharing the database is seen at once.
pub fn readiness_marks(db: &Db) -> Result<bool, DbError> {
    let value = settings::hub_setting(db, READINESS_MARKS_KEY)?;
    Ok(value == Some(Stored::Text("true".to_owned())))
}

/// Turns readiness marks on or off.
pub fn set_readiness_marks(db: &Db, on: bool, now_ms: i64) -> Result<(), DbError> {
    settings::put_hub_settings(
        db,
        &[(READINESS_MARKS_KEY.to_owned(), on.to_string())],
        now_ms,
    )
}

/// `GET /api/v1/profiling`.
pub(crate) async fn get_profiling<S: AuthzStore, A: AuditEmitter>(
    State(state): State<AppState<S, A>>,
) -> Result<Response, ApiError> {
    let on = perf_trace_core::scope::spawn_blocking(move || readiness_marks(state.db())).await??;
    Ok(Json(ProfilingSettings {
        readiness_marks: on,
    })
    .into_response())
}

/// Parses the body of the PUT: exactly `{"readiness_marks": true|false}`.
fn parse_body(body: &[u8]) -> Result<ProfilingSettings, ApiError> {
    serde_json::from_slice(body).map_err(|_| {
        ApiError::bad_request(
            r#"body must be {"readiness_marks": true} or {"readiness_marks": false}"#,
        )
    })
}

/// `PUT /api/v1/admin/profiling`.
pub(crate) async fn put_profiling<S: AuthzStore, A: AuditEmitter>(
    State(state): State<AppState<S, A>>,
    Extension(principal): Extension<Principal>,
    body: Result<Bytes, BytesRejection>,
) -> Result<Response, ApiError> {
    let body = body?;
    if let Some(user) = principal.user() {
        if matches!(user.credential, Credential::AccessToken { .. }) {
            return Err(ApiError::new(
                StatusCode::FORBIDDEN,
                "access tokens cannot change profiling settings; sign in with a session",
            ));
        }
    }
    let settings = perf_trace_core::scope::spawn_blocking(move || {
        let authz = state.authorizer(&principal);
        if !authz.allow_hub_admin()? {
            return Err(ApiError::forbidden());
        }
        let settings = parse_body(&body)?;
        set_readiness_marks(state.db(), settings.readiness_marks, crate::clock::now_ms())?;
        // A hub setting like any other: no cached response is found again,
        // on any replica.
        state.invalidate(Invalidation::Everything);
        Ok(settings)
    })
    .await??;
    Ok(Json(settings).into_response())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::db::{OpenMode, PoolOptions};

    #[test]
    fn the_body_is_exactly_one_boolean() {
        assert_eq!(
            parse_body(br#"{"readiness_marks": true}"#).unwrap(),
            ProfilingSettings {
                readiness_marks: true
            }
        );
        for bad in [
            &br#"{"readiness_marks": "yes"}"#[..],
            br#"{"readiness_marks": true, "other": 1}"#,
            br#"{}"#,
            b"readiness_marks: true",
            b"",
        ] {
            let err = parse_body(bad).unwrap_err();
            assert_eq!(err.status(), StatusCode::BAD_REQUEST);
        }
    }

    #[test]
    fn the_setting_is_off_until_set_and_follows_each_change() {
        let dir = tempfile::tempdir().unwrap();
        let db = Db::open(
            &dir.path().join("hub.db"),
            OpenMode::CreateIfMissing,
            PoolOptions::default(),
        )
        .unwrap();
        db.migrate(0).unwrap();
        assert!(!readiness_marks(&db).unwrap());
        set_readiness_marks(&db, true, 1).unwrap();
        assert!(readiness_marks(&db).unwrap());
        set_readiness_marks(&db, false, 2).unwrap();
        assert!(!readiness_marks(&db).unwrap());
    }
}
