//! The SQLite implementation of [`AuthzStore`]: one prepared (cached)
//! statement per method, and one statement per batch (id lists are passed as
//! a JSON array and joined with `json_each`, so the statement text never
//! depends on how many ids there are).

use rusqlite::{OptionalExtension, Row};

use super::{AuthzStore, StoreResult};
use crate::db::{Db, DbError};
use crate::model::{
    AccessConstraint, Agent, AgentPhase, BindingScope, DelegationEdge, Group, GroupMembership, Id,
    PrincipalKind, PrincipalRef, Project, ProjectMembership, RoleBinding, RoleDefinition, User,
    UserAccessToken,
};

/// The Hub's store on SQLite.
#[derive(Debug, Clone)]
pub struct SqliteStore {
    db: Db,
}

impl SqliteStore {
    /// A store reading through `db`'s pool.
    pub fn new(db: Db) -> Self {
        SqliteStore { db }
    }

    /// The database the store reads.
    pub fn db(&self) -> &Db {
        &self.db
    }
}

fn id(row: &Row<'_>, idx: usize) -> rusqlite::Result<Id> {
    Ok(Id::from(row.get_ref(idx)?.as_str()?))
}

fn json_list(row: &Row<'_>, idx: usize) -> rusqlite::Result<Vec<String>> {
    let text = row.get_ref(idx)?.as_str()?;
    serde_json::from_str(text).map_err(|e| {
        rusqlite::Error::FromSqlConversionFailure(idx, rusqlite::types::Type::Text, Box::new(e))
    })
}

fn parsed<T: std::str::FromStr>(row: &Row<'_>, idx: usize) -> rusqlite::Result<T>
where
    T::Err: std::error::Error + Send + Sync + 'static,
{
    row.get_ref(idx)?.as_str()?.parse().map_err(|e| {
        rusqlite::Error::FromSqlConversionFailure(idx, rusqlite::types::Type::Text, Box::new(e))
    })
}

fn ids_json(ids: &[Id]) -> String {
    serde_json::to_string(ids).expect("ids serialize")
}

fn group(row: &Row<'_>) -> rusqlite::Result<Group> {
    Ok(Group {
        id: id(row, 0)?,
        slug: row.get(1)?,
        name: row.get(2)?,
    })
}

fn role(row: &Row<'_>) -> rusqlite::Result<RoleDefinition> {
    Ok(RoleDefinition {
        id: id(row, 0)?,
        name: row.get(1)?,
        permissions: json_list(row, 2)?,
    })
}

fn binding(row: &Row<'_>) -> rusqlite::Result<RoleBinding> {
    let scope = match row.get_ref(4)?.as_str()? {
        "hub" => BindingScope::Hub,
        _ => BindingScope::Project(id(row, 5)?),
    };
    Ok(RoleBinding {
        id: id(row, 0)?,
        principal: PrincipalRef {
            kind: parsed(row, 1)?,
            id: id(row, 2)?,
        },
        role_id: id(row, 3)?,
        scope,
    })
}

const GROUP_COLUMNS: &str = "g.id, g.slug, g.name";
const ROLE_COLUMNS: &str = "id, name, permissions";
const BINDING_COLUMNS: &str =
    "rb.id, rb.principal_kind, rb.principal_id, rb.role_id, rb.scope_kind, rb.scope_id";

/// Reads an agent row in the column order of [`AGENT_COLUMNS`].
pub(crate) fn agent(row: &Row<'_>) -> rusqlite::Result<Agent> {
    Ok(Agent {
        id: id(row, 0)?,
        project_id: id(row, 1)?,
        name: row.get(2)?,
        phase: parsed(row, 3)?,
        activity: parsed(row, 4)?,
        created_by: id(row, 5)?,
        created_at: row.get(6)?,
        updated_at: row.get(7)?,
        config: row.get(8)?,
    })
}

/// The columns [`agent`] reads.
pub(crate) const AGENT_COLUMNS: &str =
    "id, project_id, name, phase, activity, created_by, created_at, updated_at, config";

const EFFECTIVE_GROUPS: &str = "WITH RECURSIVE g(id) AS (
        SELECT group_id FROM group_members WHERE principal_kind = ?1 AND principal_id = ?2
        UNION
        SELECT gp.parent_id FROM group_parents gp JOIN g ON gp.group_id = g.id
    ) SELECT id FROM g ORDER BY id";

