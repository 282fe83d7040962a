//! Browser sessions: a random session id in an `HttpOnly`, `SameSite=Strict`
//! cookie (`Secure` when the page was reached over TLS), stored in the
//! `web_sessions` table (SQLite or PostgreSQL, as the Hub's database is)
//! only as its SHA-256, like access tokens.
//!
//! A session is obtained by posting a bearer token once (the web client's
//! sign-in), so the token never lives in the browser, and ends at sign-out
//! (the row is revoked), after [`SESSION_LIFETIME`], or when its user signs
//! in past [`ServerLimits::max_sessions_per_user`] (the oldest is deleted,
//! in the sign-in's transaction). Expired and revoked rows are deleted at
//! each of their user's sign-ins and every
//! [`ServerLimits::session_prune_interval`] ([`prune_periodically`]).
//!
//! Only the web listener reads the cookie (`CookieSessions` marks its
//! router; `cookie_session` finds the id). Requests authenticated by the
//! cookie are checked against cross-site forgery on every unsafe method:
//! they must carry `CLIENT_HEADER` (a cross-site page cannot set it
//! without a CORS preflight the Hub never grants) and, when the browser
//! sends an `Origin`, it must be the Hub's own.

use std::time::Duration;

use axum::extract::Request;
use axum::http::{header, HeaderMap, HeaderValue, Method};
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use base64::Engine;

use super::error::AuthError;
use super::expiry::CredentialExpiry;
use super::tokens::token_hash;
use crate::authz::{Credential, Principal, UserPrincipal};
use crate::log::Logger;
use crate::settings::ServerLimits;
use crate::store::db::{Db, DbError};
use crate::store::sessions::NewSession;
use crate::store::{sessions, AuthzStore};

/// The session cookie's name.
pub const SESSION_COOKIE: &str = "scion_session";
/// How long a session lasts.
pub const SESSION_LIFETIME: Duration = Duration::from_secs(12 * 60 * 60);
/// The header the web client sends on every unsafe request.
pub(crate) const CLIENT_HEADER: &str = "x-scion-client";
/// Its value.
pub(crate) const CLIENT_HEADER_VALUE: &str = "web";
/// The prefix of session ids (so a leaked one is recognisable in a scan).
const SESSION_PREFIX: &str = "scws_";

/// Marks a router whose requests may authenticate with the session cookie:
/// the web listener's. The API listener never has it, so there a cookie is
/// ignored and only bearer credentials count.
#[derive(Debug, Clone, Copy)]
pub(crate) struct CookieSessions;

/// Put in a request's extensions when its caller was authenticated by the
/// session cookie rather than a bearer header.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct BrowserSession;

/// Creates a session for `user_id` and returns its id (the cookie's value),
/// within the default cap of live sessions per user
/// (`create_session_within`).
pub fn create_session(db: &Db, user_id: &str, now_ms: i64) -> Result<String, AuthError> {
    create_session_within(
        db,
        user_id,
        now_ms,
        ServerLimits::default().max_sessions_per_user,
    )
}

/// Creates a session for `user_id` and returns its id, ending the user's
/// oldest live sessions past `max_live` (and deleting its expired and
/// revoked ones) in the same transaction. Fails only when the database
/// does, or the system has no randomness.
pub(crate) fn create_session_within(
    db: &Db,
    user_id: &str,
    now_ms: i64,
    max_live: usize,
) -> Result<String, AuthError> {
    let mut bytes = [0u8; 32];
    getrandom::fill(&mut bytes).map_err(|_| AuthError::Internal)?;
    let id = format!("{SESSION_PREFIX}{}", URL_SAFE_NO_PAD.encode(bytes));
    let session = NewSession {
        session_hash: &token_hash(&id),
        user_id,
        now_ms,
        expires_at: now_ms + SESSION_LIFETIME.as_millis() as i64,
    };
    sessions::insert_session(db, session, max_live)?;
    Ok(id)
}

