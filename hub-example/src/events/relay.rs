//! Events across replicas: several Hubs on one PostgreSQL database hand
//! every event they publish to the others with `NOTIFY`, and each re-publishes
//! on its own bus what the others sent (`LISTEN`), so a subscriber on any
//! replica sees the events written on every replica.
//!
//! A replica's subscribers are on its own bus, never on the listening
//! connection: when that connection is lost (the server restarted, the
//! backend terminated) the listener connects again and no subscriber is
//! dropped; events sent while it was away are not replayed.
//!
//! The listener is a task on the PostgreSQL driver's runtime, polling a
//! connection of its own (outside the pool) for its notifications, each
//! handed to `Listener::deliver`; it ends when the relay is dropped. Sending
//! is one `pg_notify` through the pool (`PgEventRelay::notify`), made on the
//! publishing request's blocking thread.

use std::future::poll_fn;
use std::sync::Arc;
use std::time::Duration;

use tokio::sync::broadcast;
use tokio_postgres::AsyncMessage;
use tokio_util::sync::{CancellationToken, DropGuard};

use super::bus::HubEvent;
use crate::db::postgres::runtime::off_runtime;
use crate::db::postgres::PgManager;
use crate::db::{Db, DbError};

/// Hands a published event to the other replicas.
pub trait EventRelay: Send + Sync + std::fmt::Debug {
    /// Called once per event published on this replica.
    fn relay(&self, event: &HubEvent);
}

/// How long the listener waits before connecting again, at first.
const MIN_BACKOFF: Duration = Duration::from_millis(50);
/// How long the listener waits between reconnection attempts, at most.
const MAX_BACKOFF: Duration = Duration::from_secs(2);

/// The relay over PostgreSQL's `NOTIFY`, and the task that `LISTEN`s.
#[derive(Debug)]
pub struct PgEventRelay {
    db: Db,
    channel: String,
    origin: u64,
    /// Stops the listening task when the relay is dropped.
    _listener: DropGuard,
}

impl PgEventRelay {
    /// Starts listening, on a connection of its own to `db` (a PostgreSQL
    /// database), for the events of the other replicas sharing its schema,
    /// and re-publishes them on `local`.
    pub fn start(db: Db, local: broadcast::Sender<Arc<HubEvent>>) -> Result<PgEventRelay, DbError> {
        let manager = db
            .pg_manager()
            .ok_or(DbError::WrongDialect(crate::db::Dialect::Sqlite))?;
        let schema = off_runtime(|| -> Result<String, DbError> {
            Ok(db
                .pg_conn()?
                .query_one("SELECT current_schema()", &[])?
                .try_get(0)?)
        })?;
        let channel = format!("hub_events:{schema}");
        // Tells this replica's notifications from the others': the process
        // and the moment it started listening.
        let started = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap_or_default()
            .as_nanos() as u64;
        let origin = (u64::from(std::process::id()) << 32) ^ started;
        let stop = CancellationToken::new();
        let runtime = manager.runtime().clone();
        let listener = Listener {
            manager,
            channel: channel.clone(),
            origin,
            local,
        };
        runtime.spawn(listener.run(stop.clone()));
        Ok(PgEventRelay {
            db,
            channel,
            origin,
            _listener: stop.drop_guard(),
        })
    }

    /// Sends `payload` to every replica listening on the channel, this one
    /// included (its listener skips what carries its own origin).
    fn notify(&self, payload: &str) {
        // The write the event reports has committed; a replica that cannot
        // be told now (the server just went away) misses the event, as a
        // subscriber connected after it would.
        if let Ok(mut conn) = self.db.pg_conn() {
            let _ = conn.execute("SELECT pg_notify($1, $2)", &[&self.channel, &payload]);
        }
    }
}

impl EventRelay for PgEventRelay {
    fn relay(&self, event: &HubEvent) {
        let payload = serde_json::json!({
            "origin": self.origin.to_string(),
            "kind": event.kind,
            "subjects": event.subjects,
            "data": event.data,
        })
        .to_string();
        self.notify(&payload);
    }
}

/// The task that `LISTEN`s on a connection of its own, outside the pool.
struct Listener {
    manager: PgManager,
    channel: String,
    origin: u64,
    local: broadcast::Sender<Arc<HubEvent>>,
}

impl Listener {
    /// Listens until `stop` is cancelled, connecting again with a growing
    /// backoff whenever the connection is lost or cannot be made.
    async fn run(self, stop: CancellationToken) {
        let mut backoff = MIN_BACKOFF;
        loop {
            match stop.run_until_cancelled(self.listen_until_lost()).await {
                None => return,
                // It was listening: the next attempt starts the backoff over.
                Some(true) => backoff = MIN_BACKOFF,
                Some(false) => {}
            }
            if stop
                .run_until_cancelled(tokio::time::sleep(backoff))
                .await
                .is_none()
            {
                return;
            }
            backoff = (backoff * 2).min(MAX_BACKOFF);
        }
    }

    /// One connection's life: connect, `LISTEN`, and deliver every
    /// notification until the connection ends. Returns whether it got as
    /// far as listening.
    async fn listen_until_lost(&self) -> bool {
        let Ok((client, mut connection)) = self.manager.connect_polled().await else {
            return false;
        };
        let listen = format!("LISTEN {}", quoted(&self.channel));
        let mut listening = std::pin::pin!(client.batch_execute(&listen));
        let mut listened = false;
        loop {
            // The connection does its I/O, the `LISTEN` included, only while
            // it is polled for messages.
            tokio::select! {
                message = poll_fn(|cx| connection.poll_message(cx)) => match message {
                    Some(Ok(AsyncMessage::Notification(note))) => self.deliver(note.payload()),
                    Some(Ok(_)) => {}
                    Some(Err(_)) | None => return listened,
                },
                result = &mut listening, if !listened => match result {
                    Ok(()) => listened = true,
                    Err(_) => return false,
                },
            }
        }
    }

    /// Re-publishes on this replica's bus an event another replica sent.
    fn deliver(&self, payload: &str) {
        let Ok(value) = serde_json::from_str::<serde_json::Value>(payload) else {
            return;
        };
        if value["origin"].as_str() == Some(&self.origin.to_string()) {
            return;
        }
        let Some(kind) = value["kind"].as_str().and_then(HubEvent::known_kind) else {
            return;
        };
        let subjects = value["subjects"]
            .as_array()
            .map(|s| {
                s.iter()
                    .filter_map(|s| s.as_str().map(str::to_owned))
                    .collect()
            })
            .unwrap_or_default();
        let Some(data) = value["data"].as_str() else {
            return;
        };
        let _ = self.local.send(Arc::new(HubEvent {
            kind,
            subjects,
            data: data.to_owned(),
        }));
    }
}

/// `name` as a quoted SQL identifier.
fn quoted(name: &str) -> String {
    format!("\"{}\"", name.replace('"', "\"\""))
}
