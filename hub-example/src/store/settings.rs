//! Hub settings: rows of `hub_settings` (a key, a JSON value), read on
//! every use so every Hub sharing a database sees the last write. A value
//! larger than any the API stores (`MAX_VALUE_BYTES`) is never read
//! whole: only its size comes back.

use super::either::Store;
use super::executor::{Executor, Param, SqlRow};
use crate::settings::hub::{Stored, MAX_VALUE_BYTES};
use crate::store::db::{Db, DbError};

/// A hub setting's stored JSON value, or only its size when oversized.
pub(crate) fn hub_setting(db: &Db, key: &str) -> Result<Option<Stored>, DbError> {
    hub_setting_on(&Store::open(db), key)
}

pub(super) fn hub_setting_on<E: Executor>(
    executor: &E,
    key: &str,
) -> Result<Option<Stored>, DbError> {
    let sql = executor.statements().hub_setting;
    let most = i64::try_from(MAX_VALUE_BYTES).unwrap_or(i64::MAX);
    executor.query_opt(sql, &[Param::Text(key), Param::Int(most)], |r| {
        Ok(match r.opt_text(0)? {
            Some(text) => Stored::Text(text.to_owned()),
            None => Stored::Oversized(u64::try_from(r.int(1)?).unwrap_or_default()),
        })
    })
}

/// The key of every stored hub setting.
pub(crate) fn hub_setting_keys(db: &Db) -> Result<Vec<String>, DbError> {
    let store = Store::open(db);
    store.query(store.statements().hub_setting_keys, &[], |r| {
        Ok(r.text(0)?.to_owned())
    })
}

/// Stores hub settings (key, JSON value) in one transaction.
pub(crate) fn put_hub_settings(
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