/// Prunes expired and revoked sessions every `every`, the first time one
/// interval after it starts, until dropped. A failure is logged and tried
/// again at the next interval.
pub async fn prune_periodically(db: Db, every: Duration, logger: Logger) {
    let mut interval = tokio::time::interval_at(tokio::time::Instant::now() + every, every);
    interval.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    loop {
        interval.tick().await;
        let db = db.clone();
        let pruned = tokio::task::spawn_blocking(move || {
            sessions::prune_sessions(&db, crate::clock::now_ms())
        })
        .await;
        match pruned {
            Ok(Ok(0)) => {}
            Ok(Ok(n)) => logger.info("sessions pruned", &[("deleted", n.into())]),
            Ok(Err(e)) => logger.warn("sessions not pruned", &[("error", e.to_string().into())]),
            Err(_) => {}
        }
    }
}

/// The user and expiry of a live session, `None` when the id is unknown,
/// revoked or expired.
pub(crate) fn live_session(
    db: &Db,
    id: &str,
    now_ms: i64,
) -> Result<Option<(String, i64)>, DbError> {
    if !id.starts_with(SESSION_PREFIX) || id.len() > 128 {
        return Ok(None);
    }
    let session = sessions::live_session(db, &token_hash(id), now_ms)?;
    Ok(session.map(|s| (s.user_id, s.expires_at)))
}

/// Ends a session; `false` when it was not live.
pub(crate) fn revoke_session(db: &Db, id: &str, now_ms: i64) -> Result<bool, DbError> {
    sessions::revoke_session(db, &token_hash(id), now_ms)
}

/// The session cookie's value, if the request carries one.
pub(crate) fn session_cookie(headers: &HeaderMap) -> Option<&str> {
    headers
        .get_all(header::COOKIE)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .flat_map(|v| v.split(';'))
        .filter_map(|pair| pair.trim().split_once('='))
        .find(|(name, _)| *name == SESSION_COOKIE)
        .map(|(_, value)| value.trim())
        .filter(|value| !value.is_empty())
}

/// Whether the page was reached over TLS: directly, or through a proxy that
/// says so.
pub(crate) fn over_tls(headers: &HeaderMap, uri: &axum::http::Uri) -> bool {
    uri.scheme_str() == Some("https")
        || headers
            .get("x-forwarded-proto")
            .and_then(|v| v.to_str().ok())
            .is_some_and(|v| v.eq_ignore_ascii_case("https"))
}

/// The `Set-Cookie` value that starts a session.
pub(crate) fn set_cookie(id: &str, secure: bool) -> HeaderValue {
    let secure = if secure { "; Secure" } else { "" };
    let value = format!(
        "{SESSION_COOKIE}={id}; Path=/; HttpOnly; SameSite=Strict; Max-Age={}{secure}",
        SESSION_LIFETIME.as_secs()
    );
    HeaderValue::from_str(&value).expect("session ids are base64url")
}

/// The `Set-Cookie` value that removes the session cookie.
pub(crate) fn clear_cookie(secure: bool) -> HeaderValue {
    let secure = if secure { "; Secure" } else { "" };
    HeaderValue::from_str(&format!(
        "{SESSION_COOKIE}=; Path=/; HttpOnly; SameSite=Strict; Max-Age=0{secure}"
    ))
    .expect("static text")
}

/// Refuses a cookie-authenticated unsafe request that could come from
/// another site: it must carry [`CLIENT_HEADER`], and its `Origin`, when
/// sent, must name the host the request was sent to.
pub(crate) fn check_same_origin(method: &Method, headers: &HeaderMap) -> Result<(), AuthError> {
    if matches!(*method, Method::GET | Method::HEAD | Method::OPTIONS) {
        return Ok(());
    }
    let refused = || {
        AuthError::Forbidden(
            "cross-site request refused: send X-Scion-Client: web from the Hub's own pages",
        )
    };
    if headers.get(CLIENT_HEADER).and_then(|v| v.to_str().ok()) != Some(CLIENT_HEADER_VALUE) {
        return Err(refused());
    }
    if let Some(origin) = headers.get(header::ORIGIN) {
        let origin = origin.to_str().map_err(|_| refused())?;
        let host = headers
            .get(header::HOST)
            .and_then(|v| v.to_str().ok())
            .ok_or_else(refused)?;
        let origin_host = origin
            .strip_prefix("http://")
            .or_else(|| origin.strip_prefix("https://"))
            .ok_or_else(refused)?;
        if !origin_host.eq_ignore_ascii_case(host) {
            return Err(refused());
        }
    }
    Ok(())
}

