//! Agent lists, phase by phase in the contract's order: `list_scope_authz`,
//! `list_db_read`, `list_read_authz`, `enrich`, `capabilities`,
//! `messageability`, `scope_capabilities` (then `serialize`, timed by the
//! tracing layer while the lazy body is encoded).
//!
//! Each phase is one function marked `#[traced_phase]`. Store reads do not
//! grow with the number of agents: the authorizer reads its inputs once per
//! request through the memo, role definitions in one batch, and one user per
//! distinct creator.

use std::collections::HashMap;
use std::sync::Arc;

use perf_trace_core::traced_phase;

use crate::authz::{Action, ActionNames, AuditEmitter, Authorizer, ListScope, Permissions, Verbs};
use crate::model::{Agent, AgentPhase, Id};
use crate::paging::{encode_cursor, PageRequest};
use crate::perf::keys::Phase;
use crate::store::agents::{read_agents, RowPage, RowQuery, RowScope};
use crate::store::db::{Db, DbError};
use crate::store::AuthzStore;
use crate::views::{
    AgentListView, AgentView, CompactAgentView, CreatorView, FullAgentView, Millis, ScopeView,
};

/// Why a list was refused or failed; the API layer turns it into a
/// response (404, 403, or the database error's status).
#[derive(Debug, thiserror::Error)]
pub enum ListError {
    /// The listed project does not exist.
    #[error("project not found")]
    ProjectNotFound,
    /// The caller may not list the project's agents.
    #[error("forbidden")]
    Forbidden,
    /// Reading the store or the agent rows failed.
    #[error(transparent)]
    Db(#[from] DbError),
}

/// Which agents a list covers.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ListTarget {
    /// One project (`/api/v1/projects/{id}/agents`, or `/api/v1/agents?projectId=`).
    Project(Id),
    /// Every project the caller may list (`/api/v1/agents`).
    Global,
}

/// The shape of a list.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ListShape {
    /// Every agent, by name.
    Legacy,
    /// One sorted page.
    Page(PageRequest),
    /// The named agents, by name.
    Ids(Vec<Id>),
}

/// How much of each agent to show.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum View {
    /// Everything, with creator, capabilities and messageability.
    #[default]
    Full,
    /// Ids, names, phase and activity only.
    Compact,
}

/// One list request.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ListRequest {
    /// Which agents.
    pub target: ListTarget,
    /// Which shape.
    pub shape: ListShape,
    /// How much of each.
    pub view: View,
}

/// The per-agent actions reported as capabilities (besides `read`, which
/// every listed agent has).
pub const AGENT_CAPABILITIES: [Action; 5] = [
    Action::AgentUpdate,
    Action::AgentDelete,
    Action::AgentStart,
    Action::AgentStop,
    Action::AgentAttach,
];

/// The project actions reported as scope capabilities.
pub(crate) const PROJECT_CAPABILITIES: [Action; 4] = [
    Action::AgentCreate,
    Action::ProjectUpdate,
    Action::ProjectDelete,
    Action::EventsSubscribe,
];

/// The hub actions reported as scope capabilities of a global list.
pub(crate) const HUB_CAPABILITIES: [Action; 2] = [Action::HubAdmin, Action::EventsSubscribe];

/// Where the list was authorized: what rows to read and which scope to report.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AuthorizedScope {
    /// The rows the caller may list.
    pub rows: RowScope,
    /// The project of a project list; `None` for a global list.
    pub project: Option<Id>,
}

/// Runs a list request. Returns the view, ready to be encoded lazily.
pub fn list_agents<S, A>(
    authz: &Authorizer<'_, S, A>,
    db: &Db,
    request: &ListRequest,
) -> Result<AgentListView, ListError>
where
    S: AuthzStore + ?Sized,
    A: AuditEmitter + ?Sized,
{
    let scope = list_scope_authz(authz, &request.target)?;
    let page = list_db_read(db, &scope, &request.shape)?;
    let next_cursor = match (&request.shape, &page.next) {
        (ListShape::Page(p), Some(next)) => Some(encode_cursor(p.sort, next)),
        _ => None,
    };
    let readable = list_read_authz(authz, page.agents)?;
    let agents = match request.view {
        View::Compact => readable
            .into_iter()
            .map(|a| AgentView::Compact(CompactAgentView::from(a)))
            .collect(),
        View::Full => {
            let creators = enrich(authz, &readable)?;
            let capabilities = capabilities(authz, &readable)?;
            let messageable = messageability(authz, &readable)?;
            readable
                .into_iter()
                .zip(capabilities)
                .zip(messageable)
                .map(|((agent, caps), messageable)| {
                    AgentView::Full(full_view(agent, &creators, caps, messageable))
                })
                .collect()
        }
    };
    let scope = scope_capabilities(authz, scope.project.as_ref())?;
    Ok(AgentListView {
        agents,
        next_cursor,
        scope,
    })
}

/// Builds the full view of one agent.
pub fn full_view(
    agent: Agent,
    creators: &HashMap<Id, Arc<str>>,
    capabilities: Permissions,
    messageable: bool,
) -> FullAgentView {
    let display_name = creators.get(&agent.created_by).cloned();
    FullAgentView {
        id: agent.id,
        project_id: agent.project_id,
        name: agent.name,
        phase: agent.phase,
        activity: agent.activity,
        created_by: CreatorView {
            id: agent.created_by,
            display_name,
        },
        created_at: Millis(agent.created_at),
        updated_at: Millis(agent.updated_at),
        config: agent.config,
        capabilities: Verbs(capabilities),
        messageable,
    }
}

