//! The JSON shapes of the Hub's answers. They own their data (ids are shared
//! `Arc<str>`s) so a body can be encoded after the handler has returned.

use std::sync::Arc;

use serde::{Serialize, Serializer};

use crate::authz::{ActionNames, Verbs};
use crate::model::{Agent, AgentActivity, AgentPhase, Id};

/// A time in Unix milliseconds, written as RFC 3339 (`2026-01-01T00:00:00.000Z`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Millis(pub i64);

impl Serialize for Millis {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.collect_str(&crate::clock::rfc3339_ms(self.0))
    }
}

/// Writes stored JSON text as JSON (not as a string), checking it on the way.
fn raw_json<S: Serializer>(text: &str, serializer: S) -> Result<S::Ok, S::Error> {
    let raw: &serde_json::value::RawValue =
        serde_json::from_str(text).map_err(serde::ser::Error::custom)?;
    raw.serialize(serializer)
}

/// Who created an agent.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct CreatorView {
    /// The user's id.
    pub id: Id,
    /// Their display name (absent when the user no longer exists).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub display_name: Option<Arc<str>>,
}

/// An agent with everything a list shows about it.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct FullAgentView {
    /// Id.
    pub id: Id,
    /// Project.
    pub project_id: Id,
    /// Name.
    pub name: String,
    /// Lifecycle phase.
    pub phase: AgentPhase,
    /// Activity.
    pub activity: AgentActivity,
    /// Creator, with display name.
    pub(crate) created_by: CreatorView,
    /// Creation time.
    pub(crate) created_at: Millis,
    /// Last change.
    pub(crate) updated_at: Millis,
    /// Configuration object.
    #[serde(serialize_with = "raw_json")]
    pub config: String,
    /// What the caller may do with it (`read`, `stop`, ...).
    pub(crate) capabilities: Verbs,
    /// Whether the caller can send it a message now.
    pub messageable: bool,
}

/// An agent in the compact view.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct CompactAgentView {
    /// Id.
    pub id: Id,
    /// Project.
    pub project_id: Id,
    /// Name.
    pub name: String,
    /// Lifecycle phase.
    pub phase: AgentPhase,
    /// Activity.
    pub activity: AgentActivity,
    /// Last change.
    pub(crate) updated_at: Millis,
}

impl From<Agent> for CompactAgentView {
    fn from(a: Agent) -> Self {
        CompactAgentView {
            id: a.id,
            project_id: a.project_id,
            name: a.name,
            phase: a.phase,
            activity: a.activity,
            updated_at: Millis(a.updated_at),
        }
    }
}

/// One agent of a list, full or compact.
#[derive(Debug, Clone, Serialize)]
#[serde(untagged)]
pub enum AgentView {
    /// Everything.
    Full(FullAgentView),
    /// The compact view.
    Compact(CompactAgentView),
}

/// The scope a list was taken in and what the caller may do there.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ScopeView {
    /// `project` or `hub`.
    pub kind: &'static str,
    /// The project, for a project scope.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub id: Option<Id>,
    /// Allowed actions on the scope (`agent.create`, ...).
    pub(crate) capabilities: ActionNames,
    /// The caller's project membership role, if any.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub membership: Option<String>,
}

/// An agent list.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct AgentListView {
    /// The agents.
    pub agents: Vec<AgentView>,
    /// Where the next page starts (sorted pages only, absent on the last page).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub next_cursor: Option<String>,
    /// The scope.
    pub scope: ScopeView,
}
