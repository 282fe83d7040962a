//! The weighted endpoint mix the users walk, with its URLs filled in from
//! the seeded project and the agent ids its list returns, and the smooth
//! round robin that orders it.

use anyhow::{bail, Context as _};
use reqwest::{Client, Method, Url};

use crate::client::{endpoint_url, error_chain, path_and_query};

/// One endpoint of the mix, with its URLs filled in.
#[derive(Debug, Clone)]
pub struct MixEntry {
    /// Endpoint name.
    pub name: &'static str,
    /// HTTP method.
    pub method: Method,
    /// The URLs requested in turn (one, or one per agent id).
    pub urls: Vec<Url>,
    /// Relative weight.
    pub weight: u32,
    /// Statuses that count as expected.
    pub expected: &'static [u16],
    /// Whether the request carries the member's token.
    pub member: bool,
    /// A JSON body, for the PUT.
    pub body: Option<&'static str>,
}

/// An id no agent has, shaped like the real ones: the nil-like UUID when ids
/// are UUIDs, otherwise a plain string.
pub fn missing_agent_id(sample: &str) -> String {
    let b = sample.as_bytes();
    let uuid_like = b.len() == 36
        && [8, 13, 18, 23].iter().all(|&i| b[i] == b'-')
        && b.iter()
            .enumerate()
            .all(|(i, c)| [8, 13, 18, 23].contains(&i) || c.is_ascii_hexdigit());
    if uuid_like {
        "00000000-0000-4000-8000-000000000000".to_owned()
    } else {
        "missing-agent-0".to_owned()
    }
}

/// The weighted mix for a seeded project whose agents have `agent_ids` (at
/// least one).
pub fn mix(base: &Url, project_id: &str, agent_ids: &[String]) -> Vec<MixEntry> {
    let one = |segments: &[&str]| vec![endpoint_url(base, segments, &[])];
    let missing = missing_agent_id(agent_ids.first().map_or("", String::as_str));
    vec![
        MixEntry {
            name: "project-agents-list",
            method: Method::GET,
            urls: one(&["api", "v1", "projects", project_id, "agents"]),
            weight: 5,
            expected: &[200],
            member: true,
            body: None,
        },
        MixEntry {
            name: "global-agents-list",
            method: Method::GET,
            urls: one(&["api", "v1", "agents"]),
            weight: 3,
            expected: &[200],
            member: true,
            body: None,
        },
        MixEntry {
            name: "agent-by-id",
            method: Method::GET,
            urls: agent_ids
                .iter()
                .map(|id| endpoint_url(base, &["api", "v1", "agents", id], &[]))
                .collect(),
            weight: 4,
            expected: &[200],
            member: true,
            body: None,
        },
        MixEntry {
            name: "missing-agent",
            method: Method::GET,
            urls: one(&["api", "v1", "agents", &missing]),
            weight: 1,
            expected: &[404],
            member: true,
            body: None,
        },
        MixEntry {
            name: "healthz",
            method: Method::GET,
            urls: one(&["healthz"]),
            weight: 1,
            expected: &[200],
            member: false,
            body: None,
        },
        MixEntry {
            name: "settings-public",
            method: Method::GET,
            urls: one(&["api", "v1", "settings", "public"]),
            weight: 2,
            expected: &[200],
            member: false,
            body: None,
        },
        MixEntry {
            name: "server-config-forbidden",
            method: Method::PUT,
            urls: one(&["api", "v1", "admin", "server-config"]),
            weight: 1,
            expected: &[403],
            member: true,
            body: Some("{}"),
        },
    ]
}

/// A smooth weighted round robin over `weights`: a sequence of indices of
/// length `sum(weights)` in which index `i` appears `weights[i]` times, spread
/// out rather than bunched.
pub fn schedule(weights: &[u32]) -> Vec<usize> {
    let total: i64 = weights.iter().map(|&w| i64::from(w)).sum();
    let mut current = vec![0i64; weights.len()];
    let mut out = Vec::with_capacity(total as usize);
    for _ in 0..total {
        for (c, &w) in current.iter_mut().zip(weights) {
            *c += i64::from(w);
        }
        let Some((best, _)) = current
            .iter()
            .enumerate()
            .max_by(|a, b| a.1.cmp(b.1).then(b.0.cmp(&a.0)))
        else {
            break;
        };
        current[best] -= total;
        out.push(best);
    }
    out
}

/// Agent ids from a project list response: a JSON array of agents, or an
/// object holding one under `agents`, `items`, `data` or `results`.
pub fn extract_agent_ids(body: &serde_json::Value) -> Vec<String> {
    let list = match body {
        serde_json::Value::Array(items) => Some(items),
        serde_json::Value::Object(map) => ["agents", "items", "data", "results"]
            .iter()
            .find_map(|k| map.get(*k)?.as_array()),
        _ => None,
    };
    list.into_iter()
        .flatten()
        .filter_map(|agent| match agent.get("id")? {
            serde_json::Value::String(s) if !s.is_empty() => Some(s.clone()),
            serde_json::Value::Number(n) => Some(n.to_string()),
            _ => None,
        })
        .collect()
}

