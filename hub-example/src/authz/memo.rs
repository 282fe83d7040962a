//! The request-local memo in front of the authorization store: each input is
//! read at most once per request, and lists of inputs are read in one batch
//! (only the entries not seen yet). It lives on one thread for one request,
//! so it needs no locking.

use std::cell::RefCell;
use std::collections::HashMap;
use std::hash::Hash;
use std::rc::Rc;

use crate::model::{
    AccessConstraint, Agent, DelegationEdge, Group, GroupMembership, Id, PrincipalKind,
    PrincipalRef, Project, ProjectMembership, RoleBinding, RoleDefinition, User,
};
use crate::settings::hub::Stored;
use crate::store::{AuthzStore, StoreResult};

/// One memoized input: key to value.
struct Cache<K, V>(RefCell<HashMap<K, V>>);

impl<K, V> Default for Cache<K, V> {
    fn default() -> Self {
        Cache(RefCell::new(HashMap::new()))
    }
}

impl<K: Eq + Hash, V: Clone> Cache<K, V> {
    fn get<Q>(&self, key: &Q) -> Option<V>
    where
        K: std::borrow::Borrow<Q>,
        Q: Eq + Hash + ?Sized,
    {
        self.0.borrow().get(key).cloned()
    }

    fn insert(&self, key: K, value: V) {
        self.0.borrow_mut().insert(key, value);
    }

    fn get_or_load(&self, key: K, load: impl FnOnce() -> StoreResult<V>) -> StoreResult<V> {
        if let Some(v) = self.get(&key) {
            return Ok(v);
        }
        let value = load()?;
        self.insert(key, value.clone());
        Ok(value)
    }

    fn contains<Q>(&self, key: &Q) -> bool
    where
        K: std::borrow::Borrow<Q>,
        Q: Eq + Hash + ?Sized,
    {
        self.0.borrow().contains_key(key)
    }

    /// The distinct keys of `keys` not cached yet, sorted (so a batch read
    /// asks for them in one order whatever the caller's).
    fn missing(&self, keys: &[K]) -> Vec<K>
    where
        K: Ord + Clone,
    {
        let mut missing: Vec<K> = keys
            .iter()
            .filter(|k| !self.contains(*k))
            .cloned()
            .collect();
        missing.sort();
        missing.dedup();
        missing
    }
}

impl<V: Clone> Cache<String, V> {
    /// As `get_or_load`, keyed by a borrowed name, copied only on a miss.
    fn get_or_load_named(
        &self,
        name: &str,
        load: impl FnOnce() -> StoreResult<V>,
    ) -> StoreResult<V> {
        if let Some(v) = self.get(name) {
            return Ok(v);
        }
        let value = load()?;
        self.insert(name.to_owned(), value.clone());
        Ok(value)
    }
}

impl<T> Cache<String, Option<Rc<T>>> {
    /// As `get_or_read`, keyed by a borrowed name, copied only on a miss.
    fn get_or_read_named(
        &self,
        name: &str,
        read: impl FnOnce() -> StoreResult<Option<T>>,
    ) -> StoreResult<Option<Rc<T>>> {
        self.get_or_load_named(name, || Ok(read()?.map(Rc::new)))
    }
}

impl<K: Eq + Hash + Clone, T> Cache<K, Option<Rc<T>>> {
    /// The value under `key`, read by `read` (and shared) the first time.
    fn get_or_read(
        &self,
        key: K,
        read: impl FnOnce() -> StoreResult<Option<T>>,
    ) -> StoreResult<Option<Rc<T>>> {
        self.get_or_load(key, || Ok(read()?.map(Rc::new)))
    }
}

impl<K: Eq + Hash + Ord + Clone, T> Cache<K, Rc<[T]>> {
    /// The list under `key`, read by `read` (and shared) the first time.
    fn get_or_read_list(
        &self,
        key: K,
        read: impl FnOnce() -> StoreResult<Vec<T>>,
    ) -> StoreResult<Rc<[T]>> {
        self.get_or_load(key, || Ok(read()?.into()))
    }

