//! The audit table's statements, as each engine writes them, and what an
//! engine brings to run them: a read whose parameters are all integers,
//! and the columns of a row. How the reads are strung together is the same
//! on both.

use crate::store::db::DbError;

/// The audit statements of one engine, clause for clause the same on both
/// (only the placeholders differ). Every parameter is an integer.
#[derive(Debug)]
pub(super) struct Statements {
    /// One page of rows, newest first: the window (1, 2), after the row
    /// (3 = its time, 4 = its id), at most 5 rows.
    pub page: &'static str,
    /// The rows of the window (1, 2).
    pub count: &'static str,
    /// Rows per bucket of width 3 in the window (1, 2), newest bucket
    /// first.
    pub histogram: &'static str,
    /// The id of the window's (1, 2) oldest row.
    pub(crate) first_id: &'static str,
    /// The id of the window's (1, 2) newest row.
    pub(crate) last_id: &'static str,
    /// Deletes at most 2 of the oldest rows before 1.
    pub prune: &'static str,
}

/// The columns of one row read.
pub(super) trait Columns {
    /// An integer column.
    fn int(&self, index: usize) -> Result<i64, DbError>;
    /// An integer column that may be NULL.
    fn optional_int(&self, index: usize) -> Result<Option<i64>, DbError>;
    /// A text column.
    fn text(&self, index: usize) -> Result<String, DbError>;
    /// A text column that may be NULL.
    fn optional_text(&self, index: usize) -> Result<Option<String>, DbError>;
}

/// Implements [`Columns`] for a driver's row type through its typed getter
/// (`get` for rusqlite, `try_get` for tokio-postgres): the drivers differ
/// only in its name.
macro_rules! columns_through {
    ($row:ty, $get:ident) => {
        impl $crate::store::audit::statements::Columns for $row {
            columns_through!(@getters $get,
                int: i64,
                optional_int: Option<i64>,
                text: String,
                optional_text: Option<String>,
            );
        }
    };
    (@getters $get:ident, $($method:ident: $value:ty,)+) => {
        $(
            fn $method(&self, index: usize) -> Result<$value, $crate::store::db::DbError> {
                Ok(self.$get(index)?)
            }
        )+
    };
}
pub(super) use columns_through;

/// What a read does with each row.
pub(super) type EachRow<'a> = &'a mut dyn FnMut(&dyn Columns) -> Result<(), DbError>;

/// A read-only snapshot of the database: every statement run in it sees the
/// same rows, while the writer keeps committing.
pub(super) trait Snapshot {
    /// Runs `sql` with `params` and hands `each` the rows it returns.
    fn each_row(&mut self, sql: &str, params: &[i64], each: EachRow<'_>) -> Result<(), DbError>;
}
