//! The PostgreSQL server the tests run against, named by
//! `PERF_TRACE_PG_URL`: shared by `perf-trace-sql`'s tests and the Hub's
//! (which include this file by its path; it lives here so that the
//! published crate's tests carry it).

use std::io::Write;
use std::sync::Once;

/// The variable the PostgreSQL tests read their server's URL from.
pub const PG_URL_VAR: &str = "PERF_TRACE_PG_URL";

/// The server's URL when `PERF_TRACE_PG_URL` names one.
pub fn configured_pg_url() -> Option<String> {
    std::env::var(PG_URL_VAR)
        .ok()
        .map(|url| url.trim().to_owned())
        .filter(|url| !url.is_empty())
}

/// The server's URL, or `None` (after saying once that the tests are
/// skipped) when `PERF_TRACE_PG_URL` is not set. Panics under `CI=true`.
pub fn pg_url() -> Option<String> {
    match configured_pg_url() {
        Some(url) => Some(url),
        None => {
            if std::env::var("CI").is_ok_and(|v| v == "true") {
                panic!(
                    "{PG_URL_VAR} is not set and CI=true: CI runs the PostgreSQL tests \
                     (.ci/run sets it after checking the server answers)"
                );
            }
            static SKIPPED: Once = Once::new();
            SKIPPED.call_once(|| {
                let _ = writeln!(
                    std::io::stderr(),
                    "PostgreSQL tests skipped: {PG_URL_VAR} is not set \
                     (set it to a server's URL, e.g. postgres://postgres@127.0.0.1:5432/test)"
                );
            });
            None
        }
    }
}
