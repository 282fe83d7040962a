//! Startup settings: the YAML settings file and the environment, read once
//! by `SettingsSource::read`, the one reader of the file, and parsed into
//! a plain struct per group, the environment winning over the file:
//!
//! - this file: the reader, the errors, and [`Settings`]:
//!   `server.hub.perf_trace` (file) or `SCION_SERVER_HUB_PERFTRACE`
//!   (environment) turns request tracing on; `SCION_LOG_GCP` switches the
//!   log message key to `message`;
//! - [`limits`]: the server's timeouts and caps ([`ServerLimits`]);
//! - [`cache`]: the response cache, on or off and a TTL per route
//!   ([`CacheSettings`]);
//! - [`exits`]: metrics, OTLP export and tail sampling ([`ExitSettings`]);
//! - [`audit`]: the audit trail's retention and list rate ([`AuditSettings`]);
//! - [`yaml`]: the one YAML reader, of this file and of the admin
//!   server-config body, bounded by what a document expands to;
//! - [`hub`]: the hub settings that change at run time (rows of
//!   `hub_settings`), what each takes and how an unusable one is ignored.
//!
//! `StartupSettings` is everything `serve` reads at start, every group
//! from one reading of the file.

pub mod audit;
pub mod cache;
pub mod exits;
pub mod hub;
pub mod limits;
pub mod yaml;

use std::path::Path;

pub use audit::AuditSettings;
pub use cache::CacheSettings;
pub use exits::ExitSettings;
pub(crate) use limits::LimitError;
pub use limits::ServerLimits;
use yaml::{Limits, Value, YamlError};

/// The environment variable that turns tracing on or off.
pub(crate) const PERF_TRACE_ENV: &str = "SCION_SERVER_HUB_PERFTRACE";
/// The environment variable that selects the GCP log format.
pub(crate) const GCP_LOG_ENV: &str = "SCION_LOG_GCP";
/// The settings key of request tracing.
pub(crate) const PERF_TRACE_KEY: &str = "server.hub.perf_trace";
/// What the settings file may hold once parsed, its aliases expanded: far
/// more than any settings file needs, far less than would hurt the Hub.
const FILE_LIMITS: Limits = Limits {
    aliases: true,
    max_bytes: 1 << 20,
};

/// Tracing, the log format and the response cache: the settings a Hub is
/// built with (`HubOptions::settings`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Settings {
    /// Request performance tracing.
    pub perf_trace: bool,
    /// GCP log format (`message` instead of `msg`).
    pub gcp_logs: bool,
    /// The response cache: on or off, a TTL per route ([`CacheSettings`]).
    pub cache: CacheSettings,
}

/// A setting that could not be read.
#[derive(Debug, thiserror::Error)]
pub(crate) enum SettingsError {
    /// The settings file could not be read.
    #[error("cannot read settings file {path}: {source}")]
    Read {
        /// The file.
        path: String,
        /// Why.
        source: std::io::Error,
    },
    /// The settings file is not valid YAML.
    #[error("settings file {path} is not valid YAML: {message}")]
    Parse {
        /// The file.
        path: String,
        /// The parser's message.
        message: String,
    },
    /// A value is not a boolean.
    #[error("{name} must be true or false")]
    NotBoolean {
        /// The setting or variable.
        name: &'static str,
    },
    /// A value is not a whole number of milliseconds.
    #[error("{name} must be a whole number of milliseconds")]
    NotMillis {
        /// The setting or variable.
        name: String,
    },
    /// A timeout or cap is not a valid value.
    #[error(transparent)]
    Limit(#[from] LimitError),
    /// A setting of the exits (metrics, OTLP, sampling) with a bad value;
    /// the message names the setting and what it takes, never the value.
    #[error("{name} must be {expected}")]
    Invalid {
        /// The setting or environment variable.
        name: &'static str,
        /// What it takes.
        expected: &'static str,
    },
}

fn parse_bool(text: &str, name: &'static str) -> Result<bool, SettingsError> {
    match text.trim().to_ascii_lowercase().as_str() {
        "true" | "1" | "yes" | "on" => Ok(true),
        "false" | "0" | "no" | "off" | "" => Ok(false),
        _ => Err(SettingsError::NotBoolean { name }),
    }
}

/// Looks up a dotted key in a YAML document, accepting nested maps
/// (`server: {hub: {perf_trace: true}}`) and dotted keys at any level
/// (`server.hub.perf_trace: true`, `server: {hub.perf_trace: true}`).
fn lookup<'a>(value: &'a Value, dotted: &str) -> Option<&'a Value> {
    if dotted.is_empty() {
        return Some(value);
    }
    let map = value.as_mapping()?;
    for (key, child) in map {
        let Some(key) = key.as_str() else { continue };
        if key == dotted {
            return Some(child);
        }
        if let Some(rest) = dotted.strip_prefix(key).and_then(|r| r.strip_prefix('.')) {
            if let Some(found) = lookup(child, rest) {
                return Some(found);
            }
        }
    }
    None
}

