//! Browser sign-in and sign-out.
//!
//! - `POST /api/v1/auth/session` with `Authorization: Bearer <token>`: a
//!   user's session bearer token, posted once, becomes a session cookie. An
//!   access token or an agent's token cannot start a browser session (403):
//!   a session has the user's full rights, which those tokens do not carry.
//! - `DELETE /api/v1/auth/session`: revokes the session and clears the cookie.
//! - `POST /api/v1/auth/test-login` with `{"email": "..."}`: a session for
//!   that user with no token at all. Mounted only by
//!   `serve --enable-test-login`, for disposable benchmark Hubs.
//!
//! Each needs [`CLIENT_HEADER`](crate::auth::session::CLIENT_HEADER) and, when the
//! browser sends one, the Hub's own `Origin`, so another site cannot sign a
//! visitor in or out. Credentials never travel in a URL.
//!
//! Sign-ins are rate-limited ([`SignInLimits`]): per client address (the
//! connection's peer, never a header), refused ones included, before the
//! token is read; per user once it is known. Past either the answer is a
//! 429 with `Retry-After` and no session is made. A user's live sessions
//! are capped, the oldest ended by the sign-in that goes past the cap.

use std::net::IpAddr;

use axum::extract::rejection::BytesRejection;
use axum::extract::{Request, State};
use axum::http::{header, HeaderMap, Method, StatusCode, Uri};
use axum::response::{IntoResponse, Response};
use axum::{Extension, Json};
use bytes::Bytes;
use serde::Deserialize;
use serde_json::json;

use super::WebState;
use crate::api::ApiError;
use crate::auth::bearer::{bearer_token, resolve_credential};
use crate::auth::session::{
    check_same_origin, clear_cookie, create_session_within, over_tls, revoke_session,
    session_cookie, set_cookie,
};
use crate::authz::{Credential, Principal};
use crate::connections::ClientAddr;
use crate::model::User;
use crate::rate::TokenBuckets;
use crate::settings::ServerLimits;
use crate::store::sessions::user_id_by_email;
use crate::store::AuthzStore;

/// The signed-in user, as sign-in answers and the page shell embed it.
pub(crate) fn user_json(user: &User) -> serde_json::Value {
    json!({
        "id": &*user.id,
        "displayName": user.display_name,
        "isPlatformAdmin": user.is_platform_admin,
    })
}

/// The sign-in rates per client address and per user, and the cap of a
/// user's live sessions (cheap to clone: the buckets are shared).
#[derive(Debug, Clone)]
pub(crate) struct SignInLimits {
    per_address: TokenBuckets<IpAddr>,
    per_user: TokenBuckets<String>,
    max_sessions: usize,
}

impl SignInLimits {
    /// The rates and cap of `limits`.
    pub fn new(limits: &ServerLimits) -> Self {
        SignInLimits {
            per_address: TokenBuckets::per_minute(limits.sign_ins_per_minute_per_address),
            per_user: TokenBuckets::per_minute(limits.sign_ins_per_minute),
            max_sessions: limits.max_sessions_per_user,
        }
    }

    /// Takes one sign-in from the bucket of the request's client address;
    /// a request with none (called in-process) is not limited by address.
    fn take_address(&self, client: Option<&ClientAddr>) -> Result<(), ApiError> {
        match client {
            Some(client) => self
                .per_address
                .take(&client.ip())
                .map_err(too_many_sign_ins),
            None => Ok(()),
        }
    }

    /// Takes one sign-in from `user_id`'s bucket.
    fn take_user(&self, user_id: &str) -> Result<(), ApiError> {
        self.per_user
            .take(&user_id.to_owned())
            .map_err(too_many_sign_ins)
    }
}

/// The 429 of a sign-in past its rate.
fn too_many_sign_ins(retry_after_secs: u64) -> ApiError {
    ApiError::too_many("too many sign-ins; retry later", retry_after_secs)
}

