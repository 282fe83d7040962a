//! The layers around every router of the Hub, stacked by one function,
//! [`stack`], in one order, from the outside in:
//!
//! 1. the request timeout (a JSON 408, the body's upload included);
//! 2. a handler's panic answered as a JSON 500 (outside tracing, so a
//!    panicking request still writes its line);
//! 3. the limits on the path, query and headers;
//! 4. authentication, on the API's routes;
//! 5. tracing, when it is on (the API's endpoint classes, or the web
//!    client's on its own routes);
//! 6. on the API's routes, the answer to a failure of the Hub's own while
//!    authenticating (a 503 with the database unavailable), so that request
//!    is traced.
//!
//! The Hub's values (its limits, stream caps, quota of uncached lists and
//! log of refused credentials) are no layer: handlers read them from the
//! state ([`crate::api::state::Guards`]). Each stack is one `Router::layer`
//! call, since axum wraps every route once per call and each wrap costs
//! every request a boxed clone of the route and a boxed future.

use std::sync::Arc;
use std::time::Duration;

use axum::middleware::{from_fn, from_fn_with_state};
use axum::Router;
use tower::ServiceBuilder;
use tower_http::catch_panic::CatchPanicLayer;

use crate::api::authenticate::{answer_authentication_failure, authenticate, Authenticate};
use crate::api::{enforce_request_timeout, limit_request_size, panic_response};
use crate::perf::{HubTraceLayer, WebTraceLayer};

/// Which routes a stack is for.
pub(crate) enum Scope {
    /// The API's routes: authenticated by `authenticate` (the API's state),
    /// traced with the Hub's endpoint classes when `trace` is on.
    Api {
        authenticate: Arc<dyn Authenticate>,
        trace: Option<HubTraceLayer>,
    },
    /// The routes of another listener (the web client's, the metrics
    /// port's): unauthenticated here, traced with the web client's classes
    /// when `trace` is on.
    Listener { trace: Option<WebTraceLayer> },
}

/// `routes` with the layers `scope` calls for, in the module's order, the
/// request timeout at `request_timeout`.
pub(crate) fn stack(routes: Router, request_timeout: Duration, scope: Scope) -> Router {
    let guards = ServiceBuilder::new()
        .layer(from_fn_with_state(request_timeout, enforce_request_timeout))
        .layer(CatchPanicLayer::custom(panic_response))
        .layer(from_fn(limit_request_size));
    let answer_failure = from_fn(answer_authentication_failure);
    match scope {
        Scope::Api {
            authenticate: gate,
            trace: Some(trace),
        } => routes.layer(
            guards
                .layer(from_fn_with_state(gate, authenticate))
                .layer(trace)
                .layer(answer_failure),
        ),
        Scope::Api {
            authenticate: gate,
            trace: None,
        } => routes.layer(
            guards
                .layer(from_fn_with_state(gate, authenticate))
                .layer(answer_failure),
        ),
        Scope::Listener { trace: Some(trace) } => routes.layer(guards.layer(trace)),
        Scope::Listener { trace: None } => routes.layer(guards),
    }
}
