//! The event bus: a broadcast channel. Publishing never waits for
//! subscribers; a subscriber that falls behind by more than the channel's
//! capacity loses the oldest events and is told how many.

use std::sync::Arc;

use parking_lot::{Mutex, MutexGuard};
use tokio::sync::broadcast;

use crate::model::Agent;
use crate::replicas::ReplicaMessage;
use crate::views::Millis;

/// Hands a message (a published event, a write's invalidation) to the
/// other replicas: the bus calls it, the relay (`events::relay`) is one.
pub(crate) trait EventRelay: Send + Sync + std::fmt::Debug {
    /// Called once per message sent from this replica.
    fn relay(&self, message: &ReplicaMessage);
}

/// Events kept for slow subscribers before the oldest are dropped for them.
pub(crate) const BUS_CAPACITY: usize = 1024;
/// The SSE event name of [`HubEvent::resync`].
const RESYNC_KIND: &str = "resync";

/// One published event, encoded once for every subscriber.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HubEvent {
    /// The SSE event name (`agent.status`).
    pub kind: &'static str,
    /// The concrete subjects it is published on.
    pub subjects: Vec<String>,
    /// The JSON data.
    pub data: String,
}

impl HubEvent {
    /// The event of an agent's status change, published on
    /// `projects.<project>.agents.<agent>.status` and `agents.<agent>.status`.
    pub(crate) fn agent_status(agent: &Agent) -> HubEvent {
        let data = serde_json::json!({
            "agentId": &*agent.id,
            "projectId": &*agent.project_id,
            "phase": agent.phase,
            "activity": agent.activity,
            "updatedAt": Millis(agent.updated_at),
        });
        HubEvent {
            kind: "agent.status",
            subjects: vec![
                format!("projects.{}.agents.{}.status", agent.project_id, agent.id),
                format!("agents.{}.status", agent.id),
            ],
            data: data.to_string(),
        }
    }
}

impl HubEvent {
    /// The notice that events may have been missed (the relay's listening
    /// connection was away): it reaches every stream of this replica,
    /// whatever its subjects, as `event: resync`, so a page refetches
    /// what it shows. Only ever published on a replica's own bus.
    pub(crate) fn resync() -> HubEvent {
        HubEvent {
            kind: RESYNC_KIND,
            subjects: Vec::new(),
            data: r#"{"reason":"relay_reconnected"}"#.to_owned(),
        }
    }

    /// Whether this is the [`HubEvent::resync`] notice.
    pub(crate) fn is_resync(&self) -> bool {
        self.kind == RESYNC_KIND && self.subjects.is_empty()
    }

    /// The static name of an event kind the Hub publishes (for events read
    /// back from another replica); `None` for any other name.
    pub(crate) fn known_kind(kind: &str) -> Option<&'static str> {
        match kind {
            "agent.status" => Some("agent.status"),
            _ => None,
        }
    }
}

/// Publishes events to every current subscriber (and, with a relay, to
/// the other replicas').
#[derive(Debug, Clone)]
pub struct EventBus {
    tx: broadcast::Sender<Arc<HubEvent>>,
    order: Arc<Mutex<()>>,
    relay: Option<Arc<dyn EventRelay>>,
}

impl Default for EventBus {
    fn default() -> Self {
        EventBus::new(BUS_CAPACITY)
    }
}

impl EventBus {
    /// A bus keeping `capacity` events for slow subscribers.
    pub fn new(capacity: usize) -> Self {
        EventBus {
            tx: broadcast::channel(capacity).0,
            order: Arc::default(),
            relay: None,
        }
    }

    /// The bus handing every event it publishes to `relay` too.
    pub(crate) fn with_relay(mut self, relay: Arc<dyn EventRelay>) -> Self {
        self.relay = Some(relay);
        self
    }

    /// The sender of this bus's own subscribers, for a relay to publish
    /// what other replicas sent without relaying it back.
    pub(crate) fn local_sender(&self) -> broadcast::Sender<Arc<HubEvent>> {
        self.tx.clone()
    }

    /// Held from before a write takes its time until its event is
    /// published: events then leave in the order their writes committed,
    /// with times that never go backwards.
    pub(crate) fn write_order(&self) -> MutexGuard<'_, ()> {
        self.order.lock()
    }

    /// Publishes `event`; returns how many subscribers will see it.
    pub fn publish(&self, event: HubEvent) -> usize {
        let event = Arc::new(event);
        self.tell_replicas(&ReplicaMessage::Event(Arc::clone(&event)));
        self.tx.send(event).unwrap_or(0)
    }

    /// Hands `message` to the other replicas, if there is a relay; this
    /// bus's own subscribers do not see it.
    pub(crate) fn tell_replicas(&self, message: &ReplicaMessage) {
        if let Some(relay) = &self.relay {
            relay.relay(message);
        }
    }

    /// A new subscription, starting with the next event.
    pub fn subscribe(&self) -> broadcast::Receiver<Arc<HubEvent>> {
        self.tx.subscribe()
    }

    /// Current subscribers.
    pub fn subscribers(&self) -> usize {
        self.tx.receiver_count()
    }
}
