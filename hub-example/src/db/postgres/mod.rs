//! PostgreSQL: the r2d2 connection manager (each connection keeps its
//! prepared statements, as rusqlite's statement cache does for SQLite), the
//! failures that mean "unavailable for now", and the migrations' port.
//!
//! The client is the synchronous `postgres` crate: the store's methods are
//! synchronous and run inside one `spawn_blocking` per request, exactly as
//! on SQLite, so both dialects share the pool wrapper that measures the
//! `db_*` figures and make the same calls in the same places.

mod copy;
mod migrations;

pub use copy::{copy_seeded, holds_tables};
pub use migrations::{migrate_postgres, pending_postgres_migrations, postgres_schema_version};

use std::collections::HashMap;
use std::time::Duration;

use postgres::types::ToSql;
use postgres::{Client, NoTls, Row, Statement};

use super::{DbError, PoolOptions};

/// Prepared statements kept per connection (as many shapes as the Hub has,
/// with room to spare; past it the cache starts again).
const STATEMENT_CACHE: usize = 128;

/// The connection manager of the PostgreSQL pool.
#[derive(Debug, Clone)]
pub struct PgManager {
    config: postgres::Config,
    url: String,
    lock_timeout: Duration,
}

impl PgManager {
    /// A manager for `url`, whose connections wait at most the pool's
    /// checkout timeout to connect and its busy timeout for a lock.
    pub(crate) fn new(url: &str, options: PoolOptions) -> Result<PgManager, DbError> {
        let mut config: postgres::Config = url
            .parse()
            .map_err(|e: postgres::Error| DbError::BadUrl(e.to_string()))?;
        if config.get_connect_timeout().is_none() {
            config.connect_timeout(options.checkout_timeout);
        }
        if config.get_application_name().is_none() {
            config.application_name("hub-example");
        }
        Ok(PgManager {
            config,
            url: redacted(url),
            lock_timeout: options.busy_timeout,
        })
    }

    /// Connects once, on a thread of its own (the synchronous client may not
    /// run on an async runtime's thread), and reports why it could not.
    pub(crate) fn check(&self) -> Result<(), DbError> {
        std::thread::scope(|s| s.spawn(|| self.open_client().map(drop)).join())
            .unwrap_or_else(|_| Err(DbError::Corrupt("connection check panicked".into())))
    }

    /// A new connection outside the pool (the event listener's own).
    pub(crate) fn open_client(&self) -> Result<PgClient, DbError> {
        let mut client = self.config.connect(NoTls).map_err(|e| DbError::Connect {
            url: self.url.clone(),
            reason: one_line(&e),
        })?;
        client.batch_execute(&format!(
            "SET lock_timeout = {}",
            self.lock_timeout.as_millis().max(1)
        ))?;
        Ok(PgClient {
            client: Closing(Some(client)),
            statements: HashMap::new(),
        })
    }
}

impl r2d2::ManageConnection for PgManager {
    type Connection = PgClient;
    type Error = DbError;

    fn connect(&self) -> Result<PgClient, DbError> {
        self.open_client()
    }

    fn is_valid(&self, conn: &mut PgClient) -> Result<(), DbError> {
        Ok(conn.client.simple_query("").map(drop)?)
    }

    fn has_broken(&self, conn: &mut PgClient) -> bool {
        conn.client.is_closed()
    }
}

/// A PostgreSQL connection and the statements prepared on it.
pub struct PgClient {
    client: Closing,
    statements: HashMap<String, Statement>,
}

/// A client that closes itself on a thread of its own when dropped on an
/// async runtime's thread (closing blocks on the client's own runtime,
/// which may not start there): the last clone of a pool is often dropped
/// by async code, such as a Hub at the end of `serve`.
struct Closing(Option<Client>);

impl std::ops::Deref for Closing {
    type Target = Client;
    fn deref(&self) -> &Client {
        self.0
            .as_ref()
            .expect("the client is taken only when dropped")
    }
}

impl std::ops::DerefMut for Closing {
    fn deref_mut(&mut self) -> &mut Client {
        self.0
            .as_mut()
            .expect("the client is taken only when dropped")
    }
}

impl Drop for Closing {
    fn drop(&mut self) {
        if let Some(client) = self.0.take() {
            if tokio::runtime::Handle::try_current().is_ok() {
                let _ = std::thread::Builder::new()
                    .name("pg-close".into())
                    .spawn(move || drop(client));
            }
        }
    }
}

impl std::fmt::Debug for PgClient {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PgClient")
            .field("statements", &self.statements.len())
            .finish_non_exhaustive()
    }
}

impl PgClient {
    /// The statement for `sql`, prepared on this connection the first time.
    pub fn prepare_cached(&mut self, sql: &str) -> Result<Statement, postgres::Error> {
        if let Some(statement) = self.statements.get(sql) {
            return Ok(statement.clone());
        }
        let statement = self.client.prepare(sql)?;
        if self.statements.len() >= STATEMENT_CACHE {
            self.statements.clear();
        }
        self.statements.insert(sql.to_owned(), statement.clone());
        Ok(statement)
    }

    /// Every row of `sql`, through its cached statement.
    pub fn query(
        &mut self,
        sql: &str,
        params: &[&(dyn ToSql + Sync)],
    ) -> Result<Vec<Row>, postgres::Error> {
        let statement = self.prepare_cached(sql)?;
        self.client.query(&statement, params)
    }

    /// The row of `sql`, if there is one (an error when there are several).
    pub fn query_opt(
        &mut self,
        sql: &str,
        params: &[&(dyn ToSql + Sync)],
    ) -> Result<Option<Row>, postgres::Error> {
        let statement = self.prepare_cached(sql)?;
        self.client.query_opt(&statement, params)
    }

    /// The number of rows `sql` changed.
    pub fn execute(
        &mut self,
        sql: &str,
        params: &[&(dyn ToSql + Sync)],
    ) -> Result<u64, postgres::Error> {
        let statement = self.prepare_cached(sql)?;
        self.client.execute(&statement, params)
    }

    /// The client itself, for transactions and batches.
    pub fn client(&mut self) -> &mut Client {
        &mut self.client
    }
}

/// Whether a PostgreSQL failure means the server is unavailable for now
/// (down, restarting, the connection terminated, out of connections, a lock
/// not granted in time) rather than a fault of the statement.
pub fn is_unavailable(e: &postgres::Error) -> bool {
    if e.is_closed() {
        return true;
    }
    if let Some(code) = e.code() {
        let code = code.code();
        return code.starts_with("08")
            || matches!(code, "57P01" | "57P02" | "57P03" | "53300" | "55P03");
    }
    // A failure below the protocol (a refused or reset socket).
    std::error::Error::source(e).is_some_and(|s| s.is::<std::io::Error>())
}

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
fn one_line(e: &postgres::Error) -> String {
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

#[cfg(test)]
mod tests {
    use super::*;

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
        let err =
            PgManager::new("postgres://u:pw@h:notaport/d", PoolOptions::default()).unwrap_err();
        assert!(matches!(err, DbError::BadUrl(_)), "{err}");
        assert!(!err.to_string().contains("pw"), "{err}");
    }
}
