//! SQLite (embedded, the default): the store's binding and statements,
//! the schema's migrations (the versions' reference text, which
//! PostgreSQL's port follows) and the seeder's writes.

pub(crate) mod migrations;
pub(crate) mod seed;
mod statements;
mod store;

pub(crate) use store::holds_tables;
pub use store::SqliteStore;
