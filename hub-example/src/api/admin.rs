//! `PUT /api/v1/admin/server-config`: hub settings that may change at run
//! time. Settings read only at startup (layer 0, such as
//! `server.hub.perf_trace`) are refused with 422 in whatever form the body
//! names them: nested objects, dotted keys, or a mix.

use axum::extract::rejection::BytesRejection;
use axum::extract::State;
use axum::response::{IntoResponse, Response};
use axum::{Extension, Json};
use bytes::Bytes;
use std::collections::HashSet;

use serde_json::{json, Value};

use super::state::AppState;
use super::ApiError;
use crate::authz::{AuditEmitter, Principal};
use crate::replicas::Invalidation;
use crate::settings::hub::{self, InvalidSetting, MAX_VALUE_BYTES};
use crate::settings::yaml::{self, Limits, YamlError};
use crate::store::{settings, AuthzStore};

/// Settings that can only be set at startup, in normalized form.
const LAYER0_KEYS: [(&str, &str); 1] = [("server.hub.perftrace", "server.hub.perf_trace")];
/// What a body may hold once parsed: no aliases (no setting needs them,
/// and a few KiB of them expand to hundreds of MiB), and no more than its
/// most settings at their largest.
const BODY_LIMITS: Limits = Limits {
    aliases: false,
    max_bytes: MAX_KEYS * (MAX_KEY_LEN + MAX_VALUE_BYTES),
};
/// Most settings in one request.
const MAX_KEYS: usize = 100;
/// Longest setting key.
const MAX_KEY_LEN: usize = 128;
/// Largest body, checked before parsing.
pub(crate) const MAX_BODY_BYTES: usize = 64 * 1024;
/// Deepest nesting, block or flow, checked before parsing: YAML parsing
/// cost grows fast with depth, and no setting is nested this deep.
pub(crate) const MAX_DEPTH: usize = 32;

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

fn keys_must_be_strings() -> ApiError {
    ApiError::bad_request("setting keys must be strings")
}

/// Flattens a settings document to dotted keys and their values. An empty
/// mapping is a value; a non-empty one is descended into.
fn flatten<'v>(
    prefix: &str,
    value: &'v yaml::Value,
    out: &mut Vec<(String, &'v yaml::Value)>,
) -> Result<(), ApiError> {
    match value {
        yaml::Value::Mapping(map) if !map.is_empty() => {
            for (k, v) in map {
                let k = k.as_str().ok_or_else(keys_must_be_strings)?;
                let key = if prefix.is_empty() {
                    k.to_owned()
                } else {
                    format!("{prefix}.{k}")
                };
                flatten(&key, v, out)?;
            }
            Ok(())
        }
        other => {
            out.push((prefix.to_owned(), other));
            Ok(())
        }
    }
}

/// A setting's value as the JSON it is stored as; a number JSON cannot
/// hold (non-finite, or a whole number past 64 bits) is refused naming
/// `key`, never showing the value.
fn to_json(key: &str, value: &yaml::Value) -> Result<Value, ApiError> {
    Ok(match value {
        yaml::Value::Null => Value::Null,
        yaml::Value::Bool(b) => Value::Bool(*b),
        yaml::Value::Number(n) => Value::Number(n.to_json().ok_or_else(|| {
            ApiError::bad_request(
                InvalidSetting::new(key, "a finite number within 64 bits").to_string(),
            )
        })?),
        yaml::Value::String(s) => Value::String(s.clone()),
        yaml::Value::Sequence(items) => Value::Array(
            items
                .iter()
                .map(|item| to_json(key, item))
                .collect::<Result<_, _>>()?,
        ),
        yaml::Value::Mapping(map) => Value::Object(
            map.iter()
                .map(|(k, v)| {
                    let k = k.as_str().ok_or_else(keys_must_be_strings)?;
                    Ok((k.to_owned(), to_json(key, v)?))
                })
                .collect::<Result<_, ApiError>>()?,
        ),
    })
}

