//! The cache's settings: on or off, and a TTL per route, from the settings
//! file and then the environment (which wins), read once at startup.
//!
//! | setting | environment | default |
//! | --- | --- | ---: |
//! | `server.hub.cache.enabled` | `SCION_CACHE_ENABLED` | `true` |
//! | `server.hub.cache.settings_public_ttl_ms` | `SCION_CACHE_SETTINGS_PUBLIC_TTL_MS` | 60000 |
//! | `server.hub.cache.agents_project_ttl_ms` | `SCION_CACHE_AGENTS_PROJECT_TTL_MS` | 5000 |
//! | `server.hub.cache.agents_global_ttl_ms` | `SCION_CACHE_AGENTS_GLOBAL_TTL_MS` | 5000 |
//! | `server.hub.cache.agents_by_id_ttl_ms` | `SCION_CACHE_AGENTS_BY_ID_TTL_MS` | 5000 |
//!
//! A TTL of 0 turns that route's cache off.

use std::time::Duration;

use perf_trace_core::KeySet;

use super::yaml::Value;
use super::{parse_bool, SettingsError, SettingsSource};
use crate::perf::keys::CacheRoute;

/// The settings key that turns the whole cache on or off.
pub(crate) const CACHE_ENABLED_KEY: &str = "server.hub.cache.enabled";
/// The environment variable that turns the whole cache on or off.
pub(crate) const CACHE_ENABLED_ENV: &str = "SCION_CACHE_ENABLED";

/// The public settings never change while the Hub runs (its name and
/// version), so a minute only bounds memory, not freshness.
const SETTINGS_PUBLIC_TTL: Duration = Duration::from_secs(60);
/// Agent data: status writes through the API invalidate at once, so the TTL
/// bounds only how long a change made outside the API (a role removed in
/// the database) takes to show; at hundreds of requests per second a
/// 5-second entry already answers nearly every request.
const AGENT_TTL: Duration = Duration::from_secs(5);

/// Whether the cache is on, and each route's TTL.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CacheSettings {
    /// The whole cache on or off.
    pub enabled: bool,
    ttls: [Duration; CacheRoute::ALL.len()],
}

impl Default for CacheSettings {
    fn default() -> Self {
        CacheSettings::DEFAULT
    }
}

/// `agents.by_id` as a settings name (`agents_by_id`) and as an environment
/// variable's middle (`AGENTS_BY_ID`).
fn snake(route: CacheRoute) -> String {
    route.name().replace('.', "_")
}

/// The settings key of a route's TTL.
pub(crate) fn ttl_key(route: CacheRoute) -> String {
    format!("server.hub.cache.{}_ttl_ms", snake(route))
}

/// The environment variable of a route's TTL.
pub(crate) fn ttl_env(route: CacheRoute) -> String {
    format!("SCION_CACHE_{}_TTL_MS", snake(route).to_ascii_uppercase())
}

fn parse_millis(text: &str, name: &str) -> Result<Duration, SettingsError> {
    text.trim()
        .parse::<u64>()
        .map(Duration::from_millis)
        .map_err(|_| SettingsError::NotMillis {
            name: name.to_owned(),
        })
}

impl CacheSettings {
    /// The defaults: on, with the TTLs of the table above.
    pub(crate) const DEFAULT: CacheSettings = {
        let mut ttls = [AGENT_TTL; CacheRoute::ALL.len()];
        ttls[CacheRoute::SettingsPublic as usize] = SETTINGS_PUBLIC_TTL;
        CacheSettings {
            enabled: true,
            ttls,
        }
    };

    /// The cache off: every request computes its response.
    pub const fn disabled() -> Self {
        CacheSettings {
            enabled: false,
            ..CacheSettings::DEFAULT
        }
    }

    /// A route's TTL (zero: the route is not cached).
    pub(crate) fn ttl(&self, route: CacheRoute) -> Duration {
        self.ttls[route.index()]
    }

    /// Sets a route's TTL.
    pub fn with_ttl(mut self, route: CacheRoute, ttl: Duration) -> Self {
        self.ttls[route.index()] = ttl;
        self
    }

    /// Whether `route`'s responses are cached: the cache on and a TTL above zero.
    pub(crate) fn caches(&self, route: CacheRoute) -> bool {
        self.enabled && !self.ttl(route).is_zero()
    }

