//! The Hub's domain records, as the store returns them.
//!
//! Identifiers are UUID strings held as `Arc<str>`, so that authorization
//! results and audit records can share them without copying.

use std::fmt;
use std::str::FromStr;
use std::sync::Arc;

use serde::{Deserialize, Serialize};

/// A shared identifier (a UUID string).
pub type Id = Arc<str>;

/// A user of the Hub: a platform admin or an ordinary user.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct User {
    /// The user's id.
    pub id: Id,
    /// The user's email address.
    pub email: String,
    /// The name shown next to the agents the user created.
    pub display_name: String,
    /// Platform admins may do anything anywhere (unless their credential is scoped).
    pub is_platform_admin: bool,
    /// Creation time, Unix milliseconds.
    pub created_at: i64,
}

/// A project: the scope agents live in.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Project {
    /// The project's id.
    pub id: Id,
    /// The project's unique short name.
    pub slug: String,
    /// The project's display name.
    pub name: String,
    /// The user who created the project.
    pub created_by: Id,
    /// Creation time, Unix milliseconds.
    pub created_at: i64,
}

/// A user's membership of a project (informational: permissions come from role bindings).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ProjectMembership {
    /// The project.
    pub project_id: Id,
    /// The member.
    pub user_id: Id,
    /// The membership's role name (`owner`, `member`, ...).
    pub role: String,
}

/// A group of users and agents; groups may have parent groups, whose role
/// bindings their members inherit.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Group {
    /// The group's id.
    pub id: Id,
    /// The group's unique short name.
    pub slug: String,
    /// The group's display name.
    pub name: String,
}

/// One principal's direct membership of a group.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GroupMembership {
    /// The group.
    pub group_id: Id,
    /// The member.
    pub principal: PrincipalRef,
    /// The member's role in the group (`member`, `manager`).
    pub role: String,
}

/// The kind of a principal a binding, membership or delegation names.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub(crate) enum PrincipalKind {
    /// A user.
    User,
    /// A group.
    Group,
    /// An agent acting through its own token.
    Agent,
}

impl PrincipalKind {
    /// The stored name of the kind.
    pub fn as_str(self) -> &'static str {
        match self {
            PrincipalKind::User => "user",
            PrincipalKind::Group => "group",
            PrincipalKind::Agent => "agent",
        }
    }
}

impl FromStr for PrincipalKind {
    type Err = UnknownValue;
    fn from_str(s: &str) -> Result<Self, UnknownValue> {
        match s {
            "user" => Ok(PrincipalKind::User),
            "group" => Ok(PrincipalKind::Group),
            "agent" => Ok(PrincipalKind::Agent),
            _ => Err(UnknownValue("principal kind")),
        }
    }
}

/// A reference to a principal: its kind and id.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct PrincipalRef {
    /// User, group or agent.
    pub(crate) kind: PrincipalKind,
    /// The principal's id.
    pub id: Id,
}

impl PrincipalRef {
    /// A user principal.
    pub fn user(id: impl Into<Id>) -> Self {
        PrincipalRef {
            kind: PrincipalKind::User,
            id: id.into(),
        }
    }
    /// A group principal.
    pub(crate) fn group(id: impl Into<Id>) -> Self {
        PrincipalRef {
            kind: PrincipalKind::Group,
            id: id.into(),
        }
    }
    /// An agent principal.
    pub fn agent(id: impl Into<Id>) -> Self {
        PrincipalRef {
            kind: PrincipalKind::Agent,
            id: id.into(),
        }
    }
}

/// A named set of permissions (action patterns such as `agent.*`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RoleDefinition {
    /// The role's id.
    pub id: Id,
    /// The role's unique name.
    pub name: String,
    /// Action patterns: `agent.read`, `agent.*`, `*`.
    pub permissions: Vec<String>,
}

/// Where a role binding applies.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub(crate) enum BindingScope {
    /// Everywhere on the Hub.
    Hub,
    /// Within one project.
    Project(Id),
}

/// A grant of a role to a principal at a scope.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RoleBinding {
    /// The binding's id.
    pub id: Id,
    /// Who holds the role.
    pub principal: PrincipalRef,
    /// The role granted.
    pub role_id: Id,
    /// Where it applies.
    pub(crate) scope: BindingScope,
}

/// A project rule that denies an action on agents in some phases, whatever
/// the roles say (for example: no messages to a stopped agent).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AccessConstraint {
    /// The constraint's id.
    pub id: Id,
    /// The project it applies to.
    pub project_id: Id,
    /// The action it restricts (`agent.message`, ...).
    pub action: String,
    /// Agent phases in which the action is denied.
    pub(crate) deny_phases: Vec<AgentPhase>,
}

/// A delegation: the delegate may act with the delegator's permissions,
/// limited to some actions and optionally to one project.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DelegationEdge {
    /// The edge's id.
    pub id: Id,
    /// The user whose permissions are lent.
    pub(crate) delegator_user_id: Id,
    /// Who may use them.
    pub delegate: PrincipalRef,
    /// The project the delegation is limited to; `None` for everywhere.
    pub project_id: Option<Id>,
    /// The actions delegated.
    pub actions: Vec<String>,
}

