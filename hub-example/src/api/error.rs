//! Error responses: every error is a JSON object `{"error": "..."}` with the
//! right status. Messages describe the problem without echoing the input.

use axum::http::{header, StatusCode};
use axum::response::{IntoResponse, Response};
use serde_json::json;

use crate::auth::AuthError;
use crate::listing::ListError;
use crate::store::db::DbError;

/// An error answered to the client.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct ApiError {
    status: StatusCode,
    body: serde_json::Value,
}

impl ApiError {
    /// An error with `status` and message.
    pub fn new(status: StatusCode, message: impl Into<String>) -> Self {
        ApiError {
            status,
            body: json!({ "error": message.into() }),
        }
    }

    /// 400: the request is malformed.
    pub(crate) fn bad_request(message: impl Into<String>) -> Self {
        Self::new(StatusCode::BAD_REQUEST, message)
    }

    /// 401: no valid credential.
    pub(crate) fn unauthorized(message: impl Into<String>) -> Self {
        Self::new(StatusCode::UNAUTHORIZED, message)
    }

    /// 403: the caller may not do this.
    pub(crate) fn forbidden() -> Self {
        Self::new(StatusCode::FORBIDDEN, "forbidden")
    }

    /// 404: no such thing.
    pub(crate) fn not_found(what: &str) -> Self {
        Self::new(StatusCode::NOT_FOUND, format!("{what} not found"))
    }

    /// 422: a server-config change that touches settings that can only be
    /// set at startup.
    pub(crate) fn layer0_rejected(keys: Vec<String>) -> Self {
        ApiError {
            status: StatusCode::UNPROCESSABLE_ENTITY,
            body: json!({ "error": "layer0_rejected", "keys": keys }),
        }
    }

    /// 500: something failed inside the Hub.
    pub(crate) fn internal() -> Self {
        Self::new(StatusCode::INTERNAL_SERVER_ERROR, "internal error")
    }

    /// 429: `message`, and when to come back ([`ApiError::retry_after`]).
    pub(crate) fn too_many(message: &str, retry_after_secs: u64) -> Self {
        Self::new(StatusCode::TOO_MANY_REQUESTS, message).retry_after(retry_after_secs)
    }

    /// The same error telling the client to come back in `seconds`: the
    /// body's `retryAfterSeconds` and the response's `Retry-After`.
    pub(crate) fn retry_after(mut self, seconds: u64) -> Self {
        self.body["retryAfterSeconds"] = json!(seconds);
        self
    }

    /// The status.
    pub fn status(&self) -> StatusCode {
        self.status
    }

    /// The JSON body.
    pub fn body(&self) -> &serde_json::Value {
        &self.body
    }
}

impl From<DbError> for ApiError {
    fn from(e: DbError) -> Self {
        if e.is_busy() {
            ApiError::new(
                StatusCode::SERVICE_UNAVAILABLE,
                "database busy or locked, try again later",
            )
        } else {
            ApiError::internal()
        }
    }
}

impl From<AuthError> for ApiError {
    fn from(e: AuthError) -> Self {
        match e {
            AuthError::Malformed(message) => ApiError::bad_request(message),
            AuthError::Refused(reason) => ApiError::unauthorized(reason),
            AuthError::Forbidden(message) => ApiError::new(StatusCode::FORBIDDEN, message),
            AuthError::Db(e) => e.into(),
            AuthError::Internal => ApiError::internal(),
        }
    }
}

impl From<ListError> for ApiError {
    fn from(e: ListError) -> Self {
        match e {
            ListError::ProjectNotFound => ApiError::not_found("project"),
            ListError::Forbidden => ApiError::forbidden(),
            ListError::Db(e) => e.into(),
        }
    }
}

impl From<axum::extract::rejection::BytesRejection> for ApiError {
    /// A body that could not be read: 413 when too large, otherwise the
    /// rejection's status, always as JSON.
    fn from(e: axum::extract::rejection::BytesRejection) -> Self {
        if e.status() == StatusCode::PAYLOAD_TOO_LARGE {
            ApiError::new(StatusCode::PAYLOAD_TOO_LARGE, "request body too large")
        } else {
            ApiError::new(e.status(), "request body could not be read")
        }
    }
}

impl From<tokio::task::JoinError> for ApiError {
    fn from(_: tokio::task::JoinError) -> Self {
        ApiError::internal()
    }
}

impl IntoResponse for ApiError {
    fn into_response(self) -> Response {
        let mut response = (
            self.status,
            [(header::CONTENT_TYPE, "application/json")],
            self.body.to_string(),
        )
            .into_response();
        if self.status == StatusCode::SERVICE_UNAVAILABLE {
            // Busy is temporary: say when to come back.
            response
                .headers_mut()
                .insert(header::RETRY_AFTER, header::HeaderValue::from_static("1"));
        }
        if let Some(seconds) = self.body["retryAfterSeconds"].as_u64() {
            response
                .headers_mut()
                .insert(header::RETRY_AFTER, header::HeaderValue::from(seconds));
        }
        response
    }
}

/// The handler of unknown routes: 404 as JSON.
pub(crate) async fn not_found() -> ApiError {
    ApiError::not_found("route")
}

/// The handler of a known route with the wrong method: 405 as JSON.
pub(crate) async fn method_not_allowed() -> ApiError {
    ApiError::new(StatusCode::METHOD_NOT_ALLOWED, "method not allowed")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn list_errors_answer_with_their_status() {
        for (error, status, body) in [
            (
                ListError::ProjectNotFound,
                StatusCode::NOT_FOUND,
                json!({"error": "project not found"}),
            ),
            (
                ListError::Forbidden,
                StatusCode::FORBIDDEN,
                json!({"error": "forbidden"}),
            ),
            (
                ListError::Db(DbError::PoolTimeout),
                StatusCode::SERVICE_UNAVAILABLE,
                json!({"error": "database busy or locked, try again later"}),
            ),
            (
                ListError::Db(DbError::Sql(rusqlite::Error::InvalidQuery)),
                StatusCode::INTERNAL_SERVER_ERROR,
                json!({"error": "internal error"}),
            ),
        ] {
            let api = ApiError::from(error);
            assert_eq!((api.status(), api.body()), (status, &body));
        }
    }

    #[test]
    fn authentication_errors_answer_with_their_status() {
        for (error, status, body) in [
            (
                AuthError::Malformed("more than one authorization header"),
                StatusCode::BAD_REQUEST,
                json!({"error": "more than one authorization header"}),
            ),
            (
                AuthError::refused("token expired"),
                StatusCode::UNAUTHORIZED,
                json!({"error": "token expired"}),
            ),
            (
                AuthError::Forbidden("cross-site request refused"),
                StatusCode::FORBIDDEN,
                json!({"error": "cross-site request refused"}),
            ),
            (
                AuthError::Db(DbError::PoolTimeout),
                StatusCode::SERVICE_UNAVAILABLE,
                json!({"error": "database busy or locked, try again later"}),
            ),
            (
                AuthError::Internal,
                StatusCode::INTERNAL_SERVER_ERROR,
                json!({"error": "internal error"}),
            ),
        ] {
            let api = ApiError::from(error);
            assert_eq!((api.status(), api.body()), (status, &body));
        }
    }
}
