//! The exits' settings, each exit off by default: OpenTelemetry export
//! (OTLP/HTTP), Prometheus metrics (on the admin route
//! `GET /api/v1/admin/metrics` or a loopback `--metrics-port`) and tail
//! sampling. The exits themselves are [`crate::perf::exits`]; they need
//! `server.hub.perf_trace`, and without it are ignored with a warning.
//!
//! | setting (`--config` YAML) | environment | what |
//! | --- | --- | --- |
//! | `server.hub.otlp_endpoint` | `OTEL_EXPORTER_OTLP_ENDPOINT` | collector base URL; spans go to `{url}/v1/traces` |
//! | `server.hub.metrics` | `SCION_SERVER_HUB_METRICS` | serve metrics to platform admins at `/api/v1/admin/metrics` |
//! | `server.hub.metrics_port` | `SCION_SERVER_HUB_METRICS_PORT` (or `--metrics-port`) | serve `GET /metrics` on `127.0.0.1:<port>` |
//! | `server.hub.sampling.one_in` | `SCION_SERVER_HUB_SAMPLING_ONE_IN` | tail sampling on: keep 1 in N of the unremarkable requests |
//! | `server.hub.sampling.slow_ms` | `SCION_SERVER_HUB_SAMPLING_SLOW_MS` | keep every request slower than this (default 250) |
//! | `server.hub.sampling.slow_ms_by_endpoint` | | per endpoint class: `{agents.project.legacy: 15}` |
//!
//! The environment wins over the file; a bad value stops the start with a
//! message naming the setting, never its value.

use std::collections::BTreeMap;
use std::time::Duration;

use perf_trace_core::exits::sampling::TailSampling;
use perf_trace_core::KeySet;
use perf_trace_otel::ENDPOINT_ENV;

use super::yaml::Value;
use super::{parse_bool, SettingsError, SettingsSource};
use crate::perf::keys::EndpointClass;

const OTLP_KEY: &str = "server.hub.otlp_endpoint";
const METRICS_KEY: &str = "server.hub.metrics";
const METRICS_ENV: &str = "SCION_SERVER_HUB_METRICS";
const METRICS_PORT_KEY: &str = "server.hub.metrics_port";
const METRICS_PORT_ENV: &str = "SCION_SERVER_HUB_METRICS_PORT";
const ONE_IN_KEY: &str = "server.hub.sampling.one_in";
const ONE_IN_ENV: &str = "SCION_SERVER_HUB_SAMPLING_ONE_IN";
const SLOW_KEY: &str = "server.hub.sampling.slow_ms";
const SLOW_ENV: &str = "SCION_SERVER_HUB_SAMPLING_SLOW_MS";
const SLOW_BY_ENDPOINT_KEY: &str = "server.hub.sampling.slow_ms_by_endpoint";
const DEFAULT_SLOW_MS: u64 = 250;

/// What the exits' settings ask for.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ExitSettings {
    /// The collector's base URL: OTLP export on.
    pub otlp_endpoint: Option<String>,
    /// Metrics on the admin route.
    pub metrics: bool,
    /// Metrics on `127.0.0.1:<port>`.
    pub metrics_port: Option<u16>,
    /// Tail sampling: keep 1 in N of the rest (`None`: every line kept).
    pub sampling_one_in: Option<u64>,
    /// The slow threshold of every endpoint class without its own.
    pub slow_ms: u64,
    /// Slow thresholds by endpoint class.
    pub slow_ms_by_endpoint: BTreeMap<String, u64>,
}

fn invalid(name: &'static str, expected: &'static str) -> SettingsError {
    SettingsError::Invalid { name, expected }
}

fn yaml_bool(value: &Value, name: &'static str) -> Result<bool, SettingsError> {
    match value {
        Value::Bool(b) => Ok(*b),
        Value::Null => Ok(false),
        Value::String(s) => parse_bool(s, name),
        _ => Err(invalid(name, "true or false")),
    }
}

