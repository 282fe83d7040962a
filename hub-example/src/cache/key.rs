//! What a cached response is stored under: everything the response depends
//! on. The route, the path's id, the normalized query, who asks (kind, id,
//! admin flag and the project a credential is limited to) and the
//! invalidation stamp of what the response shows. Two requests share an
//! entry only when they would get the same answer fresh.

use crate::authz::{Credential, Principal};
use crate::model::Id;
use crate::perf::keys::CacheRoute;

/// Who a cached response was computed for.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub(crate) enum CallerKey {
    /// Anyone: the response does not depend on the caller (public settings).
    Anyone,
    /// A user, with the rights its credential carries.
    User {
        /// The user's id.
        id: Id,
        /// Whether the user is a platform admin.
        platform_admin: bool,
        /// The project an access token is limited to; `None` for a session.
        limited_to: Option<Id>,
    },
    /// An agent on its own token (limited to its project).
    Agent {
        /// The agent's id.
        id: Id,
        /// The project it lives in.
        project: Id,
    },
}

impl From<&Principal> for CallerKey {
    fn from(principal: &Principal) -> Self {
        match principal {
            Principal::User(user) => CallerKey::User {
                id: user.id.clone(),
                platform_admin: user.is_platform_admin,
                limited_to: match &user.credential {
                    Credential::Session => None,
                    Credential::AccessToken { project_id } => Some(project_id.clone()),
                },
            },
            Principal::Agent(agent) => CallerKey::Agent {
                id: agent.id.clone(),
                project: agent.project_id.clone(),
            },
        }
    }
}

/// The key of one cached response.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub(crate) struct CacheKey {
    /// The cached route.
    pub route: CacheRoute,
    /// The id in the path (the project of a project list, the agent of an
    /// agent read), once parsed.
    pub(crate) path_id: Option<String>,
    /// The query, normalized by [`normalize_query`].
    pub query: String,
    /// Who asks.
    pub caller: CallerKey,
    /// The invalidation stamp when the request looked the entry up (see
    /// [`Generations`](super::Generations)): a write moves it on, so
    /// entries computed before the write are never found again.
    pub stamp: (u64, u64),
}

/// The query in a canonical form: pairs decoded, sorted by name (the order
/// of repeated names kept, since a handler may read them in order) and
/// encoded again. `b=2&a=1` and `a=%31&b=2` give the same key; anything the
/// handler could read differently stays different.
pub(crate) fn normalize_query(query: Option<&str>) -> String {
    let Some(query) = query.filter(|q| !q.is_empty()) else {
        return String::new();
    };
    let mut pairs: Vec<(String, String)> = form_urlencoded::parse(query.as_bytes())
        .map(|(k, v)| (k.into_owned(), v.into_owned()))
        .collect();
    pairs.sort_by(|a, b| a.0.cmp(&b.0));
    form_urlencoded::Serializer::new(String::new())
        .extend_pairs(pairs)
        .finish()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::authz::{AgentPrincipal, UserPrincipal};

    #[test]
    fn equivalent_queries_normalize_alike() {
        assert_eq!(normalize_query(None), "");
        assert_eq!(normalize_query(Some("")), "");
        assert_eq!(
            normalize_query(Some("view=compact&limit=5")),
            normalize_query(Some("limit=%35&view=compact"))
        );
        assert_ne!(
            normalize_query(Some("ids=a&ids=b")),
            normalize_query(Some("ids=b&ids=a")),
            "repeated names keep their order"
        );
        assert_ne!(
            normalize_query(Some("limit=5")),
            normalize_query(Some("limit=6"))
        );
    }

    #[test]
    fn a_credential_limited_to_a_project_is_another_caller() {
        let user = |credential| {
            CallerKey::from(&Principal::User(UserPrincipal {
                id: Id::from("u1"),
                is_platform_admin: true,
                credential,
            }))
        };
        let session = user(Credential::Session);
        let token_a = user(Credential::AccessToken {
            project_id: Id::from("pa"),
        });
        let token_b = user(Credential::AccessToken {
            project_id: Id::from("pb"),
        });
        assert_ne!(session, token_a);
        assert_ne!(token_a, token_b);
        let agent = CallerKey::from(&Principal::Agent(AgentPrincipal {
            id: Id::from("u1"),
            project_id: Id::from("pa"),
        }));
        assert_ne!(agent, token_a, "an agent is never a user with the same id");
    }
}
