//! Hub settings: rows of `hub_settings` (a key, a JSON value), read on
//! every use so every Hub sharing a database sees the last write.

use super::dialect::Store;
use super::engine::{Engine, Param, SqlRow};
use crate::store::db::{Db, DbError};

/// A hub setting's stored JSON value.
pub fn hub_setting(db: &Db, key: &str) -> Result<Option<String>, DbError> {
    hub_setting_on(&Store::open(db), key)
}

pub(super) fn hub_setting_on<E: Engine>(engine: &E, key: &str) -> Result<Option<String>, DbError> {
    let sql = engine.statements().hub_setting;
    engine.query_opt(sql, &[Param::Text(key)], |r| Ok(r.text(0)?.to_owned()))
}

/// Stores hub settings (key, JSON value) in one transaction.
pub fn put_hub_settings(
    db: &Db,
    settings: &[(String, String)],
    now_ms: i64,
) -> Result<(), DbError> {
    let store = Store::open(db);
    let each: Vec<Vec<Param<'_>>> = settings
        .iter()
        .map(|(key, value)| vec![Param::Text(key), Param::Text(value), Param::Int(now_ms)])
        .collect();
    store.execute_each(store.statements().put_hub_setting, &each)
}
