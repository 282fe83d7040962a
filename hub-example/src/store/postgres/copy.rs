//! Copying a seeded SQLite database into an empty PostgreSQL one: how
//! `seed --db postgres://...` writes exactly the rows the SQLite seeder
//! draws. Values are converted by the type of the PostgreSQL column they go
//! to (an SQLite integer becomes a `BIGINT`, an `INTEGER` or a `BOOLEAN`).

use rusqlite::types::Value;
use tokio_postgres::types::{ToSql, Type};

use super::migrations::migrate;
use super::runtime::{driver_runtime, off_runtime};
use super::{PgManager, PgTransaction};
use crate::store::db::{DbError, PoolOptions};

/// The tables the seeder fills, parents before children.
const SEEDED_TABLES: &[&str] = &[
    "users",
    "projects",
    "project_memberships",
    "user_access_tokens",
    "groups",
    "group_parents",
    "group_members",
    "role_definitions",
    "role_bindings",
    "access_constraints",
    "delegation_edges",
    "hub_settings",
    "agents",
];

/// One table's rows, read out of SQLite.
struct TableRows {
    table: &'static str,
    columns: Vec<String>,
    rows: Vec<Vec<Value>>,
}

/// Whether the PostgreSQL database at `url` already holds a table in its
/// current schema (a database to seed must hold none).
pub(crate) fn holds_tables(url: &str) -> Result<bool, DbError> {
    let manager = PgManager::new(url, PoolOptions::default(), driver_runtime())?;
    off_runtime(|| {
        let mut conn = manager.open_client()?;
        let row = conn.query_one(
            "SELECT COUNT(*) FROM information_schema.tables WHERE table_schema = current_schema()",
            &[],
        )?;
        Ok(row.try_get::<_, i64>(0)? > 0)
    })
}

/// Migrates the empty PostgreSQL database at `url` and copies every seeded
/// row of `from` into it, in one transaction (rows the migrations already
/// wrote, the built-in roles and settings, are kept as they are).
pub(crate) fn copy_seeded(
    from: &rusqlite::Connection,
    url: &str,
    now_ms: i64,
) -> Result<(), DbError> {
    let tables = SEEDED_TABLES
        .iter()
        .map(|table| read_table(from, table))
        .collect::<Result<Vec<_>, _>>()?;
    let manager = PgManager::new(url, PoolOptions::default(), driver_runtime())?;
    off_runtime(|| {
        let mut conn = manager.open_client()?;
        migrate(&mut conn, now_ms)?;
        let mut tx = conn.transaction()?;
        for table in &tables {
            write_table(&mut tx, table)?;
        }
        tx.commit()?;
        Ok(())
    })
}

fn read_table(from: &rusqlite::Connection, table: &'static str) -> Result<TableRows, DbError> {
    let mut stmt = from.prepare(&format!("SELECT * FROM {table}"))?;
    let columns: Vec<String> = stmt.column_names().iter().map(|c| c.to_string()).collect();
    let n = columns.len();
    let rows = stmt
        .query_map([], |r| (0..n).map(|i| r.get::<_, Value>(i)).collect())?
        .collect::<Result<Vec<Vec<Value>>, _>>()?;
    Ok(TableRows {
        table,
        columns,
        rows,
    })
}

fn write_table(tx: &mut PgTransaction<'_>, table: &TableRows) -> Result<(), DbError> {
    let placeholders: Vec<String> = (1..=table.columns.len()).map(|i| format!("${i}")).collect();
    let insert = format!(
        "INSERT INTO {} ({}) VALUES ({}) ON CONFLICT DO NOTHING",
        table.table,
        table.columns.join(", "),
        placeholders.join(", ")
    );
    // The column types the values are converted to.
    let types = tx.prepare_cached(&insert)?.params().to_vec();
    for row in &table.rows {
        let values = row
            .iter()
            .zip(&types)
            .map(|(value, ty)| converted(value, ty))
            .collect::<Result<Vec<_>, _>>()?;
        let refs: Vec<&(dyn ToSql + Sync)> = values.iter().map(|v| v.as_ref()).collect();
        tx.execute(&insert, &refs)?;
    }
    Ok(())
}

/// `value` as the PostgreSQL column of type `ty` takes it.
fn converted(value: &Value, ty: &Type) -> Result<Box<dyn ToSql + Sync>, DbError> {
    let mismatch = || DbError::Corrupt(format!("cannot copy {value:?} into a {ty} column"));
    Ok(match value {
        Value::Null if *ty == Type::INT8 => Box::new(None::<i64>),
        Value::Null if *ty == Type::INT4 => Box::new(None::<i32>),
        Value::Null if *ty == Type::BOOL => Box::new(None::<bool>),
        Value::Null if *ty == Type::BYTEA => Box::new(None::<Vec<u8>>),
        Value::Null => Box::new(None::<String>),
        Value::Integer(n) if *ty == Type::INT8 => Box::new(*n),
        Value::Integer(n) if *ty == Type::INT4 => {
            Box::new(i32::try_from(*n).map_err(|_| mismatch())?)
        }
        Value::Integer(n) if *ty == Type::BOOL => Box::new(*n != 0),
        Value::Text(s) if *ty == Type::TEXT || *ty == Type::VARCHAR => Box::new(s.clone()),
        Value::Blob(b) if *ty == Type::BYTEA => Box::new(b.clone()),
        _ => return Err(mismatch()),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn values_follow_the_column_type() {
        assert!(converted(&Value::Integer(1), &Type::BOOL).is_ok());
        assert!(converted(&Value::Integer(1 << 40), &Type::INT8).is_ok());
        let err = converted(&Value::Integer(1 << 40), &Type::INT4)
            .err()
            .unwrap();
        assert!(err.to_string().contains("int4"), "{err}");
        assert!(converted(&Value::Text("x".into()), &Type::INT8).is_err());
        assert!(converted(&Value::Null, &Type::BYTEA).is_ok());
    }
}
