//! Replicas: several Hubs on one PostgreSQL database tell each other what
//! they publish and what their writes changed, so each one's event streams
//! and response cache stay right whichever replica took the write.
//!
//! - `ReplicaMessage`: an event for the others' subscribers, or an
//!   `Invalidation` for their caches, with its `NOTIFY` payload encoding.
//! - `ReplicaInbox`: what a replica does with the messages the others
//!   sent: events are re-published on its own bus, invalidations move its
//!   cache's stamps exactly as the write moved them on the sender.
//!
//! The transport is the event relay (`crate::events::PgEventRelay`): it
//! sends each message with `NOTIFY` and hands every payload it hears to the
//! inbox. A write moves its own replica's stamps and sends its invalidation
//! as soon as it has committed, before the event it publishes, so a
//! subscriber told of a change never reads the old answer from its
//! replica's cache.
//!
//! While the listening connection is away the replica cannot know which
//! writes it misses, so its cache is suspended (every request computes its
//! response) from when the connection is lost until it listens again, and
//! every stamp moves then: nothing cached before the outage is served after
//! it. Its event streams are then told to resync (`event: resync`), as
//! they may have missed events the same way. The remaining window is the notification's own delay: between a
//! write's commit and the other replica receiving its `NOTIFY`, that
//! replica may still serve the entry the write made stale.

mod message;

use std::sync::Arc;

use tokio::sync::broadcast;

use crate::cache::ResponseCache;
use crate::events::HubEvent;

pub(crate) use message::Invalidation;
pub use message::Origin;
pub(crate) use message::ReplicaMessage;

/// Where the messages of the other replicas are delivered on this one.
#[derive(Debug, Clone)]
pub(crate) struct ReplicaInbox {
    origin: Origin,
    local: broadcast::Sender<Arc<HubEvent>>,
    cache: ResponseCache,
}

impl ReplicaInbox {
    /// An inbox re-publishing events on `local` (the bus's own sender, so
    /// they are not relayed back) and applying invalidations to `cache`.
    ///
    /// The cache is suspended until the first [`ReplicaInbox::listening`]:
    /// before it, another replica's write would go unheard.
    pub fn new(local: broadcast::Sender<Arc<HubEvent>>, cache: ResponseCache) -> ReplicaInbox {
        cache.suspend();
        ReplicaInbox {
            origin: Origin::new(),
            local,
            cache,
        }
    }

    /// This replica's origin: the messages it sends carry it, and the inbox
    /// skips those that do.
    pub(crate) fn origin(&self) -> Origin {
        self.origin
    }

    /// Handles one payload heard on the channel: another replica's event is
    /// published to this one's subscribers, its invalidation applied to
    /// this one's cache; this replica's own messages and payloads that
    /// cannot be read are ignored.
    pub(crate) fn deliver(&self, payload: &str) {
        match ReplicaMessage::decode(payload, self.origin) {
            Some(ReplicaMessage::Event(event)) => {
                let _ = self.local.send(event);
            }
            Some(ReplicaMessage::Invalidate(invalidation)) => {
                invalidation.apply(self.cache.generations());
            }
            None => {}
        }
    }

    /// Called once the listening connection listens (again): whatever was
    /// cached before may be stale by writes sent while nobody listened, so
    /// every stamp moves and the cache serves again; and this replica's
    /// event streams, which may have missed events just as well, are told
    /// to resync ([`HubEvent::resync`]). Dropping the returned guard, when
    /// that connection is lost or closed, suspends the cache.
    #[must_use = "the cache is suspended again when the guard is dropped"]
    pub(crate) fn listening(&self) -> Listening {
        self.cache.generations().everything_changed();
        self.cache.resume();
        // Sent once listening again, so what a stream refetches already
        // includes the writes nobody heard. No stream yet: nobody to tell.
        let _ = self.local.send(Arc::new(HubEvent::resync()));
        Listening {
            cache: self.cache.clone(),
        }
    }
}

/// Held while the listening connection listens; see
/// [`ReplicaInbox::listening`].
#[derive(Debug)]
pub(crate) struct Listening {
    cache: ResponseCache,
}

