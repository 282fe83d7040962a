//! What one replica tells the others on the `NOTIFY` channel, and its JSON
//! encoding.
//!
//! Every payload is a JSON object with the sender's `origin` (a decimal
//! string) and either an event or an invalidation:
//!
//! ```text
//! {"origin":"…","kind":"agent.status","subjects":["…"],"data":"{…}"}
//! {"origin":"…","invalidate":{"scope":"agent","agent":"a1","project":"p1"}}
//! {"origin":"…","invalidate":{"scope":"everything"}}
//! ```
//!
//! The event shape is the one replicas sent before invalidations existed,
//! so old and new replicas still share events; an old replica ignores an
//! invalidation (it has no `kind`), as it ignores any payload it cannot read.
//! An invalidation whose scope cannot be read (one a newer replica added)
//! is taken as [`Invalidation::Everything`]: a cache that does not know
//! what changed drops everything rather than serve what may be stale.

use std::sync::Arc;

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::cache::Generations;
use crate::events::HubEvent;
use crate::model::{Agent, Id};

/// Which replica sent a message: the process and the moment it started, so
/// a replica recognises (and skips) its own notifications.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Origin(pub(super) u64);

impl Origin {
    /// A new origin for this process.
    pub fn new() -> Origin {
        let started = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap_or_default()
            .as_nanos() as u64;
        Origin((u64::from(std::process::id()) << 32) ^ started)
    }
}

impl Default for Origin {
    fn default() -> Self {
        Origin::new()
    }
}

/// What a committed write changed, as the response cache's stamps see it
/// (see `Generations`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "scope", rename_all = "snake_case")]
pub(crate) enum Invalidation {
    /// An agent's row: its read, its project's lists and the global lists.
    Agent {
        /// The agent.
        agent: Id,
        /// Its project.
        project: Id,
    },
    /// Anything: a hub setting can change any decision.
    Everything,
}

impl Invalidation {
    /// The invalidation of `agent`'s row.
    pub fn agent(agent: &Agent) -> Invalidation {
        Invalidation::Agent {
            agent: agent.id.clone(),
            project: agent.project_id.clone(),
        }
    }

    /// Moves the stamps of what was changed.
    pub(crate) fn apply(&self, generations: &Generations) {
        match self {
            Invalidation::Agent { agent, project } => generations.agent_changed(agent, project),
            Invalidation::Everything => generations.everything_changed(),
        }
    }
}

/// One message between replicas.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum ReplicaMessage {
    /// An event published on the sender's bus, for the receiver's
    /// subscribers.
    Event(Arc<HubEvent>),
    /// A write committed through the sender, for the receiver's cache.
    Invalidate(Invalidation),
}

impl ReplicaMessage {
    /// The `NOTIFY` payload of this message sent by `origin`.
    pub fn encode(&self, origin: Origin) -> String {
        let origin = origin.0.to_string();
        match self {
            ReplicaMessage::Event(event) => serde_json::json!({
                "origin": origin,
                "kind": event.kind,
                "subjects": event.subjects,
                "data": event.data,
            }),
            ReplicaMessage::Invalidate(invalidation) => serde_json::json!({
                "origin": origin,
                "invalidate": invalidation,
            }),
        }
        .to_string()
    }

