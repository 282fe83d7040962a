//! The row types the facades take and give, shared by both engines: a
//! leaf, importing only the model.

use serde::Serialize;

use crate::model::{Agent, Id};
use crate::paging::{CursorPosition, PageRequest};

/// Which projects' agents to read.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum RowScope {
    /// One project.
    Project(Id),
    /// Several projects.
    Projects(Vec<Id>),
    /// Every project.
    All,
}

/// What to read.
#[derive(Debug, Clone)]
pub struct RowQuery<'a> {
    /// The projects.
    pub scope: &'a RowScope,
    /// Only these agents, when given.
    pub ids: Option<&'a [Id]>,
    /// One page, when given; otherwise every row, by name.
    pub page: Option<&'a PageRequest>,
}

/// The rows read, and where the next page starts.
#[derive(Debug, Clone)]
pub struct RowPage {
    /// The agents, in order.
    pub agents: Vec<Agent>,
    /// The last agent's position when more rows follow.
    pub next: Option<CursorPosition>,
}

/// A user access token to store.
#[derive(Debug, Clone, Copy)]
pub struct NewAccessToken<'a> {
    /// The token's id.
    pub id: &'a str,
    /// The user it acts as.
    pub user_id: &'a str,
    /// The project it is limited to.
    pub project_id: &'a str,
    /// A label.
    pub name: &'a str,
    /// The token itself (only its hash is stored).
    pub token: &'a str,
    /// Expiry, Unix milliseconds.
    pub expires_at_ms: i64,
}

/// One end of a delegation.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct DelegationParty {
    /// `user` or `agent`.
    pub kind: String,
    /// Its id.
    pub id: String,
    /// A user's display name or an agent's name (absent once deleted).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
}

/// A delegation as the graph draws it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct DelegationView {
    /// The edge's id.
    pub id: String,
    /// The user whose permissions are lent.
    pub delegator: DelegationParty,
    /// Who may use them.
    pub delegate: DelegationParty,
    /// The actions lent.
    pub actions: Vec<String>,
}

/// A live browser session: its user and when it expires (Unix ms).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct LiveSession {
    /// The signed-in user.
    pub user_id: String,
    /// Its expiry, Unix milliseconds.
    pub(crate) expires_at: i64,
}
