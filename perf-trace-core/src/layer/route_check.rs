//! Route keys that no route of the service matches: a key's route
//! mistyped (`GET /acounts/{id}`) compiles, and every request to the route
//! it meant lands in the default class. Found at run time, once per route
//! of the service (`RoutePolicy` with axum's `MatchedPath`), and in tests
//! by `testing::assert_routes`.

use std::collections::{HashMap, HashSet};

use parking_lot::RwLock;

use crate::key_check::edit_distance;
use crate::keys::EndpointKey;

/// Most edits between a key's route and a route of the service for the
/// key to be taken for a misspelling of it.
const TYPO_EDITS: usize = 2;

/// `route` (the router's spelling) with its parameters' names dropped, so
/// that `/items/{sku}` and `/items/{id}` compare equal.
fn shape(route: &str) -> String {
    route
        .split('/')
        .map(|segment| {
            if segment.starts_with("{*") || segment.starts_with('*') {
                "{*}"
            } else if segment.starts_with('{') || segment.starts_with(':') {
                "{}"
            } else {
                segment
            }
        })
        .collect::<Vec<_>>()
        .join("/")
}

/// The edits between two routes, parameters' names aside; `None` when
/// either is too long to compare.
pub(crate) fn route_distance(a: &str, b: &str) -> Option<usize> {
    let (a, b) = (shape(a), shape(b));
    if a == b {
        return Some(0);
    }
    // The distance ignores ASCII case: a route in another case is one edit.
    edit_distance(a.as_bytes(), b.as_bytes()).map(|d| d.max(1))
}

/// Of `candidates`, the one nearest `route`, by edits.
pub(crate) fn nearest<'c>(route: &str, candidates: &[&'c str]) -> Option<&'c str> {
    candidates
        .iter()
        .filter_map(|&c| Some((route_distance(route, c)?, c)))
        .min_by_key(|&(d, _)| d)
        .map(|(_, c)| c)
}

/// A declared route key of `E` a typo away from `matched` (with `method`),
/// which the router matched and no key classified: `(method, route,
/// class)` of the key.
pub(crate) fn mistyped_key<E: EndpointKey>(
    method: &str,
    matched: &str,
) -> Option<&'static (&'static str, &'static str, E)> {
    E::ROUTES.iter().find(|(m, route, _)| {
        (m.is_empty() || *m == method)
            && route_distance(route, matched).is_some_and(|d| (1..=TYPO_EDITS).contains(&d))
    })
}

/// `Set::Variant` of `class`.
pub(crate) fn class_path<E: EndpointKey>(class: E) -> String {
    format!("{}::{}", E::SET_NAME, E::VARIANTS[class.index()])
}

/// `METHOD /path`, or the path alone for a key of any method.
pub(crate) fn key_route(method: &str, route: &str) -> String {
    if method.is_empty() {
        route.to_owned()
    } else {
        format!("{method} {route}")
    }
}

/// The routes of the service a request was classed in the default class
/// from, each checked once for a mistyped key: the set holds at most as
/// many entries as the service has routes (and methods).
#[derive(Default)]
pub(crate) struct UnmatchedRoutes {
    /// Routes checked, by method: looked up without an allocation.
    checked: RwLock<HashMap<&'static str, HashSet<Box<str>>>>,
}

impl UnmatchedRoutes {
    /// Warns, once per route of the service, when the router matched
    /// `matched` for `method` and a key of `E` is a typo away from it.
    pub(crate) fn check<E: EndpointKey>(&self, method: &'static str, matched: &str) {
        let checked = self.checked.read();
        if checked
            .get(method)
            .is_some_and(|routes| routes.contains(matched))
        {
            return;
        }
        drop(checked);
        self.first_sight::<E>(method, matched);
    }

    #[cold]
    #[inline(never)]
    fn first_sight<E: EndpointKey>(&self, method: &'static str, matched: &str) {
        let mut checked = self.checked.write();
        if !checked.entry(method).or_default().insert(matched.into()) {
            return;
        }
        drop(checked);
        if let Some(&(key_method, route, class)) = mistyped_key::<E>(method, matched) {
            warn(&unmatched_message(
                &key_route(key_method, route),
                &class_path(class),
                &key_route(method, matched),
                E::NAMES[E::DEFAULT.index()],
            ));
        }
    }
}

/// The warning for a route key the router never matches.
pub(crate) fn unmatched_message(key: &str, class: &str, served: &str, default: &str) -> String {
    format!(
        "perf-trace: the route key `{key}` of `{class}` matches no route of the service; \
         requests to its nearest route, `{served}`, are classed `{default}`"
    )
}

#[cfg(feature = "tracing")]
fn warn(message: &str) {
    tracing::warn!(target: "perf_trace", "{message}");
}

/// On standard error, as a JSON line, as the line sink reports its failure.
#[cfg(not(feature = "tracing"))]
fn warn(message: &str) {
    crate::line::report_on_stderr("WARN", &[("msg", message)]);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn routes_compare_by_their_shape_and_edits() {
        assert_eq!(route_distance("/items/{sku}", "/items/{id}"), Some(0));
        assert_eq!(route_distance("/items/:sku", "/items/{id}"), Some(0));
        assert_eq!(route_distance("/Items/{sku}", "/items/{id}"), Some(1));
        assert_eq!(
            route_distance("/acounts/{id}/transfers", "/accounts/{id}/transfers"),
            Some(1)
        );
        assert_eq!(
            nearest(
                "/acounts/{id}/transfers",
                &["/items", "/accounts/{id}/transfers", "/accounts"]
            ),
            Some("/accounts/{id}/transfers")
        );
        assert_eq!(nearest("/a", &[]), None);
    }
}
