//! The authorization service: decides what the caller may do, reading its
//! inputs only through the [`AuthzStore`] behind a request-local
//! [`AuthzMemo`], and emitting one audit record per decision.
//!
//! Permissions come from role bindings (of the caller, of its groups with
//! their parents, and, limited to the delegated actions, of the users it acts
//! for), from the creator role on agents the caller created, and are then
//! narrowed by the project's access constraints.
//!
//! Two rules come before all of these: a credential limited to one project
//! (an access token, an agent's own token) is denied everything outside it,
//! and the creator role applies only while the user still holds a role in
//! the agent's project, so leaving a project ends control of the agents one
//! created there.

use std::cell::{OnceCell, RefCell};
use std::collections::{BTreeSet, HashMap};
use std::rc::Rc;
use std::time::SystemTime;

use perf_trace_core::{record::DecisionBatch, record::Outcome};

use super::audit::{AuditEmitter, AuditOutcome, AuditRecord, Resource};
use super::{Action, AuthzMemo, Permissions, Principal};
use crate::model::{AccessConstraint, Agent, BindingScope, Id, PrincipalRef, RoleBinding};
use crate::perf::keys::AuthzBatch;
use crate::settings::hub::CreatorRoles;
use crate::store::{AuthzStore, StoreResult};

/// Where a caller may list agents across projects.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum ListScope {
    /// Every project.
    All,
    /// These projects (sorted).
    Projects(Vec<Id>),
}

/// One request's authorization service.
pub struct Authorizer<'a, S: ?Sized, A: ?Sized> {
    memo: AuthzMemo<'a, S>,
    audit: &'a A,
    principal: &'a Principal,
    me: PrincipalRef,
    scopes: RefCell<HashMap<Option<Id>, Scope>>,
    creator: OnceCell<Permissions>,
    /// The Hub's creator role as last read, when shared.
    roles: Option<&'a CreatorRoles>,
}

/// Everything a decision on an agent reads, for the agents of one project.
struct AgentInputs {
    scope: Scope,
    /// The creator role's permissions, when it applies in this project (the
    /// caller is a user, not a platform admin, holding a role here).
    creator: Permissions,
    constraints: Rc<[AccessConstraint]>,
}

/// What the caller's own role bindings give it at the hub or in a project.
#[derive(Debug, Clone, Copy)]
struct Scope {
    /// Everything granted there (own roles, groups, delegations).
    permissions: Permissions,
    /// Whether the caller holds a role there in its own name or through a
    /// group (a delegation lends actions, not a role).
    has_role: bool,
}

impl<'a, S: AuthzStore + ?Sized, A: AuditEmitter + ?Sized> Authorizer<'a, S, A> {
    /// The service for one request by `principal`.
    pub fn new(store: &'a S, audit: &'a A, principal: &'a Principal) -> Self {
        Authorizer {
            memo: AuthzMemo::new(store),
            audit,
            principal,
            me: principal.reference(),
            scopes: RefCell::new(HashMap::new()),
            creator: OnceCell::new(),
            roles: None,
        }
    }

    /// The same service reading the creator role through the Hub's
    /// `roles`, which checks a stored value once per change and reports an
    /// unusable one. Without it each request checks the value itself and
    /// reports nothing.
    pub(crate) fn with_creator_roles(mut self, roles: &'a CreatorRoles) -> Self {
        self.roles = Some(roles);
        self
    }

