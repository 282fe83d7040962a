//! The page shell: one HTML document for every page of the client, with the
//! initial data the client reads once per full load in a
//! `<script type="application/json" id="scion-initial-data">` element.
//!
//! The initial data holds the page (`home`, `project` or `graph`), whether
//! a user is signed in and who, and `readinessMarks: true` only for a
//! signed-in user while `profiling.readiness_marks` is on; otherwise the key
//! is absent and the shell is exactly what it is with the setting off.
//!
//! The shell is never cached (it names the user). A page's data is read by
//! the client from the API, so an unknown or forbidden project is the
//! client's error page, built from the API's answer.

use axum::extract::State;
use axum::http::{header, HeaderMap, HeaderValue};
use axum::response::{IntoResponse, Response};
use serde_json::json;

use super::signin::user_json;
use super::WebState;
use crate::api::profiling::readiness_marks;
use crate::api::ApiError;
use crate::auth::session::{live_session, session_cookie};
use crate::store::AuthzStore;

/// The shell's HTML, with `{{INITIAL_DATA}}` where the initial data goes.
const SHELL: &str = include_str!("../../web/shell.html");

/// The pages' content security policy: scripts, styles and connections only
/// from the Hub itself, no framing.
const CONTENT_SECURITY_POLICY: &str = "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:; connect-src 'self'; frame-ancestors 'none'; base-uri 'none'; form-action 'self'";

/// JSON made safe inside a `<script>` element: `<`, `>` and `&` escaped, so
/// no value (a display name) can close the element.
fn script_safe(value: &serde_json::Value) -> String {
    value
        .to_string()
        .replace('<', "\\u003c")
        .replace('>', "\\u003e")
        .replace('&', "\\u0026")
}

/// The initial data of `page` for the request's caller.
fn initial_data(
    state: &WebState,
    headers: &HeaderMap,
    page: &str,
) -> Result<serde_json::Value, ApiError> {
    let now = crate::clock::now_ms();
    let session = match session_cookie(headers) {
        Some(id) => live_session(&state.db, id, now)?,
        None => None,
    };
    let user = match session {
        Some((user_id, _)) => state.store.get_user(&user_id)?,
        None => None,
    };
    let mut data = json!({ "page": page, "signedIn": user.is_some() });
    if let Some(user) = &user {
        data["user"] = user_json(user);
        if readiness_marks(&state.db)? {
            data["readinessMarks"] = json!(true);
        }
    }
    Ok(data)
}

/// The shell of `page`, rendered for the caller.
async fn shell(
    state: WebState,
    headers: HeaderMap,
    page: &'static str,
) -> Result<Response, ApiError> {
    let data = tokio::task::spawn_blocking(move || initial_data(&state, &headers, page)).await??;
    let html = SHELL.replace("{{INITIAL_DATA}}", &script_safe(&data));
    let mut response = html.into_response();
    let h = response.headers_mut();
    h.insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("text/html; charset=utf-8"),
    );
    h.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-store"));
    h.insert(
        header::CONTENT_SECURITY_POLICY,
        HeaderValue::from_static(CONTENT_SECURITY_POLICY),
    );
    h.insert(
        header::X_CONTENT_TYPE_OPTIONS,
        HeaderValue::from_static("nosniff"),
    );
    h.insert(
        header::REFERRER_POLICY,
        HeaderValue::from_static("same-origin"),
    );
    Ok(response)
}

/// `GET /`: sign-in, or the way to a project.
pub(crate) async fn home(
    State(state): State<WebState>,
    headers: HeaderMap,
) -> Result<Response, ApiError> {
    shell(state, headers, "home").await
}

/// `GET /projects/{id}`: a project's agents in grid, list and graph views.
pub(crate) async fn project(
    State(state): State<WebState>,
    headers: HeaderMap,
) -> Result<Response, ApiError> {
    shell(state, headers, "project").await
}

/// `GET /graph?project=ID`: the standalone graph, filtered by project.
pub(crate) async fn graph(
    State(state): State<WebState>,
    headers: HeaderMap,
) -> Result<Response, ApiError> {
    shell(state, headers, "graph").await
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn initial_data_cannot_close_its_script_element() {
        let data = json!({"user": {"displayName": "</script><script>alert(1)</script>&"}});
        let safe = script_safe(&data);
        assert!(!safe.contains('<') && !safe.contains('>') && !safe.contains('&'));
        let back: serde_json::Value = serde_json::from_str(&safe).unwrap();
        assert_eq!(back, data);
    }

    #[test]
    fn the_shell_has_one_place_for_the_data_and_loads_the_client() {
        assert_eq!(SHELL.matches("{{INITIAL_DATA}}").count(), 1);
        assert!(SHELL.contains(r#"<script type="module" src="/assets/app.js">"#));
    }
}
