//! PostgreSQL's failures: how one is told (on one line, a URL without its
//! password).

/// `url` with its password, if any, replaced by `***`.
pub fn redacted(url: &str) -> String {
    let Some(scheme_end) = url.find("://").map(|i| i + 3) else {
        return url.to_owned();
    };
    let rest = &url[scheme_end..];
    let authority_end = rest.find(['/', '?']).unwrap_or(rest.len());
    let authority = &rest[..authority_end];
    match authority.rfind('@') {
        Some(at) => match authority[..at].find(':') {
            Some(colon) => format!(
                "{}{}:***{}",
                &url[..scheme_end],
                &authority[..colon],
                &rest[at..]
            ),
            None => url.to_owned(),
        },
        None => url.to_owned(),
    }
}

/// The error and its causes on one line (the client's own text stops at
/// "error connecting to server").
pub(super) fn one_line(e: &tokio_postgres::Error) -> String {
    let mut text = e.to_string();
    let mut source = std::error::Error::source(e);
    while let Some(cause) = source {
        let part = cause.to_string();
        if !text.contains(&part) {
            text.push_str(": ");
            text.push_str(&part);
        }
        source = cause.source();
    }
    text.lines().collect::<Vec<_>>().join(" ")
}

/// The server of the PostgreSQL unit tests, from `PERF_TRACE_PG_URL`; `None`
/// (the test is skipped, and says so) when it is not set, a panic when it is
/// not set under `CI=true`.
#[cfg(test)]
pub(crate) fn test_server() -> Option<String> {
    match std::env::var("PERF_TRACE_PG_URL") {
        Ok(url) if !url.trim().is_empty() => Some(url.trim().to_owned()),
        _ => {
            assert!(
                std::env::var("CI").map_or(true, |v| v != "true"),
                "PERF_TRACE_PG_URL is not set and CI=true: CI runs the PostgreSQL tests"
            );
            eprintln!("PostgreSQL test skipped: PERF_TRACE_PG_URL is not set");
            None
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::db::{DbError, PoolOptions};
    use crate::store::postgres::{runtime, PgManager};

    #[test]
    fn a_password_never_leaves_the_url() {
        assert_eq!(
            redacted("postgres://hub:s3cret@db.example:5432/hub?sslmode=disable"),
            "postgres://hub:***@db.example:5432/hub?sslmode=disable"
        );
        assert_eq!(
            redacted("postgres://postgres@127.0.0.1/test"),
            "postgres://postgres@127.0.0.1/test"
        );
        assert_eq!(
            redacted("postgresql://u:p@h/d?options=-c%20a%3Db@c"),
            "postgresql://u:***@h/d?options=-c%20a%3Db@c"
        );
    }

    #[test]
    fn a_malformed_url_is_refused_without_repeating_it() {
        let err = PgManager::new(
            "postgres://u:pw@h:notaport/d",
            PoolOptions::default(),
            runtime::driver_runtime(),
        )
        .unwrap_err();
        assert!(matches!(err, DbError::BadUrl(_)), "{err}");
        assert!(!err.to_string().contains("pw"), "{err}");
    }
}
