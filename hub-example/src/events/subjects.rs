//! Event subjects: dot-separated tokens with NATS-style wildcards (`*` for
//! one token, `>` for the rest). A subscription names up to 16 subjects, each
//! rooted at a resource the Hub can authorize:
//!
//! - `projects.<project id>.…` (for example `projects.<id>.agents.>`)
//! - `agents.<agent id>.…`
//! - `groups.<group slug>.…`
//! - `users.me.…` or `users.<user id>.…`

use crate::model::{is_uuid, Id};

/// Most subjects in one subscription.
pub(crate) const MAX_SUBJECTS: usize = 16;
/// Most tokens in one subject.
const MAX_TOKENS: usize = 8;
/// Longest subject.
const MAX_SUBJECT_LEN: usize = 256;

/// One token of a pattern.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Token {
    /// Exactly this text.
    Literal(String),
    /// Any one token.
    Any,
    /// Any number (at least one) of remaining tokens.
    Rest,
}

/// A subject pattern.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Pattern(pub Vec<Token>);

impl Pattern {
    /// Whether the concrete subject `subject` matches.
    pub fn matches(&self, subject: &str) -> bool {
        let mut parts = subject.split('.');
        for token in &self.0 {
            match token {
                Token::Rest => return parts.next().is_some(),
                Token::Any => {
                    if parts.next().is_none() {
                        return false;
                    }
                }
                Token::Literal(lit) => {
                    if parts.next() != Some(lit.as_str()) {
                        return false;
                    }
                }
            }
        }
        parts.next().is_none()
    }

    /// The pattern with its first two tokens replaced by `root` and `id`.
    pub(crate) fn rerooted(&self, root: &str, id: &str) -> Pattern {
        let mut tokens = vec![
            Token::Literal(root.to_owned()),
            Token::Literal(id.to_owned()),
        ];
        tokens.extend(self.0.iter().skip(2).cloned());
        Pattern(tokens)
    }
}

/// Whose user subject.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum UserRef {
    /// The caller (`users.me.…`).
    Me,
    /// A user by id.
    Id(Id),
}

/// A parsed subject: its root resource and its whole pattern.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Subject {
    /// Events of a project.
    Project {
        /// The project.
        project: Id,
        /// The pattern.
        pattern: Pattern,
    },
    /// Events of an agent.
    Agent {
        /// The agent.
        agent: Id,
        /// The pattern.
        pattern: Pattern,
    },
    /// Events of a group (and, once expanded, of its parent groups).
    Group {
        /// The group's slug.
        slug: String,
        /// The pattern.
        pattern: Pattern,
    },
    /// Events addressed to a user.
    User {
        /// Whose.
        user: UserRef,
        /// The pattern.
        pattern: Pattern,
    },
}

/// Why a subject list is malformed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub(crate) enum SubjectError {
    /// No `sub` parameter.
    #[error("at least one sub parameter is required")]
    Empty,
    /// Too many subjects.
    #[error("at most 16 subjects per subscription")]
    TooMany,
    /// A subject is not of the grammar.
    #[error("malformed subject")]
    Malformed,
    /// A subject's root is not known.
    #[error("unknown subject root (use projects, agents, groups or users)")]
    UnknownRoot,
}

fn is_slug(s: &str) -> bool {
    !s.is_empty()
        && s.len() <= 64
        && s.bytes()
            .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-')
}

fn parse_token(text: &str, last: bool) -> Result<Token, SubjectError> {
    match text {
        "*" => Ok(Token::Any),
        ">" if last => Ok(Token::Rest),
        _ if !text.is_empty()
            && text
                .bytes()
                .all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-') =>
        {
            Ok(Token::Literal(text.to_owned()))
        }
        _ => Err(SubjectError::Malformed),
    }
}

/// Parses one subject.
pub(crate) fn parse_subject(text: &str) -> Result<Subject, SubjectError> {
    if text.is_empty() || text.len() > MAX_SUBJECT_LEN {
        return Err(SubjectError::Malformed);
    }
    let raw: Vec<&str> = text.split('.').collect();
    if raw.len() < 3 || raw.len() > MAX_TOKENS {
        return Err(SubjectError::Malformed);
    }
    let tokens = raw
        .iter()
        .enumerate()
        .map(|(i, t)| parse_token(t, i + 1 == raw.len()))
        .collect::<Result<Vec<_>, _>>()?;
    let pattern = Pattern(tokens);
    let (root, id) = (raw[0], raw[1]);
    match root {
        "projects" if is_uuid(id) => Ok(Subject::Project {
            project: Id::from(id),
            pattern,
        }),
        "agents" if is_uuid(id) => Ok(Subject::Agent {
            agent: Id::from(id),
            pattern,
        }),
        "groups" if is_slug(id) => Ok(Subject::Group {
            slug: id.to_owned(),
            pattern,
        }),
        "users" if id == "me" => Ok(Subject::User {
            user: UserRef::Me,
            pattern,
        }),
        "users" if is_uuid(id) => Ok(Subject::User {
            user: UserRef::Id(Id::from(id)),
            pattern,
        }),
        "projects" | "agents" | "groups" | "users" => Err(SubjectError::Malformed),
        _ => Err(SubjectError::UnknownRoot),
    }
}

/// Parses the `sub` values of a subscription.
pub(crate) fn parse_subjects<'a>(
    values: impl IntoIterator<Item = &'a str>,
) -> Result<Vec<Subject>, SubjectError> {
    let mut subjects = Vec::new();
    for value in values {
        if subjects.len() == MAX_SUBJECTS {
            return Err(SubjectError::TooMany);
        }
        subjects.push(parse_subject(value)?);
    }
    if subjects.is_empty() {
        return Err(SubjectError::Empty);
    }
    Ok(subjects)
}