impl SqliteStore {
    fn effective_groups(&self, kind: PrincipalKind, principal_id: &str) -> StoreResult<Vec<Id>> {
        let conn = self.db.conn()?;
        let mut stmt = conn.prepare_cached(EFFECTIVE_GROUPS)?;
        let rows = stmt.query_map((kind.as_str(), principal_id), |r| id(r, 0))?;
        Ok(rows.collect::<Result<_, _>>()?)
    }
}

impl AuthzStore for SqliteStore {
    fn get_effective_groups(&self, user_id: &str) -> StoreResult<Vec<Id>> {
        self.effective_groups(PrincipalKind::User, user_id)
    }

    fn get_effective_groups_for_agent(&self, agent_id: &str) -> StoreResult<Vec<Id>> {
        self.effective_groups(PrincipalKind::Agent, agent_id)
    }

    fn get_parent_groups(&self, group_id: &str) -> StoreResult<Vec<Group>> {
        let conn = self.db.conn()?;
        let mut stmt = conn.prepare_cached(&format!(
            "SELECT {GROUP_COLUMNS} FROM group_parents gp JOIN groups g ON g.id = gp.parent_id
             WHERE gp.group_id = ?1 ORDER BY g.slug"
        ))?;
        let rows = stmt.query_map([group_id], group)?;
        Ok(rows.collect::<Result<_, _>>()?)
    }

    fn get_user_groups(&self, user_id: &str) -> StoreResult<Vec<Group>> {
        let conn = self.db.conn()?;
        let mut stmt = conn.prepare_cached(&format!(
            "SELECT {GROUP_COLUMNS} FROM group_members m JOIN groups g ON g.id = m.group_id
             WHERE m.principal_kind = 'user' AND m.principal_id = ?1 ORDER BY g.slug"
        ))?;
        let rows = stmt.query_map([user_id], group)?;
        Ok(rows.collect::<Result<_, _>>()?)
    }

    fn get_group_membership(
        &self,
        group_id: &str,
        principal: &PrincipalRef,
    ) -> StoreResult<Option<GroupMembership>> {
        let conn = self.db.conn()?;
        let mut stmt = conn.prepare_cached(
            "SELECT role FROM group_members
             WHERE group_id = ?1 AND principal_kind = ?2 AND principal_id = ?3",
        )?;
        let role: Option<String> = stmt
            .query_row((group_id, principal.kind.as_str(), &*principal.id), |r| {
                r.get(0)
            })
            .optional()?;
        Ok(role.map(|role| GroupMembership {
            group_id: Id::from(group_id),
            principal: principal.clone(),
            role,
        }))
    }

    fn get_group_by_slug(&self, slug: &str) -> StoreResult<Option<Group>> {
        let conn = self.db.conn()?;
        let mut stmt = conn.prepare_cached(&format!(
            "SELECT {GROUP_COLUMNS} FROM groups g WHERE g.slug = ?1"
        ))?;
        Ok(stmt.query_row([slug], group).optional()?)
    }

    fn list_role_bindings_for_principals(
        &self,
        principals: &[PrincipalRef],
    ) -> StoreResult<Vec<RoleBinding>> {
        let pairs: Vec<[&str; 2]> = principals
            .iter()
            .map(|p| [p.kind.as_str(), &*p.id])
            .collect();
        let conn = self.db.conn()?;
        let mut stmt = conn.prepare_cached(&format!(
            "SELECT {BINDING_COLUMNS} FROM json_each(?1) j
             JOIN role_bindings rb
               ON rb.principal_kind = (j.value ->> 0) AND rb.principal_id = (j.value ->> 1)
             ORDER BY rb.id"
        ))?;
        let json = serde_json::to_string(&pairs).expect("pairs serialize");
        let rows = stmt.query_map([json], binding)?;
        Ok(rows.collect::<Result<_, _>>()?)
    }

