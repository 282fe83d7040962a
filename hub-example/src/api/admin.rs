//! `PUT /api/v1/admin/server-config`: hub settings that may change at run
//! time. Settings read only at startup (layer 0, such as
//! `server.hub.perf_trace`) are refused with 422 in whatever form the body
//! names them: nested objects, dotted keys, or a mix.

use axum::extract::rejection::BytesRejection;
use axum::extract::State;
use axum::response::{IntoResponse, Response};
use axum::{Extension, Json};
use bytes::Bytes;
use serde_json::{json, Value};

use super::ApiError;
use crate::authz::{AuditEmitter, Authorizer, Principal};
use crate::replicas::Invalidation;
use crate::state::AppState;
use crate::store::{settings, AuthzStore};

/// Settings that can only be set at startup, in normalized form.
const LAYER0_KEYS: [(&str, &str); 1] = [("server.hub.perftrace", "server.hub.perf_trace")];
/// Most settings in one request.
const MAX_KEYS: usize = 100;
/// Longest setting key.
const MAX_KEY_LEN: usize = 128;
/// Largest body, checked before parsing.
pub const MAX_BODY_BYTES: usize = 64 * 1024;
/// Deepest nesting, block or flow, checked before parsing: YAML parsing
/// cost grows fast with depth, and no setting is nested this deep.
pub const MAX_DEPTH: usize = 32;

/// The deepest nesting of `body`, over-estimated cheaply without parsing:
/// the flow depth counts every bracket (even in quotes), the block depth
/// every indentation level and every `- ` that opens a line's entry.
fn nesting_depth(body: &[u8]) -> usize {
    let mut flow: usize = 0;
    let mut deepest_flow = 0;
    for b in body {
        match b {
            b'[' | b'{' => {
                flow += 1;
                deepest_flow = deepest_flow.max(flow);
            }
            b']' | b'}' => flow = flow.saturating_sub(1),
            _ => {}
        }
    }
    let mut indents: Vec<usize> = Vec::new();
    let mut deepest_block = 0;
    for line in body.split(|b| *b == b'\n') {
        let indent = line
            .iter()
            .take_while(|b| matches!(b, b' ' | b'\t'))
            .count();
        let rest = &line[indent..];
        if rest.is_empty() || rest[0] == b'#' {
            continue;
        }
        while indents.last().is_some_and(|top| *top >= indent) {
            indents.pop();
        }
        indents.push(indent);
        let mut entries = 0;
        let mut tail = rest;
        while let Some(next) = tail.strip_prefix(b"- ") {
            entries += 1;
            tail = next.trim_ascii_start();
        }
        deepest_block = deepest_block.max(indents.len() + entries);
    }
    deepest_flow.max(deepest_block)
}

/// Lower case, without `_` and `-`: `server.hub.perfTrace`,
/// `server.hub.perf-trace` and `server.hub.perf_trace` are one key.
fn normalize(key: &str) -> String {
    key.chars()
        .filter(|c| *c != '_' && *c != '-')
        .flat_map(char::to_lowercase)
        .collect()
}

/// The layer-0 setting `key` is, or falls under, if any.
fn layer0(key: &str) -> Option<&'static str> {
    let norm = normalize(key);
    LAYER0_KEYS
        .iter()
        .find_map(|(n, name)| (norm == *n || norm.starts_with(&format!("{n}."))).then_some(*name))
}

/// Flattens a settings document to dotted keys and JSON values. An empty
/// object is a value; a non-empty one is descended into.
fn flatten(
    prefix: &str,
    value: &serde_yaml::Value,
    out: &mut Vec<(String, Value)>,
) -> Result<(), ApiError> {
    match value {
        serde_yaml::Value::Mapping(map) if !map.is_empty() => {
            for (k, v) in map {
                let k = k
                    .as_str()
                    .ok_or_else(|| ApiError::bad_request("setting keys must be strings"))?;
                let key = if prefix.is_empty() {
                    k.to_owned()
                } else {
                    format!("{prefix}.{k}")
                };
                flatten(&key, v, out)?;
            }
            Ok(())
        }
        serde_yaml::Value::Tagged(tagged) => flatten(prefix, &tagged.value, out),
        other => {
            let json = serde_json::to_value(other)
                .map_err(|_| ApiError::bad_request("setting values must be plain data"))?;
            out.push((prefix.to_owned(), json));
            Ok(())
        }
    }
}

