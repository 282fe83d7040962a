//! A ready policy for the common case: [`RoutePolicy`] classifies each
//! request by the routes its endpoint classes declare, and sends the perf
//! headers only to the requests a closure allows (none by default).

use std::fmt;
use std::marker::PhantomData;
use std::sync::Arc;

use http::Request;

use super::{method_name, TracePolicy};
use crate::keys::{EndpointKey, Schema};

/// Who may receive the perf headers, asked with the request's extensions.
type HeadersAllowed = Arc<dyn Fn(&http::Extensions) -> bool + Send + Sync>;

/// Classifies each request by the routes of the schema's endpoint classes
/// (`#[key(route = "GET /items/{sku}")]`, see
/// [`EndpointKey::from_route`]), falling back to the default class.
///
/// With the `axum` feature, the route is axum's `MatchedPath` when the
/// router set one (install the layer with `Router::layer`, which wraps
/// each route, so that the router has matched); else, and without the
/// feature, the request's path is matched against the routes.
///
/// A route key no route of the service matches (a typo:
/// `GET /acounts/{id}`) compiles, and the requests it meant land in the
/// default class. [`testing::assert_routes`](crate::testing::assert_routes)
/// finds it in a test; at run time, with axum, the first request to each
/// route of the service that lands in the default class while a key is a
/// typo (two edits) away from it writes one warning (a `tracing` event of
/// target `perf_trace` with the feature `tracing`, else a JSON line on
/// standard error): at most one per route.
///
/// The perf headers go to no one unless
/// [`perf_headers_for`](Self::perf_headers_for) says who may have them.
pub struct RoutePolicy<S> {
    headers_allowed: Option<HeadersAllowed>,
    incoming_request_id: bool,
    /// The router's routes classed in the default class, each checked
    /// once for a mistyped route key.
    #[cfg(feature = "axum")]
    unmatched: Arc<super::route_check::UnmatchedRoutes>,
    _schema: PhantomData<fn() -> S>,
}

impl<S> RoutePolicy<S> {
    /// A policy that classifies by route and sends no perf headers.
    pub fn new() -> Self {
        RoutePolicy {
            headers_allowed: None,
            incoming_request_id: false,
            #[cfg(feature = "axum")]
            unmatched: Arc::default(),
            _schema: PhantomData,
        }
    }

    /// Sends the perf headers to a request that asks for them (the trigger
    /// header with the value `1`) when `allowed` says yes, from what
    /// authentication put in the request's extensions (the layer sits
    /// inside authentication).
    ///
    /// ```
    /// use perf_trace_core::layer::RoutePolicy;
    /// # use perf_trace_core::{KeySet, Schema};
    /// # #[derive(KeySet, Clone, Copy, PartialEq, Eq, Debug)]
    /// # #[key_set(phases)]
    /// # enum Phase { Load }
    /// # #[derive(KeySet, Clone, Copy, PartialEq, Eq, Debug)]
    /// # #[key_set(store_methods)]
    /// # enum Method { GetItem }
    /// # #[derive(KeySet, Clone, Copy, PartialEq, Eq, Debug)]
    /// # #[key_set(endpoints)]
    /// # enum Endpoint { #[key(default)] Other }
    /// # struct App;
    /// # impl Schema for App { type Phase = Phase; type StoreMethod = Method; type Endpoint = Endpoint; }
    /// #[derive(Clone)]
    /// struct Caller { admin: bool }
    ///
    /// let policy = RoutePolicy::<App>::new()
    ///     .perf_headers_for(|ext| ext.get::<Caller>().is_some_and(|c| c.admin));
    /// # let _ = policy;
    /// ```
    pub fn perf_headers_for(
        mut self,
        allowed: impl Fn(&http::Extensions) -> bool + Send + Sync + 'static,
    ) -> Self {
        self.headers_allowed = Some(Arc::new(allowed));
        self
    }

    /// Adopts the request id a caller sends in the request-id header
    /// (`X-Request-ID` unless the profile renames it) when it is 1 to 64
    /// bytes of `[A-Za-z0-9._:-]` and no outer `SetRequestIdLayer` set one
    /// (see [`TracePolicy::adopts_incoming_request_id`]). Off by default:
    /// turn it on when callers' ids are worth keeping (a gateway in front
    /// sets them, or clients join their logs to the service's).
    pub fn adopt_incoming_request_id(mut self, adopt: bool) -> Self {
        self.incoming_request_id = adopt;
        self
    }
}

impl<S> Default for RoutePolicy<S> {
    fn default() -> Self {
        Self::new()
    }
}

impl<S> Clone for RoutePolicy<S> {
    fn clone(&self) -> Self {
        RoutePolicy {
            headers_allowed: self.headers_allowed.clone(),
            incoming_request_id: self.incoming_request_id,
            #[cfg(feature = "axum")]
            unmatched: Arc::clone(&self.unmatched),
            _schema: PhantomData,
        }
    }
}

impl<S> fmt::Debug for RoutePolicy<S> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("RoutePolicy")
            .field("perf_headers", &self.headers_allowed.is_some())
            .field("incoming_request_id", &self.incoming_request_id)
            .finish()
    }
}

impl<S: Schema> TracePolicy<S> for RoutePolicy<S> {
    fn classify<B>(&self, request: &Request<B>) -> S::Endpoint {
        let method = method_name(request.method());
        #[cfg(feature = "axum")]
        if let Some(route) = request.extensions().get::<axum::extract::MatchedPath>() {
            let class = S::Endpoint::from_route(method, route.as_str());
            // A schema without route keys has none to mistype.
            if class == S::Endpoint::DEFAULT && !S::Endpoint::ROUTES.is_empty() {
                self.unmatched.check::<S::Endpoint>(method, route.as_str());
            }
            return class;
        }
        S::Endpoint::from_route(method, request.uri().path())
    }

    fn headers_allowed<B>(&self, request: &Request<B>) -> bool {
        self.headers_allowed
            .as_ref()
            .is_some_and(|allowed| allowed(request.extensions()))
    }

    fn adopts_incoming_request_id(&self) -> bool {
        self.incoming_request_id
    }
}
