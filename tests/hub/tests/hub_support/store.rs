//! Which store the suites run on: SQLite (a file in a temporary folder, the
//! default) or, with `HUB_TEST_STORE=postgres`, the PostgreSQL server named
//! by `PERF_TRACE_PG_URL`, each fixture in a schema of its own.
//!
//! A bad value, or `postgres` without a server URL, fails every test that
//! builds a fixture with one clear message rather than falling back to
//! SQLite: a pass must never claim a store it did not run on.

use std::io::Write;
use std::sync::OnceLock;

use super::pg_url::{configured_pg_url, PG_URL_VAR};

/// The variable that chooses the store.
pub const STORE_VAR: &str = "HUB_TEST_STORE";

/// The store the fixtures seed and the Hub serves.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum TestStore {
    /// An SQLite file per fixture.
    Sqlite,
    /// A schema per fixture on the server at this URL.
    Postgres {
        /// The server's URL (`PERF_TRACE_PG_URL`).
        server: String,
    },
}

impl TestStore {
    /// Reads [`STORE_VAR`] (and, for PostgreSQL, [`PG_URL_VAR`]).
    pub fn from_env() -> Result<TestStore, String> {
        let chosen = std::env::var(STORE_VAR).unwrap_or_default();
        match chosen.trim() {
            "" | "sqlite" => Ok(TestStore::Sqlite),
            "postgres" => match configured_pg_url() {
                Some(server) => Ok(TestStore::Postgres { server }),
                None => Err(format!(
                    "{STORE_VAR}=postgres needs {PG_URL_VAR}, the server's URL \
                     (e.g. postgres://postgres@127.0.0.1:5432/test)"
                )),
            },
            other => Err(format!(
                "{STORE_VAR}={other:?} is not a store: use `sqlite` (the default) or `postgres`"
            )),
        }
    }

    /// Whether this is PostgreSQL.
    pub fn is_postgres(&self) -> bool {
        matches!(self, TestStore::Postgres { .. })
    }
}

/// The store of this test process, read once. Panics with the reason when
/// the environment names no usable store.
pub fn test_store() -> &'static TestStore {
    static STORE: OnceLock<Result<TestStore, String>> = OnceLock::new();
    match STORE.get_or_init(TestStore::from_env) {
        Ok(store) => store,
        Err(reason) => panic!("{reason}"),
    }
}

/// The guard of a test of SQLite-only behaviour (its file, its locks, its
/// journal): on PostgreSQL it says on standard error why the test does not
/// run there, and returns true for the test to return at once.
pub fn skip_on_postgres(why: &str) -> bool {
    if !test_store().is_postgres() {
        return false;
    }
    let thread = std::thread::current();
    let test = thread.name().unwrap_or("a test");
    let _ = writeln!(std::io::stderr(), "{test}: not run on PostgreSQL: {why}");
    true
}
