//! The hub settings that change at run time: rows of `hub_settings`, a
//! dotted key and a JSON value, written by `PUT /api/v1/admin/server-config`
//! (and the profiling endpoint) and read by authorization and the pages.
//!
//! A row holds only what the Hub can use: `check` validates a known
//! key's value for type, length and range before it is stored, and bounds
//! any other key's value to `MAX_VALUE_BYTES`. A row that fails the same
//! check when read (written by hand, bypassing the API) is never trusted:
//! its reader uses the default and says so once: the Hub when it starts
//! (`KNOWN`, `check_stored`), and `CreatorRoles` at each change of
//! the creator role.

use std::sync::Arc;

use parking_lot::Mutex;

/// The role a user holds on the agents they created.
pub(crate) const CREATOR_ROLE: &str = "authz.creator_role";
/// The creator role when the setting is absent or unusable.
pub(crate) const DEFAULT_CREATOR_ROLE: &str = "agent-creator";
/// Whether the web client writes readiness marks.
pub(crate) const READINESS_MARKS: &str = "profiling.readiness_marks";
/// The longest stored value (its JSON text) of any setting: rows are read
/// per request, so none may grow without bound.
pub(crate) const MAX_VALUE_BYTES: usize = 4 * 1024;
/// The most settings stored: each is read by a scan on SQLite, and no
/// Hub needs this many.
pub const MAX_STORED: usize = 1000;
/// The longest role name.
const MAX_ROLE_NAME: usize = 64;
/// What the creator role takes.
const ROLE_NAME: &str = "a role name of 1 to 64 letters, digits, '.', '_' or '-'";

/// A setting whose value the Hub cannot use. The message names the key
/// and what it takes, never the value.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{key} must be {expected}")]
pub(crate) struct InvalidSetting {
    /// The setting.
    pub key: String,
    /// What it takes.
    pub expected: &'static str,
}

impl InvalidSetting {
    /// `key` must be `expected`.
    pub fn new(key: &str, expected: &'static str) -> InvalidSetting {
        InvalidSetting {
            key: key.to_owned(),
            expected,
        }
    }
}

/// Checks one setting before it is stored: a known key's value for its
/// type, length and range, any key's stored text for its size. A key below
/// a known one (`authz.creator_role.x`, from a nested object) is a value
/// of the wrong type for the known one.
pub(crate) fn check(key: &str, value: &serde_json::Value) -> Result<(), InvalidSetting> {
    if let Some(known) = KNOWN.iter().find(|known| {
        key.strip_prefix(**known)
            .is_some_and(|rest| rest.starts_with('.'))
    }) {
        return check(known, &serde_json::Value::Null);
    }
    if value.to_string().len() > MAX_VALUE_BYTES {
        return Err(InvalidSetting::new(key, "at most 4 KiB of JSON"));
    }
    match key {
        CREATOR_ROLE => role_name(value).map(drop),
        READINESS_MARKS if !value.is_boolean() => Err(InvalidSetting::new(key, "true or false")),
        _ => Ok(()),
    }
}

fn role_name(value: &serde_json::Value) -> Result<&str, InvalidSetting> {
    value
        .as_str()
        .filter(|name| {
            (1..=MAX_ROLE_NAME).contains(&name.len())
                && name
                    .bytes()
                    .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'.' | b'_' | b'-'))
        })
        .ok_or_else(|| InvalidSetting::new(CREATOR_ROLE, ROLE_NAME))
}

/// A stored setting as read: its JSON text, or only its size when it is
/// larger than any value `check` lets through (never read whole).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Stored {
    /// The stored JSON text.
    Text(String),
    /// A value of this many bytes, too large to be read.
    Oversized(u64),
}

/// The settings the Hub reads at run time, checked when it starts.
pub(crate) const KNOWN: [&str; 2] = [CREATOR_ROLE, READINESS_MARKS];

/// The message of the line naming a stored setting the Hub does not use.
pub const IGNORED_MESSAGE: &str = "hub setting ignored, the default used";

/// Checks a stored setting as [`check`] checked it before storing it,
/// giving its JSON value.
pub(crate) fn check_stored(
    key: &str,
    stored: &Stored,
) -> Result<serde_json::Value, InvalidSetting> {
    let Stored::Text(text) = stored else {
        return Err(InvalidSetting::new(key, "at most 4 KiB of JSON"));
    };
    let value = serde_json::from_str(text).map_err(|_| InvalidSetting::new(key, "valid JSON"))?;
    check(key, &value)?;
    Ok(value)
}

