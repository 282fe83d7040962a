//! A pool of connections (r2d2, to SQLite or to PostgreSQL) wrapped so it
//! reports the figures of the `db_*` keys: checkouts that found no idle
//! connection, the time spent in them, and the connections in use and open.
//! Both dialects go through the same checkout, so the figures mean the same
//! whichever database the Hub serves.

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering::Relaxed};
use std::sync::Arc;
use std::time::{Duration, Instant};

use perf_trace_core::pool::{PoolFigures, PoolStats};
use r2d2::{ManageConnection, PooledConnection};
use r2d2_sqlite::SqliteConnectionManager;
use rusqlite::{Connection, OpenFlags};

use super::postgres::PgManager;
use super::DbError;

/// A pooled SQLite connection.
pub type Conn = PooledConnection<SqliteConnectionManager>;

/// A pooled PostgreSQL connection (with its prepared statements).
pub type PgConn = PooledConnection<PgManager>;

/// Which database a [`Db`] talks to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Dialect {
    /// An SQLite file, embedded.
    Sqlite,
    /// A PostgreSQL server.
    Postgres,
}

#[derive(Clone)]
enum Pool {
    Sqlite(r2d2::Pool<SqliteConnectionManager>),
    /// The pool, and a copy of its manager (r2d2 does not lend its own).
    Postgres(r2d2::Pool<PgManager>, Arc<PgManager>),
}

/// Prepared statements kept per connection.
const STATEMENT_CACHE: usize = 64;

/// Whether opening may create the file.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum OpenMode {
    /// The file must exist (the server).
    MustExist,
    /// The file is created when missing (the seeder).
    CreateIfMissing,
}

/// Sizes and timeouts of the pool.
#[derive(Debug, Clone, Copy)]
pub struct PoolOptions {
    /// Most connections open at once.
    pub max_size: u32,
    /// Connections kept open while idle.
    pub min_idle: u32,
    /// How long a checkout waits for a connection before failing with 503.
    pub checkout_timeout: Duration,
    /// How long a statement waits on a database another connection has
    /// locked before failing with 503.
    pub busy_timeout: Duration,
}

impl Default for PoolOptions {
    fn default() -> Self {
        PoolOptions {
            max_size: 8,
            min_idle: 2,
            checkout_timeout: Duration::from_secs(5),
            busy_timeout: Duration::from_secs(5),
        }
    }
}

/// Cumulative wait counters, shared by every clone of a [`Db`].
#[derive(Debug, Default)]
struct WaitCounters {
    count: AtomicU64,
    nanos: AtomicU64,
}

/// The database: a counted pool of connections to one SQLite file in WAL
/// mode ([`Db::open`]) or to a PostgreSQL database ([`Db::open_postgres`]).
#[derive(Clone)]
pub struct Db {
    pool: Pool,
    waits: Arc<WaitCounters>,
    path: Arc<PathBuf>,
}

impl std::fmt::Debug for Db {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Db")
            .field("dialect", &self.dialect())
            .field("path", &self.path)
            .finish_non_exhaustive()
    }
}

fn configure(conn: &mut Connection, busy_timeout: Duration) -> Result<(), rusqlite::Error> {
    conn.busy_timeout(busy_timeout)?;
    conn.set_prepared_statement_cache_capacity(STATEMENT_CACHE);
    conn.execute_batch("PRAGMA foreign_keys = ON; PRAGMA synchronous = NORMAL;")
}

