//! The Hub's tracing policy: how a request is classified into its endpoint
//! class (from its method, path and query alone, before any handler runs),
//! and who may see the perf headers.

use http::Request;
use perf_trace_core::layer::TracePolicy;

use super::keys::{around_param, folder, route_path, EndpointClass, HubSchema};
use crate::authz::Principal;

/// The Hub's answers to the tracing layer's questions.
#[derive(Debug, Clone, Copy, Default)]
pub struct HubPolicy;

impl TracePolicy<HubSchema> for HubPolicy {
    fn classify<B>(&self, request: &Request<B>) -> EndpointClass {
        classify(
            request.method(),
            request.uri().path(),
            request.uri().query(),
        )
    }

    /// Only an unscoped local platform admin: never a scoped token, an agent,
    /// a non-admin, nor an unauthenticated endpoint (which has no principal).
    fn headers_allowed<B>(&self, request: &Request<B>) -> bool {
        request
            .extensions()
            .get::<Principal>()
            .is_some_and(Principal::is_unscoped_platform_admin)
    }
}

/// The policy of the web client's own routes (pages, assets, sign-in):
/// classed by kind (`web.page`, `web.asset`, `web.auth`); never the perf
/// headers, as no Hub authentication runs before them.
#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct WebPolicy;

impl TracePolicy<HubSchema> for WebPolicy {
    fn classify<B>(&self, request: &Request<B>) -> EndpointClass {
        classify_web(request.uri().path())
    }

    fn headers_allowed<B>(&self, _request: &Request<B>) -> bool {
        false
    }
}

/// Query parameters that turn a legacy full list into a sorted page.
const PAGING_PARAMS: [&str; 3] = ["limit", "cursor", "sort"];

/// The paths the classifier compares, from the classes' routes: constants,
/// so they are matched as the literals they replace.
const EVENTS: &str = route_path(EndpointClass::SseEvents);
const GLOBAL_AGENTS: &str = route_path(EndpointClass::GlobalLegacy);
/// `/api/v1/projects/` and `/agents`, around the project id.
const PROJECT_AGENTS: (&str, &str) = around_param(route_path(EndpointClass::ProjectLegacy));
/// `/assets/`, before the asset's name.
const ASSETS: &str = around_param(route_path(EndpointClass::WebAsset)).0;
/// `/api/v1/auth/`, the folder of the sign-in routes.
const AUTH: &str = folder(route_path(EndpointClass::WebAuth));

/// Classifies a request from its method, path and query string alone (the
/// tracing layer asks before any handler runs).
pub fn classify(method: &http::Method, path: &str, query: Option<&str>) -> EndpointClass {
    if method != http::Method::GET {
        return EndpointClass::Other;
    }
    let has = |names: &[&str]| query.is_some_and(|q| query_has_key(q, names));
    match path.trim_end_matches('/') {
        EVENTS => EndpointClass::SseEvents,
        GLOBAL_AGENTS => {
            if has(&PAGING_PARAMS) {
                EndpointClass::GlobalSorted
            } else {
                EndpointClass::GlobalLegacy
            }
        }
        p => match p
            .strip_prefix(PROJECT_AGENTS.0)
            .and_then(|rest| rest.strip_suffix(PROJECT_AGENTS.1))
        {
            // Every byte looked at, with no early exit, which the compiler
            // turns into a few vector compares: `contains('/')` calls a
            // general search whose set-up costs more than a short id.
            Some(id) if !id.is_empty() && !id.bytes().fold(false, |seen, b| seen | (b == b'/')) => {
                if has(&["ids"]) {
                    EndpointClass::ProjectSortedAgent
                } else if has(&PAGING_PARAMS) {
                    EndpointClass::ProjectSorted
                } else {
                    EndpointClass::ProjectLegacy
                }
            }
            _ => EndpointClass::Other,
        },
    }
}

/// Classifies a request to one of the web client's own routes (the web
/// listener's tracing layer sits on those routes alone, so every other path
/// it is asked about is a page).
pub(crate) fn classify_web(path: &str) -> EndpointClass {
    if path.starts_with(ASSETS) {
        EndpointClass::WebAsset
    } else if path.starts_with(AUTH) {
        EndpointClass::WebAuth
    } else {
        EndpointClass::WebPage
    }
}

