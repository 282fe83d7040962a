//! `GET /api/v1/admin/audit-events` (hub admins only): the stored audit
//! rows of a time window, newest first, in cursor pages.
//!
//! A row is one decision asked alone (`resource` names it), or the
//! decisions of one question of a batch: a list asks each action once for
//! the agents of its page, and that is one row, `resource.id` null,
//! `decisions` counting them by outcome (`allow`, `deny`, `error`) and
//! `deniedIds` naming the agents not allowed. `outcome` is the gravest of
//! the row's outcomes, so the denials are the rows whose outcome is `deny`.
//! `count` and `histogram` count rows.
//!
//! A principal past its audit rate (`server.hub.audit.record_rate`) has its
//! decisions folded into summary rows, one per principal, action, resource
//! kind and outcome per interval: `resource.id` null, `decisions` counting
//! them, and `summary` with the first and last decision's time (`at` is the
//! first's). Other rows have no `summary`.
//!
//! - The window is `window=` (`5m`, `15m`, `30m`, `1h`, `6h`, `12h`, `24h`,
//!   `7d`, ending now; `1h` when nothing is given) or `from=` and `to=`
//!   (RFC 3339 or Unix milliseconds; `to` defaults to now; at most 7 days).
//! - `limit=` rows per page (1 to 500, default 100); `cursor=` the
//!   `nextCursor` of the previous page.
//! - `count` is exact for windows up to an hour; beyond, it is estimated
//!   from the row ids of the window's first and last rows (two index seeks
//!   instead of a scan) and `countApproximate` is true.
//! - `time_resolution=minute` or `hour` adds `histogram`: the rows of the
//!   whole window per minute or hour (only buckets that hold rows, newest
//!   first), to see when decisions happened beside the page. Per minute is
//!   allowed for windows up to 24 hours (at most 1,440 buckets).
//!
//! Every bad parameter is a JSON 400 that names it; an unknown one is not
//! echoed (the message lists the known ones).

use std::time::UNIX_EPOCH;

use axum::extract::{RawQuery, State};
use axum::response::{IntoResponse, Response};
use axum::{Extension, Json};
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use base64::Engine;
use serde_json::{json, Value};

use super::params::Params;
use super::state::AppState;
use super::ApiError;
use crate::authz::{AuditEmitter, Principal};
use crate::clock::{rfc3339_ms, MAX_RFC3339_MS};
use crate::store::audit::{query_events, AuditCursor, AuditEventRow, AuditQuery};
use crate::store::AuthzStore;

/// The windows `window=` accepts, with their length in milliseconds.
pub(crate) const WINDOWS: [(&str, i64); 8] = [
    ("5m", 5 * MINUTE_MS),
    ("15m", 15 * MINUTE_MS),
    ("30m", 30 * MINUTE_MS),
    ("1h", HOUR_MS),
    ("6h", 6 * HOUR_MS),
    ("12h", 12 * HOUR_MS),
    ("24h", 24 * HOUR_MS),
    ("7d", 7 * 24 * HOUR_MS),
];
const MINUTE_MS: i64 = 60_000;
const HOUR_MS: i64 = 60 * MINUTE_MS;
/// The window when none is given.
const DEFAULT_WINDOW_MS: i64 = HOUR_MS;
/// The widest window counted row by row.
const EXACT_COUNT_UP_TO_MS: i64 = HOUR_MS;
/// The widest window with a per-minute histogram.
const MINUTE_HISTOGRAM_UP_TO_MS: i64 = 24 * HOUR_MS;
/// The widest `from`/`to` window.
const MAX_SPAN_MS: i64 = 7 * 24 * HOUR_MS;
/// Rows per page when `limit` is not given.
const DEFAULT_LIMIT: u32 = 100;
/// Most rows per page.
const MAX_LIMIT: u32 = 500;
const KNOWN: [&str; 6] = ["window", "from", "to", "cursor", "limit", "time_resolution"];

