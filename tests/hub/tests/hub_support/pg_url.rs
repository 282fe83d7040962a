//! The PostgreSQL server the tests run against, named by
//! `PERF_TRACE_PG_URL`: shared by the Hub's tests and `perf-trace-sql`'s
//! (which includes this file by its path).

use std::io::Write;
use std::sync::Once;

/// The variable the PostgreSQL tests read their server's URL from.
pub const PG_URL_VAR: &str = "PERF_TRACE_PG_URL";

/// The server's URL, or `None` (after saying once that the tests are
/// skipped) when `PERF_TRACE_PG_URL` is not set. Panics under `CI=true`.
pub fn pg_url() -> Option<String> {
    match std::env::var(PG_URL_VAR) {
        Ok(url) if !url.trim().is_empty() => Some(url.trim().to_owned()),
        _ => {
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