/// The seeded project's agent ids, listed as the member: one line of error
/// when the Hub does not list them.
pub(super) async fn discover_agent_ids(
    client: &Client,
    base: &Url,
    project_id: &str,
    token: &str,
) -> anyhow::Result<Vec<String>> {
    let url = endpoint_url(base, &["api", "v1", "projects", project_id, "agents"], &[]);
    let what = || {
        format!(
            "list the seeded project's agents ({})",
            path_and_query(&url)
        )
    };
    let resp = client
        .get(url.clone())
        .bearer_auth(token)
        .send()
        .await
        .map_err(|e| anyhow::anyhow!(error_chain(&e)))
        .with_context(what)?;
    let status = resp.status();
    if !status.is_success() {
        bail!("{}: HTTP {status}", what());
    }
    let body = resp
        .bytes()
        .await
        .map_err(|e| anyhow::anyhow!(error_chain(&e)))
        .with_context(what)?;
    let json: serde_json::Value = serde_json::from_slice(&body).with_context(what)?;
    let ids = extract_agent_ids(&json);
    if ids.is_empty() {
        bail!(
            "{}: no agent ids in the response; seed at least one agent",
            what()
        );
    }
    Ok(ids)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::client;

    #[test]
    fn schedule_is_exact_and_spread() {
        let s = schedule(&[5, 3, 4, 1, 1, 2, 1]);
        assert_eq!(s.len(), 17);
        for (i, w) in [5, 3, 4, 1, 1, 2, 1].iter().enumerate() {
            assert_eq!(s.iter().filter(|&&x| x == i).count(), *w as usize);
        }
        // The heaviest endpoint never runs twice in a row (5 of 17).
        assert!(s.windows(2).all(|w| !(w[0] == 0 && w[1] == 0)), "{s:?}");
        assert_eq!(schedule(&[2, 1]), vec![0, 1, 0]);
        assert!(schedule(&[]).is_empty());
    }

    #[test]
    fn agent_ids_from_responses() {
        use serde_json::json;
        assert_eq!(
            extract_agent_ids(&json!([{"id": "a"}, {"id": "b"}])),
            vec!["a", "b"]
        );
        assert_eq!(
            extract_agent_ids(
                &json!({"agents": [{"id": "a"}, {"name": "x"}, {"id": 7}], "nextCursor": null})
            ),
            vec!["a", "7"]
        );
        assert_eq!(
            extract_agent_ids(&json!({"items": [{"id": "c"}]})),
            vec!["c"]
        );
        assert!(extract_agent_ids(&json!({"agents": []})).is_empty());
        assert!(extract_agent_ids(&json!("nope")).is_empty());
    }

    #[test]
    fn missing_ids_keep_the_shape() {
        assert_eq!(
            missing_agent_id("3f2a9c1e-0b7d-4c55-9a1e-2b3c4d5e6f70"),
            "00000000-0000-4000-8000-000000000000"
        );
        assert_eq!(missing_agent_id("agent-17"), "missing-agent-0");
        assert_eq!(missing_agent_id(""), "missing-agent-0");
    }

    #[test]
    fn mix_urls() {
        let base = client::parse_hub_url("http://127.0.0.1:1").unwrap();
        let m = mix(&base, "p-1", &["a1".into(), "a2".into()]);
        let got: Vec<(&str, String, String, usize)> = m
            .iter()
            .map(|e| {
                (
                    e.name,
                    e.method.to_string(),
                    path_and_query(&e.urls[0]),
                    e.urls.len(),
                )
            })
            .collect();
        assert_eq!(
            got,
            vec![
                (
                    "project-agents-list",
                    "GET".into(),
                    "/api/v1/projects/p-1/agents".into(),
                    1
                ),
                (
                    "global-agents-list",
                    "GET".into(),
                    "/api/v1/agents".into(),
                    1
                ),
                ("agent-by-id", "GET".into(), "/api/v1/agents/a1".into(), 2),
                (
                    "missing-agent",
                    "GET".into(),
                    "/api/v1/agents/missing-agent-0".into(),
                    1
                ),
                ("healthz", "GET".into(), "/healthz".into(), 1),
                (
                    "settings-public",
                    "GET".into(),
                    "/api/v1/settings/public".into(),
                    1
                ),
                (
                    "server-config-forbidden",
                    "PUT".into(),
                    "/api/v1/admin/server-config".into(),
                    1
                ),
            ]
        );
    }
}
