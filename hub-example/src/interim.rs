//! INTERIM: the expansions of `#[derive(KeySet)]` and `#[counted_store]`
//! written out by hand, so the Hub builds and its domain can be tested while
//! the procedural macros are placeholders. Delete this module (and its
//! re-exports in `store`) once the macros land.

use perf_trace_core::__private::TimedGuard;
use perf_trace_core::{EndpointKey, KeySet, PhaseKey, StoreMethodKey};

use crate::keys::{EndpointClass, Phase};
use crate::model::{
    AccessConstraint, Agent, DelegationEdge, Group, GroupMembership, Id, PrincipalRef, Project,
    ProjectMembership, RoleBinding, RoleDefinition, User, UserAccessToken,
};
use crate::store::{AuthzStore, StoreResult};

const fn less(a: &str, b: &str) -> bool {
    let (a, b) = (a.as_bytes(), b.as_bytes());
    let mut i = 0;
    while i < a.len() && i < b.len() {
        if a[i] != b[i] {
            return a[i] < b[i];
        }
        i += 1;
    }
    a.len() < b.len()
}

const fn sorted_indices<const N: usize>(names: [&str; N]) -> [u16; N] {
    let mut idx = [0u16; N];
    let mut i = 0;
    while i < N {
        idx[i] = i as u16;
        i += 1;
    }
    let mut i = 1;
    while i < N {
        let mut j = i;
        while j > 0 && less(names[idx[j] as usize], names[idx[j - 1] as usize]) {
            let t = idx[j];
            idx[j] = idx[j - 1];
            idx[j - 1] = t;
            j -= 1;
        }
        i += 1;
    }
    idx
}

macro_rules! interim_key_set {
    ($ty:ident, $marker:ident { $($body:tt)* }, [$($variant:ident => $name:literal),+ $(,)?]) => {
        impl KeySet for $ty {
            const SET_NAME: &'static str = stringify!($ty);
            const NAMES: &'static [&'static str] = &[$($name),+];
            const VARIANTS: &'static [&'static str] = &[$(stringify!($variant)),+];
            const ALL: &'static [Self] = &[$($ty::$variant),+];
            const SORTED: &'static [u16] = &sorted_indices([$($name),+]);
            const UNKNOWN_KEY: &'static str = concat!("unknown key of ", stringify!($ty));
            fn index(self) -> usize {
                self as usize
            }
        }
        impl $marker for $ty { $($body)* }
    };
}

interim_key_set!(Phase, PhaseKey {}, [
    ListScopeAuthz => "list_scope_authz",
    ListDbRead => "list_db_read",
    ListReadAuthz => "list_read_authz",
    Enrich => "enrich",
    Capabilities => "capabilities",
    Messageability => "messageability",
    ScopeCapabilities => "scope_capabilities",
    Serialize => "serialize",
    SseExpand => "sse_expand",
    SseAuthorize => "sse_authorize",
    SseWrite => "sse_write",
]);

interim_key_set!(EndpointClass, EndpointKey { const DEFAULT: Self = EndpointClass::Other; }, [
    Other => "other",
    GlobalLegacy => "agents.global.legacy",
    GlobalSorted => "agents.global.sorted",
    ProjectLegacy => "agents.project.legacy",
    ProjectSorted => "agents.project.sorted",
    ProjectSortedAgent => "agents.project.sorted_agent",
    SseEvents => "sse.events",
]);

/// The methods of [`AuthzStore`], as counted keys.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[allow(missing_docs)]
pub enum AuthzStoreMethod {
    GetEffectiveGroups,
    GetEffectiveGroupsForAgent,
    GetParentGroups,
    GetUserGroups,
    GetGroupMembership,
    GetGroupBySlug,
    ListRoleBindingsForPrincipals,
    ListRoleBindingsForPrincipal,
    GetRoleDefinition,
    GetRoleDefinitionsByIDs,
    GetRoleDefinitionByName,
    ListAccessConstraints,
    GetDelegationEdgesForDelegate,
    GetUser,
    GetUserAccessToken,
    GetAgent,
    GetProject,
    GetProjectMembership,
    GetHubSetting,
}

interim_key_set!(AuthzStoreMethod, StoreMethodKey {}, [
    GetEffectiveGroups => "GetEffectiveGroups",
    GetEffectiveGroupsForAgent => "GetEffectiveGroupsForAgent",
    GetParentGroups => "GetParentGroups",
    GetUserGroups => "GetUserGroups",
    GetGroupMembership => "GetGroupMembership",
    GetGroupBySlug => "GetGroupBySlug",
    ListRoleBindingsForPrincipals => "ListRoleBindingsForPrincipals",
    ListRoleBindingsForPrincipal => "ListRoleBindingsForPrincipal",
    GetRoleDefinition => "GetRoleDefinition",
    GetRoleDefinitionsByIDs => "GetRoleDefinitionsByIDs",
    GetRoleDefinitionByName => "GetRoleDefinitionByName",
    ListAccessConstraints => "ListAccessConstraints",
    GetDelegationEdgesForDelegate => "GetDelegationEdgesForDelegate",
    GetUser => "GetUser",
    GetUserAccessToken => "GetUserAccessToken",
    GetAgent => "GetAgent",
    GetProject => "GetProject",
    GetProjectMembership => "GetProjectMembership",
    GetHubSetting => "GetHubSetting",
]);