/// Parses the query string into the window to read, given `now_ms`.
pub(crate) fn parse_query(query: Option<&str>, now_ms: i64) -> Result<AuditQuery, ApiError> {
    let params = Params::parse(query);
    params.only(&KNOWN)?;
    let window = params.single("window")?;
    let from = params.single("from")?;
    let to = params.single("to")?;
    let (from_ms, to_ms) = match (window, from, to) {
        (Some(_), Some(_), _) | (Some(_), _, Some(_)) => {
            return Err(ApiError::bad_request(
                "window cannot be combined with from or to",
            ))
        }
        (Some(window), None, None) => {
            let length = WINDOWS
                .iter()
                .find(|(name, _)| *name == window)
                .map(|(_, ms)| *ms)
                .ok_or_else(|| {
                    ApiError::bad_request(format!(
                        "window must be one of {}",
                        WINDOWS.map(|(name, _)| name).join(", ")
                    ))
                })?;
            (now_ms - length, now_ms)
        }
        (None, None, None) => (now_ms - DEFAULT_WINDOW_MS, now_ms),
        (None, None, Some(_)) => return Err(ApiError::bad_request("to needs from")),
        (None, Some(from), to) => {
            let from_ms = parse_time(from, "from")?;
            let to_ms = to
                .map(|t| parse_time(t, "to"))
                .transpose()?
                .unwrap_or(now_ms);
            if from_ms >= to_ms {
                return Err(ApiError::bad_request("from must be before to"));
            }
            if to_ms - from_ms > MAX_SPAN_MS {
                return Err(ApiError::bad_request(
                    "from and to may be at most 7 days apart",
                ));
            }
            (from_ms, to_ms)
        }
    };
    let after = params
        .single("cursor")?
        .map(|c| decode_cursor(c).ok_or_else(|| ApiError::bad_request("cursor is malformed")))
        .transpose()?;
    let limit = match params.single("limit")? {
        None => DEFAULT_LIMIT,
        Some(text) => text
            .parse::<u32>()
            .ok()
            .filter(|n| (1..=MAX_LIMIT).contains(n))
            .ok_or_else(|| ApiError::bad_request("limit must be a number from 1 to 500"))?,
    };
    let span = to_ms - from_ms;
    let bucket_ms = match params.single("time_resolution")? {
        None => None,
        Some("hour") => Some(HOUR_MS),
        Some("minute") if span <= MINUTE_HISTOGRAM_UP_TO_MS => Some(MINUTE_MS),
        Some("minute") => {
            return Err(ApiError::bad_request(
                "time_resolution minute allows windows up to 24h; use hour",
            ))
        }
        Some(_) => {
            return Err(ApiError::bad_request(
                "time_resolution must be minute or hour",
            ))
        }
    };
    Ok(AuditQuery {
        from_ms,
        to_ms,
        after,
        limit,
        bucket_ms,
        approximate_count: span > EXACT_COUNT_UP_TO_MS,
    })
}

/// A time as Unix milliseconds (digits) or RFC 3339, from 1970 to the end
/// of year 9999 (the times an answer can write back).
fn parse_time(text: &str, name: &str) -> Result<i64, ApiError> {
    let invalid = || {
        ApiError::bad_request(format!(
            "{name} must be an RFC 3339 time or Unix milliseconds, from 1970 to year 9999"
        ))
    };
    let ms = if !text.is_empty() && text.bytes().all(|b| b.is_ascii_digit()) {
        text.parse::<i64>().map_err(|_| invalid())?
    } else {
        let at = humantime::parse_rfc3339_weak(text).map_err(|_| invalid())?;
        let ms = at
            .duration_since(UNIX_EPOCH)
            .map_err(|_| invalid())?
            .as_millis();
        i64::try_from(ms).map_err(|_| invalid())?
    };
    if ms > MAX_RFC3339_MS {
        return Err(invalid());
    }
    Ok(ms)
}

/// The cursor of a row: base64url of `at_ms.id`.
pub(crate) fn encode_cursor(cursor: AuditCursor) -> String {
    URL_SAFE_NO_PAD.encode(format!("{}.{}", cursor.at_ms, cursor.id))
}

fn decode_cursor(text: &str) -> Option<AuditCursor> {
    if text.len() > 64 {
        return None;
    }
    let bytes = URL_SAFE_NO_PAD.decode(text).ok()?;
    let text = std::str::from_utf8(&bytes).ok()?;
    let (at, id) = text.split_once('.')?;
    Some(AuditCursor {
        at_ms: at.parse().ok()?,
        id: id.parse().ok()?,
    })
}

fn rfc3339(ms: i64) -> String {
    rfc3339_ms(ms).to_string()
}

fn event_json(row: &AuditEventRow) -> Value {
    let [allow, deny, error] = row.tally;
    let denied_ids: Value = row
        .denied_ids
        .as_deref()
        .and_then(|ids| serde_json::from_str(ids).ok())
        .unwrap_or_else(|| json!([]));
    let mut event = json!({
        "id": row.id,
        "at": rfc3339(row.at_ms),
        "principal": { "kind": row.principal_kind, "id": row.principal_id },
        "action": row.action,
        "resource": { "kind": row.resource_kind, "id": row.resource_id },
        "outcome": row.outcome,
        "decisions": { "allow": allow, "deny": deny, "error": error },
        "deniedIds": denied_ids,
    });
    if let Some(last_ms) = row.last_ms {
        event["summary"] = json!({ "first": rfc3339(row.at_ms), "last": rfc3339(last_ms) });
    }
    event
}