/// Decides whether the caller may list the target: one decision for a
/// project (404 when it does not exist, 403 when denied), or the set of
/// listable projects for a global list.
#[traced_phase(Phase::ListScopeAuthz)]
pub fn list_scope_authz<S, A>(
    authz: &Authorizer<'_, S, A>,
    target: &ListTarget,
) -> Result<AuthorizedScope, ListError>
where
    S: AuthzStore + ?Sized,
    A: AuditEmitter + ?Sized,
{
    match target {
        ListTarget::Project(id) => {
            if authz.memo().project(id)?.is_none() {
                return Err(ListError::ProjectNotFound);
            }
            if !authz.allow_project(Action::AgentList, id)? {
                return Err(ListError::Forbidden);
            }
            Ok(AuthorizedScope {
                rows: RowScope::Project(id.clone()),
                project: Some(id.clone()),
            })
        }
        ListTarget::Global => Ok(AuthorizedScope {
            rows: match authz.listable_projects()? {
                ListScope::All => RowScope::All,
                ListScope::Projects(ids) => RowScope::Projects(ids),
            },
            project: None,
        }),
    }
}

/// Reads the agent rows of the authorized scope (one statement).
#[traced_phase(Phase::ListDbRead)]
pub fn list_db_read(
    db: &Db,
    scope: &AuthorizedScope,
    shape: &ListShape,
) -> Result<RowPage, ListError> {
    if matches!(&scope.rows, RowScope::Projects(ids) if ids.is_empty()) {
        return Ok(RowPage {
            agents: Vec::new(),
            next: None,
        });
    }
    let query = RowQuery {
        scope: &scope.rows,
        ids: match shape {
            ListShape::Ids(ids) => Some(ids),
            _ => None,
        },
        page: match shape {
            ListShape::Page(page) => Some(page),
            _ => None,
        },
    };
    Ok(read_agents(db, &query)?)
}

/// Keeps the agents the caller may read (one decision per agent, the page
/// in one batch).
#[traced_phase(Phase::ListReadAuthz)]
pub(crate) fn list_read_authz<S, A>(
    authz: &Authorizer<'_, S, A>,
    agents: Vec<Agent>,
) -> Result<Vec<Agent>, ListError>
where
    S: AuthzStore + ?Sized,
    A: AuditEmitter + ?Sized,
{
    // The constraints of every project on the page, in one read.
    let mut projects: Vec<Id> = agents.iter().map(|a| a.project_id.clone()).collect();
    projects.sort();
    projects.dedup();
    authz.memo().constraints(&projects)?;
    let decisions = authz.agents_batch(&agents, &[Action::AgentRead])?;
    Ok(agents
        .into_iter()
        .zip(decisions)
        .filter(|(_, allowed)| allowed.contains(Action::AgentRead))
        .map(|(agent, _)| agent)
        .collect())
}

/// The display names of the agents' creators (one user read per distinct creator).
#[traced_phase(Phase::Enrich)]
pub fn enrich<S, A>(
    authz: &Authorizer<'_, S, A>,
    agents: &[Agent],
) -> Result<HashMap<Id, Arc<str>>, ListError>
where
    S: AuthzStore + ?Sized,
    A: AuditEmitter + ?Sized,
{
    let users = authz.memo().users(agents.iter().map(|a| &a.created_by))?;
    Ok(users
        .into_iter()
        .map(|(id, user)| (id, Arc::from(user.display_name.as_str())))
        .collect())
}

/// What the caller may do with each agent (one decision per agent and
/// action, the page in one batch).
#[traced_phase(Phase::Capabilities)]
pub fn capabilities<S, A>(
    authz: &Authorizer<'_, S, A>,
    agents: &[Agent],
) -> Result<Vec<Permissions>, ListError>
where
    S: AuthzStore + ?Sized,
    A: AuditEmitter + ?Sized,
{
    let mut capabilities = authz.agents_batch(agents, &AGENT_CAPABILITIES)?;
    for caps in &mut capabilities {
        caps.insert(Action::AgentRead);
    }
    Ok(capabilities)
}

/// Whether each agent can be messaged by the caller now: allowed to message
/// it (the page in one batch), and the agent is running.
#[traced_phase(Phase::Messageability)]
pub(crate) fn messageability<S, A>(
    authz: &Authorizer<'_, S, A>,
    agents: &[Agent],
) -> Result<Vec<bool>, ListError>
where
    S: AuthzStore + ?Sized,
    A: AuditEmitter + ?Sized,
{
    let decisions = authz.agents_batch(agents, &[Action::AgentMessage])?;
    Ok(agents
        .iter()
        .zip(decisions)
        .map(|(agent, allowed)| {
            allowed.contains(Action::AgentMessage) && agent.phase == AgentPhase::Running
        })
        .collect())
}

/// What the caller may do in the list's scope, and its membership there.
#[traced_phase(Phase::ScopeCapabilities)]
pub fn scope_capabilities<S, A>(
    authz: &Authorizer<'_, S, A>,
    project: Option<&Id>,
) -> Result<ScopeView, ListError>
where
    S: AuthzStore + ?Sized,
    A: AuditEmitter + ?Sized,
{
    Ok(match project {
        Some(id) => {
            let membership = match authz.principal().user() {
                Some(user) => authz
                    .memo()
                    .membership(id, &user.id)?
                    .map(|m| m.role.clone()),
                None => None,
            };
            ScopeView {
                kind: "project",
                id: Some(id.clone()),
                capabilities: ActionNames(authz.project_permissions(id, &PROJECT_CAPABILITIES)?),
                membership,
            }
        }
        None => ScopeView {
            kind: "hub",
            id: None,
            capabilities: ActionNames(authz.hub_permissions(&HUB_CAPABILITIES)?),
            membership: None,
        },
    })
}
