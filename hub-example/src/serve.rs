//! Opening a seeded database for serving, shared by the `serve` command and
//! by programs that serve Hubs in-process (the bench crate's demo).

use std::path::Path;

use crate::db::{
    migrate, pending_migrations, schema_version, Db, DbError, OpenMode, PoolOptions, LATEST_VERSION,
};

/// Opens the database for serving and brings its schema up to date (or
/// checks it is, with `auto_migrate` off: the command line's
/// `--no-auto-migrate`). The file must exist; an outdated schema without
/// `auto_migrate` is [`DbError::SchemaOutdated`], and nothing is written.
pub fn open_for_serving(path: &Path, auto_migrate: bool) -> Result<Db, DbError> {
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