/// The session id a request may authenticate with: `None` unless it came
/// to the web listener (its router marked with [`CookieSessions`]) with a
/// session cookie and no `Authorization` header (then the bearer header
/// decides). An unsafe method must also pass [`check_same_origin`].
pub(crate) fn cookie_session(request: &Request) -> Option<Result<String, AuthError>> {
    request.extensions().get::<CookieSessions>()?;
    let headers = request.headers();
    if headers.contains_key(header::AUTHORIZATION) {
        return None;
    }
    let id = session_cookie(headers)?.to_owned();
    Some(check_same_origin(request.method(), headers).map(|()| id))
}

/// Resolves a session cookie to its user, with the session's expiry. The
/// user reads through `store` with no recorder in scope, so nothing is
/// counted, as for bearer credentials.
pub(crate) fn resolve_session<S: AuthzStore>(
    store: &S,
    db: &Db,
    id: &str,
) -> Result<(Principal, CredentialExpiry), AuthError> {
    let invalid = || AuthError::refused("session expired or signed out");
    let (user_id, expires_at) =
        live_session(db, id, crate::clock::now_ms())?.ok_or_else(invalid)?;
    let user = store.get_user(&user_id)?.ok_or_else(invalid)?;
    let principal = Principal::User(UserPrincipal {
        id: user.id,
        is_platform_admin: user.is_platform_admin,
        credential: Credential::Session,
    });
    Ok((principal, CredentialExpiry(expires_at)))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn headers(pairs: &[(&'static str, &'static str)]) -> HeaderMap {
        let mut map = HeaderMap::new();
        for (name, value) in pairs {
            map.append(*name, HeaderValue::from_static(value));
        }
        map
    }

    #[test]
    fn the_cookie_is_found_among_others() {
        let h = headers(&[("cookie", "a=1; scion_session=scws_abc ; b=2")]);
        assert_eq!(session_cookie(&h), Some("scws_abc"));
        let h = headers(&[("cookie", "a=1"), ("cookie", "scion_session=scws_x")]);
        assert_eq!(session_cookie(&h), Some("scws_x"));
        assert_eq!(
            session_cookie(&headers(&[("cookie", "scion_session=")])),
            None
        );
        assert_eq!(
            session_cookie(&headers(&[("cookie", "xscion_session=1")])),
            None
        );
    }

    #[test]
    fn the_cookie_is_http_only_strict_and_secure_over_tls() {
        let plain = set_cookie("scws_abc", false);
        let plain = plain.to_str().unwrap();
        assert!(plain.starts_with("scion_session=scws_abc; Path=/; HttpOnly; SameSite=Strict"));
        assert!(!plain.contains("Secure"));
        assert!(set_cookie("scws_abc", true)
            .to_str()
            .unwrap()
            .ends_with("; Secure"));
        assert!(clear_cookie(false).to_str().unwrap().contains("Max-Age=0"));
        let proxied = headers(&[("x-forwarded-proto", "https")]);
        assert!(over_tls(&proxied, &"/".parse().unwrap()));
        assert!(!over_tls(&HeaderMap::new(), &"/".parse().unwrap()));
    }

    #[test]
    fn unsafe_requests_need_the_client_header_and_the_hubs_origin() {
        let ok = headers(&[
            ("x-scion-client", "web"),
            ("origin", "http://127.0.0.1:18080"),
            ("host", "127.0.0.1:18080"),
        ]);
        assert!(check_same_origin(&Method::PUT, &ok).is_ok());
        let no_origin = headers(&[("x-scion-client", "web"), ("host", "h")]);
        assert!(check_same_origin(&Method::POST, &no_origin).is_ok());
        let foreign = headers(&[
            ("x-scion-client", "web"),
            ("origin", "http://evil.example"),
            ("host", "127.0.0.1:18080"),
        ]);
        let missing = headers(&[("origin", "http://h"), ("host", "h")]);
        for (method, h) in [(Method::PUT, &foreign), (Method::DELETE, &missing)] {
            let err = check_same_origin(&method, h).unwrap_err();
            assert!(matches!(err, AuthError::Forbidden(_)), "{err:?}");
        }
        assert!(check_same_origin(&Method::GET, &HeaderMap::new()).is_ok());
    }
}
