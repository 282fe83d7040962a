//! SQLite (embedded, the default): the store's binding and statements,
//! the schema's migrations (the versions' reference text, which
//! PostgreSQL's port follows) and the seeder's writes.
//!
//! The store: statements prepared once per connection (cached),
//! parameters bound as SQLite takes them (an id list as one JSON array, so
//! a statement's text never depends on how many ids there are).

pub(crate) mod migrations;
pub(crate) mod seed;
mod statements;

use rusqlite::types::{ToSqlOutput, Value, ValueRef};
use rusqlite::{params_from_iter, OptionalExtension, Row};

use self::statements::STATEMENTS;
use crate::store::db::{Db, DbError};
use crate::store::executor::{impl_sql_row, Executor, Param};
use crate::store::statements::Statements;

/// The Hub's store on SQLite.
#[derive(Debug, Clone)]
pub struct SqliteStore {
    db: Db,
}

impl SqliteStore {
    /// A store reading through `db`'s pool.
    pub fn new(db: Db) -> Self {
        SqliteStore { db }
    }

    /// The database the store reads.
    pub fn db(&self) -> &Db {
        &self.db
    }
}

impl rusqlite::ToSql for Param<'_> {
    fn to_sql(&self) -> rusqlite::Result<ToSqlOutput<'_>> {
        Ok(match *self {
            Param::Text(text) | Param::OptText(Some(text)) => {
                ToSqlOutput::Borrowed(ValueRef::Text(text.as_bytes()))
            }
            Param::OptText(None) => ToSqlOutput::Owned(Value::Null),
            Param::Int(n) => ToSqlOutput::Owned(Value::Integer(n)),
            Param::Bytes(bytes) => ToSqlOutput::Borrowed(ValueRef::Blob(bytes)),
            Param::Ids(ids) => ToSqlOutput::Owned(Value::Text(
                serde_json::to_string(ids).expect("ids serialize"),
            )),
            Param::Principals(principals) => {
                let pairs: Vec<[&str; 2]> = principals
                    .iter()
                    .map(|p| [p.kind.as_str(), &*p.id])
                    .collect();
                ToSqlOutput::Owned(Value::Text(
                    serde_json::to_string(&pairs).expect("pairs serialize"),
                ))
            }
        })
    }
}

impl_sql_row!(Row<'_>, |self, idx| {
    text: Ok(self.get_ref(idx)?.as_str().map_err(rusqlite::Error::from)?),
    opt_text: Ok(self
        .get_ref(idx)?
        .as_str_or_null()
        .map_err(rusqlite::Error::from)?),
    int: Ok(self.get(idx)?),
    opt_int: Ok(self.get(idx)?),
    flag: Ok(self.get(idx)?),
    bytes: Ok(self.get_ref(idx)?.as_blob().map_err(rusqlite::Error::from)?),
});

impl Executor for SqliteStore {
    type Row<'r> = Row<'r>;

    fn statements(&self) -> &'static Statements {
        &STATEMENTS
    }

    fn query<T>(
        &self,
        sql: &str,
        params: &[Param<'_>],
        mut read: impl FnMut(&Row<'_>) -> Result<T, DbError>,
    ) -> Result<Vec<T>, DbError> {
        let conn = self.db.conn()?;
        let mut stmt = conn.prepare_cached(sql)?;
        let mut rows = stmt.query(params_from_iter(params))?;
        let mut read_rows = Vec::new();
        while let Some(row) = rows.next()? {
            read_rows.push(read(row)?);
        }
        Ok(read_rows)
    }

    fn execute(&self, sql: &str, params: &[Param<'_>]) -> Result<u64, DbError> {
        let conn = self.db.conn()?;
        let changed = conn
            .prepare_cached(sql)?
            .execute(params_from_iter(params))?;
        Ok(changed as u64)
    }

    fn execute_each(&self, sql: &str, each: &[Vec<Param<'_>>]) -> Result<(), DbError> {
        let mut conn = self.db.conn()?;
        let tx = conn.transaction()?;
        {
            let mut stmt = tx.prepare_cached(sql)?;
            for params in each {
                stmt.execute(params_from_iter(params))?;
            }
        }
        tx.commit()?;
        Ok(())
    }

    fn execute_steps(&self, steps: &[(&str, &[Param<'_>])]) -> Result<Vec<u64>, DbError> {
        let mut conn = self.db.conn()?;
        let tx = conn.transaction()?;
        let mut changed = Vec::with_capacity(steps.len());
        for (sql, params) in steps {
            let n = match sql.is_empty() {
                true => 0,
                false => tx.prepare_cached(sql)?.execute(params_from_iter(*params))?,
            };
            changed.push(n as u64);
        }
        tx.commit()?;
        Ok(changed)
    }
}

/// Whether the SQLite database behind `conn` holds any table.
pub(crate) fn holds_tables(conn: &rusqlite::Connection) -> Result<bool, DbError> {
    let tables: i64 = conn
        .query_row("SELECT COUNT(*) FROM sqlite_master", [], |r| r.get(0))
        .optional()?
        .unwrap_or(0);
    Ok(tables > 0)
}
