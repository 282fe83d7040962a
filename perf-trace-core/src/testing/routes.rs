//! Checking a schema's route keys against an axum router in a test
//! (feature `axum`): [`assert_routes`].

use std::convert::Infallible;
use std::fmt;
use std::future::{ready, Ready};
use std::task::{Context, Poll};

use axum::body::Body;
use axum::extract::{MatchedPath, Request};
use http::{HeaderName, HeaderValue, Method, Response, StatusCode};
use tower_service::Service;

use crate::keys::{EndpointKey, Schema};
use crate::layer::route_check::{class_path, key_route, nearest};

/// A route key of a schema that no route of the router matches.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UnmatchedRouteKey {
    /// The key's route as declared: `GET /acounts/{id}/transfers`.
    pub key: String,
    /// The class that declares it: `Endpoint::TransfersList`.
    pub class: String,
    /// The route of the router nearest the key's path, when it has any.
    pub nearest: Option<String>,
}

impl fmt::Display for UnmatchedRouteKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "the route key `{}` of `{}` matches no route of the service",
            self.key, self.class
        )?;
        match &self.nearest {
            Some(route) => write!(f, "; the nearest route it has is `{route}`"),
            None => f.write_str("; it has no routes to compare with"),
        }
    }
}

/// The route keys of `S`'s endpoint classes that no route of `router`
/// matches, each with the nearest route the router has.
///
/// Each key's path is served by a copy of `router` whose every route
/// answers at once with the route it matched, so no handler runs (a
/// fallback the service set does, for a key that matches nothing). A key
/// matches when the router matched a route that classes the request in
/// the key's class, as [`RoutePolicy`](crate::layer::RoutePolicy) does.
/// The path is checked, not the method: axum routes a request by its path
/// before its method.
pub async fn check_routes<S: Schema>(router: &axum::Router) -> Vec<UnmatchedRouteKey> {
    let routes = router_paths(router);
    let mut unmatched = Vec::new();
    if !router.has_routes() {
        return S::Endpoint::ROUTES
            .iter()
            .map(|&(method, route, class)| unmatched_key(method, route, class, &routes))
            .collect();
    }
    let mut probed = router.clone().route_layer(ProbeLayer);
    for &(method, route, class) in S::Endpoint::ROUTES {
        let reached = probe(&mut probed, method, route).await;
        let classed = reached.map(|matched| S::Endpoint::from_route(method, &matched));
        if classed != Some(class) {
            unmatched.push(unmatched_key(method, route, class, &routes));
        }
    }
    unmatched
}

/// Fails, naming each route key of `S` that no route of `router` matches
/// and the nearest route the router has (see [`check_routes`]): a key
/// mistyped compiles, and every request it meant is classed in the
/// default class.
///
/// ```
/// use axum::{routing::get, Router};
/// use perf_trace_core::testing::check_routes;
/// use perf_trace_core::{KeySet, Schema};
/// # #[derive(KeySet, Clone, Copy, PartialEq, Eq, Debug)]
/// # #[key_set(phases)]
/// # enum Phase { Load }
/// # #[derive(KeySet, Clone, Copy, PartialEq, Eq, Debug)]
/// # #[key_set(store_methods)]
/// # enum Method { GetAccount }
///
/// #[derive(KeySet, Clone, Copy, PartialEq, Eq, Debug)]
/// #[key_set(endpoints)]
/// enum Endpoint {
///     #[key(default)]
///     Other,
///     #[key(route = "GET /acounts/{id}/transfers")]
///     Transfers,
/// }
/// # struct Ledger;
/// # impl Schema for Ledger { type Phase = Phase; type StoreMethod = Method; type Endpoint = Endpoint; }
///
/// # tokio::runtime::Builder::new_current_thread().build().unwrap().block_on(async {
/// let app = Router::new().route("/accounts/{id}/transfers", get(|| async { "[]" }));
/// let unmatched = check_routes::<Ledger>(&app).await;
/// assert_eq!(
///     unmatched[0].to_string(),
///     "the route key `GET /acounts/{id}/transfers` of `Endpoint::Transfers` matches no \
///      route of the service; the nearest route it has is `/accounts/{id}/transfers`"
/// );
/// // In a test: `perf_trace_core::testing::assert_routes::<Ledger>(&app).await;`
/// # });
/// ```
pub async fn assert_routes<S: Schema>(router: &axum::Router) {
    let unmatched = check_routes::<S>(router).await;
    if !unmatched.is_empty() {
        let lines: Vec<String> = unmatched.iter().map(ToString::to_string).collect();
        panic!("{}", lines.join("\n"));
    }
}