    /// Parses the cache's settings from the settings file's document, then
    /// the environment, which wins.
    pub(crate) fn from_source(source: &SettingsSource<'_>) -> Result<CacheSettings, SettingsError> {
        let mut settings = CacheSettings::default();
        match source.file(CACHE_ENABLED_KEY) {
            None | Some(Value::Null) => {}
            Some(Value::Bool(b)) => settings.enabled = *b,
            Some(Value::String(s)) => settings.enabled = parse_bool(s, CACHE_ENABLED_KEY)?,
            Some(_) => {
                return Err(SettingsError::NotBoolean {
                    name: CACHE_ENABLED_KEY,
                })
            }
        }
        for &route in CacheRoute::ALL {
            let key = ttl_key(route);
            let text = match source.file(&key) {
                None | Some(Value::Null) => continue,
                Some(value) => value.scalar_text().unwrap_or_default(),
            };
            settings.ttls[route.index()] = parse_millis(&text, &key)?;
        }
        if let Some(text) = source.env(CACHE_ENABLED_ENV) {
            settings.enabled = parse_bool(&text, CACHE_ENABLED_ENV)?;
        }
        for &route in CacheRoute::ALL {
            let name = ttl_env(route);
            if let Some(text) = source.env(&name) {
                settings.ttls[route.index()] = parse_millis(&text, &name)?;
            }
        }
        Ok(settings)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::settings::test_files::{file, load, no_env};

    #[test]
    fn names_follow_the_routes() {
        assert_eq!(
            ttl_key(CacheRoute::AgentsById),
            "server.hub.cache.agents_by_id_ttl_ms"
        );
        assert_eq!(
            ttl_env(CacheRoute::AgentsProject),
            "SCION_CACHE_AGENTS_PROJECT_TTL_MS"
        );
    }

    #[test]
    fn on_by_default_with_the_documented_ttls() {
        let settings = load(None, no_env, CacheSettings::from_source).unwrap();
        assert!(settings.enabled);
        assert_eq!(
            settings.ttl(CacheRoute::SettingsPublic),
            Duration::from_secs(60)
        );
        for route in [
            CacheRoute::AgentsProject,
            CacheRoute::AgentsGlobal,
            CacheRoute::AgentsById,
        ] {
            assert_eq!(settings.ttl(route), Duration::from_secs(5));
        }
    }

    #[test]
    fn the_file_sets_ttls_and_the_environment_wins() {
        let f = file(
            "server:\n  hub:\n    cache:\n      enabled: false\n      agents_project_ttl_ms: 250\n      agents_global_ttl_ms: \"0\"\n",
        );
        let settings = load(Some(f.path()), no_env, CacheSettings::from_source).unwrap();
        assert!(!settings.enabled);
        assert_eq!(
            settings.ttl(CacheRoute::AgentsProject),
            Duration::from_millis(250)
        );
        assert!(settings.ttl(CacheRoute::AgentsGlobal).is_zero());
        let env = |name: &str| match name {
            CACHE_ENABLED_ENV => Some("true".to_owned()),
            "SCION_CACHE_AGENTS_PROJECT_TTL_MS" => Some("0".to_owned()),
            _ => None,
        };
        let settings = load(Some(f.path()), env, CacheSettings::from_source).unwrap();
        assert!(settings.enabled);
        assert!(!settings.caches(CacheRoute::AgentsProject));
        assert!(!settings.caches(CacheRoute::AgentsGlobal));
        assert!(settings.caches(CacheRoute::AgentsById));
    }

    #[test]
    fn bad_values_name_the_setting() {
        let env = |name: &str| (name == "SCION_CACHE_AGENTS_BY_ID_TTL_MS").then(|| "5s".to_owned());
        let err = load(None, env, CacheSettings::from_source).unwrap_err();
        assert_eq!(
            err.to_string(),
            "SCION_CACHE_AGENTS_BY_ID_TTL_MS must be a whole number of milliseconds"
        );
        let f = file("server.hub.cache.enabled: maybe\n");
        let err = load(Some(f.path()), no_env, CacheSettings::from_source).unwrap_err();
        assert_eq!(
            err.to_string(),
            "server.hub.cache.enabled must be true or false"
        );
        let f = file("server.hub.cache.agents_global_ttl_ms: -1\n");
        assert!(load(Some(f.path()), no_env, CacheSettings::from_source).is_err());
    }
}
