//! PostgreSQL fixtures: the server named by `PERF_TRACE_PG_URL`, and a
//! schema of its own per test (or a database of its own, for the tests that
//! cut the Hub off from it), dropped when the fixture is.
//!
//! Without the variable the PostgreSQL tests are skipped, and the test
//! binary says so once on standard error (past the test harness's capture);
//! with `CI=true` a missing variable fails them instead.

use std::sync::atomic::{AtomicU32, Ordering};

use super::pg_url::PG_URL_VAR;

/// Runs `sql` on the server at `url`, on a thread of its own (the
/// synchronous client may not run on the test's async runtime).
pub fn admin_sql(url: &str, sql: &str) {
    let sql = sql.to_owned();
    with_admin_client(url, move |client| {
        client
            .batch_execute(&sql)
            .unwrap_or_else(|e| panic!("{sql}: {e}"))
    })
}

/// The rows of the query `sql` on the server at `url` (see [`admin_sql`]).
pub fn admin_rows(url: &str, sql: &str) -> Vec<postgres::Row> {
    let sql = sql.to_owned();
    with_admin_client(url, move |client| {
        client
            .query(&sql, &[])
            .unwrap_or_else(|e| panic!("{sql}: {e}"))
    })
}

/// Runs `f` with a new client of the server at `url`, on a thread of its own.
fn with_admin_client<T: Send + 'static>(
    url: &str,
    f: impl FnOnce(&mut postgres::Client) -> T + Send + 'static,
) -> T {
    let url = url.to_owned();
    std::thread::spawn(move || {
        let mut client = postgres::Client::connect(&url, postgres::NoTls)
            .unwrap_or_else(|e| panic!("cannot connect to {PG_URL_VAR}: {e}"));
        f(&mut client)
    })
    .join()
    .unwrap()
}

/// A name no other fixture of any test process uses.
fn unique_name(prefix: &str) -> String {
    static NEXT: AtomicU32 = AtomicU32::new(0);
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .subsec_nanos();
    format!(
        "{prefix}_{}_{}_{nanos}",
        std::process::id(),
        NEXT.fetch_add(1, Ordering::Relaxed)
    )
}

/// `url` with a query parameter added.
fn with_param(url: &str, param: &str) -> String {
    let sep = if url.contains('?') { '&' } else { '?' };
    format!("{url}{sep}{param}")
}

/// An object made on the server for one test: the server's URL, the
/// object's unique name, and the URL that reaches it.
struct Fixture {
    server: String,
    name: String,
    url: String,
}

impl Fixture {
    /// Names a new object `prefix_…`, makes it with the statement `create`
    /// writes for that name, and reaches it at the URL `reach` writes from
    /// the server's URL and the name.
    fn create(
        server: &str,
        prefix: &str,
        create: impl FnOnce(&str) -> String,
        reach: impl FnOnce(&str, &str) -> String,
    ) -> Fixture {
        let name = unique_name(prefix);
        admin_sql(server, &create(&name));
        Fixture {
            server: server.to_owned(),
            url: reach(server, &name),
            name,
        }
    }

    /// Runs the statement `sql` writes for the object's name on the server.
    fn admin(&self, sql: impl FnOnce(&str) -> String) {
        admin_sql(&self.server, &sql(&self.name));
    }
}

/// A schema of its own in the server's database; the URL the Hub is given
/// selects it (`search_path`). Dropped, with everything in it, on drop.
pub struct PgSchema(Fixture);

impl PgSchema {
    pub fn create(server: &str) -> PgSchema {
        PgSchema(Fixture::create(
            server,
            "hub_test",
            |name| format!("CREATE SCHEMA {name}"),
            |server, name| with_param(server, &format!("options=-csearch_path%3D{name}")),
        ))
    }

    /// The URL the Hub and the seeder are given.
    pub fn url(&self) -> &str {
        &self.0.url
    }

    /// The schema's name.
    pub fn name(&self) -> &str {
        &self.0.name
    }
}

impl Drop for PgSchema {
    fn drop(&mut self) {
        self.0
            .admin(|name| format!("DROP SCHEMA IF EXISTS {name} CASCADE"));
    }
}

/// A database of its own on the server, which a test may close to new
/// connections and whose connections it may terminate. Dropped (its
/// connections terminated) on drop.
pub struct PgDatabase(Fixture);

impl PgDatabase {
    pub fn create(server: &str) -> PgDatabase {
        PgDatabase(Fixture::create(
            server,
            "hub_test_db",
            |name| format!("CREATE DATABASE {name}"),
            replace_database,
        ))
    }

    pub fn url(&self) -> &str {
        &self.0.url
    }

    /// Refuses new connections and terminates every open one: the database
    /// is unavailable until [`PgDatabase::reopen`].
    pub fn cut_off(&self) {
        self.0.admin(|name| {
            format!(
                "ALTER DATABASE {name} ALLOW_CONNECTIONS false;
                 SELECT pg_terminate_backend(pid) FROM pg_stat_activity
                 WHERE datname = '{name}' AND pid <> pg_backend_pid();"
            )
        });
    }

    /// Accepts connections again.
    pub fn reopen(&self) {
        self.0
            .admin(|name| format!("ALTER DATABASE {name} ALLOW_CONNECTIONS true"));
    }
}

impl Drop for PgDatabase {
    fn drop(&mut self) {
        self.0
            .admin(|name| format!("DROP DATABASE IF EXISTS {name} WITH (FORCE)"));
    }
}

/// The server URL with its database replaced by `name`.
fn replace_database(url: &str, name: &str) -> String {
    let (base, query) = match url.split_once('?') {
        Some((base, query)) => (base, Some(query)),
        None => (url, None),
    };
    let authority_start = base.find("://").map_or(0, |i| i + 3);
    let base = match base[authority_start..].find('/') {
        Some(slash) => &base[..authority_start + slash],
        None => base,
    };
    match query {
        Some(query) => format!("{base}/{name}?{query}"),
        None => format!("{base}/{name}"),
    }
}
