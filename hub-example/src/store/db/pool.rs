//! A pool of connections (r2d2 for SQLite, bb8 for PostgreSQL) that
//! reports the figures of the `db_*` keys: checkouts that found no idle
//! connection, the time spent in them, and the connections in use and open.
//! SQLite's r2d2 pool is wrapped to count its waits; bb8 counts them itself
//! (its statistics: waited and timed-out checkouts, their total wait), so
//! the figures mean the same whichever database the Hub serves.

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering::Relaxed};
use std::sync::Arc;
use std::time::{Duration, Instant};

use crossbeam_utils::CachePadded;
use perf_trace_core::record::{PoolFigures, PoolStats};
use r2d2::PooledConnection;
use r2d2_sqlite::SqliteConnectionManager;
use rusqlite::{Connection, OpenFlags};
use tokio::runtime::Handle;

use super::DbError;
use crate::store::postgres::client::PgClient;
use crate::store::postgres::manager::PgManager;
use crate::store::postgres::runtime::{driver_runtime, off_runtime};

/// A pooled SQLite connection.
pub(crate) type Conn = PooledConnection<SqliteConnectionManager>;

/// A pooled PostgreSQL connection (with its prepared statements), back in
/// the pool when dropped.
pub struct PgConn {
    conn: Option<bb8::PooledConnection<'static, PgManager>>,
    runtime: Handle,
}

impl std::ops::Deref for PgConn {
    type Target = PgClient;
    fn deref(&self) -> &PgClient {
        self.conn.as_ref().expect("taken only when dropped")
    }
}

impl std::ops::DerefMut for PgConn {
    fn deref_mut(&mut self) -> &mut PgClient {
        self.conn.as_mut().expect("taken only when dropped")
    }
}

impl std::fmt::Debug for PgConn {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_tuple("PgConn").field(&**self).finish()
    }
}

impl Drop for PgConn {
    fn drop(&mut self) {
        // Giving a broken connection back makes the pool start a new one,
        // a task on the driver's runtime: this thread may belong to none.
        let _runtime = self.runtime.enter();
        drop(self.conn.take());
    }
}

/// Which database a [`Db`] talks to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Engine {
    /// An SQLite file, embedded.
    Sqlite,
    /// A PostgreSQL server.
    Postgres,
}

#[derive(Clone)]
enum Pool {
    /// The pool, and the figures its checkouts and events counted.
    Sqlite(r2d2::Pool<SqliteConnectionManager>, Arc<SqliteFigures>),
    /// The pool, and a copy of its manager (bb8 does not lend its own).
    Postgres(bb8::Pool<PgManager>, Arc<PgManager>),
}

/// Prepared statements kept per SQLite connection.
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

/// The SQLite pool's figures, shared by every clone of a [`Db`] and kept in
/// atomics: a traced request reads them twice, and r2d2's `state()` would
/// take the lock every checkout and checkin takes, from the async worker
/// threads, against as many blocking threads as the runtime runs.
#[derive(Debug, Default)]
struct SqliteFigures {
    /// Checked out by [`Db::conn`]; given back through r2d2's checkin event.
    /// Written by every checkout and checkin, from every thread: on a cache
    /// line of its own (which also keeps the `Arc`'s counts off the lines
    /// below), so that those writes do not evict the figures below from the
    /// cache of every thread that reads them.
    in_use: CachePadded<AtomicU64>,
    /// Checkouts that found no idle connection, and their total time:
    /// written only when a checkout waits, read as every traced request
    /// starts ([`Db::pool_wait_figures`]).
    waits: AtomicU64,
    wait_nanos: AtomicU64,
    /// Opened minus closed, from r2d2's acquire and release events.
    open: AtomicU64,
}

/// Keeps [`SqliteFigures`]' gauges from the pool's own events.
#[derive(Debug)]
struct SqliteEvents(Arc<SqliteFigures>);

impl r2d2::HandleEvent for SqliteEvents {
    fn handle_acquire(&self, _: r2d2::event::AcquireEvent) {
        self.0.open.fetch_add(1, Relaxed);
    }

    fn handle_release(&self, _: r2d2::event::ReleaseEvent) {
        self.0.open.fetch_sub(1, Relaxed);
    }

    fn handle_checkin(&self, _: r2d2::event::CheckinEvent) {
        self.0.in_use.fetch_sub(1, Relaxed);
    }
}

/// The database: a counted pool of connections to one SQLite file in WAL
/// mode ([`Db::open`]) or to a PostgreSQL database ([`Db::open_postgres`]).
#[derive(Clone)]
pub struct Db {
    pool: Pool,
    path: Arc<PathBuf>,
}

