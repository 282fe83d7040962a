//! Statements a test runs on the Hub's database behind its back (rows the
//! API cannot make, checks of what is stored), on whichever store it has.
//!
//! A statement is written once, in SQLite's spelling with numbered
//! placeholders (`?1`), and its parameters are text; on PostgreSQL the
//! placeholders become `$1`. Everything runs on a thread of its own:
//! PostgreSQL's synchronous client may not run on the test's async runtime.

use hub_example::store::db::{Db, Engine};
use postgres::types::Type;

/// One stored value, whatever the column's type.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Cell {
    /// `NULL`.
    Null,
    /// An integer (or a boolean, as 0 or 1).
    Int(i64),
    /// Text.
    Text(String),
    /// Bytes (a BLOB or a BYTEA).
    Bytes(Vec<u8>),
}

impl Cell {
    /// The text; panics on any other value.
    pub fn text(&self) -> &str {
        match self {
            Cell::Text(s) => s,
            other => panic!("not text: {other:?}"),
        }
    }

    /// The integer; panics on any other value.
    pub fn int(&self) -> i64 {
        match self {
            Cell::Int(n) => *n,
            other => panic!("not an integer: {other:?}"),
        }
    }

    /// The value's bytes as stored: text as UTF-8, an integer in decimal.
    pub fn as_bytes(&self) -> Vec<u8> {
        match self {
            Cell::Null => Vec::new(),
            Cell::Int(n) => n.to_string().into_bytes(),
            Cell::Text(s) => s.clone().into_bytes(),
            Cell::Bytes(b) => b.clone(),
        }
    }
}

/// Runs `f` on a thread of its own and returns what it returns.
pub fn off_runtime<T: Send>(f: impl FnOnce() -> T + Send) -> T {
    std::thread::scope(|s| s.spawn(f).join()).unwrap_or_else(|e| std::panic::resume_unwind(e))
}

/// `sql` with SQLite's `?N` placeholders spelled `$N`, as PostgreSQL has them.
fn postgres_placeholders(sql: &str) -> String {
    let mut out = String::with_capacity(sql.len());
    let mut chars = sql.chars().peekable();
    while let Some(c) = chars.next() {
        if c == '?' && chars.peek().is_some_and(char::is_ascii_digit) {
            out.push('$');
        } else {
            out.push(c);
        }
    }
    out
}

/// Runs a statement that returns no rows; the number of rows it changed.
pub fn execute(db: &Db, sql: &str, params: &[&str]) -> u64 {
    off_runtime(|| match db.engine() {
        Engine::Sqlite => db
            .conn()
            .unwrap()
            .execute(sql, rusqlite::params_from_iter(params))
            .unwrap_or_else(|e| panic!("{sql}: {e}")) as u64,
        Engine::Postgres => {
            let params: Vec<&(dyn postgres::types::ToSql + Sync)> =
                params.iter().map(|p| p as _).collect();
            db.pg_conn()
                .unwrap()
                .execute(&postgres_placeholders(sql), &params)
                .unwrap_or_else(|e| panic!("{sql}: {e}"))
        }
    })
}

/// The rows of a query, every column as a [`Cell`].
pub fn query(db: &Db, sql: &str, params: &[&str]) -> Vec<Vec<Cell>> {
    off_runtime(|| match db.engine() {
        Engine::Sqlite => {
            let conn = db.conn().unwrap();
            let mut stmt = conn.prepare(sql).unwrap_or_else(|e| panic!("{sql}: {e}"));
            let columns = stmt.column_count();
            stmt.query_map(rusqlite::params_from_iter(params), |row| {
                (0..columns)
                    .map(|i| Ok(sqlite_cell(row.get_ref(i)?)))
                    .collect()
            })
            .and_then(|rows| rows.collect())
            .unwrap_or_else(|e| panic!("{sql}: {e}"))
        }
        Engine::Postgres => {
            let params: Vec<&(dyn postgres::types::ToSql + Sync)> =
                params.iter().map(|p| p as _).collect();
            let rows = db
                .pg_conn()
                .unwrap()
                .query(&postgres_placeholders(sql), &params)
                .unwrap_or_else(|e| panic!("{sql}: {e}"));
            rows.iter()
                .map(|row| (0..row.len()).map(|i| postgres_cell(row, i)).collect())
                .collect()
        }
    })
}

/// The one row of a query; panics when there is none or more than one.
pub fn query_row(db: &Db, sql: &str, params: &[&str]) -> Vec<Cell> {
    let mut rows = query(db, sql, params);
    assert_eq!(rows.len(), 1, "{sql}: one row expected");
    rows.pop().unwrap()
}

fn sqlite_cell(value: rusqlite::types::ValueRef<'_>) -> Cell {
    use rusqlite::types::ValueRef;
    match value {
        ValueRef::Null => Cell::Null,
        ValueRef::Integer(n) => Cell::Int(n),
        ValueRef::Real(x) => Cell::Text(x.to_string()),
        ValueRef::Text(t) => Cell::Text(String::from_utf8_lossy(t).into_owned()),
        ValueRef::Blob(b) => Cell::Bytes(b.to_vec()),
    }
}

fn postgres_cell(row: &postgres::Row, i: usize) -> Cell {
    let ty = row.columns()[i].type_();
    let cell = match *ty {
        Type::TEXT | Type::VARCHAR | Type::NAME | Type::BPCHAR => {
            row.get::<_, Option<String>>(i).map(Cell::Text)
        }
        Type::BYTEA => row.get::<_, Option<Vec<u8>>>(i).map(Cell::Bytes),
        Type::INT8 => row.get::<_, Option<i64>>(i).map(Cell::Int),
        Type::INT4 => row.get::<_, Option<i32>>(i).map(|n| Cell::Int(n.into())),
        Type::INT2 => row.get::<_, Option<i16>>(i).map(|n| Cell::Int(n.into())),
        Type::BOOL => row.get::<_, Option<bool>>(i).map(|b| Cell::Int(b.into())),
        _ => panic!(
            "column {} has a type the tests do not read: {ty}",
            row.columns()[i].name()
        ),
    };
    cell.unwrap_or(Cell::Null)
}

/// Everything the store holds, as bytes per place: the SQLite files (the
/// database and its journal), or every row of every table of the
/// PostgreSQL schema in PostgreSQL's text form.
pub fn stored_bytes(db: &Db, sqlite_dir: &std::path::Path) -> Vec<(String, Vec<u8>)> {
    match db.engine() {
        Engine::Sqlite => std::fs::read_dir(sqlite_dir)
            .unwrap()
            .map(|entry| entry.unwrap().path())
            .filter(|path| path.to_string_lossy().contains("hub.db"))
            .map(|path| (path.display().to_string(), std::fs::read(&path).unwrap()))
            .collect(),
        Engine::Postgres => {
            let tables = query(
                db,
                "SELECT table_name::text FROM information_schema.tables
                 WHERE table_schema = current_schema() AND table_type = 'BASE TABLE'",
                &[],
            );
            tables
                .iter()
                .map(|row| {
                    let table = row[0].text();
                    let rows = query(db, &format!("SELECT t::text FROM \"{table}\" t"), &[]);
                    let text: Vec<u8> = rows
                        .iter()
                        .flat_map(|r| r[0].as_bytes().into_iter().chain([b'\n']))
                        .collect();
                    (table.to_owned(), text)
                })
                .collect()
        }
    }
}