    /// The message in `payload`, unless `own` sent it or it cannot be read
    /// (not JSON, no origin, an unknown event kind, a field of the wrong
    /// type). An invalidation of a scope this replica does not know is one
    /// of everything.
    pub(crate) fn decode(payload: &str, own: Origin) -> Option<ReplicaMessage> {
        let value: Value = serde_json::from_str(payload).ok()?;
        let origin: u64 = value.get("origin")?.as_str()?.parse().ok()?;
        if origin == own.0 {
            return None;
        }
        if let Some(invalidation) = value.get("invalidate") {
            let invalidation =
                Invalidation::deserialize(invalidation).unwrap_or(Invalidation::Everything);
            return Some(ReplicaMessage::Invalidate(invalidation));
        }
        let kind = HubEvent::known_kind(value.get("kind")?.as_str()?)?;
        let subjects = value
            .get("subjects")?
            .as_array()?
            .iter()
            .map(|s| s.as_str().map(str::to_owned))
            .collect::<Option<Vec<_>>>()?;
        let data = value.get("data")?.as_str()?.to_owned();
        Some(ReplicaMessage::Event(Arc::new(HubEvent {
            kind,
            subjects,
            data,
        })))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn event() -> HubEvent {
        HubEvent {
            kind: "agent.status",
            subjects: vec!["agents.a1.status".into()],
            data: r#"{"agentId":"a1"}"#.into(),
        }
    }

    fn agent_invalidation() -> Invalidation {
        Invalidation::Agent {
            agent: Id::from("a1"),
            project: Id::from("p1"),
        }
    }

    #[test]
    fn every_message_reaches_another_replica_as_sent() {
        let (sender, receiver) = (Origin(1), Origin(2));
        for message in [
            ReplicaMessage::Event(Arc::new(event())),
            ReplicaMessage::Invalidate(agent_invalidation()),
            ReplicaMessage::Invalidate(Invalidation::Everything),
        ] {
            let payload = message.encode(sender);
            assert_eq!(
                ReplicaMessage::decode(&payload, receiver),
                Some(message),
                "{payload}"
            );
        }
    }

    #[test]
    fn a_replica_skips_its_own_messages() {
        let own = Origin(7);
        for message in [
            ReplicaMessage::Event(Arc::new(event())),
            ReplicaMessage::Invalidate(Invalidation::Everything),
        ] {
            assert_eq!(ReplicaMessage::decode(&message.encode(own), own), None);
        }
    }

    #[test]
    fn an_event_keeps_the_shape_replicas_sent_before_invalidations() {
        // As sent by a replica that knew only events.
        let old = r#"{"origin":"12","kind":"agent.status","subjects":["agents.a1.status"],"data":"{\"agentId\":\"a1\"}"}"#;
        assert_eq!(
            ReplicaMessage::decode(old, Origin(3)),
            Some(ReplicaMessage::Event(Arc::new(event())))
        );
        let sent: Value =
            serde_json::from_str(&ReplicaMessage::Event(Arc::new(event())).encode(Origin(12)))
                .unwrap();
        assert_eq!(sent, serde_json::from_str::<Value>(old).unwrap());
    }

    #[test]
    fn an_invalidation_names_its_scope() {
        let payload = ReplicaMessage::Invalidate(agent_invalidation()).encode(Origin(5));
        assert_eq!(
            serde_json::from_str::<Value>(&payload).unwrap(),
            serde_json::json!({
                "origin": "5",
                "invalidate": {"scope": "agent", "agent": "a1", "project": "p1"},
            })
        );
        assert!(
            serde_json::from_str::<Value>(&payload)
                .unwrap()
                .get("kind")
                .is_none(),
            "a replica that knows only events ignores it"
        );
    }

    #[test]
    fn a_payload_that_cannot_be_read_is_ignored() {
        let own = Origin(1);
        for bad in [
            "",
            "not json",
            "[]",
            r#"{"kind":"agent.status","subjects":[],"data":"{}"}"#,
            r#"{"origin":12,"kind":"agent.status","subjects":[],"data":"{}"}"#,
            r#"{"origin":"x","kind":"agent.status","subjects":[],"data":"{}"}"#,
            r#"{"origin":"2","kind":"agent.deleted","subjects":[],"data":"{}"}"#,
            r#"{"origin":"2","kind":"agent.status","subjects":[1],"data":"{}"}"#,
            r#"{"origin":"2","kind":"agent.status","subjects":"agents.a1.status","data":"{}"}"#,
            r#"{"origin":"2","kind":"agent.status","subjects":[],"data":{}}"#,
        ] {
            assert_eq!(ReplicaMessage::decode(bad, own), None, "{bad}");
        }
    }

    #[test]
    fn an_invalidation_of_an_unknown_scope_is_one_of_everything() {
        for unknown in [
            r#"{"origin":"2","invalidate":{"scope":"project","project":"p1"}}"#,
            r#"{"origin":"2","invalidate":{"scope":"agent","agent":"a1"}}"#,
            r#"{"origin":"2","invalidate":"everything"}"#,
        ] {
            assert_eq!(
                ReplicaMessage::decode(unknown, Origin(1)),
                Some(ReplicaMessage::Invalidate(Invalidation::Everything)),
                "{unknown}"
            );
        }
        // A field a newer replica added does not hide a scope this one knows.
        assert_eq!(
            ReplicaMessage::decode(
                r#"{"origin":"2","invalidate":{"scope":"agent","agent":"a1","project":"p1","why":"status"}}"#,
                Origin(1)
            ),
            Some(ReplicaMessage::Invalidate(agent_invalidation()))
        );
    }

    #[test]
    fn an_invalidation_moves_the_stamps_its_write_would() {
        let (here, there) = (Generations::default(), Generations::default());
        let project = Id::from("p1");
        here.agent_changed(&Id::from("a1"), &project);
        agent_invalidation().apply(&there);
        assert_eq!(here.of_scope(&project), there.of_scope(&project));
        assert_eq!(here.of_all_agents(), there.of_all_agents());
        let before = there.of_nothing();
        Invalidation::Everything.apply(&there);
        assert_ne!(there.of_nothing(), before);
    }
}
