//! Events across replicas: several Hubs on one PostgreSQL database hand
//! every event they publish to the others with `NOTIFY`, and each re-publishes
//! on its own bus what the others sent (`LISTEN`), so a subscriber on any
//! replica sees the events written on every replica. The same channel
//! carries the cache invalidations of their writes; what a message holds
//! and what a replica does with it is [`crate::replicas`]'s.
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
//! may not block). When the queue is full the other replicas miss the
//! events that do not fit, as a subscriber that lags does, and are then
//! told to drop every cached entry, since nobody can say which writes
//! they missed.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc::{sync_channel, Receiver, SyncSender};
use std::sync::Arc;
use std::time::Duration;

use postgres::fallible_iterator::FallibleIterator;

use crate::db::postgres::PgManager;
use crate::db::{Db, DbError};
use crate::replicas::{Invalidation, Origin, ReplicaInbox, ReplicaMessage};

/// Hands a message (a published event, a write's invalidation) to the
/// other replicas.
pub trait EventRelay: Send + Sync + std::fmt::Debug {
    /// Called once per message sent from this replica.
    fn relay(&self, message: &ReplicaMessage);
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
    /// Set when a message did not fit in the outbox: the notifier then
    /// tells the others to drop everything, since it cannot say what
    /// they missed.
    overflowed: Arc<AtomicBool>,
    origin: Origin,
    stop: Arc<AtomicBool>,
}

impl PgEventRelay {
    /// Starts listening, on a connection of its own to `db` (a PostgreSQL
    /// database), for the messages of the other replicas sharing its
    /// schema, and delivers them to `inbox`.
    pub fn start(db: Db, inbox: ReplicaInbox) -> Result<PgEventRelay, DbError> {
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
        let origin = inbox.origin();
        let stop = Arc::new(AtomicBool::new(false));
        let listener = Listener {
            manager,
            channel: channel.clone(),
            inbox,
            stop: Arc::clone(&stop),
        };
        std::thread::Builder::new()
            .name("hub-event-listener".into())
            .spawn(move || listener.run())
            .map_err(|e| DbError::Corrupt(format!("cannot start the event listener: {e}")))?;
        let (outbox, queued) = sync_channel(OUTBOX);
        let overflowed = Arc::new(AtomicBool::new(false));
        std::thread::Builder::new()
            .name("hub-event-notifier".into())
            .spawn({
                let overflowed = Arc::clone(&overflowed);
                move || notify_in_order(&db, &channel, &queued, &overflowed, origin)
            })
            .map_err(|e| DbError::Corrupt(format!("cannot start the event notifier: {e}")))?;
        Ok(PgEventRelay {
            outbox,
            overflowed,
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
    fn relay(&self, message: &ReplicaMessage) {
        let payload = message.encode(self.origin);
        if self.outbox.try_send(payload).is_err() {
            // Full: the others miss this message; a later notice makes
            // them drop every cached entry (see the module docs).
            self.overflowed.store(true, Ordering::Release);
        }
    }
}

/// The notifier thread: sends each queued message in turn, until the relay
/// is dropped and the queue is empty. The write a message reports has
/// committed; a replica that cannot be told now (the server just went away)
/// misses it, as a subscriber connected after it would (and its listener,
/// cut off too, drops its cache when it listens again).
fn notify_in_order(
    db: &Db,
    channel: &str,
    queued: &Receiver<String>,
    overflowed: &AtomicBool,
    origin: Origin,
) {
    for payload in queued {
        if let Ok(mut conn) = db.pg_conn() {
            let _ = conn.execute("SELECT pg_notify($1, $2)", &[&channel, &payload]);
            if overflowed.swap(false, Ordering::AcqRel) {
                let everything =
                    ReplicaMessage::Invalidate(Invalidation::Everything).encode(origin);
                let _ = conn.execute("SELECT pg_notify($1, $2)", &[&channel, &everything]);
            }
        }
    }
}

struct Listener {
    manager: PgManager,
    channel: String,
    inbox: ReplicaInbox,
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
        let _listening = self.inbox.listening();
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
        self.inbox.deliver(payload);
    }
}

/// `name` as a quoted SQL identifier.
fn quoted(name: &str) -> String {
    format!("\"{}\"", name.replace('"', "\"\""))
}