/// Looks an environment variable up: the process's, or a test's.
type EnvLookup<'env> = Box<dyn Fn(&str) -> Option<String> + 'env>;

/// The settings file's document (when there is one and it is not blank)
/// and the environment: what every group's settings are parsed from.
pub(crate) struct SettingsSource<'env> {
    document: Option<Value>,
    env: EnvLookup<'env>,
}

impl std::fmt::Debug for SettingsSource<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SettingsSource")
            .field("document", &self.document)
            .finish_non_exhaustive()
    }
}

impl<'env> SettingsSource<'env> {
    /// Reads the settings file (if any), the only place it is read, and
    /// looks variables up through `env`.
    pub fn read(
        config: Option<&Path>,
        env: impl Fn(&str) -> Option<String> + 'env,
    ) -> Result<SettingsSource<'env>, SettingsError> {
        Ok(SettingsSource {
            document: read_document(config)?,
            env: Box::new(env),
        })
    }

    /// The file's value of a dotted key (see [`lookup`]), if the file sets it.
    pub(crate) fn file(&self, dotted: &str) -> Option<&Value> {
        self.document.as_ref().and_then(|doc| lookup(doc, dotted))
    }

    /// An environment variable's value, if it is set.
    pub(crate) fn env(&self, name: &str) -> Option<String> {
        (self.env)(name)
    }
}

/// Reads the settings file, when there is one and it is not blank.
fn read_document(config: Option<&Path>) -> Result<Option<Value>, SettingsError> {
    let Some(path) = config else {
        return Ok(None);
    };
    let shown = path.display().to_string();
    let text = std::fs::read_to_string(path).map_err(|source| SettingsError::Read {
        path: shown.clone(),
        source,
    })?;
    if text.trim().is_empty() {
        return Ok(None);
    }
    let message = match yaml::parse(&text, FILE_LIMITS) {
        Ok(document) => return Ok(Some(document)),
        Err(YamlError::Syntax(message)) => message,
        Err(YamlError::TooLarge) => "it holds more than 1 MiB once its aliases are expanded".into(),
        Err(YamlError::Aliases) => "it uses aliases".into(),
    };
    Err(SettingsError::Parse {
        path: shown,
        message,
    })
}

impl Settings {
    /// Parses the tracing and log settings, and the cache's, from `source`.
    pub(crate) fn from_source(source: &SettingsSource<'_>) -> Result<Settings, SettingsError> {
        let mut settings = Settings::default();
        if let Some(v) = source.file(PERF_TRACE_KEY) {
            settings.perf_trace = match v {
                Value::Bool(b) => *b,
                Value::String(s) => parse_bool(s, PERF_TRACE_KEY)?,
                Value::Null => false,
                _ => {
                    return Err(SettingsError::NotBoolean {
                        name: PERF_TRACE_KEY,
                    })
                }
            };
        }
        if let Some(v) = source.env(PERF_TRACE_ENV) {
            settings.perf_trace = parse_bool(&v, PERF_TRACE_ENV)?;
        }
        if let Some(v) = source.env(GCP_LOG_ENV) {
            settings.gcp_logs = parse_bool(&v, GCP_LOG_ENV)?;
        }
        settings.cache = CacheSettings::from_source(source)?;
        Ok(settings)
    }
}

/// Everything `serve` reads at start, every group from one reading of the
/// settings file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct StartupSettings {
    /// Tracing, the log format and the cache.
    pub hub: Settings,
    /// The server's timeouts and caps (before `serve`'s flags).
    pub limits: ServerLimits,
    /// The audit trail's bounds.
    pub audit: AuditSettings,
    /// The exits (before `serve`'s `--metrics-port`).
    pub exits: ExitSettings,
}

impl StartupSettings {
    /// Reads the settings file (if any) once, then parses each group from
    /// it and the environment through `env`, which wins.
    pub fn load(
        config: Option<&Path>,
        env: impl Fn(&str) -> Option<String>,
    ) -> Result<StartupSettings, SettingsError> {
        let source = SettingsSource::read(config, env)?;
        Ok(StartupSettings {
            hub: Settings::from_source(&source)?,
            limits: ServerLimits::from_source(&source)?,
            audit: AuditSettings::from_source(&source)?,
            exits: ExitSettings::from_source(&source)?,
        })
    }

