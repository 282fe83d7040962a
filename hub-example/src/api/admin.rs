//! `PUT /api/v1/admin/server-config`: hub settings that may change at run
//! time. Settings read only at startup (layer 0, such as
//! `server.hub.perf_trace`) are refused with 422 in whatever form the body
//! names them: nested objects, dotted keys, or a mix.

use axum::extract::State;
use axum::response::{IntoResponse, Response};
use axum::{Extension, Json};
use bytes::Bytes;
use serde_json::{json, Value};

use super::ApiError;
use crate::authz::{AuditEmitter, Authorizer, Principal};
use crate::state::AppState;
use crate::store::{writes, AuthzStore};

/// Settings that can only be set at startup, in normalized form.
const LAYER0_KEYS: [(&str, &str); 1] = [("server.hub.perftrace", "server.hub.perf_trace")];
/// Most settings in one request.
const MAX_KEYS: usize = 100;
/// Longest setting key.
const MAX_KEY_LEN: usize = 128;

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
    body: Bytes,
) -> Result<Response, ApiError> {
    let keys = perf_trace_core::spawn_blocking(move || {
        let authz = Authorizer::new(state.store(), state.audit(), &principal);
        if !authz.allow_hub_admin()? {
            return Err(ApiError::forbidden());
        }
        let settings = parse_server_config(&body)?;
        let stored: Vec<(String, String)> = settings
            .iter()
            .map(|(k, v)| (k.clone(), v.to_string()))
            .collect();
        writes::put_hub_settings(state.db(), &stored, crate::clock::now_ms())?;
        Ok(settings.into_iter().map(|(k, _)| k).collect::<Vec<_>>())
    })
    .await??;
    Ok(Json(json!({ "updated": keys })).into_response())
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