fn valid_key(key: &str) -> bool {
    !key.is_empty()
        && key.len() <= MAX_KEY_LEN
        && !key.starts_with('.')
        && !key.ends_with('.')
        && !key.contains("..")
        && key
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'.' | b'_' | b'-'))
}

/// Parses a server-config body (JSON or YAML) into settings, or the 4xx
/// answer: 400 when malformed, 422 when it names a layer-0 setting.
pub fn parse_server_config(body: &[u8]) -> Result<Vec<(String, Value)>, ApiError> {
    if body.len() > MAX_BODY_BYTES {
        return Err(ApiError::new(
            axum::http::StatusCode::PAYLOAD_TOO_LARGE,
            "body must be at most 64 KiB",
        ));
    }
    if nesting_depth(body) > MAX_DEPTH {
        return Err(ApiError::bad_request("body is nested more than 32 levels"));
    }
    let doc: serde_yaml::Value = serde_yaml::from_slice(body)
        .map_err(|_| ApiError::bad_request("body must be a JSON or YAML object"))?;
    if !matches!(doc, serde_yaml::Value::Mapping(_)) {
        return Err(ApiError::bad_request("body must be a JSON or YAML object"));
    }
    let mut settings = Vec::new();
    flatten("", &doc, &mut settings)?;
    let mut rejected: Vec<String> = settings
        .iter()
        .filter_map(|(k, _)| layer0(k).map(str::to_owned))
        .collect();
    rejected.dedup();
    if !rejected.is_empty() {
        return Err(ApiError::layer0_rejected(rejected));
    }
    if settings.is_empty() {
        return Err(ApiError::bad_request("no settings given"));
    }
    if settings.len() > MAX_KEYS {
        return Err(ApiError::bad_request("at most 100 settings per request"));
    }
    if !settings.iter().all(|(k, _)| valid_key(k)) {
        return Err(ApiError::bad_request(
            "setting keys are dotted names of letters, digits, _ and -",
        ));
    }
    Ok(settings)
}

/// `PUT /api/v1/admin/server-config`.
pub async fn put_server_config<S: AuthzStore, A: AuditEmitter>(
    State(state): State<AppState<S, A>>,
    Extension(principal): Extension<Principal>,
    body: Result<Bytes, BytesRejection>,
) -> Result<Response, ApiError> {
    let body = body?;
    let keys = perf_trace_core::scope::spawn_blocking(move || {
        let authz = Authorizer::new(state.store(), state.audit(), &principal);
        if !authz.allow_hub_admin()? {
            return Err(ApiError::forbidden());
        }
        let settings = parse_server_config(&body)?;
        let stored: Vec<(String, String)> = settings
            .iter()
            .map(|(k, v)| (k.clone(), v.to_string()))
            .collect();
        settings::put_hub_settings(state.db(), &stored, crate::clock::now_ms())?;
        // A hub setting can change any decision (the creator role): no
        // cached response is found again, on any replica.
        state.invalidate(Invalidation::Everything);
        Ok(settings.into_iter().map(|(k, _)| k).collect::<Vec<_>>())
    })
    .await??;
    Ok(Json(json!({ "updated": keys })).into_response())
}

