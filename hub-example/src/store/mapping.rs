//! One mapping per row type, for both engines: a row's columns read
//! through [`SqlRow`] into the model.

use super::executor::SqlRow;
use crate::model::{
    AccessConstraint, Agent, AgentPhase, BindingScope, Group, Id, PrincipalRef, Project,
    RoleBinding, RoleDefinition, User,
};
use crate::store::db::DbError;

/// A stored value that does not decode.
pub(crate) fn corrupt(what: impl std::fmt::Display, e: impl std::fmt::Display) -> DbError {
    DbError::Corrupt(format!("{what}: {e}"))
}

pub(crate) fn id(row: &impl SqlRow, idx: usize) -> Result<Id, DbError> {
    row.text(idx).map(Id::from)
}

pub(crate) fn json_list(row: &impl SqlRow, idx: usize) -> Result<Vec<String>, DbError> {
    serde_json::from_str(row.text(idx)?).map_err(|e| corrupt(format_args!("column {idx}"), e))
}

fn parsed<T: std::str::FromStr>(row: &impl SqlRow, idx: usize) -> Result<T, DbError>
where
    T::Err: std::fmt::Display,
{
    row.text(idx)?
        .parse()
        .map_err(|e| corrupt(format_args!("column {idx}"), e))
}

pub(crate) fn group(row: &impl SqlRow) -> Result<Group, DbError> {
    Ok(Group {
        id: id(row, 0)?,
        slug: row.text(1)?.to_owned(),
        name: row.text(2)?.to_owned(),
    })
}

pub(crate) fn role(row: &impl SqlRow) -> Result<RoleDefinition, DbError> {
    Ok(RoleDefinition {
        id: id(row, 0)?,
        name: row.text(1)?.to_owned(),
        permissions: json_list(row, 2)?,
    })
}

pub(crate) fn binding(row: &impl SqlRow) -> Result<RoleBinding, DbError> {
    let scope = match row.text(4)? {
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

/// An agent row, in the column order of `agent_columns!`.
pub(crate) fn agent(row: &impl SqlRow) -> Result<Agent, DbError> {
    Ok(Agent {
        id: id(row, 0)?,
        project_id: id(row, 1)?,
        name: row.text(2)?.to_owned(),
        phase: parsed(row, 3)?,
        activity: parsed(row, 4)?,
        created_by: id(row, 5)?,
        created_at: row.int(6)?,
        updated_at: row.int(7)?,
        config: row.text(8)?.to_owned(),
    })
}

pub(crate) fn access_constraint(row: &impl SqlRow) -> Result<AccessConstraint, DbError> {
    let deny_phases = json_list(row, 3)?
        .iter()
        .map(|p| p.parse::<AgentPhase>())
        .collect::<Result<_, _>>()
        .map_err(|e| corrupt("deny_phases", e))?;
    Ok(AccessConstraint {
        id: id(row, 0)?,
        project_id: id(row, 1)?,
        action: row.text(2)?.to_owned(),
        deny_phases,
    })
}

pub(crate) fn user(row: &impl SqlRow) -> Result<User, DbError> {
    Ok(User {
        id: id(row, 0)?,
        email: row.text(1)?.to_owned(),
        display_name: row.text(2)?.to_owned(),
        is_platform_admin: row.flag(3)?,
        created_at: row.int(4)?,
    })
}

pub(crate) fn project(row: &impl SqlRow) -> Result<Project, DbError> {
    Ok(Project {
        id: id(row, 0)?,
        slug: row.text(1)?.to_owned(),
        name: row.text(2)?.to_owned(),
        created_by: id(row, 3)?,
        created_at: row.int(4)?,
    })
}
