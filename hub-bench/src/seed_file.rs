//! Reading the seed document written by `hub-example seed` (the seeder's own
//! [`SeedDocument`] type), and its redaction for reports.

use std::path::Path;

use anyhow::{bail, Context as _};

pub use hub_example::seed::SeedDocument;

/// A seed file as read: the typed view, and the raw JSON (for the report).
#[derive(Debug, Clone)]
pub struct LoadedSeed {
    /// The typed fields.
    pub seed: SeedDocument,
    /// The file's JSON as written, extra fields included, not yet redacted.
    pub raw: serde_json::Value,
}

impl LoadedSeed {
    /// The raw JSON with every token and secret replaced (see [`redact`]).
    pub fn redacted(&self) -> serde_json::Value {
        let mut v = self.raw.clone();
        redact(&mut v);
        v
    }
}

impl LoadedSeed {
    /// Reads and checks a seed file. The harness needs `projectId` and
    /// `memberToken`; a file without them is an error. Errors are one line,
    /// naming the path.
    pub fn load(path: &Path) -> anyhow::Result<LoadedSeed> {
        let text = std::fs::read_to_string(path)
            .with_context(|| format!("read seed file {}", path.display()))?;
        Self::parse(&text).with_context(|| format!("seed file {}", path.display()))
    }

    /// Parses and checks seed JSON (see [`LoadedSeed::load`]).
    pub fn parse(text: &str) -> anyhow::Result<LoadedSeed> {
        let raw: serde_json::Value = serde_json::from_str(text).context("not valid JSON")?;
        if !raw.is_object() {
            bail!("not a JSON object");
        }
        let seed: SeedDocument = serde_json::from_value(raw.clone()).context("unexpected shape")?;
        if seed.project_id.is_empty() {
            bail!("no projectId");
        }
        if seed.member_token.is_empty() {
            bail!("no memberToken");
        }
        Ok(LoadedSeed { seed, raw })
    }
}

/// The value every secret is replaced with.
pub const REDACTED: &str = "REDACTED";

/// Whether a field of this name holds a secret: a name ending in `Token` or
/// `token` (`memberToken`, `access_token`, `token`), or a session secret.
pub fn is_secret_key(name: &str) -> bool {
    name.ends_with("Token")
        || name.ends_with("token")
        || name == "sessionSecret"
        || name == "session_secret"
}

/// Replaces, at any depth, the value of every field whose name
/// [`is_secret_key`] with the string `"REDACTED"`, whatever its type.
pub fn redact(value: &mut serde_json::Value) {
    match value {
        serde_json::Value::Object(map) => {
            for (key, v) in map.iter_mut() {
                if is_secret_key(key) {
                    *v = serde_json::Value::String(REDACTED.to_owned());
                } else {
                    redact(v);
                }
            }
        }
        serde_json::Value::Array(items) => items.iter_mut().for_each(redact),
        _ => {}
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    const SEED: &str = r#"{
        "phaseCounts": {"running": 10, "stopped": 15},
        "activityCounts": {"idle": 25},
        "creatorCounts": {"u-owner": 20, "u-member": 5},
        "projectId": "p-1",
        "projectSlug": "bench-25",
        "otherProjectId": "p-2",
        "ownerUserId": "u-owner",
        "ownerEmail": "owner@example.test",
        "ownerToken": "tok-owner",
        "memberUserId": "u-member",
        "memberEmail": "member@example.test",
        "memberToken": "tok-member",
        "adminUserId": "u-admin",
        "adminEmail": "admin@example.test",
        "adminToken": "tok-admin",
        "agentCount": 25,
        "randSeed": 42,
        "dbPath": "/tmp/hub25.db",
        "seededAt": "2026-01-01T00:00:00Z",
        "sessionSecret": "bench-secret-1",
        "extra": {"nested": [{"access_token": "t"}, {"keep": 1}]}
    }"#;

    #[test]
    fn parses_and_ignores_extra_fields() {
        let loaded = LoadedSeed::parse(SEED).unwrap();
        let s = &loaded.seed;
        assert_eq!(s.project_id, "p-1");
        assert_eq!(s.member_token, "tok-member");
        assert_eq!(s.agent_count, 25);
        assert_eq!(s.rand_seed, 42);
        assert_eq!(s.phase_counts["stopped"], 15);
        assert_eq!(s.creator_counts.len(), 2);
    }

    #[test]
    fn redacts_tokens_and_secret_at_any_depth() {
        let loaded = LoadedSeed::parse(SEED).unwrap();
        let r = loaded.redacted();
        for key in ["ownerToken", "memberToken", "adminToken", "sessionSecret"] {
            assert_eq!(r[key], json!("REDACTED"), "{key}");
        }
        assert_eq!(r["extra"]["nested"][0]["access_token"], json!("REDACTED"));
        assert_eq!(r["extra"]["nested"][1]["keep"], json!(1));
        assert_eq!(r["memberEmail"], json!("member@example.test"));
        assert_eq!(r["projectId"], json!("p-1"));
        let text = serde_json::to_string(&r).unwrap();
        for secret in ["tok-owner", "tok-member", "tok-admin", "bench-secret-1"] {
            assert!(!text.contains(secret), "{secret} leaked");
        }
        // The raw copy is untouched.
        assert_eq!(loaded.raw["memberToken"], json!("tok-member"));
    }

    #[test]
    fn redacts_non_string_values_too() {
        let mut v = json!({"token": {"a": 1}, "list": [{"refreshToken": 5}], "tokens": 1});
        redact(&mut v);
        assert_eq!(
            v,
            json!({"token": "REDACTED", "list": [{"refreshToken": "REDACTED"}], "tokens": 1})
        );
    }

    #[test]
    fn rejects_incomplete_or_invalid_seed() {
        let e = LoadedSeed::parse(r#"{"projectId": "p"}"#).unwrap_err();
        assert_eq!(format!("{e:#}"), "no memberToken");
        let e = LoadedSeed::parse(r#"{"memberToken": "t"}"#).unwrap_err();
        assert_eq!(format!("{e:#}"), "no projectId");
        assert!(LoadedSeed::parse("[1]").is_err());
        assert!(LoadedSeed::parse("{").is_err());
        assert!(LoadedSeed::parse(r#"{"projectId": 5, "memberToken": "t"}"#).is_err());
    }

    #[test]
    fn missing_file_is_one_line_error() {
        let e = LoadedSeed::load(Path::new("/nonexistent/seed.json")).unwrap_err();
        let msg = format!("{e:#}");
        assert!(
            msg.starts_with("read seed file /nonexistent/seed.json: "),
            "{msg}"
        );
        assert!(!msg.contains('\n'));
    }
}