fn yaml_u64(value: &Value, name: &'static str) -> Result<u64, SettingsError> {
    match value {
        Value::Number(n) => n.as_u64().ok_or(invalid(name, "a whole number")),
        Value::String(s) => text_u64(s, name),
        _ => Err(invalid(name, "a whole number")),
    }
}

fn text_u64(text: &str, name: &'static str) -> Result<u64, SettingsError> {
    text.trim()
        .parse()
        .map_err(|_| invalid(name, "a whole number"))
}

fn port(n: u64, name: &'static str) -> Result<u16, SettingsError> {
    u16::try_from(n)
        .ok()
        .filter(|p| *p > 0)
        .ok_or(invalid(name, "a port from 1 to 65535"))
}

fn endpoint_url(text: &str, name: &'static str) -> Result<Option<String>, SettingsError> {
    let text = text.trim();
    if text.is_empty() {
        return Ok(None);
    }
    if !(text.starts_with("http://") || text.starts_with("https://")) {
        return Err(invalid(name, "an http:// or https:// URL"));
    }
    Ok(Some(text.to_owned()))
}

impl ExitSettings {
    /// Parses the exits' settings from the settings file's document, then
    /// the environment, which wins.
    pub(crate) fn from_source(source: &SettingsSource<'_>) -> Result<ExitSettings, SettingsError> {
        let mut settings = ExitSettings {
            slow_ms: DEFAULT_SLOW_MS,
            ..ExitSettings::default()
        };
        if let Some(v) = source.file(OTLP_KEY) {
            settings.otlp_endpoint = match v {
                Value::Null => None,
                Value::String(s) => endpoint_url(s, OTLP_KEY)?,
                _ => return Err(invalid(OTLP_KEY, "an http:// or https:// URL")),
            };
        }
        if let Some(v) = source.file(METRICS_KEY) {
            settings.metrics = yaml_bool(v, METRICS_KEY)?;
        }
        if let Some(v) = source.file(METRICS_PORT_KEY) {
            settings.metrics_port = Some(port(yaml_u64(v, METRICS_PORT_KEY)?, METRICS_PORT_KEY)?);
        }
        if let Some(v) = source.file(ONE_IN_KEY) {
            settings.sampling_one_in = Some(yaml_u64(v, ONE_IN_KEY)?);
        }
        if let Some(v) = source.file(SLOW_KEY) {
            settings.slow_ms = yaml_u64(v, SLOW_KEY)?;
        }
        if let Some(v) = source.file(SLOW_BY_ENDPOINT_KEY) {
            let expected = "a map of endpoint class to milliseconds";
            let map = v
                .as_mapping()
                .ok_or(invalid(SLOW_BY_ENDPOINT_KEY, expected))?;
            for (key, value) in map {
                let class = key
                    .as_str()
                    .filter(|k| EndpointClass::NAMES.contains(k))
                    .ok_or(invalid(
                        SLOW_BY_ENDPOINT_KEY,
                        "endpoint classes of the Hub (agents.global.legacy, agents.project.legacy, ...)",
                    ))?;
                let ms = yaml_u64(value, SLOW_BY_ENDPOINT_KEY)?;
                settings.slow_ms_by_endpoint.insert(class.to_owned(), ms);
            }
        }
        if let Some(v) = source.env(ENDPOINT_ENV) {
            settings.otlp_endpoint = endpoint_url(&v, ENDPOINT_ENV)?;
        }
        if let Some(v) = source.env(METRICS_ENV) {
            settings.metrics = parse_bool(&v, METRICS_ENV)?;
        }
        if let Some(v) = source.env(METRICS_PORT_ENV) {
            settings.metrics_port = Some(port(text_u64(&v, METRICS_PORT_ENV)?, METRICS_PORT_ENV)?);
        }
        if let Some(v) = source.env(ONE_IN_ENV) {
            settings.sampling_one_in = Some(text_u64(&v, ONE_IN_ENV)?);
        }
        if let Some(v) = source.env(SLOW_ENV) {
            settings.slow_ms = text_u64(&v, SLOW_ENV)?;
        }
        Ok(settings)
    }