impl Drop for Listening {
    fn drop(&mut self) {
        self.cache.suspend();
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use bytes::Bytes;

    use super::*;
    use crate::cache::{CacheKey, CallerKey};
    use crate::model::Id;
    use crate::perf::keys::CacheRoute;
    use crate::settings::CacheSettings;

    const ROUTE: CacheRoute = CacheRoute::AgentsById;

    fn key(cache: &ResponseCache) -> CacheKey {
        CacheKey {
            route: ROUTE,
            path_id: Some("a1".into()),
            query: String::new(),
            caller: CallerKey::Anyone,
            stamp: cache.generations().of_scope("a1"),
        }
    }

    /// Asks `cache` for the agent's read; `computed` says whether it had to
    /// compute it.
    async fn read(cache: &ResponseCache, body: &'static str) -> (Bytes, bool) {
        let mut computed = false;
        let got = cache
            .get_or_compute(key(cache), async || {
                computed = true;
                Ok::<_, ()>(Bytes::from_static(body.as_bytes()))
            })
            .await
            .unwrap();
        (got, computed)
    }

    fn inbox() -> (ReplicaInbox, broadcast::Receiver<Arc<HubEvent>>) {
        let (tx, rx) = broadcast::channel(8);
        let cache =
            ResponseCache::new(CacheSettings::default().with_ttl(ROUTE, Duration::from_secs(600)));
        (ReplicaInbox::new(tx, cache), rx)
    }

    #[tokio::test]
    async fn another_replicas_invalidation_drops_what_its_write_changed() {
        let (inbox, _rx) = inbox();
        let _listening = inbox.listening();
        assert_eq!(read(&inbox.cache, "old").await, (Bytes::from("old"), true));
        assert_eq!(read(&inbox.cache, "new").await, (Bytes::from("old"), false));

        let other_project = Invalidation::Agent {
            agent: Id::from("a2"),
            project: Id::from("p2"),
        };
        inbox.deliver(&ReplicaMessage::Invalidate(other_project).encode(Origin(1)));
        assert_eq!(read(&inbox.cache, "new").await, (Bytes::from("old"), false));

        let this_agent = Invalidation::Agent {
            agent: Id::from("a1"),
            project: Id::from("p1"),
        };
        inbox.deliver(&ReplicaMessage::Invalidate(this_agent.clone()).encode(inbox.origin()));
        assert_eq!(
            read(&inbox.cache, "new").await,
            (Bytes::from("old"), false),
            "its own message was applied when it was sent"
        );
        inbox.deliver(&ReplicaMessage::Invalidate(this_agent).encode(Origin(1)));
        assert_eq!(read(&inbox.cache, "new").await, (Bytes::from("new"), true));
    }

    #[tokio::test]
    async fn another_replicas_event_reaches_local_subscribers_once() {
        let (inbox, mut rx) = inbox();
        let event = Arc::new(HubEvent {
            kind: "agent.status",
            subjects: vec!["agents.a1.status".into()],
            data: "{}".into(),
        });
        let message = ReplicaMessage::Event(Arc::clone(&event));
        inbox.deliver(&message.encode(inbox.origin()));
        inbox.deliver("not a message");
        inbox.deliver(&message.encode(Origin(1)));
        assert_eq!(rx.try_recv().unwrap(), event);
        assert!(
            rx.try_recv().is_err(),
            "its own event and garbage are skipped"
        );
    }

    #[tokio::test]
    async fn listening_again_tells_the_streams_to_resync() {
        let (inbox, mut rx) = inbox();
        let listening = inbox.listening();
        assert!(rx.try_recv().unwrap().is_resync());
        drop(listening);
        assert!(rx.try_recv().is_err(), "losing the connection tells nobody");
        let _listening = inbox.listening();
        let notice = rx.try_recv().unwrap();
        assert!(notice.is_resync() && notice.subjects.is_empty());
        assert_eq!(notice.kind, "resync");
    }

    #[tokio::test]
    async fn the_cache_serves_only_while_listening_and_forgets_the_outage() {
        let (inbox, _rx) = inbox();
        // Not listening yet: every request computes, nothing is stored.
        assert_eq!(read(&inbox.cache, "a").await, (Bytes::from("a"), true));
        assert_eq!(read(&inbox.cache, "b").await, (Bytes::from("b"), true));

        let listening = inbox.listening();
        assert_eq!(read(&inbox.cache, "c").await, (Bytes::from("c"), true));
        assert_eq!(read(&inbox.cache, "d").await, (Bytes::from("c"), false));

        // The connection is lost: writes sent now go unheard.
        drop(listening);
        assert_eq!(read(&inbox.cache, "e").await, (Bytes::from("e"), true));

        // Listening again: nothing from before the outage is served.
        let _listening = inbox.listening();
        assert_eq!(read(&inbox.cache, "f").await, (Bytes::from("f"), true));
        assert_eq!(read(&inbox.cache, "g").await, (Bytes::from("f"), false));
    }
}
