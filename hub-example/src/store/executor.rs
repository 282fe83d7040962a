//! The one interface every facade runs its statements through: [`Param`]s
//! in, rows read through [`SqlRow`], on an [`Executor`] of either engine
//! (`sqlite/`, `postgres/`, or `either::Store`, either of them).

use super::statements::Statements;
use crate::model::{Id, PrincipalRef};
use crate::store::db::DbError;

/// A statement's parameter, bound as each engine binds it.
#[derive(Debug, Clone, Copy)]
pub(crate) enum Param<'a> {
    /// Text.
    Text(&'a str),
    /// Text or `NULL`.
    OptText(Option<&'a str>),
    /// A 64-bit integer.
    Int(i64),
    /// A blob (`BYTEA` on PostgreSQL).
    Bytes(&'a [u8]),
    /// An id list: one JSON array on SQLite (read with `json_each`), one
    /// text array on PostgreSQL (`= ANY`), so a statement's text never
    /// depends on how many ids there are.
    Ids(&'a [Id]),
    /// Principals: one JSON array of `[kind, id]` pairs on SQLite, two
    /// text arrays (the kinds, the ids) on PostgreSQL.
    Principals(&'a [PrincipalRef]),
}

/// A row's columns, by index.
pub(crate) trait SqlRow {
    /// A text column.
    fn text(&self, idx: usize) -> Result<&str, DbError>;
    /// A text column that may be `NULL`.
    fn opt_text(&self, idx: usize) -> Result<Option<&str>, DbError>;
    /// An integer column.
    fn int(&self, idx: usize) -> Result<i64, DbError>;
    /// An integer column that may be `NULL`.
    fn opt_int(&self, idx: usize) -> Result<Option<i64>, DbError>;
    /// A boolean column (an integer on SQLite).
    fn flag(&self, idx: usize) -> Result<bool, DbError>;
    /// A blob column.
    fn bytes(&self, idx: usize) -> Result<&[u8], DbError>;
}

/// Implements [`SqlRow`] for `$row` with one expression per kind of
/// column, `$self` the row and `$idx` the column's index in each.
macro_rules! impl_sql_row {
    ($row:ty, |$self:ident, $idx:ident| {
        text: $text:expr,
        opt_text: $opt_text:expr,
        int: $int:expr,
        opt_int: $opt_int:expr,
        flag: $flag:expr,
        bytes: $bytes:expr $(,)?
    }) => {
        impl $crate::store::executor::SqlRow for $row {
            fn text(&$self, $idx: usize) -> Result<&str, DbError> {
                $text
            }
            fn opt_text(&$self, $idx: usize) -> Result<Option<&str>, DbError> {
                $opt_text
            }
            fn int(&$self, $idx: usize) -> Result<i64, DbError> {
                $int
            }
            fn opt_int(&$self, $idx: usize) -> Result<Option<i64>, DbError> {
                $opt_int
            }
            fn flag(&$self, $idx: usize) -> Result<bool, DbError> {
                $flag
            }
            fn bytes(&$self, $idx: usize) -> Result<&[u8], DbError> {
                $bytes
            }
        }
    };
}
pub(crate) use impl_sql_row;

/// A database the facades' statements run on.
pub(crate) trait Executor: Send + Sync + 'static {
    /// The row its queries yield.
    type Row<'r>: SqlRow;
    /// Its statements.
    fn statements(&self) -> &'static Statements;
    /// Every row of `sql`, each read with `read`.
    fn query<T>(
        &self,
        sql: &str,
        params: &[Param<'_>],
        read: impl FnMut(&Self::Row<'_>) -> Result<T, DbError>,
    ) -> Result<Vec<T>, DbError>;
    /// The first row of `sql`, if any, read with `read` (the statements
    /// asked for one row select by a unique key).
    fn query_opt<T>(
        &self,
        sql: &str,
        params: &[Param<'_>],
        read: impl FnOnce(&Self::Row<'_>) -> Result<T, DbError>,
    ) -> Result<Option<T>, DbError> {
        let mut read = Some(read);
        let rows = self.query(sql, params, |row| {
            read.take().map(|read| read(row)).transpose()
        })?;
        Ok(rows.into_iter().flatten().next())
    }
    /// Runs `sql`; the number of rows it changed.
    fn execute(&self, sql: &str, params: &[Param<'_>]) -> Result<u64, DbError>;
    /// Runs `sql` once per parameter list, all in one transaction.
    fn execute_each(&self, sql: &str, each: &[Vec<Param<'_>>]) -> Result<(), DbError>;
    /// Runs each statement with its parameters, in order, all in one
    /// transaction; the rows each changed. An empty statement is a step
    /// the engine has nothing to run for (0 rows).
    fn execute_steps(&self, steps: &[(&str, &[Param<'_>])]) -> Result<Vec<u64>, DbError>;
}
