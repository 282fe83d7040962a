//! Who is calling: the authenticated principal a request carries in its
//! extensions.

use crate::model::{Id, PrincipalRef};

/// How a user proved who they are.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Credential {
    /// A session bearer token: the user's full rights.
    Session,
    /// A user access token: the user's rights, limited to one project.
    AccessToken {
        /// The project the token is limited to.
        project_id: Id,
    },
}

/// An authenticated user.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UserPrincipal {
    /// The user's id.
    pub id: Id,
    /// Whether the user is a platform admin.
    pub is_platform_admin: bool,
    /// The credential used.
    pub credential: Credential,
}

/// An authenticated agent, acting through its own token.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AgentPrincipal {
    /// The agent's id.
    pub id: Id,
    /// The project the agent lives in (and is limited to).
    pub project_id: Id,
}

/// The caller of an authenticated request.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Principal {
    /// A user.
    User(UserPrincipal),
    /// An agent.
    Agent(AgentPrincipal),
}

impl Principal {
    /// The principal as bindings and delegations name it.
    pub(crate) fn reference(&self) -> PrincipalRef {
        match self {
            Principal::User(u) => PrincipalRef::user(u.id.clone()),
            Principal::Agent(a) => PrincipalRef::agent(a.id.clone()),
        }
    }

    /// The user, when the caller is one.
    pub fn user(&self) -> Option<&UserPrincipal> {
        match self {
            Principal::User(u) => Some(u),
            Principal::Agent(_) => None,
        }
    }

    /// The one project the credential is limited to, if any.
    pub(crate) fn project_limit(&self) -> Option<&Id> {
        match self {
            Principal::User(UserPrincipal {
                credential: Credential::AccessToken { project_id },
                ..
            }) => Some(project_id),
            Principal::User(_) => None,
            Principal::Agent(a) => Some(&a.project_id),
        }
    }

    /// An unscoped platform admin: a platform admin on a session token. Only
    /// such a caller may do hub-wide administration without a binding, and
    /// only such a caller may see perf-trace response headers.
    pub(crate) fn is_unscoped_platform_admin(&self) -> bool {
        matches!(
            self,
            Principal::User(UserPrincipal {
                is_platform_admin: true,
                credential: Credential::Session,
                ..
            })
        )
    }
}
