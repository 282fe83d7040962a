//! What bounds the audit trail's volume, read at startup like the server
//! limits (settings file, then environment, which wins):
//!
//! | setting | environment | default | bounds |
//! | --- | --- | --- | --- |
//! | `server.hub.audit.retention` | `SCION_SERVER_HUB_AUDIT_RETENTION` | `30days` | how long `audit_events` rows are kept |
//! | `server.hub.audit.list_rate` | `SCION_SERVER_HUB_AUDIT_LIST_RATE` | `5` | uncached list requests per second one principal may make, sustained |
//! | `server.hub.audit.list_burst` | `SCION_SERVER_HUB_AUDIT_LIST_BURST` | `100` | uncached list requests one principal may make at once |
//! | `server.hub.audit.record_rate` | `SCION_SERVER_HUB_AUDIT_RECORD_RATE` | `100` | audit rows per second one principal writes, sustained (ten seconds' worth at once); past it, its decisions are folded into summary rows |
//!
//! A list answered from the response cache decides nothing and writes no
//! audit row, so only lists that are computed take from the principal's
//! bucket; past it the Hub answers 429 with `Retry-After`. The record rate
//! refuses nothing: it bounds the rows every decision writes, whatever
//! route or stream made it.

use std::time::Duration;

use super::yaml::Value;
use super::{SettingsError, SettingsSource};
use crate::authz::audit::admission::DEFAULT_RECORD_RATE;
use crate::authz::audit::retention::DEFAULT_RETENTION;

/// The audit trail's bounds.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct AuditSettings {
    /// How long rows are kept.
    pub retention: Duration,
    /// Uncached list requests per second per principal, sustained.
    pub list_rate: u32,
    /// Uncached list requests per principal at once (the bucket's size).
    pub list_burst: u32,
    /// Audit rows per second per principal, sustained.
    pub record_rate: u32,
}

impl Default for AuditSettings {
    fn default() -> Self {
        AuditSettings {
            retention: DEFAULT_RETENTION,
            list_rate: 5,
            list_burst: 100,
            record_rate: DEFAULT_RECORD_RATE,
        }
    }
}

/// The settings key and environment variable of a bound, from its name
/// under `server.hub.audit` written in lower and in upper case.
macro_rules! audit_bound {
    ($name:literal, $upper:literal) => {
        (
            concat!("server.hub.audit.", $name),
            concat!("SCION_SERVER_HUB_AUDIT_", $upper),
        )
    };
}

/// The settings key and environment variable of each bound.
const RETENTION: (&str, &str) = audit_bound!("retention", "RETENTION");
const LIST_RATE: (&str, &str) = audit_bound!("list_rate", "LIST_RATE");
const LIST_BURST: (&str, &str) = audit_bound!("list_burst", "LIST_BURST");
const RECORD_RATE: (&str, &str) = audit_bound!("record_rate", "RECORD_RATE");

fn text_of(value: &Value) -> String {
    value.scalar_text().unwrap_or_default()
}

fn duration(text: &str, name: &'static str) -> Result<Duration, SettingsError> {
    humantime::parse_duration(text.trim())
        .ok()
        .filter(|d| !d.is_zero())
        .ok_or(SettingsError::Invalid {
            name,
            expected: "a duration above zero such as 30days or 12h",
        })
}

fn count(text: &str, name: &'static str) -> Result<u32, SettingsError> {
    text.trim()
        .parse::<u32>()
        .ok()
        .filter(|n| *n > 0)
        .ok_or(SettingsError::Invalid {
            name,
            expected: "a whole number above zero",
        })
}

/// One bound from the file, then the environment, which wins: a bad value
/// in the file stops the start even where the environment sets the bound
/// too, as with every other setting.
fn bound<T>(
    source: &SettingsSource<'_>,
    (key, var): (&'static str, &'static str),
    parse: fn(&str, &'static str) -> Result<T, SettingsError>,
) -> Result<Option<T>, SettingsError> {
    let from_file = source
        .file(key)
        .map(|v| parse(&text_of(v), key))
        .transpose()?;
    let from_env = source.env(var).map(|text| parse(&text, var)).transpose()?;
    Ok(from_env.or(from_file))
}

impl AuditSettings {
    /// Parses the bounds from the settings file's document, then the
    /// environment, which wins.
    pub(crate) fn from_source(source: &SettingsSource<'_>) -> Result<AuditSettings, SettingsError> {
        let mut settings = AuditSettings::default();
        if let Some(retention) = bound(source, RETENTION, duration)? {
            settings.retention = retention;
        }
        if let Some(rate) = bound(source, LIST_RATE, count)? {
            settings.list_rate = rate;
        }
        if let Some(burst) = bound(source, LIST_BURST, count)? {
            settings.list_burst = burst;
        }
        if let Some(rate) = bound(source, RECORD_RATE, count)? {
            settings.record_rate = rate;
        }
        Ok(settings)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::settings::test_files::{env_error, file, load, no_env};

    #[test]
    fn defaults_hold_without_settings() {
        let settings = load(None, no_env, AuditSettings::from_source).unwrap();
        assert_eq!(settings, AuditSettings::default());
        assert_eq!(settings.retention, Duration::from_secs(30 * 86_400));
    }

    #[test]
    fn the_file_sets_the_bounds_and_the_environment_wins() {
        let f = file("server:\n  hub:\n    audit:\n      retention: 7days\n      list_rate: 5\n      list_burst: 50\n      record_rate: 20\n");
        let env = |name: &str| (name == LIST_BURST.1).then(|| "9".to_owned());
        let settings = load(Some(f.path()), env, AuditSettings::from_source).unwrap();
        assert_eq!(
            settings,
            AuditSettings {
                retention: Duration::from_secs(7 * 86_400),
                list_rate: 5,
                list_burst: 9,
                record_rate: 20,
            }
        );
    }

    #[test]
    fn bad_values_name_the_setting_without_echoing_it() {
        for (name, value) in [
            (RETENTION.1, "forever"),
            (RETENTION.1, "0s"),
            (LIST_RATE.1, "0"),
            (LIST_BURST.1, "-3"),
            (RECORD_RATE.1, "0"),
            (RECORD_RATE.1, "lots"),
        ] {
            let message = env_error(name, value, AuditSettings::from_source);
            assert!(message.contains(name), "{message}");
            assert!(!message.contains(value), "{message}");
        }
    }

    #[test]
    fn a_bad_value_in_the_file_stops_the_start_where_the_environment_sets_it_too() {
        let f = file("server.hub.audit.retention: forever\n");
        let env = |name: &str| (name == RETENTION.1).then(|| "7days".to_owned());
        let message = load(Some(f.path()), env, AuditSettings::from_source)
            .unwrap_err()
            .to_string();
        assert!(message.contains(RETENTION.0), "{message}");
        assert!(!message.contains("forever"), "{message}");
    }
}