/// A user access token: a credential scoped to one project, stored only as
/// the SHA-256 hash of the token.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UserAccessToken {
    /// The token's id.
    pub id: Id,
    /// The user it acts as.
    pub user_id: Id,
    /// The project it is limited to.
    pub project_id: Id,
    /// SHA-256 of the token.
    pub token_hash: [u8; 32],
    /// Expiry, Unix milliseconds.
    pub(crate) expires_at: i64,
    /// Revocation time, Unix milliseconds, if revoked.
    pub revoked_at: Option<i64>,
}

/// An enum whose values are stored and rendered by name: the enum itself,
/// `ALL` (every value, in declaration order), `as_str` and `FromStr` (an
/// unknown name is an [`UnknownValue`] of `$what`).
macro_rules! named_values {
    (
        $(#[$meta:meta])*
        pub enum $name:ident ($what:literal) {
            $($(#[$variant_meta:meta])* $variant:ident => $text:literal,)+
        }
    ) => {
        $(#[$meta])*
        pub enum $name {
            $($(#[$variant_meta])* $variant,)+
        }

        impl $name {
            /// Every value, in declaration order.
            pub const ALL: [$name; [$($text),+].len()] = [$($name::$variant),+];

            /// The stored and rendered name.
            pub fn as_str(self) -> &'static str {
                match self {
                    $($name::$variant => $text,)+
                }
            }
        }

        impl FromStr for $name {
            type Err = UnknownValue;
            fn from_str(s: &str) -> Result<Self, UnknownValue> {
                $name::ALL
                    .into_iter()
                    .find(|v| v.as_str() == s)
                    .ok_or(UnknownValue($what))
            }
        }
    };
}

named_values! {
    /// The lifecycle phase of an agent (`ALL` in lifecycle order).
    #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
    #[serde(rename_all = "snake_case")]
    pub enum AgentPhase("agent phase") {
        /// Created, not yet started.
        Created => "created",
        /// Its container is being prepared.
        Provisioning => "provisioning",
        /// Running.
        Running => "running",
        /// Stopped.
        Stopped => "stopped",
        /// Failed.
        Error => "error",
    }
}

named_values! {
    /// What an agent is doing.
    #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
    #[serde(rename_all = "snake_case")]
    pub enum AgentActivity("agent activity") {
        /// Nothing to do.
        Idle => "idle",
        /// Working on a task.
        Working => "working",
        /// Waiting for a person to answer.
        WaitingForInput => "waiting_for_input",
        /// Finished its task.
        Completed => "completed",
        /// Cannot go on without help.
        Blocked => "blocked",
    }
}

/// The longest agent name, in bytes. Paging cursors carry the name of the
/// last agent of a page, so their longest accepted length follows from
/// this one.
pub(crate) const MAX_AGENT_NAME_BYTES: usize = 256;

/// An agent as the store returns it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Agent {
    /// The agent's id.
    pub id: Id,
    /// The project it belongs to.
    pub project_id: Id,
    /// Its name, unique within the project (at most
    /// `MAX_AGENT_NAME_BYTES`).
    pub name: String,
    /// Lifecycle phase.
    pub phase: AgentPhase,
    /// Current activity.
    pub(crate) activity: AgentActivity,
    /// The user who created it.
    pub created_by: Id,
    /// Creation time, Unix milliseconds.
    pub created_at: i64,
    /// Last change, Unix milliseconds.
    pub updated_at: i64,
    /// Its configuration, a JSON object as stored.
    pub config: String,
}

/// A stored text that is not one of the known values.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct UnknownValue(pub &'static str);

impl fmt::Display for UnknownValue {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "unknown {}", self.0)
    }
}

impl std::error::Error for UnknownValue {}

/// Whether `s` is a UUID in its canonical hyphenated form (the only id form
/// the Hub accepts).
pub(crate) fn is_uuid(s: &str) -> bool {
    let b = s.as_bytes();
    b.len() == 36
        && b.iter().enumerate().all(|(i, c)| match i {
            8 | 13 | 18 | 23 => *c == b'-',
            _ => c.is_ascii_hexdigit() && !c.is_ascii_uppercase(),
        })
}

/// Formats 16 random bytes as a version-4 UUID.
pub(crate) fn uuid_from_bytes(mut bytes: [u8; 16]) -> String {
    bytes[6] = (bytes[6] & 0x0f) | 0x40;
    bytes[8] = (bytes[8] & 0x3f) | 0x80;
    let hex: String = bytes.iter().map(|b| format!("{b:02x}")).collect();
    format!(
        "{}-{}-{}-{}-{}",
        &hex[0..8],
        &hex[8..12],
        &hex[12..16],
        &hex[16..20],
        &hex[20..32]
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn uuids_round_trip_through_the_validator() {
        let id = uuid_from_bytes([0xab; 16]);
        assert!(is_uuid(&id), "{id}");
        assert_eq!(&id[14..15], "4");
        assert!(!is_uuid("not-a-uuid"));
        assert!(!is_uuid(&id.to_uppercase()));
        assert!(!is_uuid(&id[1..]));
    }

    #[test]
    fn phases_and_activities_parse_their_names() {
        for p in AgentPhase::ALL {
            assert_eq!(p.as_str().parse::<AgentPhase>(), Ok(p));
        }
        for a in AgentActivity::ALL {
            assert_eq!(a.as_str().parse::<AgentActivity>(), Ok(a));
        }
        assert!("sleeping".parse::<AgentPhase>().is_err());
    }
}