/// The creator role named by the stored `authz.creator_role`.
pub(crate) fn creator_role(stored: &Stored) -> Result<String, InvalidSetting> {
    let value = check_stored(CREATOR_ROLE, stored)?;
    role_name(&value).map(str::to_owned)
}

/// Says that a stored setting is not used, without its value.
type Report = Box<dyn Fn(&InvalidSetting) + Send + Sync>;

/// The creator role as last read, shared by a Hub's requests: the row is
/// read per request (one bounded round trip, so a change made through any
/// replica or by hand is seen at once), but parsed and checked only when
/// it changes, and an unusable value is reported once per change.
pub(crate) struct CreatorRoles {
    last: Mutex<Option<(Stored, Arc<str>)>>,
    report: Report,
}

impl std::fmt::Debug for CreatorRoles {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("CreatorRoles")
            .field("last", &self.last)
            .finish_non_exhaustive()
    }
}

impl Default for CreatorRoles {
    /// Reports nothing.
    fn default() -> Self {
        CreatorRoles::new(|_| {})
    }
}

impl CreatorRoles {
    /// Remembers the last role, telling `report` of each unusable value.
    pub fn new(report: impl Fn(&InvalidSetting) + Send + Sync + 'static) -> CreatorRoles {
        CreatorRoles {
            last: Mutex::new(None),
            report: Box::new(report),
        }
    }

    /// The role `stored` names, or the default when it is absent or
    /// unusable.
    pub fn role(&self, stored: Option<&Stored>) -> Arc<str> {
        let Some(stored) = stored else {
            return DEFAULT_CREATOR_ROLE.into();
        };
        let mut last = self.last.lock();
        if let Some((seen, role)) = last.as_ref() {
            if seen == stored {
                return role.clone();
            }
        }
        let role: Arc<str> = match creator_role(stored) {
            Ok(role) => role.into(),
            Err(invalid) => {
                (self.report)(&invalid);
                DEFAULT_CREATOR_ROLE.into()
            }
        };
        *last = Some((stored.clone(), role.clone()));
        role
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn known_keys_are_checked_for_type_length_and_charset() {
        assert_eq!(check(CREATOR_ROLE, &json!("project-viewer")), Ok(()));
        for bad in [
            json!(""),
            json!("x".repeat(65)),
            json!("no spaces"),
            json!("é"),
            json!(7),
            json!(["agent-creator"]),
            json!(null),
        ] {
            let err = check(CREATOR_ROLE, &bad).unwrap_err();
            assert_eq!(err.key, CREATOR_ROLE);
            assert!(!err.to_string().contains("no spaces"));
        }
        let nested = check("authz.creator_role.name", &json!("agent-creator"));
        assert_eq!(
            nested.unwrap_err(),
            InvalidSetting::new(CREATOR_ROLE, ROLE_NAME)
        );
        assert_eq!(check("authz.creator_roles", &json!(1)), Ok(()));
        assert_eq!(check(READINESS_MARKS, &json!(true)), Ok(()));
        assert!(check(READINESS_MARKS, &json!("true")).is_err());
    }

    #[test]
    fn unknown_keys_are_bounded() {
        assert_eq!(check("ui.theme", &json!({"dark": [1, 2]})), Ok(()));
        let big = json!("x".repeat(MAX_VALUE_BYTES));
        assert_eq!(
            check("ui.theme", &big).unwrap_err().to_string(),
            "ui.theme must be at most 4 KiB of JSON"
        );
    }

    #[test]
    fn the_creator_role_is_checked_once_per_stored_value() {
        let reports = Arc::new(Mutex::new(Vec::new()));
        let seen = reports.clone();
        let roles = CreatorRoles::new(move |e| seen.lock().push(e.to_string()));
        let text = |text: &str| Stored::Text(text.to_owned());
        assert_eq!(&*roles.role(Some(&text("\"viewer\""))), "viewer");
        for _ in 0..3 {
            assert_eq!(&*roles.role(Some(&text("[1]"))), DEFAULT_CREATOR_ROLE);
        }
        assert_eq!(
            reports.lock().len(),
            1,
            "an unusable value is reported once"
        );
        let huge = Stored::Oversized(256 << 20);
        assert_eq!(&*roles.role(Some(&huge)), DEFAULT_CREATOR_ROLE);
        assert_eq!(reports.lock().len(), 2, "a change is reported again");
        assert_eq!(&*roles.role(None), DEFAULT_CREATOR_ROLE);
        assert_eq!(&*roles.role(Some(&text("\"owner\""))), "owner");
        assert_eq!(
            *reports.lock(),
            [
                format!("{CREATOR_ROLE} must be {ROLE_NAME}"),
                format!("{CREATOR_ROLE} must be at most 4 KiB of JSON"),
            ]
        );
    }
}
