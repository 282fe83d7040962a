//! Authentication: the outermost middleware. It turns the bearer credential
//! into a [`Principal`] in the request's extensions, or answers 401 itself,
//! so a rejected request never reaches the tracing layer inside it and is
//! never traced. `/healthz` and the public settings need no credential.

use axum::extract::{Request, State};
use axum::http::{header, HeaderMap};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};

use super::ApiError;
use crate::authz::{AgentPrincipal, AuditEmitter, Credential, Principal, UserPrincipal};
use crate::clock;
use crate::model::Id;
use crate::state::AppState;
use crate::store::AuthzStore;
use crate::tokens::{hashes_match, is_access_token, token_hash, TokenSubject};

/// Paths served without a credential.
pub const PUBLIC_PATHS: [&str; 2] = ["/healthz", "/api/v1/settings/public"];
/// Longest credential accepted.
const MAX_TOKEN_LEN: usize = 4096;

fn bearer(headers: &HeaderMap) -> Result<&str, ApiError> {
    let value = headers
        .get(header::AUTHORIZATION)
        .ok_or_else(|| ApiError::unauthorized("missing bearer token"))?;
    let text = value
        .to_str()
        .map_err(|_| ApiError::unauthorized("malformed authorization header"))?;
    let (scheme, token) = text
        .split_once(' ')
        .ok_or_else(|| ApiError::unauthorized("malformed authorization header"))?;
    let token = token.trim();
    if !scheme.eq_ignore_ascii_case("bearer") || token.is_empty() || token.len() > MAX_TOKEN_LEN {
        return Err(ApiError::unauthorized("malformed authorization header"));
    }
    Ok(token)
}

/// Resolves a credential to its principal (reading through the store, with
/// no recorder in scope, so nothing here is counted).
pub fn resolve_principal<S: AuthzStore>(
    store: &S,
    signer: &crate::tokens::TokenSigner,
    token: &str,
) -> Result<Principal, ApiError> {
    let invalid = || ApiError::unauthorized("invalid token");
    if is_access_token(token) {
        let hash = token_hash(token);
        let stored = store.get_user_access_token(&hash)?.ok_or_else(invalid)?;
        if !hashes_match(&stored.token_hash, &hash) {
            return Err(invalid());
        }
        if stored.revoked_at.is_some() {
            return Err(ApiError::unauthorized("token revoked"));
        }
        if stored.expires_at <= clock::now_ms() {
            return Err(ApiError::unauthorized("token expired"));
        }
        let user = store.get_user(&stored.user_id)?.ok_or_else(invalid)?;
        return Ok(Principal::User(UserPrincipal {
            id: user.id,
            is_platform_admin: user.is_platform_admin,
            credential: Credential::AccessToken {
                project_id: stored.project_id,
            },
        }));
    }
    let subject = signer
        .verify(token, clock::now_secs())
        .map_err(|e| ApiError::unauthorized(e.to_string()))?;
    match subject {
        TokenSubject::User(id) => {
            let user = store.get_user(&id)?.ok_or_else(invalid)?;
            Ok(Principal::User(UserPrincipal {
                id: user.id,
                is_platform_admin: user.is_platform_admin,
                credential: Credential::Session,
            }))
        }
        TokenSubject::Agent(id) => {
            let agent = store.get_agent(&id)?.ok_or_else(invalid)?;
            Ok(Principal::Agent(AgentPrincipal {
                id: Id::from(id),
                project_id: agent.project_id,
            }))
        }
    }
}

/// The middleware.
pub async fn authenticate<S: AuthzStore, A: AuditEmitter>(
    State(state): State<AppState<S, A>>,
    mut request: Request,
    next: Next,
) -> Response {
    if PUBLIC_PATHS.contains(&request.uri().path()) {
        return next.run(request).await;
    }
    let token = match bearer(request.headers()) {
        Ok(token) => token.to_owned(),
        Err(e) => return e.into_response(),
    };
    let st = state.clone();
    let resolved =
        tokio::task::spawn_blocking(move || resolve_principal(st.store(), st.signer(), &token))
            .await;
    match resolved {
        Ok(Ok(principal)) => {
            request.extensions_mut().insert(principal);
            next.run(request).await
        }
        Ok(Err(e)) => e.into_response(),
        Err(_) => ApiError::internal().into_response(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use axum::http::HeaderValue;

    fn with_authorization(value: &[u8]) -> Option<HeaderMap> {
        let value = HeaderValue::from_bytes(value).ok()?;
        let mut headers = HeaderMap::new();
        headers.insert(header::AUTHORIZATION, value);
        Some(headers)
    }

    #[test]
    fn bearer_credentials_are_checked_without_echoing_them() {
        let ok = with_authorization(b"Bearer scb1.abc.def").unwrap();
        assert_eq!(bearer(&ok).unwrap(), "scb1.abc.def");
        let lower = with_authorization(b"bearer  tok ").unwrap();
        assert_eq!(bearer(&lower).unwrap(), "tok");
        for bad in [
            &b"Basic dXNlcjpwYXNz"[..],
            b"Bearer",
            b"Bearer ",
            b"tok",
            b"Bearer \xff\xfe",
        ] {
            let headers = with_authorization(bad).unwrap();
            let err = bearer(&headers).unwrap_err();
            assert_eq!(err.status(), 401);
            assert!(!err.body().to_string().contains("dXNl"));
        }
        let long = format!("Bearer {}", "a".repeat(MAX_TOKEN_LEN + 1));
        assert!(bearer(&with_authorization(long.as_bytes()).unwrap()).is_err());
        assert!(bearer(&HeaderMap::new()).is_err());
    }

    mod fuzz {
        use super::*;
        use proptest::prelude::*;

        proptest! {
            #[test]
            fn fuzz_authorization_headers_never_panic(
                value in proptest::collection::vec(any::<u8>(), 0..200),
            ) {
                if let Some(headers) = with_authorization(&value) {
                    match bearer(&headers) {
                        Ok(token) => prop_assert!(!token.is_empty() && token.len() <= MAX_TOKEN_LEN),
                        Err(e) => prop_assert_eq!(e.status(), 401),
                    }
                }
            }

            #[test]
            fn fuzz_bearer_like_headers_never_panic(token in "(?i:bearer)? ?\\PC{0,100}") {
                if let Some(headers) = with_authorization(token.as_bytes()) {
                    let _ = bearer(&headers);
                }
            }
        }
    }
}
