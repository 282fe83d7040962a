//! Authorization: principals, actions, the request-local memo, the decision
//! service and its audit records.

mod action;
pub mod audit;
mod authorizer;
mod memo;
mod principal;

pub use action::{Action, ActionNames, Permissions, Verbs};
pub use audit::{
    AuditEmitter, AuditEntry, AuditLog, AuditOutcome, AuditRecord, ChannelAuditSink, Resource,
    TracedAuditEmitter,
};
pub use authorizer::{Authorizer, ListScope, CREATOR_ROLE_SETTING, DEFAULT_CREATOR_ROLE};
pub use memo::AuthzMemo;
pub use principal::{AgentPrincipal, Credential, Principal, UserPrincipal};
