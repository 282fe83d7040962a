//! The authorization store: every input the authorization service reads, and
//! nothing else. `#[counted_store]` makes [`AuthzStoreMethod`] (the
//! `store_<Method>` keys) and [`CountedAuthzStore`], the decorator installed
//! only when tracing is on.
//!
//! The methods are synchronous on purpose. SQLite through rusqlite blocks
//! (and PostgreSQL's calls block on the async driver, see
//! [`crate::db::postgres`]), so a request runs its whole authorization pass (memo, decisions, row reads)
//! inside one `perf_trace_core::scope::spawn_blocking` call, which carries the
//! request's recorder to the blocking thread. Async methods would add one
//! thread hop per store call without freeing anything, and make each count
//! include scheduling delay rather than the database round trip.

pub mod agent_rows;
pub mod audit;
mod postgres;
mod sqlite;
pub mod writes;

pub use postgres::PostgresStore;
pub use sqlite::SqliteStore;

use std::sync::Arc;

use perf_trace_core::counted_store;

use crate::db::{Db, DbError, Dialect};
use crate::model::{
    AccessConstraint, Agent, DelegationEdge, Group, GroupMembership, Id, PrincipalRef, Project,
    ProjectMembership, RoleBinding, RoleDefinition, User, UserAccessToken,
};

/// A failed store read.
pub type StoreResult<T> = Result<T, DbError>;

/// The inputs of authorization decisions. Counting (when tracing is on) sits
/// below the request-local memo, so every count is a real round trip.
#[counted_store(rename_all = "PascalCase")]
pub trait AuthzStore: Send + Sync + 'static {
    /// Every group the user belongs to, directly or through parent groups.
    fn get_effective_groups(&self, user_id: &str) -> StoreResult<Vec<Id>>;
    /// Every group the agent belongs to, directly or through parent groups.
    fn get_effective_groups_for_agent(&self, agent_id: &str) -> StoreResult<Vec<Id>>;
    /// The direct parents of a group.
    fn get_parent_groups(&self, group_id: &str) -> StoreResult<Vec<Group>>;
    /// The groups a user is a direct member of.
    fn get_user_groups(&self, user_id: &str) -> StoreResult<Vec<Group>>;
    /// A principal's direct membership of a group.
    fn get_group_membership(
        &self,
        group_id: &str,
        principal: &PrincipalRef,
    ) -> StoreResult<Option<GroupMembership>>;
    /// A group by its slug.
    fn get_group_by_slug(&self, slug: &str) -> StoreResult<Option<Group>>;
    /// The role bindings of several principals, in one read.
    fn list_role_bindings_for_principals(
        &self,
        principals: &[PrincipalRef],
    ) -> StoreResult<Vec<RoleBinding>>;
    /// The role bindings of one principal.
    fn list_role_bindings_for_principal(
        &self,
        principal: &PrincipalRef,
    ) -> StoreResult<Vec<RoleBinding>>;
    /// One role definition.
    fn get_role_definition(&self, id: &str) -> StoreResult<Option<RoleDefinition>>;
    /// Several role definitions, in one read.
    #[counted(rename = "GetRoleDefinitionsByIDs")]
    fn get_role_definitions_by_ids(&self, ids: &[Id]) -> StoreResult<Vec<RoleDefinition>>;
    /// A role definition by its name.
    fn get_role_definition_by_name(&self, name: &str) -> StoreResult<Option<RoleDefinition>>;
    /// The access constraints of several projects, in one read.
    fn list_access_constraints(&self, project_ids: &[Id]) -> StoreResult<Vec<AccessConstraint>>;
    /// The delegations a principal may act under.
    fn get_delegation_edges_for_delegate(
        &self,
        delegate: &PrincipalRef,
    ) -> StoreResult<Vec<DelegationEdge>>;
    /// One user.
    fn get_user(&self, id: &str) -> StoreResult<Option<User>>;
    /// A user access token by the SHA-256 of the token.
    fn get_user_access_token(&self, token_hash: &[u8; 32]) -> StoreResult<Option<UserAccessToken>>;
    /// One agent.
    fn get_agent(&self, id: &str) -> StoreResult<Option<Agent>>;
    /// One project.
    fn get_project(&self, id: &str) -> StoreResult<Option<Project>>;
    /// A user's membership of a project.
    fn get_project_membership(
        &self,
        project_id: &str,
        user_id: &str,
    ) -> StoreResult<Option<ProjectMembership>>;
    /// A hub setting's stored JSON value.
    fn get_hub_setting(&self, key: &str) -> StoreResult<Option<String>>;
}

/// The plain (uncounted) store over `db`, of its dialect: for the reads made
/// outside the Hub's traced handlers (the web client's sign-in and pages).
pub fn plain_store(db: Db) -> Arc<dyn AuthzStore> {
    match db.dialect() {
        Dialect::Sqlite => Arc::new(SqliteStore::new(db)),
        Dialect::Postgres => Arc::new(PostgresStore::new(db)),
    }
}