#[cfg(test)]
mod tests {
    use super::*;

    const P: &str = "0b7f1f2e-1c1d-4a7e-9a51-0f5b6c0c1d2e";

    #[test]
    fn parses_each_root() {
        assert!(matches!(
            parse_subject(&format!("projects.{P}.agents.>")),
            Ok(Subject::Project { .. })
        ));
        assert!(matches!(
            parse_subject(&format!("agents.{P}.*")),
            Ok(Subject::Agent { .. })
        ));
        assert!(matches!(
            parse_subject("groups.eng-team.>"),
            Ok(Subject::Group { .. })
        ));
        assert!(matches!(
            parse_subject("users.me.>"),
            Ok(Subject::User {
                user: UserRef::Me,
                ..
            })
        ));
    }

    #[test]
    fn rejects_malformed_lists() {
        for bad in [
            "",
            "projects",
            "projects.x.>",
            &format!("projects.{P}.>.agents"),
            &format!("projects.{P}..x"),
            &format!("projects.{P}.a b"),
            "groups.Eng.>",
            "users.someone.>",
        ] {
            assert_eq!(parse_subject(bad), Err(SubjectError::Malformed), "{bad}");
        }
        assert_eq!(parse_subject("orders.x.>"), Err(SubjectError::UnknownRoot));
        assert_eq!(parse_subjects([]), Err(SubjectError::Empty));
        let many = vec!["users.me.>"; 17];
        assert_eq!(parse_subjects(many), Err(SubjectError::TooMany));
    }

    #[test]
    fn patterns_match_like_nats() {
        let Subject::Project { pattern, .. } =
            parse_subject(&format!("projects.{P}.agents.>")).unwrap()
        else {
            unreachable!()
        };
        assert!(pattern.matches(&format!("projects.{P}.agents.a.status")));
        assert!(!pattern.matches(&format!("projects.{P}.agents")));
        assert!(!pattern.matches("projects.other.agents.a.status"));
        let Subject::Agent { pattern, .. } = parse_subject(&format!("agents.{P}.*")).unwrap()
        else {
            unreachable!()
        };
        assert!(pattern.matches(&format!("agents.{P}.status")));
        assert!(!pattern.matches(&format!("agents.{P}.status.x")));
        assert!(pattern
            .rerooted("groups", "ops")
            .matches("groups.ops.status"));
    }

    mod fuzz {
        use super::*;
        use proptest::prelude::*;

        fn uuid() -> impl Strategy<Value = String> {
            any::<[u8; 16]>().prop_map(crate::model::uuid_from_bytes)
        }

        /// Text made of the grammar's own pieces, so most of it gets deep
        /// into the parser.
        fn subject_like() -> impl Strategy<Value = String> {
            let piece = prop_oneof![
                Just("projects".to_owned()),
                Just("agents".to_owned()),
                Just("groups".to_owned()),
                Just("users".to_owned()),
                Just("me".to_owned()),
                Just("*".to_owned()),
                Just(">".to_owned()),
                Just(String::new()),
                uuid(),
                "[a-z0-9_-]{1,12}",
                "\\PC{1,4}",
            ];
            proptest::collection::vec(piece, 0..10).prop_map(|p| p.join("."))
        }

        fn tail() -> impl Strategy<Value = Vec<String>> {
            proptest::collection::vec("[A-Za-z0-9_-]{1,10}", 1..6)
        }

        proptest! {
            #[test]
            fn fuzz_subject_lists_never_panic(
                list in proptest::collection::vec("\\PC{0,80}", 0..20),
            ) {
                let _ = parse_subjects(list.iter().map(String::as_str));
            }

            #[test]
            fn fuzz_subject_like_lists_never_panic(
                list in proptest::collection::vec(subject_like(), 0..20),
                concrete in subject_like(),
            ) {
                if let Ok(subjects) = parse_subjects(list.iter().map(String::as_str)) {
                    prop_assert!(!subjects.is_empty() && subjects.len() <= MAX_SUBJECTS);
                    for subject in subjects {
                        let (Subject::Project { pattern, .. }
                        | Subject::Agent { pattern, .. }
                        | Subject::Group { pattern, .. }
                        | Subject::User { pattern, .. }) = subject;
                        let _ = pattern.matches(&concrete);
                        let _ = pattern.rerooted("groups", "x").matches(&concrete);
                    }
                }
            }

            #[test]
            fn fuzz_literal_subjects_parse_and_match_themselves(
                project in uuid(),
                tail in tail(),
                more in "[A-Za-z0-9_-]{1,10}",
            ) {
                let subject = format!("projects.{project}.{}", tail.join("."));
                prop_assume!(subject.len() <= 256 && tail.len() + 2 <= 8);
                let parsed = parse_subject(&subject).unwrap();
                let Subject::Project { project: id, pattern } = parsed else {
                    panic!("not a project subject: {subject}");
                };
                prop_assert_eq!(&*id, project.as_str());
                prop_assert!(pattern.matches(&subject));
                let longer = format!("{subject}.{more}");
                prop_assert!(!pattern.matches(&longer));
            }

            #[test]
            fn fuzz_rest_wildcards_match_every_longer_subject(
                agent in uuid(),
                rest in tail(),
            ) {
                let Subject::Agent { pattern, .. } = parse_subject(&format!("agents.{agent}.>")).unwrap() else {
                    panic!("not an agent subject");
                };
                let subject = format!("agents.{agent}.{}", rest.join("."));
                prop_assert!(pattern.matches(&subject));
                let bare = format!("agents.{agent}");
                prop_assert!(!pattern.matches(&bare));
            }
        }
    }
}
