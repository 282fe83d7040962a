//! The web client's routes called in-process as the page calls them: a
//! request with the web listener's `Host`, a sign-in with a token, and the
//! answer with the session cookie it sets.

use axum::body::Body;
use axum::http::request::Builder;
use axum::http::{header, Request, StatusCode};
use axum::Router;
use hub_example::auth::tokens::token_hash;
use hub_example::store::db::Db;
use serde_json::Value;

/// An answer of the web routes, read to its end.
pub struct Answer {
    pub status: StatusCode,
    /// The whole `Set-Cookie`, if any.
    pub cookie: Option<String>,
    /// The body as JSON (`Null` when it is not JSON).
    pub body: Value,
    /// The body as text.
    pub text: String,
}

impl Answer {
    /// The body as JSON (`Null` when it is not JSON).
    pub fn json(&self) -> Value {
        self.body.clone()
    }
}

/// Sends `request` to `router`.
pub async fn send(router: &Router, request: Request<Body>) -> Answer {
    let reply = super::send(router, request).await;
    Answer {
        status: reply.status,
        cookie: reply
            .headers
            .get(header::SET_COOKIE)
            .map(|v| v.to_str().unwrap().to_owned()),
        body: serde_json::from_slice(&reply.body).unwrap_or(Value::Null),
        text: String::from_utf8_lossy(&reply.body).into_owned(),
    }
}

/// A request to the web listener, without the web client's header.
pub fn request(method: &str, uri: &str) -> Builder {
    Request::builder()
        .method(method)
        .uri(uri)
        .header(header::HOST, "127.0.0.1:18080")
}

/// A request to the web listener as the page sends it.
pub fn web_request(method: &str, uri: &str) -> Builder {
    request(method, uri).header("x-scion-client", "web")
}

/// `request`, bodiless, carrying a session's `cookie` (its `name=value`).
pub fn with_cookie(request: Builder, cookie: &str) -> Request<Body> {
    request
        .header(header::COOKIE, cookie)
        .body(Body::empty())
        .unwrap()
}

/// A sign-in with `token` (add the web client's header, or not).
pub fn sign_in_with(token: &str) -> Builder {
    request("POST", "/api/v1/auth/session").header(header::AUTHORIZATION, format!("Bearer {token}"))
}

/// A sign-in with `token` with the client header the page sends.
pub fn page_sign_in(token: &str) -> Builder {
    sign_in_with(token).header("x-scion-client", "web")
}

/// A sign-in with `token` as the page sends it.
pub fn sign_in_request(token: &str) -> Request<Body> {
    page_sign_in(token).body(Body::empty()).unwrap()
}

/// Checks that `db` holds the session of `cookie` (its `name=value`) only
/// as its hash: one row, keyed by the id's SHA-256, of `user`, and no
/// column holding the id itself.
pub fn assert_session_stored_as_hash(db: &Db, cookie: &str, user: &str) {
    let id = cookie.split_once('=').unwrap().1;
    let rows: Vec<(Vec<u8>, String)> =
        super::sql::query(db, "SELECT session_hash, user_id FROM web_sessions", &[])
            .iter()
            .map(|r| (r[0].as_bytes(), r[1].text().to_owned()))
            .collect();
    assert_eq!(rows, vec![(token_hash(id).to_vec(), user.to_owned())]);
}

/// The `name=value` part of a `Set-Cookie`.
pub fn cookie_pair(set_cookie: &str) -> String {
    set_cookie.split(';').next().unwrap().to_owned()
}
