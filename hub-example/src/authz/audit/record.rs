//! What an authorization decision emits: an [`AuditRecord`], who asked for
//! what on which resource, and what was concluded.

use std::time::SystemTime;

use perf_trace_core::record::Outcome;

use crate::authz::Action;
use crate::model::{Id, PrincipalRef};

/// What a decision concluded.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum AuditOutcome {
    /// Allowed.
    Allow,
    /// Denied.
    Deny,
    /// No conclusion: the inputs could not be read.
    Error,
}

impl From<AuditOutcome> for Outcome {
    fn from(outcome: AuditOutcome) -> Outcome {
        match outcome {
            AuditOutcome::Allow => Outcome::Allow,
            AuditOutcome::Deny => Outcome::Deny,
            AuditOutcome::Error => Outcome::Other,
        }
    }
}

/// What a decision was about.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Resource {
    /// The Hub as a whole.
    Hub,
    /// A project.
    Project(Id),
    /// An agent.
    Agent(Id),
    /// A group.
    Group(Id),
    /// Another user's event subject.
    User(Id),
}

/// One authorization decision.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AuditRecord {
    /// When it was decided.
    pub at: SystemTime,
    /// Who asked.
    pub principal: PrincipalRef,
    /// What for.
    pub action: Action,
    /// On what.
    pub resource: Resource,
    /// The conclusion.
    pub outcome: AuditOutcome,
}