impl Db {
    /// Opens the file at `path`, checks that it can be written, switches it to
    /// WAL mode, and builds the pool. Fails at once (no retries) when the file
    /// is missing, unreadable or read-only: read-only by its permissions (no
    /// write bit, which is refused even where the process could override
    /// it) or as SQLite opens it.
    pub fn open(path: &Path, mode: OpenMode, options: PoolOptions) -> Result<Db, DbError> {
        if mode == OpenMode::MustExist && !path.is_file() {
            return Err(DbError::Missing(path.to_path_buf()));
        }
        if path.is_file() && has_no_write_permission(path) {
            return Err(DbError::ReadOnly(path.to_path_buf()));
        }
        let mut flags = OpenFlags::SQLITE_OPEN_READ_WRITE
            | OpenFlags::SQLITE_OPEN_NO_MUTEX
            | OpenFlags::SQLITE_OPEN_URI;
        if mode == OpenMode::CreateIfMissing {
            flags |= OpenFlags::SQLITE_OPEN_CREATE;
        }
        let open_err = |source| DbError::Open {
            path: path.to_path_buf(),
            source,
        };
        // One plain connection first: it fails fast where the pool would retry.
        let mut first = Connection::open_with_flags(path, flags).map_err(open_err)?;
        configure(&mut first, options.busy_timeout).map_err(open_err)?;
        if first.is_readonly(rusqlite::MAIN_DB).map_err(open_err)? {
            return Err(DbError::ReadOnly(path.to_path_buf()));
        }
        let journal: String = first
            .query_row("PRAGMA journal_mode = WAL", [], |r| r.get(0))
            .map_err(open_err)?;
        if !journal.eq_ignore_ascii_case("wal") {
            return Err(DbError::Corrupt(format!(
                "could not switch to WAL mode (journal mode is {journal})"
            )));
        }
        drop(first);

        let manager = SqliteConnectionManager::file(path)
            .with_flags(flags)
            .with_init(move |conn| configure(conn, options.busy_timeout));
        let pool = r2d2::Pool::builder()
            .max_size(options.max_size)
            .min_idle(Some(options.min_idle.min(options.max_size)))
            .connection_timeout(options.checkout_timeout)
            .test_on_check_out(false)
            .build(manager)
            .map_err(|e| DbError::Corrupt(format!("cannot build the connection pool: {e}")))?;
        Ok(Db {
            pool: Pool::Sqlite(pool),
            waits: Arc::default(),
            path: Arc::new(path.to_path_buf()),
        })
    }

    /// Connects to the PostgreSQL database at `url` (`postgres://...`) and
    /// builds the pool. Fails at once when the server does not answer or
    /// refuses the connection.
    pub fn open_postgres(url: &str, options: PoolOptions) -> Result<Db, DbError> {
        let manager = PgManager::new(url, options)?;
        // One plain connection first: it fails fast where the pool would retry.
        manager.check()?;
        let spare = Arc::new(manager.clone());
        let pool = r2d2::Pool::builder()
            .max_size(options.max_size)
            .min_idle(Some(options.min_idle.min(options.max_size)))
            .connection_timeout(options.checkout_timeout)
            .test_on_check_out(false)
            .build(manager)
            .map_err(|e| DbError::Corrupt(format!("cannot build the connection pool: {e}")))?;
        Ok(Db {
            pool: Pool::Postgres(pool, spare),
            waits: Arc::default(),
            path: Arc::new(PathBuf::from(super::postgres::redacted(url))),
        })
    }

    /// Which database this is.
    pub fn dialect(&self) -> Dialect {
        match self.pool {
            Pool::Sqlite(_) => Dialect::Sqlite,
            Pool::Postgres(..) => Dialect::Postgres,
        }
    }