    /// Whether any exit or sampling is asked for.
    pub fn any(&self) -> bool {
        self.otlp_endpoint.is_some()
            || self.metrics
            || self.metrics_port.is_some()
            || self.sampling_one_in.is_some()
    }

    /// The tail-sampling policy, when asked for.
    pub fn sampling(&self) -> Option<TailSampling> {
        let one_in = self.sampling_one_in?;
        let mut sampling =
            TailSampling::one_in(one_in).slow_over(Duration::from_millis(self.slow_ms));
        for (class, ms) in &self.slow_ms_by_endpoint {
            sampling = sampling.slow_over_for(class.clone(), Duration::from_millis(*ms));
        }
        Some(sampling)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::settings::test_files::{env_error, file, load, no_env};

    #[test]
    fn everything_is_off_by_default() {
        let settings = load(None, no_env, ExitSettings::from_source).unwrap();
        assert!(!settings.any());
        assert!(settings.sampling().is_none());
    }

    #[test]
    fn the_file_turns_each_exit_on() {
        let f = file(
            "server:\n  hub:\n    otlp_endpoint: http://127.0.0.1:4318\n    metrics: true\n    metrics_port: 9464\n    sampling:\n      one_in: 10\n      slow_ms: 100\n      slow_ms_by_endpoint:\n        agents.project.legacy: 15\n",
        );
        let settings = load(Some(f.path()), no_env, ExitSettings::from_source).unwrap();
        assert_eq!(
            settings.otlp_endpoint.as_deref(),
            Some("http://127.0.0.1:4318")
        );
        assert!(settings.metrics);
        assert_eq!(settings.metrics_port, Some(9464));
        let sampling = settings.sampling().unwrap();
        assert_eq!(sampling.rate(), 10);
        assert_eq!(
            sampling.threshold("agents.project.legacy"),
            Some(Duration::from_millis(15))
        );
        assert_eq!(
            sampling.threshold("other"),
            Some(Duration::from_millis(100))
        );
    }

    #[test]
    fn the_environment_wins() {
        let f = file("server.hub.otlp_endpoint: http://file:4318\nserver.hub.metrics: true\n");
        let env = |name: &str| match name {
            "OTEL_EXPORTER_OTLP_ENDPOINT" => Some("http://env:4318".to_owned()),
            "SCION_SERVER_HUB_METRICS" => Some("false".to_owned()),
            "SCION_SERVER_HUB_SAMPLING_ONE_IN" => Some("4".to_owned()),
            _ => None,
        };
        let settings = load(Some(f.path()), env, ExitSettings::from_source).unwrap();
        assert_eq!(settings.otlp_endpoint.as_deref(), Some("http://env:4318"));
        assert!(!settings.metrics);
        assert_eq!(settings.sampling_one_in, Some(4));
    }

    #[test]
    fn a_bad_value_names_the_setting_not_the_value() {
        let cases = [
            ("server.hub.otlp_endpoint: ftp://secret-host\n", OTLP_KEY),
            ("server.hub.metrics: maybe-secret\n", METRICS_KEY),
            ("server.hub.metrics_port: 70000\n", METRICS_PORT_KEY),
            ("server.hub.sampling.one_in: -3\n", ONE_IN_KEY),
            (
                "server.hub.sampling.slow_ms_by_endpoint:\n  /api/secret: 5\n",
                SLOW_BY_ENDPOINT_KEY,
            ),
        ];
        for (text, name) in cases {
            let f = file(text);
            let message = load(Some(f.path()), no_env, ExitSettings::from_source)
                .unwrap_err()
                .to_string();
            assert!(message.contains(name), "{message}");
            assert!(!message.contains("secret"), "{message}");
        }
        let message = env_error(ENDPOINT_ENV, "not-a-url", ExitSettings::from_source);
        assert!(message.contains(ENDPOINT_ENV) && !message.contains("not-a-url"));
    }
}
