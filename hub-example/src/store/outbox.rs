//! The events' outbox between replicas sharing one PostgreSQL database: a
//! channel named after the schema, written with `NOTIFY` through the pool
//! and read with `LISTEN` on a connection of its own (outside the pool:
//! pooled connections drop their notifications). What travels on it, and
//! when, is `events::relay`'s.

use std::future::poll_fn;

use tokio::runtime::Handle;
use tokio_postgres::AsyncMessage;

use crate::store::db::{Db, DbError, Engine};
use crate::store::postgres::runtime::off_runtime;
use crate::store::postgres::PgManager;

/// The channel of one schema.
#[derive(Debug, Clone)]
pub(crate) struct Outbox {
    db: Db,
    manager: PgManager,
    channel: String,
}

impl Outbox {
    /// The channel of `db`'s schema when other Hubs may share the database
    /// (PostgreSQL); `None` on SQLite, which has no replicas.
    pub fn of(db: &Db) -> Option<Result<Outbox, DbError>> {
        (db.engine() == Engine::Postgres).then(|| Outbox::open(db.clone()))
    }

    /// The channel of `db`'s schema; `db` must be a PostgreSQL database.
    pub fn open(db: Db) -> Result<Outbox, DbError> {
        let manager = db
            .pg_manager()
            .ok_or(DbError::WrongEngine(Engine::Sqlite))?;
        let schema = off_runtime(|| -> Result<String, DbError> {
            Ok(db
                .pg_conn()?
                .query_one("SELECT current_schema()", &[])?
                .try_get(0)?)
        })?;
        Ok(Outbox {
            db,
            manager,
            channel: format!("hub_events:{schema}"),
        })
    }

    /// The driver's runtime, where listening runs.
    pub(crate) fn runtime(&self) -> Handle {
        self.manager.runtime().clone()
    }

    /// Sends `payload`, then what `then` gives (asked only once a
    /// connection is had), on one pooled connection. Nothing is retried: a
    /// replica that cannot be told now misses the message.
    pub fn send(&self, payload: &str, then: impl FnOnce() -> Option<String>) {
        let Ok(mut conn) = self.db.pg_conn() else {
            return;
        };
        const NOTIFY: &str = "SELECT pg_notify($1, $2)";
        let _ = conn.execute(NOTIFY, &[&self.channel, &payload]);
        if let Some(more) = then() {
            let _ = conn.execute(NOTIFY, &[&self.channel, &more]);
        }
    }

    /// One listening connection's life: connect, `LISTEN`, hand each
    /// notification's payload to `deliver` until the connection ends.
    /// `listening` is called once the `LISTEN` has gone through, and what
    /// it gives is held until then. Returns whether it got as far as
    /// listening.
    pub(crate) async fn listen_until_lost<G>(
        &self,
        listening: impl FnOnce() -> G,
        mut deliver: impl FnMut(&str),
    ) -> bool {
        let Ok((client, mut connection)) = self.manager.connect_polled().await else {
            return false;
        };
        let listen = format!("LISTEN {}", quoted(&self.channel));
        let mut listen_done = std::pin::pin!(client.batch_execute(&listen));
        let mut listening = Some(listening);
        let mut guard = None;
        loop {
            // The connection does its I/O, the `LISTEN` included, only while
            // it is polled for messages.
            tokio::select! {
                message = poll_fn(|cx| connection.poll_message(cx)) => match message {
                    Some(Ok(AsyncMessage::Notification(note))) => deliver(note.payload()),
                    Some(Ok(_)) => {}
                    Some(Err(_)) | None => return guard.is_some(),
                },
                result = &mut listen_done, if guard.is_none() => match result {
                    Ok(()) => guard = listening.take().map(|listening| listening()),
                    Err(_) => return false,
                },
            }
        }
    }
}

/// `name` as a quoted SQL identifier.
fn quoted(name: &str) -> String {
    format!("\"{}\"", name.replace('"', "\"\""))
}