    fn list_role_bindings_for_principal(
        &self,
        principal: &PrincipalRef,
    ) -> StoreResult<Vec<RoleBinding>> {
        let conn = self.db.conn()?;
        let mut stmt = conn.prepare_cached(&format!(
            "SELECT {BINDING_COLUMNS} FROM role_bindings rb
             WHERE rb.principal_kind = ?1 AND rb.principal_id = ?2 ORDER BY rb.id"
        ))?;
        let rows = stmt.query_map((principal.kind.as_str(), &*principal.id), binding)?;
        Ok(rows.collect::<Result<_, _>>()?)
    }

    fn get_role_definition(&self, role_id: &str) -> StoreResult<Option<RoleDefinition>> {
        let conn = self.db.conn()?;
        let mut stmt = conn.prepare_cached(&format!(
            "SELECT {ROLE_COLUMNS} FROM role_definitions WHERE id = ?1"
        ))?;
        Ok(stmt.query_row([role_id], role).optional()?)
    }

    fn get_role_definitions_by_ids(&self, ids: &[Id]) -> StoreResult<Vec<RoleDefinition>> {
        let conn = self.db.conn()?;
        let mut stmt = conn.prepare_cached(&format!(
            "SELECT {ROLE_COLUMNS} FROM role_definitions
             WHERE id IN (SELECT value FROM json_each(?1)) ORDER BY id"
        ))?;
        let rows = stmt.query_map([ids_json(ids)], role)?;
        Ok(rows.collect::<Result<_, _>>()?)
    }

    fn get_role_definition_by_name(&self, name: &str) -> StoreResult<Option<RoleDefinition>> {
        let conn = self.db.conn()?;
        let mut stmt = conn.prepare_cached(&format!(
            "SELECT {ROLE_COLUMNS} FROM role_definitions WHERE name = ?1"
        ))?;
        Ok(stmt.query_row([name], role).optional()?)
    }

    fn list_access_constraints(&self, project_ids: &[Id]) -> StoreResult<Vec<AccessConstraint>> {
        let conn = self.db.conn()?;
        let mut stmt = conn.prepare_cached(
            "SELECT id, project_id, action, deny_phases FROM access_constraints
             WHERE project_id IN (SELECT value FROM json_each(?1)) ORDER BY id",
        )?;
        let rows = stmt.query_map([ids_json(project_ids)], |r| {
            let deny_phases = json_list(r, 3)?
                .iter()
                .map(|p| p.parse::<AgentPhase>())
                .collect::<Result<_, _>>()
                .map_err(|e| {
                    rusqlite::Error::FromSqlConversionFailure(
                        3,
                        rusqlite::types::Type::Text,
                        Box::new(e),
                    )
                })?;
            Ok(AccessConstraint {
                id: id(r, 0)?,
                project_id: id(r, 1)?,
                action: r.get(2)?,
                deny_phases,
            })
        })?;
        Ok(rows.collect::<Result<_, _>>()?)
    }

    fn get_delegation_edges_for_delegate(
        &self,
        delegate: &PrincipalRef,
    ) -> StoreResult<Vec<DelegationEdge>> {
        let conn = self.db.conn()?;
        let mut stmt = conn.prepare_cached(
            "SELECT id, delegator_user_id, project_id, actions FROM delegation_edges
             WHERE delegate_kind = ?1 AND delegate_id = ?2 ORDER BY id",
        )?;
        let rows = stmt.query_map((delegate.kind.as_str(), &*delegate.id), |r| {
            Ok(DelegationEdge {
                id: id(r, 0)?,
                delegator_user_id: id(r, 1)?,
                delegate: delegate.clone(),
                project_id: r.get_ref(2)?.as_str_or_null()?.map(Id::from),
                actions: json_list(r, 3)?,
            })
        })?;
        Ok(rows.collect::<Result<_, _>>()?)
    }