/// `GET /api/v1/admin/cache`: per cached route, its TTL and its hits,
/// misses and shared computations since start, with the hit rate
/// (administrators only).
pub async fn get_cache<S: AuthzStore, A: AuditEmitter>(
    State(state): State<AppState<S, A>>,
    Extension(principal): Extension<Principal>,
) -> Result<Response, ApiError> {
    let report = perf_trace_core::scope::spawn_blocking(move || {
        let authz = Authorizer::new(state.store(), state.audit(), &principal);
        if !authz.allow_hub_admin()? {
            return Err(ApiError::forbidden());
        }
        Ok(state.cache().report())
    })
    .await??;
    Ok(Json(report).into_response())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rejected(body: &str) -> bool {
        matches!(parse_server_config(body.as_bytes()), Err(e) if e.status() == 422
            && e.body() == &json!({"error": "layer0_rejected", "keys": ["server.hub.perf_trace"]}))
    }

    #[test]
    fn perf_trace_is_refused_in_every_form() {
        assert!(rejected(r#"{"server":{"hub":{"perf_trace":true}}}"#));
        assert!(rejected(r#"{"server.hub.perf_trace":false}"#));
        assert!(rejected(r#"{"server.hub":{"perf_trace":"true"}}"#));
        assert!(rejected(r#"{"server":{"hub.perfTrace":1}}"#));
        assert!(rejected("server:\n  hub:\n    perf-trace: true\n"));
        assert!(rejected(
            r#"{"server":{"hub":{"perf_trace":{"x":1}}}, "other": 1}"#
        ));
    }

    #[test]
    fn other_settings_are_flattened() {
        let settings =
            parse_server_config(br#"{"authz":{"creator_role":"agent-creator"},"a.b":[1]}"#)
                .unwrap();
        assert_eq!(
            settings,
            vec![
                ("authz.creator_role".to_owned(), json!("agent-creator")),
                ("a.b".to_owned(), json!([1]))
            ]
        );
    }

    #[test]
    fn deep_or_large_bodies_are_refused_before_parsing() {
        let nested_block: String = (0..40)
            .map(|i| format!("{}k{i}:\n", "  ".repeat(i)))
            .collect::<String>()
            + &"  ".repeat(40)
            + "v: 1\n";
        let nested_flow = format!("{{\"a\":{}1{}}}", "[".repeat(40), "]".repeat(40));
        let nested_seq = format!("a:\n{}1\n", "- ".repeat(40));
        for body in [&nested_block, &nested_flow, &nested_seq] {
            let err = parse_server_config(body.as_bytes()).unwrap_err();
            assert_eq!(err.status(), 400, "{body}");
            assert_eq!(err.body()["error"], "body is nested more than 32 levels");
        }
        let big = format!("{{\"a\":\"{}\"}}", "x".repeat(MAX_BODY_BYTES));
        assert_eq!(
            parse_server_config(big.as_bytes()).unwrap_err().status(),
            413
        );
        // Nesting within the bound is still read.
        let shallow: String = (0..10)
            .map(|i| format!("{}k{i}:\n", "  ".repeat(i)))
            .collect::<String>()
            + &"  ".repeat(10)
            + "v: 1\n";
        let settings = parse_server_config(shallow.as_bytes()).unwrap();
        assert_eq!(settings[0].0, "k0.k1.k2.k3.k4.k5.k6.k7.k8.k9.v");
    }

    #[test]
    fn malformed_bodies_are_400() {
        for body in ["", "[1]", "42", "{", r#"{"bad key":1}"#, "{}"] {
            let err = parse_server_config(body.as_bytes()).unwrap_err();
            assert_eq!(err.status(), 400, "{body}");
        }
    }

    mod fuzz {
        use super::*;
        use proptest::prelude::*;

        proptest! {
            #[test]
            fn fuzz_server_config_bodies_never_panic(body in proptest::collection::vec(any::<u8>(), 0..300)) {
                if let Err(e) = parse_server_config(&body) {
                    prop_assert!(matches!(e.status().as_u16(), 400 | 422));
                }
            }

            #[test]
            fn fuzz_depth_never_underestimates_bracket_nesting(depth in 0usize..100) {
                let body = format!("{}{}", "[".repeat(depth), "]".repeat(depth));
                prop_assert!(nesting_depth(body.as_bytes()) >= depth);
            }

            #[test]
            fn fuzz_yaml_like_bodies_never_panic(body in r#"[{}\[\]:,"'a-z_.\- \n0-9!&*|>]{0,200}"#) {
                if let Err(e) = parse_server_config(body.as_bytes()) {
                    prop_assert!(matches!(e.status().as_u16(), 400 | 422));
                }
            }

            #[test]
            fn fuzz_deep_nesting_never_panics(depth in 0usize..2000, open in "[\\[{]") {
                let close = if open == "[" { "]" } else { "}" };
                let body = format!("{}{}", open.repeat(depth), close.repeat(depth));
                let _ = parse_server_config(body.as_bytes());
            }
        }
    }
}
