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
//! Publishing never waits on the database: an event is queued, in the order
//! it was published, for a notifier thread that sends the `NOTIFY`s one by
//! one. A write holding the bus's write order thus adds no round trip, and
//! `publish` may be called from async code (where the synchronous client
//! may not block). A replica whose queue is full, as a subscriber that
//! lags, misses the events that do not fit.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc::{sync_channel, Receiver, SyncSender};
use std::sync::Arc;
use std::time::Duration;

use postgres::fallible_iterator::FallibleIterator;
use tokio::sync::broadcast;

use super::bus::HubEvent;
use crate::db::postgres::PgManager;
use crate::db::{Db, DbError};

/// Hands a published event to the other replicas.
pub trait EventRelay: Send + Sync + std::fmt::Debug {
    /// Called once per event published on this replica.
    fn relay(&self, event: &HubEvent);
}

/// How long the listener waits between reconnection attempts, at most.
const MAX_BACKOFF: Duration = Duration::from_secs(2);
/// How often the listener looks whether its Hub is gone.
const POLL: Duration = Duration::from_millis(250);
/// Events waiting for the notifier, at most (as many as the bus keeps for
/// a slow subscriber).
const OUTBOX: usize = super::bus::BUS_CAPACITY;

/// The relay over PostgreSQL's `NOTIFY`, and the threads that send them and
/// that `LISTEN`.
#[derive(Debug)]
pub struct PgEventRelay {
    outbox: SyncSender<String>,
    origin: u64,
    stop: Arc<AtomicBool>,
}

impl PgEventRelay {
    /// Starts listening, on a connection of its own to `db` (a PostgreSQL
    /// database), for the events of the other replicas sharing its schema,
    /// and re-publishes them on `local`.
    pub fn start(db: Db, local: broadcast::Sender<Arc<HubEvent>>) -> Result<PgEventRelay, DbError> {
        let manager = db
            .pg_manager()
            .ok_or(DbError::WrongDialect(crate::db::Dialect::Sqlite))?;
        let schema = std::thread::scope(|s| {
            s.spawn(|| -> Result<String, DbError> {
                let mut client = manager.open_client()?;
                Ok(client
                    .client()
                    .query_one("SELECT current_schema()", &[])?
                    .try_get(0)?)
            })
            .join()
            .unwrap_or_else(|_| Err(DbError::Corrupt("listener check panicked".into())))
        })?;
        let channel = format!("hub_events:{schema}");
        // Tells this replica's notifications from the others': the process
        // and the moment it started listening.
        let started = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap_or_default()
            .as_nanos() as u64;
        let origin = (u64::from(std::process::id()) << 32) ^ started;
        let stop = Arc::new(AtomicBool::new(false));
        let listener = Listener {
            manager,
            channel: channel.clone(),
            origin,
            local,
            stop: Arc::clone(&stop),
        };
        std::thread::Builder::new()
            .name("hub-event-listener".into())
            .spawn(move || listener.run())
            .map_err(|e| DbError::Corrupt(format!("cannot start the event listener: {e}")))?;
        let (outbox, queued) = sync_channel(OUTBOX);
        std::thread::Builder::new()
            .name("hub-event-notifier".into())
            .spawn(move || notify_in_order(&db, &channel, &queued))
            .map_err(|e| DbError::Corrupt(format!("cannot start the event notifier: {e}")))?;
        Ok(PgEventRelay {
            outbox,
            origin,
            stop,
        })
    }
}

impl Drop for PgEventRelay {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
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
        // Full: the other replicas miss this one (see the module docs).
        let _ = self.outbox.try_send(payload);
    }
}

/// The notifier thread: sends each queued event in turn, until the relay is
/// dropped and the queue is empty. The write an event reports has
/// committed; a replica that cannot be told now (the server just went away)
/// misses the event, as a subscriber connected after it would.
fn notify_in_order(db: &Db, channel: &str, queued: &Receiver<String>) {
    for payload in queued {
        if let Ok(mut conn) = db.pg_conn() {
            let _ = conn.execute("SELECT pg_notify($1, $2)", &[&channel, &payload]);
        }
    }
}

struct Listener {
    manager: PgManager,
    channel: String,
    origin: u64,
    local: broadcast::Sender<Arc<HubEvent>>,
    stop: Arc<AtomicBool>,
}

impl Listener {
    fn run(self) {
        let mut backoff = Duration::from_millis(50);
        while !self.stop.load(Ordering::Relaxed) {
            if self.listen().is_ok() {
                backoff = Duration::from_millis(50);
            } else {
                std::thread::sleep(backoff);
                backoff = (backoff * 2).min(MAX_BACKOFF);
            }
        }
    }

    /// One connection's life: `LISTEN`, then deliver until it fails or the
    /// Hub is gone.
    fn listen(&self) -> Result<(), DbError> {
        let mut conn = self.manager.open_client()?;
        let client = conn.client();
        client.batch_execute(&format!("LISTEN {}", quoted(&self.channel)))?;
        while !self.stop.load(Ordering::Relaxed) {
            let note = client.notifications().timeout_iter(POLL).next()?;
            match note {
                Some(note) => self.deliver(note.payload()),
                // A timeout iterator also ends on a closed connection.
                None if client.is_closed() => {
                    return Err(DbError::Corrupt("the listening connection closed".into()))
                }
                None => {}
            }
        }
        Ok(())
    }

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