/// An [`AuthzStore`] that forwards every call to `S`, counting and timing it.
#[derive(Debug, Clone)]
pub struct CountedAuthzStore<S> {
    inner: S,
}

impl<S> CountedAuthzStore<S> {
    /// Wraps `inner`.
    pub fn new(inner: S) -> Self {
        CountedAuthzStore { inner }
    }

    /// The wrapped store.
    pub fn inner(&self) -> &S {
        &self.inner
    }
}

macro_rules! counted {
    ($key:ident, $call:expr) => {{
        let _guard = TimedGuard::store_call(AuthzStoreMethod::$key);
        $call
    }};
}

impl<S: AuthzStore> AuthzStore for CountedAuthzStore<S> {
    fn get_effective_groups(&self, user_id: &str) -> StoreResult<Vec<Id>> {
        counted!(GetEffectiveGroups, self.inner.get_effective_groups(user_id))
    }
    fn get_effective_groups_for_agent(&self, agent_id: &str) -> StoreResult<Vec<Id>> {
        counted!(
            GetEffectiveGroupsForAgent,
            self.inner.get_effective_groups_for_agent(agent_id)
        )
    }
    fn get_parent_groups(&self, group_id: &str) -> StoreResult<Vec<Group>> {
        counted!(GetParentGroups, self.inner.get_parent_groups(group_id))
    }
    fn get_user_groups(&self, user_id: &str) -> StoreResult<Vec<Group>> {
        counted!(GetUserGroups, self.inner.get_user_groups(user_id))
    }
    fn get_group_membership(
        &self,
        group_id: &str,
        principal: &PrincipalRef,
    ) -> StoreResult<Option<GroupMembership>> {
        counted!(
            GetGroupMembership,
            self.inner.get_group_membership(group_id, principal)
        )
    }
    fn get_group_by_slug(&self, slug: &str) -> StoreResult<Option<Group>> {
        counted!(GetGroupBySlug, self.inner.get_group_by_slug(slug))
    }
    fn list_role_bindings_for_principals(
        &self,
        principals: &[PrincipalRef],
    ) -> StoreResult<Vec<RoleBinding>> {
        counted!(
            ListRoleBindingsForPrincipals,
            self.inner.list_role_bindings_for_principals(principals)
        )
    }
    fn list_role_bindings_for_principal(
        &self,
        principal: &PrincipalRef,
    ) -> StoreResult<Vec<RoleBinding>> {
        counted!(
            ListRoleBindingsForPrincipal,
            self.inner.list_role_bindings_for_principal(principal)
        )
    }
    fn get_role_definition(&self, id: &str) -> StoreResult<Option<RoleDefinition>> {
        counted!(GetRoleDefinition, self.inner.get_role_definition(id))
    }
    fn get_role_definitions_by_ids(&self, ids: &[Id]) -> StoreResult<Vec<RoleDefinition>> {
        counted!(
            GetRoleDefinitionsByIDs,
            self.inner.get_role_definitions_by_ids(ids)
        )
    }
    fn get_role_definition_by_name(&self, name: &str) -> StoreResult<Option<RoleDefinition>> {
        counted!(
            GetRoleDefinitionByName,
            self.inner.get_role_definition_by_name(name)
        )
    }
    fn list_access_constraints(&self, project_ids: &[Id]) -> StoreResult<Vec<AccessConstraint>> {
        counted!(
            ListAccessConstraints,
            self.inner.list_access_constraints(project_ids)
        )
    }
    fn get_delegation_edges_for_delegate(
        &self,
        delegate: &PrincipalRef,
    ) -> StoreResult<Vec<DelegationEdge>> {
        counted!(
            GetDelegationEdgesForDelegate,
            self.inner.get_delegation_edges_for_delegate(delegate)
        )
    }
    fn get_user(&self, id: &str) -> StoreResult<Option<User>> {
        counted!(GetUser, self.inner.get_user(id))
    }
    fn get_user_access_token(&self, token_hash: &[u8; 32]) -> StoreResult<Option<UserAccessToken>> {
        counted!(
            GetUserAccessToken,
            self.inner.get_user_access_token(token_hash)
        )
    }
    fn get_agent(&self, id: &str) -> StoreResult<Option<Agent>> {
        counted!(GetAgent, self.inner.get_agent(id))
    }
    fn get_project(&self, id: &str) -> StoreResult<Option<Project>> {
        counted!(GetProject, self.inner.get_project(id))
    }
    fn get_project_membership(
        &self,
        project_id: &str,
        user_id: &str,
    ) -> StoreResult<Option<ProjectMembership>> {
        counted!(
            GetProjectMembership,
            self.inner.get_project_membership(project_id, user_id)
        )
    }
    fn get_hub_setting(&self, key: &str) -> StoreResult<Option<String>> {
        counted!(GetHubSetting, self.inner.get_hub_setting(key))
    }
}