/// `GET /api/v1/admin/audit-events`.
pub(crate) async fn audit_events<S: AuthzStore, A: AuditEmitter>(
    State(state): State<AppState<S, A>>,
    Extension(principal): Extension<Principal>,
    RawQuery(query): RawQuery,
) -> Result<Response, ApiError> {
    let body = perf_trace_core::scope::spawn_blocking(move || {
        let authz = state.authorizer(&principal);
        if !authz.allow_hub_admin()? {
            return Err(ApiError::forbidden());
        }
        let query = parse_query(query.as_deref(), crate::clock::now_ms())?;
        let page = query_events(state.db(), &query)?;
        let mut body = json!({
            "from": rfc3339(query.from_ms),
            "to": rfc3339(query.to_ms),
            "events": page.events.iter().map(event_json).collect::<Vec<_>>(),
            "nextCursor": page.next.map(encode_cursor),
            "count": page.count,
            "countApproximate": page.count_is_approximate,
        });
        if let Some(width) = query.bucket_ms {
            body["timeResolution"] = json!(if width == MINUTE_MS { "minute" } else { "hour" });
            body["histogram"] = page
                .histogram
                .iter()
                .map(|(start, count)| json!({ "start": rfc3339(*start), "count": count }))
                .collect();
        }
        Ok(body)
    })
    .await??;
    Ok(Json(body).into_response())
}

#[cfg(test)]
mod tests {
    use super::*;

    const NOW: i64 = 1_800_000_000_000;

    fn error_of(query: &str) -> String {
        let err = parse_query(Some(query), NOW).unwrap_err();
        assert_eq!(err.status(), axum::http::StatusCode::BAD_REQUEST, "{query}");
        err.body()["error"].as_str().unwrap().to_owned()
    }

    #[test]
    fn every_window_ends_now_and_wide_ones_are_counted_approximately() {
        for (name, length) in WINDOWS {
            let q = parse_query(Some(&format!("window={name}")), NOW).unwrap();
            assert_eq!((q.from_ms, q.to_ms), (NOW - length, NOW), "{name}");
            assert_eq!(q.approximate_count, length > HOUR_MS, "{name}");
        }
        let q = parse_query(None, NOW).unwrap();
        assert_eq!((q.from_ms, q.to_ms, q.limit), (NOW - HOUR_MS, NOW, 100));
        assert_eq!(q.bucket_ms, None);
    }

    #[test]
    fn from_and_to_take_rfc3339_or_milliseconds() {
        let q = parse_query(
            Some("from=2026-01-01T00:00:00Z&to=1767225660000&time_resolution=minute&limit=5"),
            NOW,
        )
        .unwrap();
        assert_eq!((q.from_ms, q.to_ms), (1_767_225_600_000, 1_767_225_660_000));
        assert_eq!((q.limit, q.bucket_ms), (5, Some(MINUTE_MS)));
        let q = parse_query(Some("from=1800000000000"), NOW + 5).unwrap();
        assert_eq!((q.from_ms, q.to_ms), (NOW, NOW + 5), "to defaults to now");
    }

    #[test]
    fn the_last_writable_millisecond_is_accepted_and_written_back() {
        let q = parse_query(
            Some("from=253402300799000&to=9999-12-31T23:59:59.999Z&time_resolution=hour"),
            NOW,
        )
        .unwrap();
        assert_eq!((q.from_ms, q.to_ms), (253_402_300_799_000, MAX_RFC3339_MS));
        assert_eq!(rfc3339(q.to_ms), "9999-12-31T23:59:59.999Z");
    }

    #[test]
    fn an_unknown_parameter_is_not_echoed() {
        let got = error_of("%3Cscript%3Ealert(1)%3C/script%3E=1");
        assert!(got.starts_with("unknown parameter;"), "{got}");
        assert!(!got.contains("script") && !got.contains('<'), "{got}");
    }

    #[test]
    fn a_cursor_round_trips() {
        let cursor = AuditCursor {
            at_ms: 1_767_225_600_123,
            id: 42,
        };
        let q = parse_query(Some(&format!("cursor={}", encode_cursor(cursor))), NOW).unwrap();
        assert_eq!(q.after, Some(cursor));
    }

    #[test]
    fn bad_parameters_are_refused_naming_the_parameter() {
        let cases = [
            ("window=2h", "window must be one of"),
            ("window=5m&from=1", "window cannot be combined"),
            ("to=5", "to needs from"),
            ("from=yesterday", "from must be"),
            ("from=1000&to=soon", "to must be"),
            ("from=2000&to=1000", "from must be before to"),
            ("from=0&to=700000000", "at most 7 days"),
            ("cursor=%%%", "cursor is malformed"),
            ("cursor=bm90LWEtY3Vyc29y", "cursor is malformed"),
            ("limit=0", "limit must be"),
            ("limit=501", "limit must be"),
            ("time_resolution=second", "time_resolution must be"),
            ("window=7d&time_resolution=minute", "time_resolution minute"),
            (
                "windows=5m",
                "unknown parameter; the parameters are window, from",
            ),
            ("from=253402300800000&to=253402300800001", "from must be"),
            ("from=9223372036854775806", "from must be"),
            ("from=1000&to=9223372036854775807", "to must be"),
            ("from=10000-01-01T00:00:00Z", "from must be"),
            (
                "from=253402300800000&to=253402300800001&time_resolution=hour",
                "from must be",
            ),
            ("limit=1&limit=2", "limit may be given only once"),
        ];
        for (query, want) in cases {
            let got = error_of(query);
            assert!(got.contains(want), "{query}: {got}");
        }
    }
}
