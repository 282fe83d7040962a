//! Authorization: principals, actions, the request-local memo, the decision
//! service and its audit records.

mod action;
pub mod audit;
mod authorizer;
mod memo;
mod principal;

pub use action::Action;
pub(crate) use action::Permissions;
pub(crate) use action::{ActionNames, Verbs};
pub use audit::{
    AuditEmitter, AuditEntry, AuditLog, AuditOutcome, AuditRecord, ChannelAuditSink, Resource,
    TracedAuditEmitter,
};
pub use authorizer::Authorizer;
pub(crate) use authorizer::ListScope;
pub(crate) use memo::AuthzMemo;
pub(crate) use principal::AgentPrincipal;
pub use principal::{Credential, Principal, UserPrincipal};
