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

/// A principal as the parameters (kind, id) its statements take.
fn principal_params(principal: &PrincipalRef) -> [Param<'_>; 2] {
    [
        Param::Text(principal.kind.as_str()),
        Param::Text(&principal.id),
    ]
}

/// Methods that each run one statement with one parameter and read every
/// row (`query`) or the one row, if any (`query_opt`), with a mapping.
macro_rules! one_param_reads {
    ($(
        $method:ident($key:ident: $key_ty:ty as $param:ident) -> $out:ty =
            $run:ident($statement:ident, $map:ident);
    )*) => {
        $(
            fn $method(&self, $key: $key_ty) -> StoreResult<$out> {
                let sql = self.statements().$statement;
                self.$run(sql, &[Param::$param($key)], |r| mapping::$map(r))
            }
        )*
    };
}

impl<E: Executor> AuthzStore for E {
    one_param_reads! {
        get_parent_groups(group_id: &str as Text) -> Vec<Group> = query(parent_groups, group);
        get_user_groups(user_id: &str as Text) -> Vec<Group> = query(user_groups, group);
        get_group_by_slug(slug: &str as Text) -> Option<Group> = query_opt(group_by_slug, group);
        list_role_bindings_for_principals(principals: &[PrincipalRef] as Principals)
            -> Vec<RoleBinding> = query(role_bindings_for_principals, binding);
        get_role_definition(role_id: &str as Text) -> Option<RoleDefinition> =
            query_opt(role_definition, role);
        get_role_definitions_by_ids(ids: &[Id] as Ids) -> Vec<RoleDefinition> =
            query(role_definitions_by_ids, role);
        get_role_definition_by_name(name: &str as Text) -> Option<RoleDefinition> =
            query_opt(role_definition_by_name, role);
        list_access_constraints(project_ids: &[Id] as Ids) -> Vec<AccessConstraint> =
            query(access_constraints, access_constraint);
        get_user(user_id: &str as Text) -> Option<User> = query_opt(user, user);
        get_agent(agent_id: &str as Text) -> Option<Agent> = query_opt(agent, agent);
        get_project(project_id: &str as Text) -> Option<Project> = query_opt(project, project);
    }

    fn get_effective_groups(&self, user_id: &str) -> StoreResult<Vec<Id>> {
        effective_groups(self, PrincipalKind::User, user_id)
    }

    fn get_effective_groups_for_agent(&self, agent_id: &str) -> StoreResult<Vec<Id>> {
        effective_groups(self, PrincipalKind::Agent, agent_id)
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

    fn list_role_bindings_for_principal(
        &self,
        principal: &PrincipalRef,
    ) -> StoreResult<Vec<RoleBinding>> {
        let sql = self.statements().role_bindings_for_principal;
        self.query(sql, &principal_params(principal), |r| mapping::binding(r))
    }

    fn get_delegation_edges_for_delegate(
        &self,
        delegate: &PrincipalRef,
    ) -> StoreResult<Vec<DelegationEdge>> {
        self.query(
            self.statements().delegation_edges_for_delegate,
            &principal_params(delegate),
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
