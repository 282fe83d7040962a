//! Opening a seeded database for serving ([`Db::open_for_serving`]), shared
//! by the `serve` command and by programs that serve Hubs in-process (the
//! bench crate's demo).

use std::path::Path;

use crate::store::db::postgres::runtime::off_runtime;
use crate::store::db::postgres::{
    migrate_postgres, pending_postgres_migrations, postgres_schema_version,
};
use crate::store::db::{
    migrate, pending_migrations, postgres_url, schema_version, Db, DbError, OpenMode, PoolOptions,
    LATEST_VERSION,
};

impl Db {
    /// Opens the database for serving and brings its schema up to date (or
    /// checks it is, with `auto_migrate` off: the command line's
    /// `--no-auto-migrate`). The file must exist; an outdated schema without
    /// `auto_migrate` is [`DbError::SchemaOutdated`], and nothing is written.
    /// A `postgres://` URL in place of the path opens that PostgreSQL database
    /// (which must answer) the same way.
    pub fn open_for_serving(path: &Path, auto_migrate: bool) -> Result<Db, DbError> {
        if let Some(url) = postgres_url(path) {
            return open_postgres_for_serving(url, auto_migrate);
        }
        let db = Db::open(path, OpenMode::MustExist, PoolOptions::default())?;
        let mut conn = db.conn()?;
        if auto_migrate {
            migrate(&mut conn, crate::clock::now_ms())?;
        } else if !pending_migrations(&conn)?.is_empty() {
            return Err(DbError::SchemaOutdated {
                found: schema_version(&conn)?,
                expected: LATEST_VERSION,
            });
        }
        drop(conn);
        Ok(db)
    }
}

/// [`Db::open_for_serving`], at the path the command line and other
/// programs have named it by.
pub fn open_for_serving(path: &Path, auto_migrate: bool) -> Result<Db, DbError> {
    Db::open_for_serving(path, auto_migrate)
}

fn open_postgres_for_serving(url: &str, auto_migrate: bool) -> Result<Db, DbError> {
    let db = Db::open_postgres(url, PoolOptions::default())?;
    // Blocks on the driver's runtime: not on an async worker (programs
    // serving Hubs in-process may call this from one).
    off_runtime(|| {
        let mut conn = db.pg_conn()?;
        if auto_migrate {
            migrate_postgres(&mut conn, crate::clock::now_ms())?;
        } else if !pending_postgres_migrations(&mut conn)?.is_empty() {
            return Err(DbError::SchemaOutdated {
                found: postgres_schema_version(&mut conn)?,
                expected: LATEST_VERSION,
            });
        }
        Ok(())
    })?;
    Ok(db)
}