/// Parses a body within [`BODY_LIMITS`].
fn parse_body(body: &[u8]) -> Result<yaml::Value, ApiError> {
    let not_an_object = || ApiError::bad_request("body must be a JSON or YAML object");
    let text = std::str::from_utf8(body).map_err(|_| not_an_object())?;
    match yaml::parse(text, BODY_LIMITS) {
        Ok(doc) if doc.as_mapping().is_some() => Ok(doc),
        Ok(_) | Err(YamlError::Syntax(_)) => Err(not_an_object()),
        Err(YamlError::Aliases) => Err(ApiError::bad_request(
            "body must not use YAML anchors or aliases",
        )),
        Err(YamlError::TooLarge) => Err(ApiError::bad_request(
            "body is larger once parsed than 100 settings of at most 4 KiB",
        )),
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
pub(crate) fn parse_server_config(body: &[u8]) -> Result<Vec<(String, Value)>, ApiError> {
    if body.len() > MAX_BODY_BYTES {
        return Err(ApiError::new(
            axum::http::StatusCode::PAYLOAD_TOO_LARGE,
            "body must be at most 64 KiB",
        ));
    }
    if nesting_depth(body) > MAX_DEPTH {
        return Err(ApiError::bad_request("body is nested more than 32 levels"));
    }
    let doc = parse_body(body)?;
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
    settings
        .into_iter()
        .map(|(key, value)| {
            let value = to_json(&key, value)?;
            hub::check(&key, &value).map_err(|e| ApiError::bad_request(e.to_string()))?;
            Ok((key, value))
        })
        .collect()
}

/// Whether storing `settings` over the `stored` keys keeps at most
/// [`hub::MAX_STORED`] settings.
fn room_for(stored: &[String], settings: &[(String, Value)]) -> bool {
    let stored: HashSet<&str> = stored.iter().map(String::as_str).collect();
    let new: HashSet<&str> = settings
        .iter()
        .map(|(k, _)| k.as_str())
        .filter(|k| !stored.contains(k))
        .collect();
    stored.len() + new.len() <= hub::MAX_STORED
}

/// `PUT /api/v1/admin/server-config`.
pub(crate) async fn put_server_config<S: AuthzStore, A: AuditEmitter>(
    State(state): State<AppState<S, A>>,
    Extension(principal): Extension<Principal>,
    body: Result<Bytes, BytesRejection>,
) -> Result<Response, ApiError> {
    let body = body?;
    let keys = perf_trace_core::scope::spawn_blocking(move || {
        let authz = state.authorizer(&principal);
        if !authz.allow_hub_admin()? {
            return Err(ApiError::forbidden());
        }
        let settings = parse_server_config(&body)?;
        // Checked before the write, so two PUTs at once may pass it by at
        // most one body's settings.
        if !room_for(&settings::hub_setting_keys(state.db())?, &settings) {
            return Err(ApiError::bad_request("at most 1000 settings may be stored"));
        }
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
pub(crate) async fn get_cache<S: AuthzStore, A: AuditEmitter>(
    State(state): State<AppState<S, A>>,
    Extension(principal): Extension<Principal>,
) -> Result<Response, ApiError> {
    let report = perf_trace_core::scope::spawn_blocking(move || {
        let authz = state.authorizer(&principal);
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

    fn refused(body: &str) -> String {
        let err = parse_server_config(body.as_bytes()).unwrap_err();
        assert_eq!(err.status(), 400, "{body}");
        err.body()["error"].as_str().unwrap().to_owned()
    }

    #[test]
    fn aliases_are_refused_whatever_they_expand_to() {
        // One 8,000-byte scalar aliased 6,000 times: 54 KiB of text.
        let bomb = yaml::alias_bomb(8_000, 6_000);
        assert!(bomb.len() < MAX_BODY_BYTES);
        for body in [bomb.as_str(), "a: &x 1\nb: *x\n"] {
            assert_eq!(refused(body), "body must not use YAML anchors or aliases");
        }
    }

    #[test]
    fn numbers_json_cannot_hold_are_refused_naming_the_key() {
        for body in [
            "ui.zoom: .nan",
            "ui.zoom: -.inf",
            "ui:\n  zoom: 1e999999\n",
            "ui.zoom: [1, .inf]",
        ] {
            assert_eq!(
                refused(body),
                "ui.zoom must be a finite number within 64 bits",
                "{body}"
            );
        }
        let settings =
            parse_server_config(b"ui.zoom: 1.5e3\nui.max: 18446744073709551615").unwrap();
        assert_eq!(settings[0].1, json!(1500.0));
        assert_eq!(settings[1].1, json!(u64::MAX));
    }

    #[test]
    fn known_keys_are_validated_and_others_bounded() {
        let role = |value: &str| format!(r#"{{"authz":{{"creator_role":{value}}}}}"#);
        assert!(parse_server_config(role(r#""project-viewer""#).as_bytes()).is_ok());
        for bad in [
            r#""""#,
            r#""a b""#,
            "7",
            "null",
            r#"["x"]"#,
            &format!(r#""{}""#, "r".repeat(65)),
        ] {
            let message = refused(&role(bad));
            assert!(
                message.starts_with("authz.creator_role must be a role name"),
                "{message}"
            );
        }
        assert_eq!(
            refused(r#"{"profiling.readiness_marks":"yes"}"#),
            "profiling.readiness_marks must be true or false"
        );
        let big = format!(r#"{{"ui.banner":"{}"}}"#, "b".repeat(hub::MAX_VALUE_BYTES));
        assert_eq!(refused(&big), "ui.banner must be at most 4 KiB of JSON");
    }

    #[test]
    fn at_most_max_stored_settings_are_kept() {
        let stored: Vec<String> = (0..hub::MAX_STORED - 1).map(|i| format!("k{i}")).collect();
        let put = |keys: &[&str]| -> Vec<(String, Value)> {
            keys.iter().map(|k| ((*k).to_owned(), json!(1))).collect()
        };
        assert!(room_for(&stored, &put(&["new", "k0", "k1", "new"])));
        assert!(!room_for(&stored, &put(&["new", "newer"])));
        let full: Vec<String> = (0..hub::MAX_STORED).map(|i| format!("k{i}")).collect();
        assert!(room_for(&full, &put(&["k5"])), "a stored key can change");
        assert!(!room_for(&full, &put(&["k5", "new"])));
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
