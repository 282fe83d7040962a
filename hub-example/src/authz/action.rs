//! Actions and permission sets: role definitions name action patterns
//! (`agent.read`, `agent.*`, `*`); decisions test one bit.

use serde::ser::{Serialize, SerializeSeq, Serializer};

/// Something a principal may be allowed to do.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Action {
    /// See a project.
    ProjectRead,
    /// Change a project.
    ProjectUpdate,
    /// Delete a project.
    ProjectDelete,
    /// List a project's agents.
    AgentList,
    /// See an agent.
    AgentRead,
    /// Create agents in a project.
    AgentCreate,
    /// Change an agent (its status, its configuration).
    AgentUpdate,
    /// Delete an agent.
    AgentDelete,
    /// Start an agent.
    AgentStart,
    /// Stop an agent.
    AgentStop,
    /// Attach a terminal to an agent.
    AgentAttach,
    /// Send an agent a message.
    AgentMessage,
    /// Subscribe to a scope's events.
    EventsSubscribe,
    /// See a group.
    GroupRead,
    /// Administer the Hub.
    HubAdmin,
}

impl Action {
    /// Every action, in bit order.
    pub const ALL: [Action; 15] = [
        Action::ProjectRead,
        Action::ProjectUpdate,
        Action::ProjectDelete,
        Action::AgentList,
        Action::AgentRead,
        Action::AgentCreate,
        Action::AgentUpdate,
        Action::AgentDelete,
        Action::AgentStart,
        Action::AgentStop,
        Action::AgentAttach,
        Action::AgentMessage,
        Action::EventsSubscribe,
        Action::GroupRead,
        Action::HubAdmin,
    ];

    /// The action's permission name.
    pub fn as_str(self) -> &'static str {
        match self {
            Action::ProjectRead => "project.read",
            Action::ProjectUpdate => "project.update",
            Action::ProjectDelete => "project.delete",
            Action::AgentList => "agent.list",
            Action::AgentRead => "agent.read",
            Action::AgentCreate => "agent.create",
            Action::AgentUpdate => "agent.update",
            Action::AgentDelete => "agent.delete",
            Action::AgentStart => "agent.start",
            Action::AgentStop => "agent.stop",
            Action::AgentAttach => "agent.attach",
            Action::AgentMessage => "agent.message",
            Action::EventsSubscribe => "events.subscribe",
            Action::GroupRead => "group.read",
            Action::HubAdmin => "hub.admin",
        }
    }

    /// The name without its resource prefix (`read` for `agent.read`), as
    /// listed in an agent's capabilities.
    pub(crate) fn verb(self) -> &'static str {
        let name = self.as_str();
        name.split_once('.').map_or(name, |(_, verb)| verb)
    }

    fn bit(self) -> u32 {
        1 << (self as u32)
    }
}

/// A set of actions.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash)]
pub struct Permissions(u32);

impl Permissions {
    /// No action.
    pub const NONE: Permissions = Permissions(0);

    /// Every action.
    pub fn all() -> Permissions {
        Permissions::of(&Action::ALL)
    }

    /// Exactly these actions.
    pub fn of(actions: &[Action]) -> Permissions {
        Permissions(actions.iter().fold(0, |bits, a| bits | a.bit()))
    }

    /// The actions matched by permission patterns: `*`, `agent.*` or an
    /// action name. Unknown names match nothing.
    pub(crate) fn from_patterns<S: AsRef<str>>(patterns: &[S]) -> Permissions {
        let mut bits = 0;
        for pattern in patterns {
            let pattern = pattern.as_ref();
            for action in Action::ALL {
                let name = action.as_str();
                let matches = pattern == "*"
                    || pattern == name
                    || pattern.strip_suffix(".*").is_some_and(|prefix| {
                        name.split_once('.').is_some_and(|(p, _)| p == prefix)
                    });
                if matches {
                    bits |= action.bit();
                }
            }
        }
        Permissions(bits)
    }

    /// Whether `action` is in the set.
    pub fn contains(self, action: Action) -> bool {
        self.0 & action.bit() != 0
    }

    /// Adds `action`.
    pub fn insert(&mut self, action: Action) {
        self.0 |= action.bit();
    }

    /// The actions of both sets.
    pub(crate) fn union(self, other: Permissions) -> Permissions {
        Permissions(self.0 | other.0)
    }

    /// The actions in both sets.
    pub(crate) fn intersection(self, other: Permissions) -> Permissions {
        Permissions(self.0 & other.0)
    }

    /// Whether the set is empty.
    pub fn is_empty(self) -> bool {
        self.0 == 0
    }

    /// The actions in the set, in bit order.
    pub fn iter(self) -> impl Iterator<Item = Action> {
        Action::ALL.into_iter().filter(move |a| self.contains(*a))
    }
}

/// Serializes a permission set as the list of its actions' verbs
/// (`["read","stop"]`), without building the list first.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Verbs(pub Permissions);

impl Serialize for Verbs {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serialize_names(self.0, Action::verb, serializer)
    }
}

/// Serializes a permission set as the list of its full action names.
#[derive(Debug, Clone, Copy)]
pub(crate) struct ActionNames(pub Permissions);

impl Serialize for ActionNames {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serialize_names(self.0, Action::as_str, serializer)
    }
}

/// Serializes `set` as the list of `name` of each of its actions, in bit
/// order, without building the list first.
fn serialize_names<S: Serializer>(
    set: Permissions,
    name: fn(Action) -> &'static str,
    serializer: S,
) -> Result<S::Ok, S::Error> {
    let mut seq = serializer.serialize_seq(None)?;
    for action in set.iter() {
        seq.serialize_element(name(action))?;
    }
    seq.end()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn patterns_match_names_prefixes_and_everything() {
        let p = Permissions::from_patterns(&["agent.*", "project.read", "nonsense"]);
        assert!(p.contains(Action::AgentStop));
        assert!(p.contains(Action::ProjectRead));
        assert!(!p.contains(Action::ProjectDelete));
        assert!(!p.contains(Action::HubAdmin));
        assert_eq!(Permissions::from_patterns(&["*"]), Permissions::all());
        assert!(Permissions::from_patterns(&["agent"]).is_empty());
    }

    #[test]
    fn verbs_serialize_in_bit_order() {
        let p = Permissions::of(&[Action::AgentStop, Action::AgentRead]);
        assert_eq!(
            serde_json::to_string(&Verbs(p)).unwrap(),
            r#"["read","stop"]"#
        );
    }
}
