//! Turning requested subjects into an authorized subscription: `sse_expand`
//! resolves each subject to the patterns it stands for (a group brings its
//! parent groups, `users.me` brings the caller's groups), then
//! `sse_authorize` makes one decision per expanded subject.

use std::collections::HashSet;

use perf_trace_core::traced_phase;

use super::subjects::{Pattern, Subject, Token, UserRef};
use crate::authz::{Action, AuditEmitter, Authorizer, Principal, Resource};
use crate::model::Id;
use crate::perf::keys::Phase;
use crate::store::db::DbError;
use crate::store::AuthzStore;

/// What an expanded subject needs to be allowed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Requirement {
    /// Subscribing to a project's events.
    Project(Id),
    /// Reading an agent.
    Agent(Id),
    /// Belonging to a group.
    Group(Id),
    /// Being the user.
    User(Id),
    /// Nothing can allow it (an unknown group, `users.me` for an agent).
    Impossible,
}

/// One expanded subject.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Expanded {
    /// The pattern events are matched against.
    pub(crate) pattern: Pattern,
    /// What allows it.
    pub(crate) requires: Requirement,
}

/// Most parent-group levels followed.
const MAX_GROUP_DEPTH: usize = 8;

/// Expands the requested subjects.
#[traced_phase(Phase::SseExpand)]
pub(crate) fn expand_subjects<S, A>(
    authz: &Authorizer<'_, S, A>,
    subjects: &[Subject],
) -> Result<Vec<Expanded>, DbError>
where
    S: AuthzStore + ?Sized,
    A: AuditEmitter + ?Sized,
{
    let memo = authz.memo();
    let mut out = Vec::new();
    for subject in subjects {
        match subject {
            Subject::Project { project, pattern } => out.push(Expanded {
                pattern: pattern.clone(),
                requires: Requirement::Project(project.clone()),
            }),
            Subject::Agent { agent, pattern } => out.push(Expanded {
                pattern: pattern.clone(),
                requires: Requirement::Agent(agent.clone()),
            }),
            Subject::Group { slug, pattern } => match memo.group_by_slug(slug)? {
                None => out.push(Expanded {
                    pattern: pattern.clone(),
                    requires: Requirement::Impossible,
                }),
                Some(group) => {
                    // The group and its ancestors, breadth first.
                    let mut seen = HashSet::new();
                    let mut level = vec![group.as_ref().clone()];
                    for _ in 0..MAX_GROUP_DEPTH {
                        let mut next = Vec::new();
                        for g in level {
                            if !seen.insert(g.id.clone()) {
                                continue;
                            }
                            out.push(Expanded {
                                pattern: pattern.rerooted("groups", &g.slug),
                                requires: Requirement::Group(g.id.clone()),
                            });
                            next.extend(memo.parent_groups(&g.id)?.iter().cloned());
                        }
                        if next.is_empty() {
                            break;
                        }
                        level = next;
                    }
                }
            },
            Subject::User { user, pattern } => {
                let user_id = match (user, authz.principal()) {
                    (UserRef::Id(id), _) => Some(id.clone()),
                    (UserRef::Me, Principal::User(u)) => Some(u.id.clone()),
                    (UserRef::Me, Principal::Agent(_)) => None,
                };
                let Some(user_id) = user_id else {
                    out.push(Expanded {
                        pattern: pattern.clone(),
                        requires: Requirement::Impossible,
                    });
                    continue;
                };
                out.push(Expanded {
                    pattern: pattern.rerooted("users", &user_id),
                    requires: Requirement::User(user_id.clone()),
                });
                if matches!(user, UserRef::Me) {
                    let tail = if pattern.0.len() > 2 {
                        pattern.0[2..].to_vec()
                    } else {
                        vec![Token::Rest]
                    };
                    for g in memo.user_groups(&user_id)?.iter() {
                        let mut tokens = vec![
                            Token::Literal("groups".into()),
                            Token::Literal(g.slug.clone()),
                        ];
                        tokens.extend(tail.iter().cloned());
                        out.push(Expanded {
                            pattern: Pattern(tokens),
                            requires: Requirement::Group(g.id.clone()),
                        });
                    }
                }
            }
        }
    }
    Ok(out)
}

/// Decides every expanded subject (one decision each); the subscription is
/// accepted only when all are allowed. Returns the patterns to deliver. A
/// group or user subject is refused to a credential limited to a project.
#[traced_phase(Phase::SseAuthorize)]
pub(crate) fn authorize_subjects<S, A>(
    authz: &Authorizer<'_, S, A>,
    expanded: Vec<Expanded>,
) -> Result<Option<Vec<Pattern>>, DbError>
where
    S: AuthzStore + ?Sized,
    A: AuditEmitter + ?Sized,
{
    let memo = authz.memo();
    let me = authz.principal().reference();
    let admin = authz.principal().is_unscoped_platform_admin();
    // A credential limited to one project (an access token, an agent's own
    // token) is denied everything outside it: groups and users are.
    let unlimited = authz.principal().project_limit().is_none();
    let mut all_allowed = true;
    let mut patterns = Vec::with_capacity(expanded.len());
    for e in expanded {
        let allowed = match &e.requires {
            Requirement::Project(id) => authz.allow_project(Action::EventsSubscribe, id)?,
            Requirement::Agent(id) => match memo.agent(id)? {
                Some(agent) => authz.allow_agent(Action::AgentRead, &agent)?,
                None => authz.decide(Action::AgentRead, Resource::Agent(id.clone()), false),
            },
            Requirement::Group(id) => {
                let member = unlimited
                    && (admin
                        || memo.group_membership(id, &me)?.is_some()
                        || memo.effective_groups(&me)?.contains(id));
                authz.decide(Action::GroupRead, Resource::Group(id.clone()), member)
            }
            Requirement::User(id) => {
                let own = unlimited
                    && (admin || (me.kind == crate::model::PrincipalKind::User && me.id == *id));
                authz.decide(Action::EventsSubscribe, Resource::User(id.clone()), own)
            }
            Requirement::Impossible => authz.decide(Action::EventsSubscribe, Resource::Hub, false),
        };
        all_allowed &= allowed;
        patterns.push(e.pattern);
    }
    Ok(all_allowed.then_some(patterns))
}
