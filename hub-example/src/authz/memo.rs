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
    settings: Cache<String, Option<Rc<str>>>,
    agents: Cache<Id, Option<Rc<Agent>>>,
    groups_by_slug: Cache<String, Option<Rc<Group>>>,
    parent_groups: Cache<Id, Rc<[Group]>>,
    user_groups: Cache<Id, Rc<[Group]>>,
    group_memberships: Cache<(Id, PrincipalRef), Option<Rc<GroupMembership>>>,
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

    /// Every group of a user or agent, parents included.
    pub fn effective_groups(&self, principal: &PrincipalRef) -> StoreResult<Rc<[Id]>> {
        self.groups.get_or_load(principal.clone(), || {
            Ok(match principal.kind {
                PrincipalKind::User => self.store.get_effective_groups(&principal.id)?,
                PrincipalKind::Agent => self.store.get_effective_groups_for_agent(&principal.id)?,
                PrincipalKind::Group => Vec::new(),
            }
            .into())
        })
    }

    /// The delegations `delegate` may act under.
    pub fn delegations(&self, delegate: &PrincipalRef) -> StoreResult<Rc<[DelegationEdge]>> {
        self.delegations.get_or_load(delegate.clone(), || {
            Ok(self
                .store
                .get_delegation_edges_for_delegate(delegate)?
                .into())
        })
    }

    /// The role bindings of every principal in `principals`, read in one
    /// batch for those not seen yet.
    pub fn bindings_of(&self, principals: &[PrincipalRef]) -> StoreResult<Vec<RoleBinding>> {
        let mut missing: Vec<PrincipalRef> = principals
            .iter()
            .filter(|p| !self.bindings.contains(*p))
            .cloned()
            .collect();
        missing.sort();
        missing.dedup();
        if !missing.is_empty() {
            let mut found: HashMap<PrincipalRef, Vec<RoleBinding>> =
                missing.iter().map(|p| (p.clone(), Vec::new())).collect();
            for b in self.store.list_role_bindings_for_principals(&missing)? {
                if let Some(list) = found.get_mut(&b.principal) {
                    list.push(b);
                }
            }
            for (p, list) in found {
                self.bindings.insert(p, list.into());
            }
        }
        let mut all = Vec::new();
        for p in principals {
            all.extend(self.bindings.get(p).into_iter().flat_map(|b| b.to_vec()));
        }
        Ok(all)
    }

    /// The role bindings of one principal.
    pub fn bindings_of_one(&self, principal: &PrincipalRef) -> StoreResult<Rc<[RoleBinding]>> {
        self.bindings.get_or_load(principal.clone(), || {
            Ok(self
                .store
                .list_role_bindings_for_principal(principal)?
                .into())
        })
    }

    /// Role definitions by id, read in one batch for those not seen yet.
    /// Unknown ids are left out.
    pub fn roles(&self, ids: &[Id]) -> StoreResult<Vec<Rc<RoleDefinition>>> {
        let mut missing: Vec<Id> = ids
            .iter()
            .filter(|id| !self.roles.contains(&***id))
            .cloned()
            .collect();
        missing.sort();
        missing.dedup();
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

    /// One role definition by id.
    pub fn role(&self, id: &Id) -> StoreResult<Option<Rc<RoleDefinition>>> {
        self.roles.get_or_load(id.clone(), || {
            Ok(self.store.get_role_definition(id)?.map(Rc::new))
        })
    }

    /// One role definition by name.
    pub fn role_by_name(&self, name: &str) -> StoreResult<Option<Rc<RoleDefinition>>> {
        if let Some(v) = self.roles_by_name.get(name) {
            return Ok(v);
        }
        let role = self.store.get_role_definition_by_name(name)?.map(Rc::new);
        self.roles_by_name.insert(name.to_owned(), role.clone());
        Ok(role)
    }

    /// One user.
    pub fn user(&self, id: &Id) -> StoreResult<Option<Rc<User>>> {
        self.users
            .get_or_load(id.clone(), || Ok(self.store.get_user(id)?.map(Rc::new)))
    }

    /// Users by id: one read per distinct id not seen yet.
    pub fn users<'a>(
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

    /// One project.
    pub fn project(&self, id: &Id) -> StoreResult<Option<Rc<Project>>> {
        self.projects
            .get_or_load(id.clone(), || Ok(self.store.get_project(id)?.map(Rc::new)))
    }

    /// A user's membership of a project.
    pub fn membership(
        &self,
        project_id: &Id,
        user_id: &Id,
    ) -> StoreResult<Option<Rc<ProjectMembership>>> {
        self.memberships
            .get_or_load((project_id.clone(), user_id.clone()), || {
                Ok(self
                    .store
                    .get_project_membership(project_id, user_id)?
                    .map(Rc::new))
            })
    }

    /// The access constraints of each project, read in one batch for those
    /// not seen yet.
    pub fn constraints(&self, project_ids: &[Id]) -> StoreResult<Vec<AccessConstraint>> {
        let mut missing: Vec<Id> = project_ids
            .iter()
            .filter(|id| !self.constraints.contains(&***id))
            .cloned()
            .collect();
        missing.sort();
        missing.dedup();
        if !missing.is_empty() {
            let mut found: HashMap<Id, Vec<AccessConstraint>> =
                missing.iter().map(|id| (id.clone(), Vec::new())).collect();
            for c in self.store.list_access_constraints(&missing)? {
                if let Some(list) = found.get_mut(&c.project_id) {
                    list.push(c);
                }
            }
            for (id, list) in found {
                self.constraints.insert(id, list.into());
            }
        }
        let mut all = Vec::new();
        for (i, id) in project_ids.iter().enumerate() {
            if project_ids[..i].contains(id) {
                continue;
            }
            all.extend(
                self.constraints
                    .get(&**id)
                    .into_iter()
                    .flat_map(|c| c.to_vec()),
            );
        }
        Ok(all)
    }

    /// The access constraints of one project.
    pub fn project_constraints(&self, project_id: &Id) -> StoreResult<Rc<[AccessConstraint]>> {
        if self.constraints.get(&**project_id).is_none() {
            self.constraints(std::slice::from_ref(project_id))?;
        }
        Ok(self
            .constraints
            .get(&**project_id)
            .unwrap_or_else(|| Rc::from([])))
    }

    /// A hub setting's stored JSON text.
    pub fn hub_setting(&self, key: &str) -> StoreResult<Option<Rc<str>>> {
        if let Some(v) = self.settings.get(key) {
            return Ok(v);
        }
        let value: Option<Rc<str>> = self.store.get_hub_setting(key)?.map(Rc::from);
        self.settings.insert(key.to_owned(), value.clone());
        Ok(value)
    }

    /// One agent.
    pub fn agent(&self, id: &Id) -> StoreResult<Option<Rc<Agent>>> {
        self.agents
            .get_or_load(id.clone(), || Ok(self.store.get_agent(id)?.map(Rc::new)))
    }

    /// A group by slug.
    pub fn group_by_slug(&self, slug: &str) -> StoreResult<Option<Rc<Group>>> {
        if let Some(v) = self.groups_by_slug.get(slug) {
            return Ok(v);
        }
        let group = self.store.get_group_by_slug(slug)?.map(Rc::new);
        self.groups_by_slug.insert(slug.to_owned(), group.clone());
        Ok(group)
    }

    /// A group's direct parents.
    pub fn parent_groups(&self, group_id: &Id) -> StoreResult<Rc<[Group]>> {
        self.parent_groups.get_or_load(group_id.clone(), || {
            Ok(self.store.get_parent_groups(group_id)?.into())
        })
    }

    /// The groups a user is a direct member of.
    pub fn user_groups(&self, user_id: &Id) -> StoreResult<Rc<[Group]>> {
        self.user_groups.get_or_load(user_id.clone(), || {
            Ok(self.store.get_user_groups(user_id)?.into())
        })
    }

    /// A principal's direct membership of a group.
    pub fn group_membership(
        &self,
        group_id: &Id,
        principal: &PrincipalRef,
    ) -> StoreResult<Option<Rc<GroupMembership>>> {
        self.group_memberships
            .get_or_load((group_id.clone(), principal.clone()), || {
                Ok(self
                    .store
                    .get_group_membership(group_id, principal)?
                    .map(Rc::new))
            })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::perf::keys::HubSchema;
    use crate::seed::{seed, SeedOptions};
    use crate::store::db::{OpenMode, PoolOptions};
    use crate::store::{AuthzStoreMethod, CountedAuthzStore, SqliteStore};
    use perf_trace_core::Recorder;

    fn seeded_store(
        dir: &std::path::Path,
    ) -> (CountedAuthzStore<SqliteStore>, crate::seed::SeedDocument) {
        let path = dir.join("hub.db");
        let doc = seed(&SeedOptions {
            db_path: path.clone(),
            session_secret: "s".into(),
            agents: 30,
            project_slug: "memo".into(),
            rand_seed: 42,
        })
        .unwrap();
        let db =
            crate::store::db::Db::open(&path, OpenMode::MustExist, PoolOptions::default()).unwrap();
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