    /// Reads the settings file and the process environment.
    pub(crate) fn from_process(config: Option<&Path>) -> Result<StartupSettings, SettingsError> {
        StartupSettings::load(config, |name| std::env::var(name).ok())
    }
}

/// What the settings modules' tests share: a settings file with given text,
/// an empty process environment, and the error of one variable's value.
#[cfg(test)]
pub(crate) mod test_files {
    pub(crate) fn file(text: &str) -> tempfile::NamedTempFile {
        let f = tempfile::NamedTempFile::new().unwrap();
        std::fs::write(f.path(), text).unwrap();
        f
    }

    pub(crate) fn no_env(_: &str) -> Option<String> {
        None
    }

    /// One group's settings, parsed from `config` and `env` as `serve`
    /// reads them.
    pub(crate) fn load<'env, T>(
        config: Option<&std::path::Path>,
        env: impl Fn(&str) -> Option<String> + 'env,
        group: impl Fn(&super::SettingsSource<'env>) -> Result<T, super::SettingsError>,
    ) -> Result<T, super::SettingsError> {
        group(&super::SettingsSource::read(config, env)?)
    }

    /// The error `group` gives when the environment sets only `name`, to
    /// `value`, as its message.
    pub(crate) fn env_error<T: std::fmt::Debug>(
        name: &str,
        value: &str,
        group: impl Fn(&super::SettingsSource<'_>) -> Result<T, super::SettingsError>,
    ) -> String {
        let env = |n: &str| (n == name).then(|| value.to_owned());
        load(None, env, group).unwrap_err().to_string()
    }
}

#[cfg(test)]
mod tests {
    use super::test_files::{file, load, no_env};
    use super::*;

    #[test]
    fn off_by_default() {
        assert_eq!(
            load(None, no_env, Settings::from_source).unwrap(),
            Settings::default()
        );
    }

    #[test]
    fn the_file_turns_tracing_on_in_nested_or_dotted_form() {
        for text in [
            "server:\n  hub:\n    perf_trace: true\n",
            "server.hub.perf_trace: true\n",
            "server:\n  hub.perf_trace: \"true\"\n",
        ] {
            let f = file(text);
            assert!(
                load(Some(f.path()), no_env, Settings::from_source)
                    .unwrap()
                    .perf_trace,
                "{text}"
            );
        }
    }

    #[test]
    fn the_environment_wins_over_the_file() {
        let f = file("server:\n  hub:\n    perf_trace: true\n");
        let env = |name: &str| (name == PERF_TRACE_ENV).then(|| "false".to_owned());
        assert!(
            !load(Some(f.path()), env, Settings::from_source)
                .unwrap()
                .perf_trace
        );
        let env = |name: &str| match name {
            PERF_TRACE_ENV => Some("true".to_owned()),
            GCP_LOG_ENV => Some("TRUE".to_owned()),
            _ => None,
        };
        assert_eq!(
            load(None, env, Settings::from_source).unwrap(),
            Settings {
                perf_trace: true,
                gcp_logs: true,
                ..Settings::default()
            }
        );
    }

    #[test]
    fn bad_values_and_missing_files_are_errors() {
        let env = |name: &str| (name == PERF_TRACE_ENV).then(|| "maybe".to_owned());
        assert!(load(None, env, Settings::from_source).is_err());
        assert!(load(
            Some(Path::new("/nonexistent/hub.yaml")),
            no_env,
            Settings::from_source
        )
        .is_err());
        let f = file("server: [unclosed");
        assert!(load(Some(f.path()), no_env, Settings::from_source).is_err());
    }

    #[test]
    fn a_file_is_bounded_by_what_its_aliases_expand_to() {
        let f = file("on: &on true\nserver:\n  hub:\n    perf_trace: *on\n");
        let settings = load(Some(f.path()), no_env, Settings::from_source).unwrap();
        assert!(settings.perf_trace, "aliases within the bound are read");

        // 54 KiB of text, 48 MB once expanded.
        let f = file(&yaml::alias_bomb(8_000, 6_000));
        let err = load(Some(f.path()), no_env, Settings::from_source).unwrap_err();
        assert_eq!(
            err.to_string(),
            format!(
                "settings file {} is not valid YAML: it holds more than 1 MiB once its aliases are expanded",
                f.path().display()
            )
        );
    }
}