    /// The items of every key of `keys`, in order. The lists of the keys
    /// not cached yet are read first, in one batch by `load`, each item
    /// filed under `key_of` it; a key with no items gets an empty list.
    fn lists_of(
        &self,
        keys: &[K],
        load: impl FnOnce(&[K]) -> StoreResult<Vec<T>>,
        key_of: impl Fn(&T) -> &K,
    ) -> StoreResult<Vec<T>>
    where
        T: Clone,
    {
        self.load_missing_lists(keys, load, key_of)?;
        let mut all = Vec::new();
        for key in keys {
            all.extend(self.get(key).into_iter().flat_map(|list| list.to_vec()));
        }
        Ok(all)
    }

    /// Reads and files the lists of the keys not cached yet (see
    /// `lists_of`).
    fn load_missing_lists(
        &self,
        keys: &[K],
        load: impl FnOnce(&[K]) -> StoreResult<Vec<T>>,
        key_of: impl Fn(&T) -> &K,
    ) -> StoreResult<()> {
        let missing = self.missing(keys);
        if missing.is_empty() {
            return Ok(());
        }
        let mut found: HashMap<K, Vec<T>> =
            missing.iter().map(|k| (k.clone(), Vec::new())).collect();
        for item in load(&missing)? {
            if let Some(list) = found.get_mut(key_of(&item)) {
                list.push(item);
            }
        }
        for (key, list) in found {
            self.insert(key, list.into());
        }
        Ok(())
    }
}

/// The memo: one per request, in front of store `S`.
pub struct AuthzMemo<'s, S: ?Sized> {
    store: &'s S,
    groups: Cache<PrincipalRef, Rc<[Id]>>,
    delegations: Cache<PrincipalRef, Rc<[DelegationEdge]>>,
    bindings: Cache<PrincipalRef, Rc<[RoleBinding]>>,
    roles: Cache<Id, Option<Rc<RoleDefinition>>>,
    roles_by_name: Cache<String, Option<Rc<RoleDefinition>>>,
    users: Cache<Id, Option<Rc<User>>>,
    projects: Cache<Id, Option<Rc<Project>>>,
    memberships: Cache<(Id, Id), Option<Rc<ProjectMembership>>>,
    constraints: Cache<Id, Rc<[AccessConstraint]>>,
    settings: Cache<String, Option<Rc<Stored>>>,
    agents: Cache<Id, Option<Rc<Agent>>>,
    groups_by_slug: Cache<String, Option<Rc<Group>>>,
    parent_groups: Cache<Id, Rc<[Group]>>,
    user_groups: Cache<Id, Rc<[Group]>>,
    group_memberships: Cache<(Id, PrincipalRef), Option<Rc<GroupMembership>>>,
}

