//! How long the Hub waits for clients and how much it keeps for them: the
//! header-read, idle and request timeouts, the shutdown deadline, the caps
//! on event streams and how often a stream re-checks its credential, the
//! browser sessions' cap and sign-in rates, and the caps on connections.
//!
//! Each is read from the settings file (`server.hub.<name>`), then the
//! environment (`SCION_SERVER_HUB_<NAME>`), then `serve`'s flags, the later
//! winning. Durations are written as `humantime` does (`10s`, `200ms`,
//! `1m`); counts as whole numbers.

use std::time::Duration;

use super::{SettingsError, SettingsSource};

/// The Hub's timeouts and caps.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ServerLimits {
    /// Longest time from a connection's first byte of a request head (or
    /// from accepting it, for its first request) to the end of that head.
    pub header_read_timeout: Duration,
    /// Longest time a connection may stay open with no request in flight
    /// and no byte moving.
    pub idle_timeout: Duration,
    /// Longest time a request may take to produce its response head (an
    /// event stream's body is not bounded by it).
    pub request_timeout: Duration,
    /// Longest time shutdown waits for requests in flight before it cuts
    /// them off.
    pub shutdown_timeout: Duration,
    /// Most open event streams of one principal.
    pub max_streams_per_principal: usize,
    /// Most open event streams in all.
    pub max_streams: usize,
    /// How often an open event stream re-checks its credential and its
    /// principal's access to every subject.
    pub stream_recheck_interval: Duration,
    /// Most live browser sessions of one user; a sign-in past it ends the
    /// user's oldest.
    pub max_sessions_per_user: usize,
    /// Sign-ins one user may make a minute (and at once).
    pub sign_ins_per_minute: usize,
    /// Sign-ins, refused ones included, one client address may make a
    /// minute (and at once).
    pub sign_ins_per_minute_per_address: usize,
    /// How often expired and revoked sessions are deleted.
    pub session_prune_interval: Duration,
    /// Most connections open at once over every listener; unset, derived
    /// from the process's descriptor limit (see [`crate::connections`]).
    pub max_connections: Option<usize>,
    /// Most connections of one client address before its further ones
    /// must carry a credential (or ask for `/healthz`); unset, half of
    /// [`ServerLimits::max_connections`].
    pub max_connections_per_address: Option<usize>,
}

impl Default for ServerLimits {
    fn default() -> Self {
        ServerLimits {
            header_read_timeout: Duration::from_secs(10),
            idle_timeout: Duration::from_secs(60),
            request_timeout: Duration::from_secs(30),
            shutdown_timeout: Duration::from_secs(10),
            max_streams_per_principal: 16,
            max_streams: 1024,
            stream_recheck_interval: Duration::from_secs(5),
            max_sessions_per_user: 32,
            sign_ins_per_minute: 30,
            sign_ins_per_minute_per_address: 120,
            session_prune_interval: Duration::from_secs(10 * 60),
            max_connections: None,
            max_connections_per_address: None,
        }
    }
}

/// One limit: its settings key suffix, environment variable and kind.
struct Limit {
    name: &'static str,
    env: &'static str,
    field: Field,
}

enum Field {
    Duration(fn(&mut ServerLimits) -> &mut Duration),
    Count(fn(&mut ServerLimits) -> &mut usize),
    /// A count that is derived when unset.
    OptCount(fn(&mut ServerLimits) -> &mut Option<usize>),
}

