//! Authentication: the outermost middleware. It turns the bearer credential
//! into a [`Principal`] in the request's extensions, or answers 401 itself,
//! so a rejected request never reaches the tracing layer inside it and is
//! never traced. `/healthz` and the public settings need no credential.
//!
//! A credential that could not be checked because the Hub failed (the
//! database unavailable while the credential's user is read: 503) is not a
//! rejection: the failure is left in the request's extensions
//! ([`AuthenticationFailure`]) and answered inside the tracing layer by
//! [`answer_authentication_failure`], so that request writes its line like
//! any other the Hub could not serve.
//!
//! A request with more than one `Authorization` header is refused (400), so
//! a proxy that reads another of them cannot disagree with the Hub. Every
//! refused credential is logged, rate-limited, through [`FailedLogins`]
//! when the Hub provides it. An accepted one leaves its expiry beside the
//! principal ([`CredentialExpiry`]), so an event stream can end with it.

use axum::extract::{Request, State};
use axum::http::{header, HeaderMap};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use perf_trace_core::pool::{self, PoolFigures};

use super::failed_logins::FailedLogins;
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

/// When the request's credential stops being valid, in Unix milliseconds.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CredentialExpiry(pub i64);

pub(crate) fn bearer(headers: &HeaderMap) -> Result<&str, ApiError> {
    if headers
        .get_all(header::AUTHORIZATION)
        .iter()
        .nth(1)
        .is_some()
    {
        return Err(ApiError::bad_request("more than one authorization header"));
    }
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
pub fn resolve_principal<S: AuthzStore + ?Sized>(
    store: &S,
    signer: &crate::tokens::TokenSigner,
    token: &str,
) -> Result<Principal, ApiError> {
    resolve_credential(store, signer, token).map(|(principal, _)| principal)
}

/// [`resolve_principal`], also returning when the credential expires.
pub fn resolve_credential<S: AuthzStore + ?Sized>(
    store: &S,
    signer: &crate::tokens::TokenSigner,
    token: &str,
) -> Result<(Principal, CredentialExpiry), ApiError> {
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
        let principal = Principal::User(UserPrincipal {
            id: user.id,
            is_platform_admin: user.is_platform_admin,
            credential: Credential::AccessToken {
                project_id: stored.project_id,
            },
        });
        return Ok((principal, CredentialExpiry(stored.expires_at)));
    }
    let (subject, expires_secs) = signer
        .verify_with_expiry(token, clock::now_secs())
        .map_err(|e| ApiError::unauthorized(e.to_string()))?;
    let expiry = CredentialExpiry(expires_secs.saturating_mul(1000));
    match subject {
        TokenSubject::User(id) => {
            let user = store.get_user(&id)?.ok_or_else(invalid)?;
            let principal = Principal::User(UserPrincipal {
                id: user.id,
                is_platform_admin: user.is_platform_admin,
                credential: Credential::Session,
            });
            Ok((principal, expiry))
        }
        TokenSubject::Agent(id) => {
            let agent = store.get_agent(&id)?.ok_or_else(invalid)?;
            let principal = Principal::Agent(AgentPrincipal {
                id: Id::from(id),
                project_id: agent.project_id,
            });
            Ok((principal, expiry))
        }
    }
}

/// Logs a refused credential (when the Hub provides the log) and answers.
fn refuse(request: &Request, error: ApiError, credential: Option<&str>) -> Response {
    if error.status() == axum::http::StatusCode::UNAUTHORIZED {
        if let Some(log) = request.extensions().get::<FailedLogins>() {
            let reason = error.body()["error"].as_str().unwrap_or("refused");
            log.record(reason, credential);
        }
    }
    error.into_response()
}

/// A failure of the Hub's own while authenticating (a 5xx: the database
/// unavailable or failing), left for [`answer_authentication_failure`] to
/// answer inside the tracing layer.
#[derive(Debug, Clone)]
pub struct AuthenticationFailure(ApiError);

/// Answers a refused credential (400, 401, 403) at once, untraced; passes a
/// failure of the Hub's own on to be answered inside the tracing layer.
async fn refuse_or_pass_on(
    mut request: Request,
    next: Next,
    baseline: Option<PoolFigures>,
    error: ApiError,
    credential: Option<&str>,
) -> Response {
    if error.status().is_server_error() {
        request
            .extensions_mut()
            .insert(AuthenticationFailure(error));
        return pass_on(request, next, baseline).await;
    }
    refuse(&request, error, credential)
}

/// Runs the rest of the stack, handing a traced request's tracing layer
/// the pool's figures as authentication began (see
/// [`crate::perf::pool_baseline`]).
async fn pass_on(request: Request, next: Next, baseline: Option<PoolFigures>) -> Response {
    match baseline {
        Some(baseline) => pool::with_baseline(baseline, next.run(request)).await,
        None => next.run(request).await,
    }
}

/// Innermost, inside the tracing layer: answers the [`AuthenticationFailure`]
/// authentication left in place of a principal; any other request goes on
/// to its route.
pub async fn answer_authentication_failure(mut request: Request, next: Next) -> Response {
    match request.extensions_mut().remove::<AuthenticationFailure>() {
        Some(AuthenticationFailure(error)) => error.into_response(),
        None => next.run(request).await,
    }
}

/// The middleware.
pub async fn authenticate<S: AuthzStore, A: AuditEmitter>(
    State(state): State<AppState<S, A>>,
    mut request: Request,
    next: Next,
) -> Response {
    if PUBLIC_PATHS.contains(&request.uri().path()) {
        // Nothing read here: the layer's own reading is the baseline.
        return next.run(request).await;
    }
    let baseline = state
        .notes_pool_baseline()
        .then(|| crate::perf::pool_baseline(state.db()));
    if let Some(session) = crate::web::cookie_session(&request) {
        let resolved = match session {
            Ok(id) => crate::web::resolve_cookie_session(&state, id).await,
            Err(e) => Err(e),
        };
        return match resolved {
            Ok((principal, expiry)) => {
                request.extensions_mut().insert(principal);
                request.extensions_mut().insert(expiry);
                request.extensions_mut().insert(crate::web::BrowserSession);
                pass_on(request, next, baseline).await
            }
            Err(e) => refuse_or_pass_on(request, next, baseline, e, None).await,
        };
    }
    let token = match bearer(request.headers()) {
        Ok(token) => token.to_owned(),
        Err(e) => return refuse(&request, e, None),
    };
    let st = state.clone();
    let credential = token.clone();
    let resolved = tokio::task::spawn_blocking(move || {
        resolve_credential(st.store(), st.signer(), &credential)
    })
    .await;
    match resolved {
        Ok(Ok((principal, expiry))) => {
            request.extensions_mut().insert(principal);
            request.extensions_mut().insert(expiry);
            pass_on(request, next, baseline).await
        }
        Ok(Err(e)) => refuse_or_pass_on(request, next, baseline, e, Some(&token)).await,
        Err(_) => refuse_or_pass_on(request, next, baseline, ApiError::internal(), None).await,
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
        let mut twice = with_authorization(b"Bearer first").unwrap();
        twice.append(
            header::AUTHORIZATION,
            HeaderValue::from_static("Bearer last"),
        );
        let err = bearer(&twice).unwrap_err();
        assert_eq!(err.status(), 400);
        assert!(!err.body().to_string().contains("first"));
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