fn unmatched_key<E: EndpointKey>(
    method: &str,
    route: &str,
    class: E,
    routes: &[String],
) -> UnmatchedRouteKey {
    let candidates: Vec<&str> = routes.iter().map(String::as_str).collect();
    UnmatchedRouteKey {
        key: key_route(method, route),
        class: class_path(class),
        nearest: nearest(route, &candidates).map(str::to_owned),
    }
}

/// The header the probe answers with: the route the router matched.
const MATCHED: HeaderName = HeaderName::from_static("x-perf-trace-matched-route");

/// A value standing for any one path segment.
const SEGMENT: &str = "perf-trace-probe";

/// `route` as a request path: each parameter a segment of its own.
fn probe_path(route: &str) -> String {
    route
        .split('/')
        .map(|segment| {
            let param =
                segment.starts_with('{') || segment.starts_with(':') || segment.starts_with('*');
            if param {
                SEGMENT
            } else {
                segment
            }
        })
        .collect::<Vec<_>>()
        .join("/")
}

/// The route `probed` matched for a request to `route`'s path, if any.
async fn probe(probed: &mut axum::Router, method: &str, route: &str) -> Option<String> {
    let method = Method::from_bytes(method.as_bytes()).unwrap_or(Method::GET);
    let request = Request::builder()
        .method(method)
        .uri(probe_path(route))
        .body(Body::empty())
        .ok()?;
    let response = match Service::call(probed, request).await {
        Ok(response) => response,
        Err(never) => match never {},
    };
    let matched = response.headers().get(MATCHED)?;
    matched.to_str().ok().map(str::to_owned)
}

/// The router's route paths, as its `Debug` lists them (axum has no other
/// way to list them): each `RouteId(n): "/path"` of its `path_router`
/// (not of its fallbacks), axum's internal paths left out.
fn router_paths(router: &axum::Router) -> Vec<String> {
    let text = format!("{router:?}");
    let routes = text.split(", fallback_router:").next().unwrap_or_default();
    let mut paths = Vec::new();
    let mut rest = routes;
    while let Some(at) = rest.find("RouteId(") {
        rest = &rest[at + "RouteId(".len()..];
        let Some(after) = rest.find("): \"") else {
            break;
        };
        if !rest[..after].bytes().all(|b| b.is_ascii_digit()) {
            continue;
        }
        rest = &rest[after + "): \"".len()..];
        let mut path = String::new();
        let mut chars = rest.char_indices();
        let end = loop {
            match chars.next() {
                Some((i, '"')) => break i,
                Some((_, '\\')) => {
                    if let Some((_, c)) = chars.next() {
                        path.push(c);
                    }
                }
                Some((_, c)) => path.push(c),
                None => break rest.len(),
            }
        };
        rest = &rest[end..];
        if !path.contains("__private__axum") && !paths.contains(&path) {
            paths.push(path);
        }
    }
    paths
}

/// Answers every request at once with the route it matched.
#[derive(Clone, Copy)]
struct ProbeLayer;

impl<Svc> tower_layer::Layer<Svc> for ProbeLayer {
    type Service = Probe;

    fn layer(&self, _inner: Svc) -> Probe {
        Probe
    }
}

#[derive(Clone, Copy)]
struct Probe;

impl Service<Request> for Probe {
    type Response = Response<Body>;
    type Error = Infallible;
    type Future = Ready<Result<Response<Body>, Infallible>>;

    fn poll_ready(&mut self, _: &mut Context<'_>) -> Poll<Result<(), Infallible>> {
        Poll::Ready(Ok(()))
    }

    fn call(&mut self, request: Request) -> Self::Future {
        let mut response = Response::new(Body::empty());
        *response.status_mut() = StatusCode::NO_CONTENT;
        let matched = request.extensions().get::<MatchedPath>();
        if let Some(value) = matched.and_then(|m| HeaderValue::from_str(m.as_str()).ok()) {
            response.headers_mut().insert(MATCHED, value);
        }
        ready(Ok(response))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_route_s_parameters_become_one_segment_each() {
        assert_eq!(
            probe_path("/a/{id}/b/:x/{*rest}"),
            "/a/perf-trace-probe/b/perf-trace-probe/perf-trace-probe"
        );
        assert_eq!(probe_path("/"), "/");
    }
}