    /// The database file (for PostgreSQL, the URL without its password).
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Checks out an SQLite connection ([`DbError::WrongDialect`] on
    /// PostgreSQL). A checkout that finds no idle connection counts as a
    /// wait, and its duration as wait time.
    pub fn conn(&self) -> Result<Conn, DbError> {
        match &self.pool {
            Pool::Sqlite(pool) => self.checkout(pool),
            Pool::Postgres(..) => Err(DbError::WrongDialect(Dialect::Postgres)),
        }
    }

    /// Checks out a PostgreSQL connection ([`DbError::WrongDialect`] on
    /// SQLite), counted as [`Db::conn`] counts. Call it off the async
    /// runtime's threads (the synchronous client runs its own).
    pub fn pg_conn(&self) -> Result<PgConn, DbError> {
        match &self.pool {
            Pool::Postgres(pool, _) => self.checkout(pool),
            Pool::Sqlite(_) => Err(DbError::WrongDialect(Dialect::Sqlite)),
        }
    }

    /// A copy of the PostgreSQL pool's connection manager, to open a
    /// connection outside the pool (`None` on SQLite).
    pub fn pg_manager(&self) -> Option<PgManager> {
        match &self.pool {
            Pool::Postgres(_, manager) => Some(PgManager::clone(manager)),
            Pool::Sqlite(_) => None,
        }
    }

    fn checkout<M: ManageConnection>(
        &self,
        pool: &r2d2::Pool<M>,
    ) -> Result<PooledConnection<M>, DbError> {
        if let Some(conn) = pool.try_get() {
            return Ok(conn);
        }
        let start = Instant::now();
        let result = pool.get();
        self.waits.count.fetch_add(1, Relaxed);
        self.waits
            .nanos
            .fetch_add(start.elapsed().as_nanos() as u64, Relaxed);
        result.map_err(|_| DbError::PoolTimeout)
    }

    /// The pool's figures as a shareable [`PoolStats`] for the tracing layer.
    pub fn pool_stats(&self) -> Arc<dyn PoolStats> {
        Arc::new(self.clone())
    }
}

/// Whether the file's permissions grant nobody write access.
fn has_no_write_permission(path: &Path) -> bool {
    std::fs::metadata(path).is_ok_and(|m| m.permissions().readonly())
}

impl PoolStats for Db {
    fn pool_figures(&self) -> PoolFigures {
        let state = match &self.pool {
            Pool::Sqlite(pool) => pool.state(),
            Pool::Postgres(pool, _) => pool.state(),
        };
        PoolFigures {
            wait_count: self.waits.count.load(Relaxed),
            wait_time: Duration::from_nanos(self.waits.nanos.load(Relaxed)),
            in_use: u64::from(state.connections - state.idle_connections),
            open: u64::from(state.connections),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_missing_file_is_refused_without_creating_it() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("absent.db");
        let err = Db::open(&path, OpenMode::MustExist, PoolOptions::default()).unwrap_err();
        assert!(matches!(err, DbError::Missing(_)), "{err}");
        assert!(!path.exists());
    }

    #[test]
    fn a_read_only_file_is_refused() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("hub.db");
        drop(Db::open(&path, OpenMode::CreateIfMissing, PoolOptions::default()).unwrap());
        let mut permissions = std::fs::metadata(&path).unwrap().permissions();
        permissions.set_readonly(true);
        std::fs::set_permissions(&path, permissions).unwrap();
        let err = Db::open(&path, OpenMode::MustExist, PoolOptions::default()).unwrap_err();
        assert!(matches!(err, DbError::ReadOnly(_)), "{err}");
        assert!(err.to_string().ends_with("is read-only"), "{err}");
    }

    #[test]
    fn a_locked_database_fails_after_the_busy_timeout_as_busy() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("hub.db");
        let options = PoolOptions {
            busy_timeout: Duration::from_millis(20),
            ..PoolOptions::default()
        };
        let db = Db::open(&path, OpenMode::CreateIfMissing, options).unwrap();
        db.conn()
            .unwrap()
            .execute_batch("CREATE TABLE t (x INTEGER)")
            .unwrap();
        let locker = Connection::open(&path).unwrap();
        locker
            .execute_batch("BEGIN EXCLUSIVE; INSERT INTO t VALUES (1);")
            .unwrap();
        let err = db
            .conn()
            .unwrap()
            .execute("INSERT INTO t VALUES (2)", [])
            .map_err(DbError::from)
            .unwrap_err();
        assert!(err.is_busy(), "{err}");
        locker.execute_batch("COMMIT").unwrap();
        db.conn()
            .unwrap()
            .execute("INSERT INTO t VALUES (2)", [])
            .unwrap();
    }

    #[test]
    fn waits_are_counted_only_when_no_connection_is_idle() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("hub.db");
        let options = PoolOptions {
            max_size: 1,
            min_idle: 1,
            checkout_timeout: Duration::from_millis(50),
            ..PoolOptions::default()
        };
        let db = Db::open(&path, OpenMode::CreateIfMissing, options).unwrap();
        let held = db.conn().unwrap();
        assert_eq!(db.pool_figures().wait_count, 0);
        assert_eq!(db.pool_figures().in_use, 1);
        assert!(db.conn().unwrap_err().is_busy());
        let figures = db.pool_figures();
        assert_eq!(figures.wait_count, 1);
        assert!(figures.wait_time >= Duration::from_millis(50));
        drop(held);
        assert_eq!(db.pool_figures().in_use, 0);
        assert_eq!(db.pool_figures().open, 1);
    }
}