/// Answers a new session for `user`, once its rate allows one: the cookie
/// and the user.
fn signed_in(state: &WebState, user: &User, secure: bool) -> Result<Response, ApiError> {
    state.sign_ins.take_user(&user.id)?;
    let id = create_session_within(
        &state.db,
        &user.id,
        crate::clock::now_ms(),
        state.sign_ins.max_sessions,
    )?;
    let mut response = Json(json!({ "user": user_json(user) })).into_response();
    response
        .headers_mut()
        .insert(header::SET_COOKIE, set_cookie(&id, secure));
    response
        .headers_mut()
        .insert(header::CACHE_CONTROL, "no-store".parse().expect("static"));
    Ok(response)
}

/// `POST /api/v1/auth/session`.
pub async fn sign_in(
    State(state): State<WebState>,
    request: Request,
) -> Result<Response, ApiError> {
    let headers = request.headers();
    check_same_origin(request.method(), headers)?;
    state
        .sign_ins
        .take_address(request.extensions().get::<ClientAddr>())?;
    let token = bearer_token(headers)?.to_owned();
    let secure = over_tls(headers, request.uri());
    let web = state.clone();
    let credential = token.clone();
    let signed_in_or_refused = tokio::task::spawn_blocking(move || {
        let (principal, _) = resolve_credential(&web.store, &web.signer, &token)?;
        let user_id = match principal {
            Principal::User(user) if user.credential == Credential::Session => user.id,
            _ => {
                return Err(ApiError::new(
                    StatusCode::FORBIDDEN,
                    "only a user's session token can start a browser session",
                ))
            }
        };
        let user = web
            .store
            .get_user(&user_id)?
            .ok_or_else(|| ApiError::unauthorized("invalid token"))?;
        signed_in(&web, &user, secure)
    })
    .await?;
    // A refused token is logged like any refused credential (rate-limited,
    // never the token itself).
    if let (Err(e), Some(log)) = (&signed_in_or_refused, &state.failed_logins) {
        if e.status() == StatusCode::UNAUTHORIZED {
            let reason = e.body()["error"].as_str().unwrap_or("refused");
            log.record(reason, Some(&credential));
        }
    }
    signed_in_or_refused
}

/// `DELETE /api/v1/auth/session`: always clears the cookie; revokes the
/// session when there is one.
pub async fn sign_out(
    State(state): State<WebState>,
    method: Method,
    uri: Uri,
    headers: HeaderMap,
) -> Result<Response, ApiError> {
    check_same_origin(&method, &headers)?;
    let secure = over_tls(&headers, &uri);
    if let Some(id) = session_cookie(&headers).map(str::to_owned) {
        let db = state.db.clone();
        tokio::task::spawn_blocking(move || revoke_session(&db, &id, crate::clock::now_ms()))
            .await??;
    }
    let mut response = Json(json!({ "signedOut": true })).into_response();
    response
        .headers_mut()
        .insert(header::SET_COOKIE, clear_cookie(secure));
    Ok(response)
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct TestLogin {
    email: String,
}

/// `POST /api/v1/auth/test-login` (only with `--enable-test-login`).
pub(crate) async fn test_login(
    State(state): State<WebState>,
    method: Method,
    uri: Uri,
    headers: HeaderMap,
    client: Option<Extension<ClientAddr>>,
    body: Result<Bytes, BytesRejection>,
) -> Result<Response, ApiError> {
    check_same_origin(&method, &headers)?;
    state.sign_ins.take_address(client.as_deref())?;
    let secure = over_tls(&headers, &uri);
    let login: TestLogin = serde_json::from_slice(&body?)
        .map_err(|_| ApiError::bad_request(r#"body must be {"email": "..."}"#))?;
    let web = state.clone();
    tokio::task::spawn_blocking(move || {
        let user_id = user_id_by_email(&web.db, &login.email)?;
        let user = match user_id {
            Some(id) => web.store.get_user(&id)?,
            None => None,
        }
        .ok_or_else(|| ApiError::not_found("user"))?;
        signed_in(&web, &user, secure)
    })
    .await?
}
