//! The API router's authentication layer: the outermost middleware. It
//! turns the credential into a [`Principal`] in the request's extensions,
//! or answers 401 itself, so a rejected request never reaches the tracing
//! layer inside it and is never traced. `/healthz` and the public settings
//! need no credential. What a credential is and how it resolves lives in
//! [`crate::auth`]; this layer only applies it.
//!
//! A credential that could not be checked because the Hub failed (the
//! database unavailable while the credential's user is read: 503) is not a
//! rejection: the failure is left in the request's extensions
//! ([`AuthenticationFailure`]) and answered inside the tracing layer by
//! [`answer_authentication_failure`], so that request writes its line like
//! any other the Hub could not serve.
//!
//! Every refused credential is logged, rate-limited, through the Hub's
//! log of refused credentials when the state has one. An accepted one leaves its
//! expiry beside the principal ([`CredentialExpiry`]), so an event stream
//! can end with it. On the web listener, a session cookie authenticates a
//! request that has no `Authorization` header ([`BrowserSession`]).

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;

use axum::extract::{Request, State};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use perf_trace_core::record::{with_baseline, PoolFigures};

use super::state::AppState;
use super::{public, ApiError};
use crate::auth::bearer::{bearer_token, resolve_credential};
use crate::auth::session::{cookie_session, resolve_session, BrowserSession};
use crate::auth::{CredentialExpiry, FailedLogins};
use crate::authz::{AuditEmitter, Principal};
use crate::store::AuthzStore;

/// Paths served without a credential.
pub(crate) const PUBLIC_PATHS: [&str; 2] = [public::HEALTHZ, public::PUBLIC_SETTINGS];

/// Logs a refused credential in `log` (when the Hub has one) and answers.
fn refuse(log: Option<&FailedLogins>, error: ApiError, credential: Option<&str>) -> Response {
    if error.status() == axum::http::StatusCode::UNAUTHORIZED {
        if let Some(log) = log {
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
pub(crate) struct AuthenticationFailure(ApiError);

/// Answers a refused credential (400, 401, 403) at once, untraced; passes a
/// failure of the Hub's own on to be answered inside the tracing layer.
async fn refuse_or_pass_on(
    mut request: Request,
    next: Next,
    baseline: Option<PoolFigures>,
    log: Option<&FailedLogins>,
    error: ApiError,
    credential: Option<&str>,
) -> Response {
    if error.status().is_server_error() {
        request
            .extensions_mut()
            .insert(AuthenticationFailure(error));
        return pass_on(request, next, baseline).await;
    }
    refuse(log, error, credential)
}

/// Runs the rest of the stack, handing a traced request's tracing layer
/// the pool's figures as authentication began (see
/// [`crate::perf::pool_baseline`]).
async fn pass_on(request: Request, next: Next, baseline: Option<PoolFigures>) -> Response {
    match baseline {
        Some(baseline) => with_baseline(baseline, next.run(request)).await,
        None => next.run(request).await,
    }
}

/// Innermost, inside the tracing layer: answers the [`AuthenticationFailure`]
/// authentication left in place of a principal; any other request goes on
/// to its route.
pub(crate) async fn answer_authentication_failure(mut request: Request, next: Next) -> Response {
    match request.extensions_mut().remove::<AuthenticationFailure>() {
        Some(AuthenticationFailure(error)) => error.into_response(),
        None => next.run(request).await,
    }
}

/// What [`Authenticate::authenticate`] returns: the answer, once the rest
/// of the stack has run or the credential was refused.
pub(crate) type AuthenticatedFuture = Pin<Box<dyn Future<Output = Response> + Send>>;

/// Authentication over one API's state, whatever its store and audit
/// emitter: what lets the layers be stacked by one function that names no
/// store type (`crate::app::layers`).
pub(crate) trait Authenticate: Send + Sync {
    /// Authenticates `request`, then runs `next` or answers.
    fn authenticate(&self, request: Request, next: Next) -> AuthenticatedFuture;
}

impl<S: AuthzStore, A: AuditEmitter> Authenticate for AppState<S, A> {
    fn authenticate(&self, request: Request, next: Next) -> AuthenticatedFuture {
        Box::pin(authenticate_with(self.clone(), request, next))
    }
}

/// The middleware.
pub(crate) async fn authenticate(
    State(gate): State<Arc<dyn Authenticate>>,
    request: Request,
    next: Next,
) -> Response {
    gate.authenticate(request, next).await
}

async fn authenticate_with<S: AuthzStore, A: AuditEmitter>(
    state: AppState<S, A>,
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
    let log = state.guards().failed_logins.as_ref();
    if let Some(session) = cookie_session(&request) {
        let resolved = match session {
            Ok(id) => resolve_cookie_session(&state, id).await,
            Err(e) => Err(e.into()),
        };
        return match resolved {
            Ok((principal, expiry)) => {
                request.extensions_mut().insert(principal);
                request.extensions_mut().insert(expiry);
                request.extensions_mut().insert(BrowserSession);
                pass_on(request, next, baseline).await
            }
            Err(e) => refuse_or_pass_on(request, next, baseline, log, e, None).await,
        };
    }
    let token = match bearer_token(request.headers()) {
        Ok(token) => token.to_owned(),
        Err(e) => return refuse(log, e.into(), None),
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
        Ok(Err(e)) => refuse_or_pass_on(request, next, baseline, log, e.into(), Some(&token)).await,
        Err(_) => refuse_or_pass_on(request, next, baseline, log, ApiError::internal(), None).await,
    }
}

/// Resolves a session id (from [`cookie_session`]) to its user, off the
/// async threads like a bearer credential.
async fn resolve_cookie_session<S: AuthzStore, A: AuditEmitter>(
    state: &AppState<S, A>,
    id: String,
) -> Result<(Principal, CredentialExpiry), ApiError> {
    let state = state.clone();
    tokio::task::spawn_blocking(move || resolve_session(state.store(), state.db(), &id))
        .await
        .map_err(ApiError::from)?
        .map_err(ApiError::from)
}
