//! The authorization reads, once for both engines: every [`Executor`] is an
//! [`AuthzStore`], one statement per method (one per batch), each row read
//! by its mapping.

use super::executor::{Executor, Param, SqlRow};
use super::mapping::{self, id};
use super::{AuthzStore, StoreResult};
use crate::model::{
    AccessConstraint, Agent, DelegationEdge, Group, GroupMembership, Id, PrincipalKind,
    PrincipalRef, Project, ProjectMembership, RoleBinding, RoleDefinition, User, UserAccessToken,
};
use crate::settings::hub::Stored;
use crate::store::db::DbError;

fn effective_groups<E: Executor>(
    executor: &E,
    kind: PrincipalKind,
    principal_id: &str,
) -> StoreResult<Vec<Id>> {
    executor.query(
        executor.statements().effective_groups,
        &[Param::Text(kind.as_str()), Param::Text(principal_id)],
        |r| id(r, 0),
    )
}

impl<E: Executor> AuthzStore for E {
    fn get_effective_groups(&self, user_id: &str) -> StoreResult<Vec<Id>> {
        effective_groups(self, PrincipalKind::User, user_id)
    }

    fn get_effective_groups_for_agent(&self, agent_id: &str) -> StoreResult<Vec<Id>> {
        effective_groups(self, PrincipalKind::Agent, agent_id)
    }

    fn get_parent_groups(&self, group_id: &str) -> StoreResult<Vec<Group>> {
        let sql = self.statements().parent_groups;
        self.query(sql, &[Param::Text(group_id)], |r| mapping::group(r))
    }

    fn get_user_groups(&self, user_id: &str) -> StoreResult<Vec<Group>> {
        let sql = self.statements().user_groups;
        self.query(sql, &[Param::Text(user_id)], |r| mapping::group(r))
    }

    fn get_group_membership(
        &self,
        group_id: &str,
        principal: &PrincipalRef,
    ) -> StoreResult<Option<GroupMembership>> {
        let params = [
            Param::Text(group_id),
            Param::Text(principal.kind.as_str()),
            Param::Text(&principal.id),
        ];
        self.query_opt(self.statements().group_membership, &params, |r| {
            Ok(GroupMembership {
                group_id: Id::from(group_id),
                principal: principal.clone(),
                role: r.text(0)?.to_owned(),
            })
        })
    }

    fn get_group_by_slug(&self, slug: &str) -> StoreResult<Option<Group>> {
        let sql = self.statements().group_by_slug;
        self.query_opt(sql, &[Param::Text(slug)], |r| mapping::group(r))
    }

    fn list_role_bindings_for_principals(
        &self,
        principals: &[PrincipalRef],
    ) -> StoreResult<Vec<RoleBinding>> {
        let sql = self.statements().role_bindings_for_principals;
        self.query(sql, &[Param::Principals(principals)], |r| {
            mapping::binding(r)
        })
    }

    fn list_role_bindings_for_principal(
        &self,
        principal: &PrincipalRef,
    ) -> StoreResult<Vec<RoleBinding>> {
        let params = [
            Param::Text(principal.kind.as_str()),
            Param::Text(&principal.id),
        ];
        let sql = self.statements().role_bindings_for_principal;
        self.query(sql, &params, |r| mapping::binding(r))
    }

    fn get_role_definition(&self, role_id: &str) -> StoreResult<Option<RoleDefinition>> {
        let sql = self.statements().role_definition;
        self.query_opt(sql, &[Param::Text(role_id)], |r| mapping::role(r))
    }

    fn get_role_definitions_by_ids(&self, ids: &[Id]) -> StoreResult<Vec<RoleDefinition>> {
        let sql = self.statements().role_definitions_by_ids;
        self.query(sql, &[Param::Ids(ids)], |r| mapping::role(r))
    }

    fn get_role_definition_by_name(&self, name: &str) -> StoreResult<Option<RoleDefinition>> {
        let sql = self.statements().role_definition_by_name;
        self.query_opt(sql, &[Param::Text(name)], |r| mapping::role(r))
    }

    fn list_access_constraints(&self, project_ids: &[Id]) -> StoreResult<Vec<AccessConstraint>> {
        let sql = self.statements().access_constraints;
        self.query(sql, &[Param::Ids(project_ids)], |r| {
            mapping::access_constraint(r)
        })
    }

    fn get_delegation_edges_for_delegate(
        &self,
        delegate: &PrincipalRef,
    ) -> StoreResult<Vec<DelegationEdge>> {
        let params = [
            Param::Text(delegate.kind.as_str()),
            Param::Text(&delegate.id),
        ];
        self.query(
            self.statements().delegation_edges_for_delegate,
            &params,
            |r| {
                Ok(DelegationEdge {
                    id: id(r, 0)?,
                    delegator_user_id: id(r, 1)?,
                    delegate: delegate.clone(),
                    project_id: r.opt_text(2)?.map(Id::from),
                    actions: mapping::json_list(r, 3)?,
                })
            },
        )
    }

    fn get_user(&self, user_id: &str) -> StoreResult<Option<User>> {
        let sql = self.statements().user;
        self.query_opt(sql, &[Param::Text(user_id)], |r| mapping::user(r))
    }

    fn get_user_access_token(&self, token_hash: &[u8; 32]) -> StoreResult<Option<UserAccessToken>> {
        let sql = self.statements().user_access_token;
        self.query_opt(sql, &[Param::Bytes(token_hash)], |r| {
            let token_hash = <[u8; 32]>::try_from(r.bytes(3)?)
                .map_err(|_| DbError::Corrupt("token hash is not 32 bytes".into()))?;
            Ok(UserAccessToken {
                id: id(r, 0)?,
                user_id: id(r, 1)?,
                project_id: id(r, 2)?,
                token_hash,
                expires_at: r.int(4)?,
                revoked_at: r.opt_int(5)?,
            })
        })
    }

    fn get_agent(&self, agent_id: &str) -> StoreResult<Option<Agent>> {
        let sql = self.statements().agent;
        self.query_opt(sql, &[Param::Text(agent_id)], |r| mapping::agent(r))
    }

    fn get_project(&self, project_id: &str) -> StoreResult<Option<Project>> {
        let sql = self.statements().project;
        self.query_opt(sql, &[Param::Text(project_id)], |r| mapping::project(r))
    }

    fn get_project_membership(
        &self,
        project_id: &str,
        user_id: &str,
    ) -> StoreResult<Option<ProjectMembership>> {
        let params = [Param::Text(project_id), Param::Text(user_id)];
        self.query_opt(self.statements().project_membership, &params, |r| {
            Ok(ProjectMembership {
                project_id: Id::from(project_id),
                user_id: Id::from(user_id),
                role: r.text(0)?.to_owned(),
            })
        })
    }

    fn get_hub_setting(&self, key: &str) -> StoreResult<Option<Stored>> {
        super::settings::hub_setting_on(self, key)
    }
}
