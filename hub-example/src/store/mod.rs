//! All the Hub's data access, one facade per concern, over a [`db::Db`]
//! whose [`db::Engine`] (SQLite or PostgreSQL) is chosen once, when it is
//! opened.
//!
//! **One facade style.** A concern is a module of free functions whose
//! first parameter is the `&Db`: each opens the store of the database's
//! engine ([`Store::open`]) and runs its statements through the one
//! statement interface, `executor::Executor`. A new store call is one such
//! function in its concern's module, its statement in `statements` (or, when
//! the engines write it differently, in both `sqlite/` and `postgres/`).
//! Two kinds of concern take another shape, each for a reason:
//!
//! - [`AuthzStore`] (this module), every input the authorization service
//!   reads and nothing else, is a trait: `#[counted_store]` counts its
//!   methods, and the router is monomorphized over each engine's store
//!   (`with_authz_store`). Its methods are implemented once, in `authz`,
//!   for any `Executor`, the same interface the free functions run on;
//! - what holds a connection or a channel of its own is a type opened from
//!   the database: the audit writer ([`audit::open`]; its reads are free
//!   functions, `audit::query_events`), the events' `outbox::Outbox`,
//!   the seeder's `seed::SeedTarget`.
//!
//! The concerns: [`agents`] (the lists' agent rows, status changes,
//! delegations); [`sessions`], [`tokens`], [`settings`] (browser sessions,
//! user access tokens, hub settings); [`audit`] (the audit table);
//! `outbox` (the events' channel between replicas, PostgreSQL); [`seed`]
//! (the seeder's writes).
//!
//! **One folder per engine.** `sqlite/` and `postgres/` hold all that
//! differs by engine: the store's binding and the statements each writes
//! its own way, the schema's migrations (SQLite's list and its PostgreSQL
//! port, applied by `db::Db::migrate` for the database's engine), and for
//! PostgreSQL the driver, its pool manager and the seeder's copy. [`db`]
//! holds what does not: the pooled [`db::Db`], its engine and its errors.
//! `statements` holds the shared statements once, `mapping` reads each row
//! type once, and [`rows`] holds the row types the facades share.
//!
//! `#[counted_store]` makes [`AuthzStoreMethod`] (the `store_<Method>` keys)
//! and [`CountedAuthzStore`], the decorator installed only when tracing is
//! on. The methods are synchronous on purpose. SQLite through rusqlite
//! blocks (and PostgreSQL's calls block on the async driver, see
//! [`crate::store::postgres`]), so a request runs its whole authorization pass
//! (memo, decisions, row reads) inside one
//! `perf_trace_core::scope::spawn_blocking` call, which carries the
//! request's recorder to the blocking thread. Async methods would add one
//! thread hop per store call without freeing anything, and make each count
//! include scheduling delay rather than the database round trip.

pub mod agents;
pub mod audit;
mod authz;
pub mod db;
mod either;
mod executor;
mod mapping;
pub(crate) mod outbox;
pub mod postgres;
pub mod rows;
pub mod seed;
pub mod sessions;
pub mod settings;
pub mod sqlite;
mod statements;
pub mod tokens;

pub use either::Store;
pub use postgres::PostgresStore;
pub use sqlite::SqliteStore;

use perf_trace_core::counted_store;

use crate::model::{
    AccessConstraint, Agent, DelegationEdge, Group, GroupMembership, Id, PrincipalRef, Project,
    ProjectMembership, RoleBinding, RoleDefinition, User, UserAccessToken,
};
use crate::settings::hub::Stored;
use crate::store::db::{Db, DbError};

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
    /// A hub setting's stored JSON value (only its size when it is larger
    /// than any value the Hub stores).
    fn get_hub_setting(&self, key: &str) -> StoreResult<Option<Stored>>;
}

/// What is done with the authorization store of a database, whichever its
/// engine: called with the store as its own type, so whatever is built
/// over it (the router) is monomorphized and no call goes through `dyn`.
pub(crate) trait WithAuthzStore {
    /// What the visit gives.
    type Output;
    /// Called once, with the store of the database's engine.
    fn visit<S: AuthzStore + Clone>(self, store: S) -> Self::Output;
}

/// Opens the authorization store of `db`'s engine ([`Store::open`]) and
/// hands it to `visitor`: the router's one choice of engine.
pub(crate) fn with_authz_store<V: WithAuthzStore>(db: &Db, visitor: V) -> V::Output {
    match Store::open(db) {
        Store::Sqlite(store) => visitor.visit(store),
        Store::Postgres(store) => visitor.visit(store),
    }
}