const LIMITS: [Limit; 13] = [
    Limit {
        name: "header_read_timeout",
        env: "SCION_SERVER_HUB_HEADER_READ_TIMEOUT",
        field: Field::Duration(|l| &mut l.header_read_timeout),
    },
    Limit {
        name: "idle_timeout",
        env: "SCION_SERVER_HUB_IDLE_TIMEOUT",
        field: Field::Duration(|l| &mut l.idle_timeout),
    },
    Limit {
        name: "request_timeout",
        env: "SCION_SERVER_HUB_REQUEST_TIMEOUT",
        field: Field::Duration(|l| &mut l.request_timeout),
    },
    Limit {
        name: "shutdown_timeout",
        env: "SCION_SERVER_HUB_SHUTDOWN_TIMEOUT",
        field: Field::Duration(|l| &mut l.shutdown_timeout),
    },
    Limit {
        name: "max_streams_per_principal",
        env: "SCION_SERVER_HUB_MAX_STREAMS_PER_PRINCIPAL",
        field: Field::Count(|l| &mut l.max_streams_per_principal),
    },
    Limit {
        name: "max_streams",
        env: "SCION_SERVER_HUB_MAX_STREAMS",
        field: Field::Count(|l| &mut l.max_streams),
    },
    Limit {
        name: "stream_recheck_interval",
        env: "SCION_SERVER_HUB_STREAM_RECHECK_INTERVAL",
        field: Field::Duration(|l| &mut l.stream_recheck_interval),
    },
    Limit {
        name: "max_sessions_per_user",
        env: "SCION_SERVER_HUB_MAX_SESSIONS_PER_USER",
        field: Field::Count(|l| &mut l.max_sessions_per_user),
    },
    Limit {
        name: "sign_ins_per_minute",
        env: "SCION_SERVER_HUB_SIGN_INS_PER_MINUTE",
        field: Field::Count(|l| &mut l.sign_ins_per_minute),
    },
    Limit {
        name: "sign_ins_per_minute_per_address",
        env: "SCION_SERVER_HUB_SIGN_INS_PER_MINUTE_PER_ADDRESS",
        field: Field::Count(|l| &mut l.sign_ins_per_minute_per_address),
    },
    Limit {
        name: "session_prune_interval",
        env: "SCION_SERVER_HUB_SESSION_PRUNE_INTERVAL",
        field: Field::Duration(|l| &mut l.session_prune_interval),
    },
    Limit {
        name: "max_connections",
        env: "SCION_SERVER_HUB_MAX_CONNECTIONS",
        field: Field::OptCount(|l| &mut l.max_connections),
    },
    Limit {
        name: "max_connections_per_address",
        env: "SCION_SERVER_HUB_MAX_CONNECTIONS_PER_ADDRESS",
        field: Field::OptCount(|l| &mut l.max_connections_per_address),
    },
];

/// A limit that could not be read.
#[derive(Debug, thiserror::Error)]
#[error("{name} must be {expected}")]
pub(crate) struct LimitError {
    name: String,
    expected: &'static str,
}

/// `text` as a whole number above zero.
fn positive_count(text: &str) -> Option<usize> {
    text.trim().parse().ok().filter(|n| *n > 0)
}

impl Limit {
    fn set(&self, limits: &mut ServerLimits, shown: &str, text: &str) -> Result<(), LimitError> {
        let err = |expected| LimitError {
            name: shown.to_owned(),
            expected,
        };
        let count_err = || err("a whole number above zero");
        match self.field {
            Field::Duration(field) => {
                let d: Duration = humantime::parse_duration(text.trim())
                    .map_err(|_| err("a duration such as 10s or 200ms"))?;
                if d.is_zero() {
                    return Err(err("a duration above zero"));
                }
                *field(limits) = d;
            }
            Field::Count(field) => *field(limits) = positive_count(text).ok_or_else(count_err)?,
            Field::OptCount(field) => {
                *field(limits) = Some(positive_count(text).ok_or_else(count_err)?)
            }
        }
        Ok(())
    }
}

impl ServerLimits {
    /// Parses the limits from the settings file's document, then the
    /// environment, which wins.
    pub(crate) fn from_source(source: &SettingsSource<'_>) -> Result<ServerLimits, SettingsError> {
        let mut limits = ServerLimits::default();
        for limit in &LIMITS {
            let key = format!("server.hub.{}", limit.name);
            let Some(value) = source.file(&key) else {
                continue;
            };
            let text = value.scalar_text().unwrap_or_default();
            limit
                .set(&mut limits, &key, &text)
                .map_err(SettingsError::Limit)?;
        }
        for limit in &LIMITS {
            if let Some(text) = source.env(limit.env) {
                limit
                    .set(&mut limits, limit.env, &text)
                    .map_err(SettingsError::Limit)?;
            }
        }
        Ok(limits)
    }

