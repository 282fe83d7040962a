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
//! The listener is a task on the PostgreSQL driver's runtime, polling a
//! connection of its own (outside the pool) for its notifications, each
//! handed to `Listener::deliver`; it ends when the relay is dropped.
//!
//! Publishing never waits on the database: a message is queued, in the
//! order it was published, for a notifier thread that sends the `NOTIFY`s
//! one by one through the pool (`notify_in_order`). A write holding the
//! bus's write order thus adds no round trip, and `publish` may be called
//! from async code. When the queue is full the other replicas miss the
//! events that do not fit, as a subscriber that lags does, and are then
//! told to drop every cached entry, since nobody can say which writes they
//! missed.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc::{sync_channel, Receiver, SyncSender};
use std::sync::{Arc, Condvar, Mutex};
use std::time::Duration;

use tokio_util::sync::{CancellationToken, DropGuard};

use super::bus::{EventRelay, BUS_CAPACITY};
use crate::replicas::{Invalidation, Origin, ReplicaInbox, ReplicaMessage};
use crate::store::db::DbError;
use crate::store::outbox::Outbox;

/// How long the listener waits before connecting again, at first.
const MIN_BACKOFF: Duration = Duration::from_millis(50);
/// How long the listener waits between reconnection attempts, at most.
const MAX_BACKOFF: Duration = Duration::from_secs(2);
/// How long starting the relay waits for its first `LISTEN`: until then
/// the replica's cache is suspended, so a Hub that starts serving at once
/// would compute every answer. Past it the Hub starts anyway (and its cache
/// serves once the listener gets through).
const FIRST_LISTEN: Duration = Duration::from_secs(5);
/// Messages waiting for the notifier, at most (as many as the bus keeps
/// for a slow subscriber).
const OUTBOX: usize = BUS_CAPACITY;

/// The relay over PostgreSQL's `NOTIFY`: the queue its notifier thread
/// sends from, and the task that `LISTEN`s.
#[derive(Debug)]
pub(crate) struct PgEventRelay {
    outbox: SyncSender<String>,
    /// Set when a message did not fit in the outbox: the notifier then
    /// tells the others to drop everything, since it cannot say what
    /// they missed.
    overflowed: Arc<AtomicBool>,
    origin: Origin,
    /// Stops the listening task when the relay is dropped.
    _listener: DropGuard,
}

impl PgEventRelay {
    /// Starts listening, on a connection of its own, for the messages of
    /// the other replicas sharing `channel`, and delivers them to `inbox`.
    pub fn start(channel: Outbox, inbox: ReplicaInbox) -> Result<PgEventRelay, DbError> {
        let origin = inbox.origin();
        let stop = CancellationToken::new();
        let runtime = channel.runtime();
        let listened = Arc::new((Mutex::new(false), Condvar::new()));
        let listener = Listener {
            channel: channel.clone(),
            inbox,
            listened: Arc::clone(&listened),
        };
        runtime.spawn(listener.run(stop.clone()));
        // The listener runs on the driver's runtime: another worker of a
        // multi-threaded one, or the process's own (`store::postgres::runtime`).
        // Only a one-worker runtime whose worker is this thread could hold
        // it up, and then the wait just runs out.
        let (lock, first) = &*listened;
        let _ = first.wait_timeout_while(lock.lock().unwrap(), FIRST_LISTEN, |l| !*l);
        let (outbox, queued) = sync_channel(OUTBOX);
        let overflowed = Arc::new(AtomicBool::new(false));
        std::thread::Builder::new()
            .name("hub-event-notifier".into())
            .spawn({
                let overflowed = Arc::clone(&overflowed);
                move || notify_in_order(&channel, &queued, &overflowed, origin)
            })
            .map_err(|e| DbError::Corrupt(format!("cannot start the event notifier: {e}")))?;
        Ok(PgEventRelay {
            outbox,
            overflowed,
            origin,
            _listener: stop.drop_guard(),
        })
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
    channel: &Outbox,
    queued: &Receiver<String>,
    overflowed: &AtomicBool,
    origin: Origin,
) {
    for payload in queued {
        channel.send(&payload, || {
            overflowed
                .swap(false, Ordering::AcqRel)
                .then(|| ReplicaMessage::Invalidate(Invalidation::Everything).encode(origin))
        });
    }
}

/// The task that `LISTEN`s on a connection of its own, outside the pool.
struct Listener {
    channel: Outbox,
    inbox: ReplicaInbox,
    /// Set (and signalled) once the first `LISTEN` has gone through.
    listened: Arc<(Mutex<bool>, Condvar)>,
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
    /// far as listening. While it listens the replica's cache serves (the
    /// guard of [`ReplicaInbox::listening`]); once the connection is lost
    /// it is suspended, since writes may then go unseen.
    async fn listen_until_lost(&self) -> bool {
        let listening = || {
            let guard = self.inbox.listening();
            let (lock, first) = &*self.listened;
            *lock.lock().unwrap() = true;
            first.notify_all();
            guard
        };
        self.channel
            .listen_until_lost(listening, |payload| self.deliver(payload))
            .await
    }

    /// Hands on what another replica sent: an event to this replica's bus,
    /// an invalidation to its cache.
    fn deliver(&self, payload: &str) {
        self.inbox.deliver(payload);
    }
}