/// Whether `query` has a parameter named one of `names` (ASCII names with
/// nothing to decode). Every traced request is classified: a key that needs
/// no decoding, nearly all of them, is compared as it is, with no copy.
fn query_has_key(query: &str, names: &[&str]) -> bool {
    // Each key found with `memchr` and compared as it ends, each value
    // skipped the same way: a byte-by-byte scan cost about 15 instructions
    // a byte, a project id's value included, on every classified request.
    let bytes = query.as_bytes();
    let mut start = 0;
    loop {
        let rest = &bytes[start..];
        let key_len = memchr::memchr2(b'=', b'&', rest).unwrap_or(rest.len());
        let key = &rest[..key_len];
        let found = if memchr::memchr2(b'%', b'+', key).is_some() {
            let decoded = form_urlencoded::parse(key).next();
            decoded.is_some_and(|(key, _)| names.contains(&key.as_ref()))
        } else {
            names.iter().any(|name| name.as_bytes() == key)
        };
        if found {
            return true;
        }
        // Past the key and its value, if any: the next pair starts after `&`.
        let Some(value_len) = memchr::memchr(b'&', &rest[key_len..]) else {
            return false;
        };
        start += key_len + value_len + 1;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use http::Method;

    #[test]
    fn classifies_agent_lists_by_path_and_query() {
        let get = Method::GET;
        let p = "/api/v1/projects/0b7f1f2e-1c1d-4a7e-9a51-0f5b6c0c1d2e/agents";
        assert_eq!(classify(&get, p, None), EndpointClass::ProjectLegacy);
        assert_eq!(
            classify(&get, p, Some("limit=5")),
            EndpointClass::ProjectSorted
        );
        assert_eq!(
            classify(&get, p, Some("sort=name")),
            EndpointClass::ProjectSorted
        );
        assert_eq!(
            classify(&get, p, Some("ids=a,b&limit=2")),
            EndpointClass::ProjectSortedAgent
        );
        assert_eq!(
            classify(&get, "/api/v1/agents", None),
            EndpointClass::GlobalLegacy
        );
        assert_eq!(
            classify(&get, "/api/v1/agents", Some("projectId=x")),
            EndpointClass::GlobalLegacy
        );
        assert_eq!(
            classify(&get, "/api/v1/agents", Some("cursor=abc")),
            EndpointClass::GlobalSorted
        );
        assert_eq!(
            classify(&get, "/events", Some("sub=x")),
            EndpointClass::SseEvents
        );
    }

    #[test]
    fn every_route_of_a_class_is_classified_in_it() {
        use perf_trace_core::keys::EndpointKey;
        assert_eq!(EVENTS, "/events");
        assert_eq!(GLOBAL_AGENTS, "/api/v1/agents");
        assert_eq!(PROJECT_AGENTS, ("/api/v1/projects/", "/agents"));
        assert_eq!((ASSETS, AUTH), ("/assets/", "/api/v1/auth/"));
        let routes = <EndpointClass as EndpointKey>::ROUTES;
        assert_eq!(routes.len(), 10, "{routes:?}");
        let web = [
            EndpointClass::WebPage,
            EndpointClass::WebAsset,
            EndpointClass::WebAuth,
        ];
        for &(method, route, class) in routes {
            let method = Method::from_bytes(method.as_bytes()).unwrap();
            let path = route
                .replace("{id}", "0b7f1f2e-1c1d-4a7e-9a51-0f5b6c0c1d2e")
                .replace("{name}", "app.js");
            let classed = if web.contains(&class) {
                classify_web(&path)
            } else {
                classify(&method, &path, None)
            };
            assert_eq!(classed, class, "{route}");
            assert_eq!(EndpointClass::from_route(method.as_str(), &path), class);
        }
    }

    #[test]
    fn a_folder_ends_at_the_last_slash() {
        assert_eq!(folder("/api/v1/auth/session"), "/api/v1/auth/");
        assert_eq!(folder("/graph"), "/");
        assert_eq!(folder("graph"), "");
    }

    #[test]
    fn the_param_splits_a_route_in_two() {
        assert_eq!(around_param("/a/{id}/b"), ("/a/", "/b"));
        assert_eq!(around_param("/a/{id}"), ("/a/", ""));
        assert_eq!(around_param("{x}/c"), ("", "/c"));
    }

    #[test]
    fn query_keys_are_found_as_a_full_decoding_finds_them() {
        let names = ["limit", "ids"];
        let decoded = |q: &str| {
            form_urlencoded::parse(q.as_bytes()).any(|(k, _)| names.contains(&k.as_ref()))
        };
        for query in [
            "",
            "&",
            "=",
            "limit",
            "limit=",
            "=limit",
            "a=limit",
            "limit=1&b=2",
            "b=2&ids=x",
            "&&ids",
            "li%6Dit=3",
            "i%64s",
            "%69ds=1&x",
            "limit+=1",
            "lim+it=1",
            "limi%74",
            "%ZZ=1",
            "x=1&li%6dit",
            "idsx=1",
            "xids=1",
            "a=b=limit",
            "projectId=0b5f6c2e-1d2a-4c3b-9e8f-7a6b5c4d3e2f&sort=name",
            "projectId=0b5f6c2e-1d2a-4c3b-9e8f-7a6b5c4d3e2f",
        ] {
            assert_eq!(query_has_key(query, &names), decoded(query), "{query:?}");
        }
    }

    #[test]
    fn web_routes_are_classified_by_kind() {
        assert_eq!(classify_web("/"), EndpointClass::WebPage);
        assert_eq!(classify_web("/projects/p1"), EndpointClass::WebPage);
        assert_eq!(classify_web("/graph"), EndpointClass::WebPage);
        assert_eq!(classify_web("/assets/app.js"), EndpointClass::WebAsset);
        assert_eq!(
            classify_web("/api/v1/auth/test-login"),
            EndpointClass::WebAuth
        );
        // The API's own classifier never gives a web class.
        for path in ["/", "/assets/app.js", "/api/v1/auth/session"] {
            assert_eq!(classify(&Method::GET, path, None), EndpointClass::Other);
        }
    }

    #[test]
    fn everything_else_is_other() {
        for (method, path) in [
            (Method::GET, "/healthz"),
            (Method::GET, "/api/v1/agents/abc"),
            (Method::PUT, "/api/v1/agents"),
            (Method::GET, "/api/v1/projects//agents"),
        ] {
            assert_eq!(
                classify(&method, path, None),
                EndpointClass::Other,
                "{method} {path}"
            );
        }
    }
}
