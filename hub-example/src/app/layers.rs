//! The layers around every router of the Hub, in one order, from the
//! outside in:
//!
//! 1. the request timeout (a JSON 408, the body's upload included), on a
//!    served Hub's routers;
//! 2. the Hub's values for the API's handlers: the log of refused
//!    credentials, the limits, the stream caps and the quota of uncached
//!    lists;
//! 3. a handler's panic answered as a JSON 500 (outside tracing, so a
//!    panicking request still writes its line);
//! 4. the limits on the path, query and headers;
//! 5. authentication, on the API's routes;
//! 6. tracing, when it is on;
//! 7. on the API's routes, the answer to a failure of the Hub's own while
//!    authenticating (a 503 with the database unavailable), so that request
//!    is traced.
//!
//! [`api`] puts layers 3 to 7 on the API's routes as they are built (over
//! their state), [`guard`] the others, at serving time or on the routes of
//! other listeners: layers 1 and 2 around the built API, or 1, 3, 4 and 6
//! around the web client's routes. Each stack is one `Router::layer` call
//! where it can be, since axum wraps every route once per
//! call and each wrap costs every request a boxed clone of the route and a
//! boxed future.

use std::time::Duration;

use axum::Router;
use tower::ServiceBuilder;
use tower_http::catch_panic::CatchPanicLayer;

use crate::api::{
    authenticate, enforce_request_timeout, limit_request_size, panic_response, ListQuota,
    StreamLimiter,
};
use crate::auth::FailedLogins;
use crate::authz::AuditEmitter;
use crate::perf::{HubTraceLayer, WebTraceLayer};
use crate::settings::ServerLimits;
use crate::store::AuthzStore;

use super::state::AppState;

/// The Hub's values the API's handlers read from their request (layer 2).
#[derive(Clone)]
pub(crate) struct HubValues {
    pub(crate) failed_logins: FailedLogins,
    pub(crate) limits: ServerLimits,
    pub(crate) streams: StreamLimiter,
    pub(crate) list_quota: Option<ListQuota>,
}

/// The layers [`guard`] puts on a router.
pub(crate) enum Guard {
    /// The API's router, built, when served (layers 1 and 2).
    Served(Box<HubValues>),
    /// The routes of another listener (the web client's, the metrics
    /// port's): layers 1, 3, 4 and, for the web client's, 6.
    Listener {
        request_timeout: Duration,
        trace: Option<WebTraceLayer>,
    },
}

/// The API's `routes` over `state` with layers 3 to 7, tracing with
/// `trace` when it is on.
pub(crate) fn api<S: AuthzStore, A: AuditEmitter>(
    routes: Router,
    state: AppState<S, A>,
    trace: Option<HubTraceLayer>,
) -> Router {
    // Authenticating reads the database before the tracing layer
    // starts: its pool waits belong to the request's line too.
    let state = match trace.is_some() {
        true => state.noting_pool_baseline(),
        false => state,
    };
    let guards = ServiceBuilder::new()
        .layer(CatchPanicLayer::custom(panic_response))
        .layer(axum::middleware::from_fn(limit_request_size))
        .layer(axum::middleware::from_fn_with_state(
            state,
            authenticate::authenticate::<S, A>,
        ));
    let answer_failure = axum::middleware::from_fn(authenticate::answer_authentication_failure);
    match trace {
        Some(trace) => routes.layer(guards.layer(trace).layer(answer_failure)),
        None => routes.layer(guards.layer(answer_failure)),
    }
}

/// `routes` with the layers `guard` names, in the module's order.
pub(crate) fn guard(routes: Router, guard: Guard) -> Router {
    match guard {
        Guard::Served(values) => {
            let HubValues {
                failed_logins,
                limits,
                streams,
                list_quota,
            } = *values;
            let routes = match list_quota {
                Some(quota) => routes.layer(axum::Extension(quota)),
                None => routes,
            };
            routes.layer(
                ServiceBuilder::new()
                    .layer(axum::middleware::from_fn_with_state(
                        limits.request_timeout,
                        enforce_request_timeout,
                    ))
                    .layer(axum::Extension(failed_logins))
                    .layer(axum::Extension(limits))
                    .layer(axum::Extension(streams)),
            )
        }
        Guard::Listener {
            request_timeout,
            trace,
        } => {
            let routes = match trace {
                Some(trace) => routes.layer(trace),
                None => routes,
            };
            routes.layer(
                ServiceBuilder::new()
                    .layer(axum::middleware::from_fn_with_state(
                        request_timeout,
                        enforce_request_timeout,
                    ))
                    .layer(CatchPanicLayer::custom(panic_response))
                    .layer(axum::middleware::from_fn(limit_request_size)),
            )
        }
    }
}