    fn get_user(&self, user_id: &str) -> StoreResult<Option<User>> {
        let conn = self.db.conn()?;
        let mut stmt = conn.prepare_cached(
            "SELECT id, email, display_name, is_platform_admin, created_at FROM users WHERE id = ?1",
        )?;
        Ok(stmt
            .query_row([user_id], |r| {
                Ok(User {
                    id: id(r, 0)?,
                    email: r.get(1)?,
                    display_name: r.get(2)?,
                    is_platform_admin: r.get(3)?,
                    created_at: r.get(4)?,
                })
            })
            .optional()?)
    }

    fn get_user_access_token(&self, token_hash: &[u8; 32]) -> StoreResult<Option<UserAccessToken>> {
        let conn = self.db.conn()?;
        let mut stmt = conn.prepare_cached(
            "SELECT id, user_id, project_id, token_hash, expires_at, revoked_at
             FROM user_access_tokens WHERE token_hash = ?1",
        )?;
        let token = stmt
            .query_row([&token_hash[..]], |r| {
                let stored: Vec<u8> = r.get(3)?;
                Ok((
                    id(r, 0)?,
                    id(r, 1)?,
                    id(r, 2)?,
                    stored,
                    r.get::<_, i64>(4)?,
                    r.get::<_, Option<i64>>(5)?,
                ))
            })
            .optional()?;
        token
            .map(
                |(id, user_id, project_id, stored, expires_at, revoked_at)| {
                    let token_hash = <[u8; 32]>::try_from(stored.as_slice())
                        .map_err(|_| DbError::Corrupt("token hash is not 32 bytes".into()))?;
                    Ok(UserAccessToken {
                        id,
                        user_id,
                        project_id,
                        token_hash,
                        expires_at,
                        revoked_at,
                    })
                },
            )
            .transpose()
    }

    fn get_agent(&self, agent_id: &str) -> StoreResult<Option<Agent>> {
        let conn = self.db.conn()?;
        let mut stmt =
            conn.prepare_cached(&format!("SELECT {AGENT_COLUMNS} FROM agents WHERE id = ?1"))?;
        Ok(stmt.query_row([agent_id], agent).optional()?)
    }

    fn get_project(&self, project_id: &str) -> StoreResult<Option<Project>> {
        let conn = self.db.conn()?;
        let mut stmt = conn.prepare_cached(
            "SELECT id, slug, name, created_by, created_at FROM projects WHERE id = ?1",
        )?;
        Ok(stmt
            .query_row([project_id], |r| {
                Ok(Project {
                    id: id(r, 0)?,
                    slug: r.get(1)?,
                    name: r.get(2)?,
                    created_by: id(r, 3)?,
                    created_at: r.get(4)?,
                })
            })
            .optional()?)
    }

    fn get_project_membership(
        &self,
        project_id: &str,
        user_id: &str,
    ) -> StoreResult<Option<ProjectMembership>> {
        let conn = self.db.conn()?;
        let mut stmt = conn.prepare_cached(
            "SELECT role FROM project_memberships WHERE project_id = ?1 AND user_id = ?2",
        )?;
        let role: Option<String> = stmt
            .query_row((project_id, user_id), |r| r.get(0))
            .optional()?;
        Ok(role.map(|role| ProjectMembership {
            project_id: Id::from(project_id),
            user_id: Id::from(user_id),
            role,
        }))
    }

    fn get_hub_setting(&self, key: &str) -> StoreResult<Option<String>> {
        let conn = self.db.conn()?;
        let mut stmt = conn.prepare_cached("SELECT value FROM hub_settings WHERE key = ?1")?;
        Ok(stmt.query_row([key], |r| r.get(0)).optional()?)
    }
}