    /// The request-local memo (for non-decision reads such as creator names).
    pub fn memo(&self) -> &AuthzMemo<'a, S> {
        &self.memo
    }

    /// The caller.
    pub(crate) fn principal(&self) -> &Principal {
        self.principal
    }

    fn conclude(
        &self,
        action: Action,
        resource: Resource,
        result: StoreResult<bool>,
    ) -> StoreResult<bool> {
        let outcome = match result {
            Ok(true) => AuditOutcome::Allow,
            Ok(false) => AuditOutcome::Deny,
            Err(_) => AuditOutcome::Error,
        };
        self.emit(action, resource, outcome);
        result
    }

    fn emit(&self, action: Action, resource: Resource, outcome: AuditOutcome) {
        self.audit.emit(self.record(action, resource, outcome));
    }

    fn record(&self, action: Action, resource: Resource, outcome: AuditOutcome) -> AuditRecord {
        AuditRecord {
            at: SystemTime::now(),
            principal: self.me.clone(),
            action,
            resource,
            outcome,
        }
    }

    /// Emits one record per agent and action of a batch, agent by agent in
    /// `actions`' order, as one batch: `outcome` gives each record's outcome.
    fn emit_agents_batch(
        &self,
        agents: &[Agent],
        actions: &[Action],
        outcomes: DecisionBatch,
        outcome: impl Fn(usize, Action) -> AuditOutcome,
    ) {
        let outcome = &outcome;
        let mut records = agents.iter().enumerate().flat_map(|(i, agent)| {
            actions.iter().map(move |&action| {
                self.record(
                    action,
                    Resource::Agent(agent.id.clone()),
                    outcome(i, action),
                )
            })
        });
        self.audit.emit_batch(outcomes, &mut records);
    }

    /// Records a decision made outside the permission model (such as a
    /// user's own event subject).
    pub fn decide(&self, action: Action, resource: Resource, allowed: bool) -> bool {
        self.conclude(action, resource, Ok(allowed))
            .unwrap_or(false)
    }

    /// The caller's permissions at the hub (`None`) or in a project. For a
    /// user, the creator role is read at the same time, so that the reads a
    /// request makes do not depend on which agents a page happens to hold.
    pub(crate) fn permissions_at(&self, project: Option<&Id>) -> StoreResult<Permissions> {
        Ok(self.scope_at(project)?.permissions)
    }

    fn scope_at(&self, project: Option<&Id>) -> StoreResult<Scope> {
        let key = project.cloned();
        if let Some(scope) = self.scopes.borrow().get(&key) {
            return Ok(*scope);
        }
        let scope = self.compute_scope(project)?;
        if matches!(self.principal, Principal::User(u) if !u.is_platform_admin) && project.is_some()
        {
            self.creator_permissions()?;
        }
        self.scopes.borrow_mut().insert(key, scope);
        Ok(scope)
    }

    fn compute_scope(&self, project: Option<&Id>) -> StoreResult<Scope> {
        if let Some(limit) = self.principal.project_limit() {
            if project != Some(limit) {
                return Ok(Scope {
                    permissions: Permissions::NONE,
                    has_role: false,
                });
            }
        }
        if self.principal.user().is_some_and(|u| u.is_platform_admin) {
            return Ok(Scope {
                permissions: Permissions::all(),
                has_role: true,
            });
        }
        let groups = self.memo.effective_groups(&self.me)?;
        let edges = self.memo.delegations(&self.me)?;
        let own: Vec<PrincipalRef> = std::iter::once(self.me.clone())
            .chain(groups.iter().map(|g| PrincipalRef::group(g.clone())))
            .collect();
        let mut everyone = own.clone();
        everyone.extend(
            edges
                .iter()
                .map(|e| PrincipalRef::user(e.delegator_user_id.clone())),
        );
        let bindings = self.memo.bindings_of(&everyone)?;
        let role_ids: Vec<Id> = bindings
            .iter()
            .map(|b| b.role_id.clone())
            .collect::<BTreeSet<_>>()
            .into_iter()
            .collect();
        let roles: HashMap<Id, Permissions> = self
            .memo
            .roles(&role_ids)?
            .iter()
            .map(|r| (r.id.clone(), Permissions::from_patterns(&r.permissions)))
            .collect();
        let applies = |b: &RoleBinding| match &b.scope {
            BindingScope::Hub => true,
            BindingScope::Project(p) => Some(p) == project,
        };
        let granted = |b: &RoleBinding| roles.get(&b.role_id).copied().unwrap_or_default();

        let own_bindings = || {
            bindings
                .iter()
                .filter(|b| own.contains(&b.principal) && applies(b))
        };
        let has_role = own_bindings().next().is_some();
        let mut perms = own_bindings().fold(Permissions::NONE, |acc, b| acc.union(granted(b)));
        for edge in edges.iter() {
            if edge.project_id.as_ref().is_some_and(|p| Some(p) != project) {
                continue;
            }
            let delegator = PrincipalRef::user(edge.delegator_user_id.clone());
            let lent = bindings
                .iter()
                .filter(|b| b.principal == delegator && applies(b))
                .fold(Permissions::NONE, |acc, b| acc.union(granted(b)));
            perms = perms.union(lent.intersection(Permissions::from_patterns(&edge.actions)));
        }
        Ok(Scope {
            permissions: perms,
            has_role,
        })
    }

    /// What a user may do with the agents they created (the role named by
    /// the `authz.creator_role` hub setting).
    pub(crate) fn creator_permissions(&self) -> StoreResult<Permissions> {
        if let Some(p) = self.creator.get() {
            return Ok(*p);
        }
        let stored = self.memo.hub_setting(crate::settings::hub::CREATOR_ROLE)?;
        let name = match self.roles {
            Some(roles) => roles.role(stored.as_deref()),
            // Unshared: checked for this request alone, reported nowhere.
            None => CreatorRoles::default().role(stored.as_deref()),
        };
        let perms = self
            .memo
            .role_by_name(&name)?
            .map(|r| Permissions::from_patterns(&r.permissions))
            .unwrap_or_default();
        Ok(*self.creator.get_or_init(|| perms))
    }

    /// Decides `action` at hub scope.
    pub(crate) fn allow_hub(&self, action: Action) -> StoreResult<bool> {
        let result = self.permissions_at(None).map(|p| p.contains(action));
        self.conclude(action, Resource::Hub, result)
    }

    /// Decides `action` on a project.
    pub(crate) fn allow_project(&self, action: Action, project_id: &Id) -> StoreResult<bool> {
        let result = self
            .permissions_at(Some(project_id))
            .map(|p| p.contains(action));
        self.conclude(action, Resource::Project(project_id.clone()), result)
    }

    /// Whether the caller's credential reaches `agent`'s project at all:
    /// before any other rule, a credential limited to one project sees
    /// nothing outside it, whatever the caller's roles or creations.
    fn reaches(&self, agent: &Agent) -> bool {
        self.principal
            .project_limit()
            .is_none_or(|limit| *limit == agent.project_id)
    }

    /// What deciding on the agents of one project needs, read once.
    fn agent_inputs(&self, project: &Id) -> StoreResult<AgentInputs> {
        let scope = self.scope_at(Some(project))?;
        let creator = match self.principal {
            Principal::User(u) if !u.is_platform_admin && scope.has_role => {
                self.creator_permissions()?
            }
            _ => Permissions::NONE,
        };
        Ok(AgentInputs {
            scope,
            creator,
            constraints: self.memo.project_constraints(project)?,
        })
    }

    /// The decision on `agent` from its project's inputs (no store read).
    fn agent_decision(&self, action: Action, agent: &Agent, inputs: &AgentInputs) -> bool {
        let mut allowed = inputs.scope.permissions.contains(action);
        if !allowed {
            allowed = match self.principal {
                // The creator role lasts only while the creator still holds
                // a role in the agent's project (`inputs.creator` is empty
                // otherwise).
                Principal::User(u) if u.id == agent.created_by => inputs.creator.contains(action),
                Principal::Agent(a) => a.id == agent.id && action == Action::AgentRead,
                Principal::User(_) => false,
            };
        }
        allowed
            && !inputs
                .constraints
                .iter()
                .any(|c| c.action == action.as_str() && c.deny_phases.contains(&agent.phase))
    }

    fn agent_allows(&self, action: Action, agent: &Agent) -> StoreResult<bool> {
        if !self.reaches(agent) {
            return Ok(false);
        }
        let inputs = self.agent_inputs(&agent.project_id)?;
        Ok(self.agent_decision(action, agent, &inputs))
    }

    /// Decides every action of `actions` on every agent of `agents` in one
    /// batch, as a batch check does: each input (the caller's scope, the
    /// creator role, the constraints) is read once per project of the
    /// batch, then every decision is made from them. Still one audit record
    /// per decision, agent by agent in `actions`' order, emitted together
    /// once every decision is made (so a traced request times the batch's
    /// emission once). Returns, per agent, the actions allowed.
    ///
    /// When an input cannot be read, every decision of the batch is
    /// recorded as an error and the error is returned.
    pub(crate) fn agents_batch(
        &self,
        agents: &[Agent],
        actions: &[Action],
    ) -> StoreResult<Vec<Permissions>> {
        perf_trace_core::count(AuthzBatch::Count);
        perf_trace_core::record::count_n(
            AuthzBatch::Largest,
            (agents.len() * actions.len()) as u64,
        );
        let mut projects: Vec<&Id> = agents
            .iter()
            .filter(|a| self.reaches(a))
            .map(|a| &a.project_id)
            .collect();
        projects.sort();
        projects.dedup();
        let inputs: StoreResult<HashMap<&Id, AgentInputs>> = projects
            .into_iter()
            .map(|project| Ok((project, self.agent_inputs(project)?)))
            .collect();
        let inputs = match inputs {
            Ok(inputs) => inputs,
            Err(error) => {
                let outcomes = DecisionBatch {
                    other: (agents.len() * actions.len()) as u64,
                    ..DecisionBatch::default()
                };
                self.emit_agents_batch(agents, actions, outcomes, |_, _| AuditOutcome::Error);
                return Err(error);
            }
        };
        let mut outcomes = DecisionBatch::default();
        let allowed: Vec<Permissions> = agents
            .iter()
            .map(|agent| {
                let inputs = inputs
                    .get(&agent.project_id)
                    .filter(|_| self.reaches(agent));
                let mut allowed = Permissions::NONE;
                for &action in actions {
                    if inputs.is_some_and(|inputs| self.agent_decision(action, agent, inputs)) {
                        allowed.insert(action);
                        outcomes.add(Outcome::Allow);
                    } else {
                        outcomes.add(Outcome::Deny);
                    }
                }
                allowed
            })
            .collect();
        self.emit_agents_batch(agents, actions, outcomes, |i, action| {
            if allowed[i].contains(action) {
                AuditOutcome::Allow
            } else {
                AuditOutcome::Deny
            }
        });
        Ok(allowed)
    }

    /// Decides `action` on an agent.
    pub fn allow_agent(&self, action: Action, agent: &Agent) -> StoreResult<bool> {
        let result = self.agent_allows(action, agent);
        self.conclude(action, Resource::Agent(agent.id.clone()), result)
    }

    /// Decides each of `actions` on an agent (one decision each) and returns
    /// those allowed.
    pub fn agent_permissions(&self, agent: &Agent, actions: &[Action]) -> StoreResult<Permissions> {
        let mut allowed = Permissions::NONE;
        for &action in actions {
            if self.allow_agent(action, agent)? {
                allowed.insert(action);
            }
        }
        Ok(allowed)
    }

    /// Decides each of `actions` on a project and returns those allowed.
    pub(crate) fn project_permissions(
        &self,
        project_id: &Id,
        actions: &[Action],
    ) -> StoreResult<Permissions> {
        let mut allowed = Permissions::NONE;
        for &action in actions {
            if self.allow_project(action, project_id)? {
                allowed.insert(action);
            }
        }
        Ok(allowed)
    }

    /// Decides each of `actions` at hub scope and returns those allowed.
    pub(crate) fn hub_permissions(&self, actions: &[Action]) -> StoreResult<Permissions> {
        let mut allowed = Permissions::NONE;
        for &action in actions {
            if self.allow_hub(action)? {
                allowed.insert(action);
            }
        }
        Ok(allowed)
    }

    /// Decides hub administration: allowed to an unscoped platform admin, or
    /// to a user holding, in their own name (not through a group), a
    /// hub-scope role that grants `hub.admin`. Rare, so read one binding list
    /// and one role at a time rather than in batches.
    pub(crate) fn allow_hub_admin(&self) -> StoreResult<bool> {
        let result = (|| {
            if self.principal.is_unscoped_platform_admin() {
                return Ok(true);
            }
            if self.principal.project_limit().is_some() || self.principal.user().is_none() {
                return Ok(false);
            }
            for binding in self.memo.bindings_of_one(&self.me)?.iter() {
                if binding.scope != BindingScope::Hub {
                    continue;
                }
                if let Some(role) = self.memo.role(&binding.role_id)? {
                    if Permissions::from_patterns(&role.permissions).contains(Action::HubAdmin) {
                        return Ok(true);
                    }
                }
            }
            Ok(false)
        })();
        self.conclude(Action::HubAdmin, Resource::Hub, result)
    }

    /// The projects whose agents the caller may list: one decision for the
    /// hub when it may list everywhere, otherwise one per candidate project
    /// (those its credential, bindings or delegations name).
    pub(crate) fn listable_projects(&self) -> StoreResult<ListScope> {
        if let Some(limit) = self.principal.project_limit() {
            let limit = limit.clone();
            let allowed = self.allow_project(Action::AgentList, &limit)?;
            return Ok(ListScope::Projects(if allowed {
                vec![limit]
            } else {
                Vec::new()
            }));
        }
        if self.permissions_at(None)?.contains(Action::AgentList) {
            self.allow_hub(Action::AgentList)?;
            return Ok(ListScope::All);
        }
        let groups = self.memo.effective_groups(&self.me)?;
        let edges = self.memo.delegations(&self.me)?;
        let mut everyone: Vec<PrincipalRef> = std::iter::once(self.me.clone())
            .chain(groups.iter().map(|g| PrincipalRef::group(g.clone())))
            .collect();
        everyone.extend(
            edges
                .iter()
                .map(|e| PrincipalRef::user(e.delegator_user_id.clone())),
        );
        let mut candidates: BTreeSet<Id> = self
            .memo
            .bindings_of(&everyone)?
            .into_iter()
            .filter_map(|b| match b.scope {
                BindingScope::Project(p) => Some(p),
                BindingScope::Hub => None,
            })
            .collect();
        candidates.extend(edges.iter().filter_map(|e| e.project_id.clone()));
        let mut allowed = Vec::new();
        for project in candidates {
            if self.allow_project(Action::AgentList, &project)? {
                allowed.push(project);
            }
        }
        Ok(ListScope::Projects(allowed))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::authz::{AgentPrincipal, ChannelAuditSink, Credential, UserPrincipal};
    use crate::listing::{self, ListRequest, ListShape, ListTarget, View};
    use crate::perf::keys::HubSchema;
    use crate::seed::{seeded_for_tests, SeedDocument};
    use crate::store::agents::{read_agents, RowQuery, RowScope};
    use crate::store::{CountedAuthzStore, SqliteStore};
    use perf_trace_core::Recorder;

    fn callers(doc: &SeedDocument, agent: &Agent) -> Vec<Principal> {
        let user = |id: &str, admin, credential| {
            Principal::User(UserPrincipal {
                id: Id::from(id),
                is_platform_admin: admin,
                credential,
            })
        };
        let limited = |project: &str| Credential::AccessToken {
            project_id: Id::from(project),
        };
        vec![
            user(&doc.owner_user_id, false, Credential::Session),
            user(&doc.member_user_id, false, Credential::Session),
            user(&doc.member_user_id, false, limited(&doc.project_id)),
            user(&doc.member_user_id, false, limited(&doc.other_project_id)),
            user(&doc.admin_user_id, true, Credential::Session),
            user(&doc.admin_user_id, true, limited(&doc.other_project_id)),
            Principal::Agent(AgentPrincipal {
                id: agent.id.clone(),
                project_id: agent.project_id.clone(),
            }),
        ]
    }

    /// Keeps every record emitted, in order (the Hub's sink queues a
    /// batch's records as one entry per question).
    #[derive(Default)]
    struct Recording(parking_lot::Mutex<Vec<AuditRecord>>);

    impl AuditEmitter for Recording {
        fn emit(&self, record: AuditRecord) {
            self.0.lock().push(record);
        }
    }

    fn decisions(log: &Recording) -> Vec<(Action, Resource, AuditOutcome)> {
        log.0
            .lock()
            .iter()
            .map(|r| (r.action, r.resource.clone(), r.outcome))
            .collect()
    }

    #[test]
    fn a_batch_decides_as_one_call_per_agent_would() {
        let dir = tempfile::tempdir().unwrap();
        let (db, doc) = seeded_for_tests(dir.path(), "batch");
        let store = SqliteStore::new(db.clone());
        let every_agent = read_agents(
            &db,
            &RowQuery {
                scope: &RowScope::All,
                ids: None,
                page: None,
            },
        )
        .unwrap()
        .agents;
        assert!(every_agent.len() > 30, "both projects");
        let actions = Action::ALL;
        for principal in callers(&doc, &every_agent[0]) {
            let batch_log = Recording::default();
            let batch = Authorizer::new(&store, &batch_log, &principal)
                .agents_batch(&every_agent, &actions)
                .unwrap();
            let one_log = Recording::default();
            let one_by_one = Authorizer::new(&store, &one_log, &principal);
            for (agent, allowed) in every_agent.iter().zip(&batch) {
                for action in actions {
                    assert_eq!(
                        allowed.contains(action),
                        one_by_one.allow_agent(action, agent).unwrap(),
                        "{principal:?} {action:?} {}",
                        agent.id
                    );
                }
            }
            // The same records, one per decision, in the same order.
            let (batched, one_by_one) = (decisions(&batch_log), decisions(&one_log));
            assert!(batched == one_by_one, "{principal:?}");
            assert_eq!(batch_log.0.lock().len(), every_agent.len() * actions.len());
        }
    }

    #[test]
    fn a_full_list_decides_in_three_batches() {
        let dir = tempfile::tempdir().unwrap();
        let (db, doc) = seeded_for_tests(dir.path(), "batch");
        let store = CountedAuthzStore::new(SqliteStore::new(db.clone()));
        let (sink, _log) = ChannelAuditSink::start(16_384, 0);
        let member = Principal::User(UserPrincipal {
            id: Id::from(doc.member_user_id.as_str()),
            is_platform_admin: false,
            credential: Credential::Session,
        });
        let request = ListRequest {
            target: ListTarget::Project(Id::from(doc.project_id.as_str())),
            shape: ListShape::Legacy,
            view: View::Full,
        };
        let recorder = Recorder::new::<HubSchema>();
        let view = recorder.in_scope(|| {
            let authz = Authorizer::new(&store, &sink, &member);
            listing::list_agents(&authz, &db, &request).unwrap()
        });
        let listed = view.agents.len() as u64;
        assert!(listed > 0);
        let snapshot = recorder.snapshot();
        // Read over the page, capabilities (five actions) and
        // messageability over the readable agents.
        assert_eq!(snapshot.counter(AuthzBatch::Count), 3);
        assert_eq!(snapshot.counter(AuthzBatch::Largest), 5 * listed);
    }
}