    /// How often a connection's timeouts are looked at: often enough that a
    /// timeout fires within a quarter of its length.
    pub(crate) fn connection_tick(&self) -> Duration {
        (self.header_read_timeout.min(self.idle_timeout) / 4)
            .clamp(Duration::from_millis(10), Duration::from_secs(1))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::settings::test_files::{env_error, file, load};

    #[test]
    fn defaults_hold_without_settings() {
        let limits = load(None, |_| None, ServerLimits::from_source).unwrap();
        assert_eq!(limits, ServerLimits::default());
        assert_eq!(limits.shutdown_timeout, Duration::from_secs(10));
    }

    #[test]
    fn the_file_sets_limits_and_the_environment_wins() {
        let f = file(
            "server:\n  hub:\n    header_read_timeout: 200ms\n    max_streams: 3\n    idle_timeout: 2s\n",
        );
        let env = |name: &str| (name == "SCION_SERVER_HUB_IDLE_TIMEOUT").then(|| "1m".to_owned());
        let limits = load(Some(f.path()), env, ServerLimits::from_source).unwrap();
        assert_eq!(limits.header_read_timeout, Duration::from_millis(200));
        assert_eq!(limits.max_streams, 3);
        assert_eq!(limits.idle_timeout, Duration::from_secs(60));
        assert_eq!(limits.request_timeout, Duration::from_secs(30));
    }

    #[test]
    fn session_and_connection_caps_are_read_and_derived_when_unset() {
        let defaults = ServerLimits::default();
        assert_eq!(defaults.max_connections, None);
        assert_eq!(defaults.max_connections_per_address, None);
        let f = file(
            "server:\n  hub:\n    max_connections: 200\n    max_sessions_per_user: 4\n    session_prune_interval: 1m\n",
        );
        let env = |name: &str| {
            (name == "SCION_SERVER_HUB_SIGN_INS_PER_MINUTE_PER_ADDRESS").then(|| "7".to_owned())
        };
        let limits = load(Some(f.path()), env, ServerLimits::from_source).unwrap();
        assert_eq!(limits.max_connections, Some(200));
        assert_eq!(limits.max_connections_per_address, None);
        assert_eq!(limits.max_sessions_per_user, 4);
        assert_eq!(limits.sign_ins_per_minute_per_address, 7);
        assert_eq!(limits.sign_ins_per_minute, defaults.sign_ins_per_minute);
        assert_eq!(limits.session_prune_interval, Duration::from_secs(60));
        for name in [
            "SCION_SERVER_HUB_MAX_CONNECTIONS",
            "SCION_SERVER_HUB_MAX_CONNECTIONS_PER_ADDRESS",
        ] {
            let message = env_error(name, "0", ServerLimits::from_source);
            assert_eq!(message, format!("{name} must be a whole number above zero"));
        }
    }

    #[test]
    fn bad_values_name_the_setting_without_echoing_it() {
        for (name, value) in [
            ("SCION_SERVER_HUB_REQUEST_TIMEOUT", "soon"),
            ("SCION_SERVER_HUB_REQUEST_TIMEOUT", "0s"),
            ("SCION_SERVER_HUB_MAX_STREAMS", "-1"),
            ("SCION_SERVER_HUB_MAX_STREAMS", "0"),
        ] {
            let message = env_error(name, value, ServerLimits::from_source);
            assert!(message.contains(name), "{message}");
            assert!(!message.contains(value), "{message}");
        }
        let f = file("server.hub.max_streams_per_principal: many\n");
        let message = load(Some(f.path()), |_| None, ServerLimits::from_source)
            .unwrap_err()
            .to_string();
        assert!(
            message.contains("server.hub.max_streams_per_principal"),
            "{message}"
        );
    }
}
