//! The web client: the pages, their assets and browser sign-in, served with
//! the API on the web listener (`serve --enable-web --web-port PORT`).
//!
//! - [`pages`]: the page shell of `/`, `/projects/{id}` and `/graph`, with
//!   the initial data the client reads once per full load (the signed-in
//!   user and, while `profiling.readiness_marks` is on, `readinessMarks`).
//! - [`assets`]: the ES modules and the style sheet, compiled into the
//!   binary, served with their content types, an `ETag` and revalidation.
//! - `signin`: posting a bearer token once for a session, sign-out, and
//!   the test login that only `serve --enable-test-login` mounts. The
//!   sessions themselves (the cookie, its table, the cross-site checks) are
//!   [`crate::auth::session`]'s.
//!
//! [`router`] puts these in front of the Hub's own router, which answers
//! everything else (the API and `/events`), and lets its requests
//! authenticate with the session cookie (`CookieSessions`). The API listener (`--port`) never
//! reads the cookie. The web client's own routes pass the Hub's request
//! guards (`Hub::guarded_web`): the request timeout, the size limits, the
//! panic answer, JSON errors (a 405 too), and, with tracing on, their own
//! perf_trace line and `X-Request-ID` (`web.page`, `web.asset`, `web.auth`).

pub mod assets;
pub mod pages;
pub(crate) mod signin;

use axum::routing::{get, post};
use axum::{Extension, Router};

use crate::api::method_not_allowed;
use crate::auth::session::CookieSessions;
use crate::auth::{FailedLogins, TokenSigner};
use crate::perf::keys::{route_at, EndpointClass};
use crate::settings::ServerLimits;
use crate::store::db::Db;

use crate::store::Store;
use crate::Hub;

/// How the web listener behaves.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct WebOptions {
    /// Mount `POST /api/v1/auth/test-login` (sign in by email, without a
    /// token), for disposable benchmark Hubs only: `serve --enable-test-login`.
    pub test_login: bool,
}

/// What the web handlers read.
#[derive(Clone)]
pub(crate) struct WebState {
    db: Db,
    store: Store,
    signer: TokenSigner,
    failed_logins: Option<FailedLogins>,
    sign_ins: signin::SignInLimits,
}

impl std::fmt::Debug for WebState {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("WebState").finish_non_exhaustive()
    }
}

impl WebState {
    /// The web handlers' state over the Hub's database and signer, with
    /// the default sign-in rates and cap of sessions.
    pub fn new(db: Db, signer: TokenSigner) -> Self {
        WebState {
            store: Store::open(&db),
            db,
            signer,
            failed_logins: None,
            sign_ins: signin::SignInLimits::new(&ServerLimits::default()),
        }
    }

    /// The same, with these sign-in rates and cap of sessions.
    pub(crate) fn with_sign_ins(mut self, sign_ins: signin::SignInLimits) -> Self {
        self.sign_ins = sign_ins;
        self
    }

    /// The same, logging refused sign-ins in `log`.
    pub(crate) fn with_failed_logins(mut self, log: FailedLogins) -> Self {
        self.failed_logins = Some(log);
        self
    }
}

/// The web listener's router: the pages, assets and sign-in in front of the
/// Hub's router, whose requests may authenticate with the session cookie.
pub fn router(hub: &Hub, options: WebOptions) -> Router {
    let state = WebState::new(hub.db().clone(), hub.signer().clone())
        .with_failed_logins(hub.failed_logins().clone())
        .with_sign_ins(hub.sign_ins().clone());
    // The paths are the web classes' routes (`#[key(route = ..)]`), in the
    // order each class lists them.
    let (page, asset, auth) = (
        EndpointClass::WebPage,
        EndpointClass::WebAsset,
        EndpointClass::WebAuth,
    );
    let mut web = Router::new()
        .route(route_at(page, 0), get(pages::home))
        .route(route_at(page, 1), get(pages::project))
        .route(route_at(page, 2), get(pages::graph))
        .route(route_at(asset, 0), get(assets::asset))
        .route(
            route_at(auth, 0),
            post(signin::sign_in).delete(signin::sign_out),
        );
    if options.test_login {
        web = web.route(route_at(auth, 2), post(signin::test_login));
    }
    // Guarded before the fallback is set: the Hub's router has its own.
    hub.guarded_web(
        web.method_not_allowed_fallback(method_not_allowed)
            .with_state(state),
    )
    .fallback_service(hub.router())
    .layer(Extension(CookieSessions))
}