impl std::fmt::Debug for Db {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Db")
            .field("engine", &self.engine())
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
        let figures = Arc::new(SqliteFigures::default());
        let pool = r2d2::Pool::builder()
            .event_handler(Box::new(SqliteEvents(Arc::clone(&figures))))
            .max_size(options.max_size)
            .min_idle(Some(options.min_idle.min(options.max_size)))
            .connection_timeout(options.checkout_timeout)
            .test_on_check_out(false)
            .build(manager)
            .map_err(|e| DbError::Corrupt(format!("cannot build the connection pool: {e}")))?;
        Ok(Db {
            pool: Pool::Sqlite(pool, figures),
            path: Arc::new(path.to_path_buf()),
        })
    }

    /// Connects to the PostgreSQL database at `url` (`postgres://...`) and
    /// builds the pool. Fails at once when the server does not answer or
    /// refuses the connection.
    ///
    /// The pool's connections run on the current tokio runtime when it is
    /// multi-threaded (the Hub's: open it inside `Runtime::enter`), else on
    /// a small runtime of the process's own; callable from anywhere,
    /// async tasks included.
    pub fn open_postgres(url: &str, options: PoolOptions) -> Result<Db, DbError> {
        let runtime = driver_runtime();
        let manager = PgManager::new(url, options, runtime.clone())?;
        let spare = Arc::new(manager.clone());
        let pool = off_runtime(|| {
            runtime.block_on(async {
                // One plain connection first: it fails fast where the pool
                // would retry.
                bb8::ManageConnection::connect(&manager).await?;
                bb8::Pool::builder()
                    .max_size(options.max_size)
                    .min_idle(Some(options.min_idle.min(options.max_size)))
                    .connection_timeout(options.checkout_timeout)
                    .test_on_check_out(false)
                    .build(manager)
                    .await
            })
        })?;
        Ok(Db {
            pool: Pool::Postgres(pool, spare),
            path: Arc::new(PathBuf::from(crate::store::postgres::redacted(url))),
        })
    }

    /// Which database this is.
    pub fn engine(&self) -> Engine {
        match self.pool {
            Pool::Sqlite(..) => Engine::Sqlite,
            Pool::Postgres(..) => Engine::Postgres,
        }
    }

    /// The database file (for PostgreSQL, the URL without its password).
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Checks out an SQLite connection ([`DbError::WrongEngine`] on
    /// PostgreSQL). A checkout that finds no idle connection counts as a
    /// wait, and its duration as wait time.
    pub fn conn(&self) -> Result<Conn, DbError> {
        let Pool::Sqlite(pool, figures) = &self.pool else {
            return Err(DbError::WrongEngine(Engine::Postgres));
        };
        let conn = match pool.try_get() {
            Some(conn) => conn,
            None => {
                let start = Instant::now();
                let result = pool.get();
                figures.waits.fetch_add(1, Relaxed);
                figures
                    .wait_nanos
                    .fetch_add(start.elapsed().as_nanos() as u64, Relaxed);
                result.map_err(|_| DbError::PoolTimeout)?
            }
        };
        // Before the connection can be given back (and counted out).
        figures.in_use.fetch_add(1, Relaxed);
        Ok(conn)
    }

    /// Checks out a PostgreSQL connection ([`DbError::WrongEngine`] on
    /// SQLite), counted by the pool as [`Db::conn`] counts. It blocks on the
    /// driver's runtime, as every call of the connection does: call it from
    /// a blocking-pool thread (`spawn_blocking`) or a thread of no runtime,
    /// never from an async task (it would panic).
    pub fn pg_conn(&self) -> Result<PgConn, DbError> {
        let Pool::Postgres(pool, manager) = &self.pool else {
            return Err(DbError::WrongEngine(Engine::Sqlite));
        };
        let runtime = manager.runtime();
        let conn = runtime.block_on(pool.get_owned()).map_err(|e| match e {
            bb8::RunError::User(e) => e,
            bb8::RunError::TimedOut => DbError::PoolTimeout,
        })?;
        Ok(PgConn {
            conn: Some(conn),
            runtime: runtime.clone(),
        })
    }

    /// A copy of the PostgreSQL pool's connection manager, to open a
    /// connection outside the pool (`None` on SQLite).
    pub(crate) fn pg_manager(&self) -> Option<PgManager> {
        match &self.pool {
            Pool::Postgres(_, manager) => Some(PgManager::clone(manager)),
            Pool::Sqlite(..) => None,
        }
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

impl Db {
    /// The pool's wait figures alone (`in_use` and `open` zero): what a
    /// request's wait deltas start from. On SQLite this reads no figure
    /// that every checkout writes.
    pub(crate) fn pool_wait_figures(&self) -> PoolFigures {
        match &self.pool {
            Pool::Sqlite(_, figures) => PoolFigures {
                wait_count: figures.waits.load(Relaxed),
                wait_time: Duration::from_nanos(figures.wait_nanos.load(Relaxed)),
                in_use: 0,
                open: 0,
            },
            Pool::Postgres(..) => PoolFigures {
                in_use: 0,
                open: 0,
                ..self.pool_figures()
            },
        }
    }
}

impl PoolStats for Db {
    fn pool_figures(&self) -> PoolFigures {
        match &self.pool {
            Pool::Sqlite(_, figures) => PoolFigures {
                wait_count: figures.waits.load(Relaxed),
                wait_time: Duration::from_nanos(figures.wait_nanos.load(Relaxed)),
                in_use: figures.in_use.load(Relaxed),
                open: figures.open.load(Relaxed),
            },
            Pool::Postgres(pool, _) => {
                let state = pool.state();
                let stats = &state.statistics;
                PoolFigures {
                    // A checkout that timed out waited too, as on SQLite.
                    wait_count: stats.get_waited + stats.get_timed_out,
                    wait_time: stats.get_wait_time,
                    in_use: u64::from(state.connections - state.idle_connections),
                    open: u64::from(state.connections),
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::db::temp_path;

    #[test]
    fn a_missing_file_is_refused_without_creating_it() {
        let (_dir, path) = temp_path("absent.db");
        let err = Db::open(&path, OpenMode::MustExist, PoolOptions::default()).unwrap_err();
        assert!(matches!(err, DbError::Missing(_)), "{err}");
        assert!(!path.exists());
    }

    #[test]
    fn a_read_only_file_is_refused() {
        let (_dir, path) = temp_path("hub.db");
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
        let (_dir, path) = temp_path("hub.db");
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
        let (_dir, path) = temp_path("hub.db");
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
        // A request's baseline: the same waits, and no gauge (the line
        // reads those at the request's end).
        let waits = db.pool_wait_figures();
        assert_eq!(
            (waits.wait_count, waits.wait_time, waits.in_use, waits.open),
            (figures.wait_count, figures.wait_time, 0, 0)
        );
        drop(held);
        assert_eq!(db.pool_figures().in_use, 0);
        assert_eq!(db.pool_figures().open, 1);
    }

    #[test]
    fn postgres_waits_come_from_the_pool_statistics_with_the_same_meaning() {
        let Some(server) = crate::store::postgres::test_server() else {
            return;
        };
        let options = PoolOptions {
            max_size: 1,
            min_idle: 1,
            checkout_timeout: Duration::from_secs(10),
            ..PoolOptions::default()
        };
        let db = Db::open_postgres(&server, options).unwrap();
        let Pool::Postgres(pool, _) = &db.pool else {
            unreachable!("a PostgreSQL pool")
        };
        let held = db.pg_conn().unwrap();
        let figures = db.pool_figures();
        assert_eq!(
            (figures.wait_count, figures.in_use, figures.open),
            (0, 1, 1)
        );
        assert_eq!(figures.wait_time, Duration::ZERO);

        // A second checkout waits until the first connection is given back.
        let waiter = std::thread::spawn({
            let db = db.clone();
            move || {
                let mut conn = db.pg_conn().unwrap();
                conn.query_one("SELECT 1", &[]).unwrap().get::<_, i32>(0)
            }
        });
        while pool.state().statistics.pending_gets() == 0 {
            std::thread::sleep(Duration::from_millis(1));
        }
        std::thread::sleep(Duration::from_millis(5));
        drop(held);
        assert_eq!(waiter.join().unwrap(), 1);
        let figures = db.pool_figures();
        assert_eq!(
            (figures.wait_count, figures.in_use, figures.open),
            (1, 0, 1)
        );
        assert!(figures.wait_time >= Duration::from_millis(5), "{figures:?}");
        let waits = db.pool_wait_figures();
        assert_eq!(
            (waits.wait_count, waits.wait_time, waits.in_use, waits.open),
            (1, figures.wait_time, 0, 0)
        );

        // A checkout that times out waited too, and is a 503.
        let short = Db::open_postgres(
            &server,
            PoolOptions {
                checkout_timeout: Duration::from_millis(50),
                ..options
            },
        )
        .unwrap();
        let held = short.pg_conn().unwrap();
        let err = short.pg_conn().unwrap_err();
        assert!(
            matches!(err, DbError::PoolTimeout) && err.is_busy(),
            "{err}"
        );
        let figures = short.pool_figures();
        assert_eq!(
            (figures.wait_count, figures.in_use, figures.open),
            (1, 1, 1)
        );
        assert!(
            figures.wait_time >= Duration::from_millis(50),
            "{figures:?}"
        );
        drop(held);
    }
}