/// Accessors that read one value through the store the first time it is
/// asked for and share it after: each names its cache, the cache's method
/// and the store's.
macro_rules! read_once {
    ($(
        $(#[$doc:meta])*
        $vis:vis fn $name:ident($($key:ident: $key_ty:ty),+) -> $out:ty =
            $cache:ident.$get:ident($cache_key:expr, $read:ident);
    )*) => {
        $(
            $(#[$doc])*
            $vis fn $name(&self, $($key: $key_ty),+) -> StoreResult<$out> {
                self.$cache.$get($cache_key, || self.store.$read($($key),+))
            }
        )*
    };
}

impl<'s, S: AuthzStore + ?Sized> AuthzMemo<'s, S> {
    /// An empty memo in front of `store`.
    pub fn new(store: &'s S) -> Self {
        AuthzMemo {
            store,
            groups: Cache::default(),
            delegations: Cache::default(),
            bindings: Cache::default(),
            roles: Cache::default(),
            roles_by_name: Cache::default(),
            users: Cache::default(),
            projects: Cache::default(),
            memberships: Cache::default(),
            constraints: Cache::default(),
            settings: Cache::default(),
            agents: Cache::default(),
            groups_by_slug: Cache::default(),
            parent_groups: Cache::default(),
            user_groups: Cache::default(),
            group_memberships: Cache::default(),
        }
    }

    /// The store behind the memo.
    pub fn store(&self) -> &'s S {
        self.store
    }

    read_once! {
        /// One role definition by id.
        pub fn role(id: &Id) -> Option<Rc<RoleDefinition>> =
            roles.get_or_read(id.clone(), get_role_definition);
        /// One role definition by name.
        pub(crate) fn role_by_name(name: &str) -> Option<Rc<RoleDefinition>> =
            roles_by_name.get_or_read_named(name, get_role_definition_by_name);
        /// One user.
        pub fn user(id: &Id) -> Option<Rc<User>> = users.get_or_read(id.clone(), get_user);
        /// One project.
        pub fn project(id: &Id) -> Option<Rc<Project>> =
            projects.get_or_read(id.clone(), get_project);
        /// A hub setting's stored JSON text (or size, when oversized).
        pub(crate) fn hub_setting(key: &str) -> Option<Rc<Stored>> =
            settings.get_or_read_named(key, get_hub_setting);
        /// One agent.
        pub fn agent(id: &Id) -> Option<Rc<Agent>> = agents.get_or_read(id.clone(), get_agent);
        /// A group by slug.
        pub(crate) fn group_by_slug(slug: &str) -> Option<Rc<Group>> =
            groups_by_slug.get_or_read_named(slug, get_group_by_slug);
        /// The delegations `delegate` may act under.
        pub fn delegations(delegate: &PrincipalRef) -> Rc<[DelegationEdge]> =
            delegations.get_or_read_list(delegate.clone(), get_delegation_edges_for_delegate);
        /// The role bindings of one principal.
        pub(crate) fn bindings_of_one(principal: &PrincipalRef) -> Rc<[RoleBinding]> =
            bindings.get_or_read_list(principal.clone(), list_role_bindings_for_principal);
        /// A user's membership of a project.
        pub(crate) fn membership(project_id: &Id, user_id: &Id) -> Option<Rc<ProjectMembership>> =
            memberships.get_or_read((project_id.clone(), user_id.clone()), get_project_membership);
        /// A group's direct parents.
        pub(crate) fn parent_groups(group_id: &Id) -> Rc<[Group]> =
            parent_groups.get_or_read_list(group_id.clone(), get_parent_groups);
        /// The groups a user is a direct member of.
        pub(crate) fn user_groups(user_id: &Id) -> Rc<[Group]> =
            user_groups.get_or_read_list(user_id.clone(), get_user_groups);
        /// A principal's direct membership of a group.
        pub(crate) fn group_membership(group_id: &Id, principal: &PrincipalRef)
            -> Option<Rc<GroupMembership>> = group_memberships
                .get_or_read((group_id.clone(), principal.clone()), get_group_membership);
    }

    /// Every group of a user or agent, parents included.
    pub(crate) fn effective_groups(&self, principal: &PrincipalRef) -> StoreResult<Rc<[Id]>> {
        self.groups.get_or_load(principal.clone(), || {
            Ok(match principal.kind {
                PrincipalKind::User => self.store.get_effective_groups(&principal.id)?,
                PrincipalKind::Agent => self.store.get_effective_groups_for_agent(&principal.id)?,
                PrincipalKind::Group => Vec::new(),
            }
            .into())
        })
    }

    /// The role bindings of every principal in `principals`, read in one
    /// batch for those not seen yet.
    pub(crate) fn bindings_of(&self, principals: &[PrincipalRef]) -> StoreResult<Vec<RoleBinding>> {
        self.bindings.lists_of(
            principals,
            |missing| self.store.list_role_bindings_for_principals(missing),
            |b| &b.principal,
        )
    }

    /// Role definitions by id, read in one batch for those not seen yet.
    /// Unknown ids are left out.
    pub(crate) fn roles(&self, ids: &[Id]) -> StoreResult<Vec<Rc<RoleDefinition>>> {
        let missing = self.roles.missing(ids);
        if !missing.is_empty() {
            let found = self.store.get_role_definitions_by_ids(&missing)?;
            for id in &missing {
                self.roles.insert(id.clone(), None);
            }
            for role in found {
                self.roles.insert(role.id.clone(), Some(Rc::new(role)));
            }
        }
        Ok(ids
            .iter()
            .filter_map(|id| self.roles.get(&**id).flatten())
            .collect())
    }

    /// Users by id: one read per distinct id not seen yet.
    pub(crate) fn users<'a>(
        &self,
        ids: impl IntoIterator<Item = &'a Id>,
    ) -> StoreResult<HashMap<Id, Rc<User>>> {
        let mut out = HashMap::new();
        for id in ids {
            if out.contains_key(id) {
                continue;
            }
            if let Some(user) = self.user(id)? {
                out.insert(id.clone(), user);
            }
        }
        Ok(out)
    }

    /// The access constraints of each project, read in one batch for those
    /// not seen yet.
    pub fn constraints(&self, project_ids: &[Id]) -> StoreResult<Vec<AccessConstraint>> {
        // A project named twice is reported once.
        let mut distinct: Vec<Id> = Vec::with_capacity(project_ids.len());
        for id in project_ids {
            if !distinct.contains(id) {
                distinct.push(id.clone());
            }
        }
        self.constraints.lists_of(
            &distinct,
            |missing| self.store.list_access_constraints(missing),
            |c| &c.project_id,
        )
    }

    /// The access constraints of one project.
    pub(crate) fn project_constraints(
        &self,
        project_id: &Id,
    ) -> StoreResult<Rc<[AccessConstraint]>> {
        if self.constraints.get(&**project_id).is_none() {
            self.constraints(std::slice::from_ref(project_id))?;
        }
        Ok(self
            .constraints
            .get(&**project_id)
            .unwrap_or_else(|| Rc::from([])))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::perf::keys::HubSchema;
    use crate::seed::seeded_for_tests;
    use crate::store::{AuthzStoreMethod, CountedAuthzStore, SqliteStore};
    use perf_trace_core::Recorder;

    fn seeded_store(
        dir: &std::path::Path,
    ) -> (CountedAuthzStore<SqliteStore>, crate::seed::SeedDocument) {
        let (db, doc) = seeded_for_tests(dir, "memo");
        (CountedAuthzStore::new(SqliteStore::new(db)), doc)
    }

    #[test]
    fn each_input_is_read_once_and_lists_in_one_batch() {
        let dir = tempfile::tempdir().unwrap();
        let (store, doc) = seeded_store(dir.path());
        let recorder = Recorder::new::<HubSchema>();
        recorder.in_scope(|| {
            let memo = AuthzMemo::new(&store);
            let owner = Id::from(doc.owner_user_id.as_str());
            let member = Id::from(doc.member_user_id.as_str());
            let creators = [owner.clone(), member.clone(), owner.clone(), member.clone()];
            assert_eq!(memo.users(&creators).unwrap().len(), 2);
            assert_eq!(memo.users(&creators).unwrap().len(), 2);

            let me = PrincipalRef::user(member.clone());
            let groups = memo.effective_groups(&me).unwrap();
            assert_eq!(groups.len(), 3, "the group and its two ancestors");
            memo.effective_groups(&me).unwrap();
            let mut principals = vec![me.clone(), PrincipalRef::user(owner.clone())];
            principals.extend(groups.iter().map(|g| PrincipalRef::group(g.clone())));
            let bindings = memo.bindings_of(&principals).unwrap();
            assert_eq!(bindings.len(), 3);
            memo.bindings_of(&principals).unwrap();
            let role_ids: Vec<Id> = bindings.iter().map(|b| b.role_id.clone()).collect();
            assert_eq!(memo.roles(&role_ids).unwrap().len(), 3);
            memo.roles(&role_ids).unwrap();
            let project = Id::from(doc.project_id.as_str());
            assert_eq!(
                memo.constraints(&[project.clone(), project.clone()])
                    .unwrap()
                    .len(),
                3
            );
            assert_eq!(memo.project_constraints(&project).unwrap().len(), 3);
        });
        let snapshot = recorder.snapshot();
        for (method, count) in [
            (AuthzStoreMethod::GetUser, 2),
            (AuthzStoreMethod::GetEffectiveGroups, 1),
            (AuthzStoreMethod::ListRoleBindingsForPrincipals, 1),
            (AuthzStoreMethod::GetRoleDefinitionsByIDs, 1),
            (AuthzStoreMethod::ListAccessConstraints, 1),
        ] {
            assert_eq!(snapshot.store(method).count, count, "{method:?}");
        }
        assert_eq!(snapshot.authz_store_calls, 6);
    }
}
