//! The requests of `hub-bench load`'s weighted mix, sent to the Hub's
//! router in-process as the load client sends them (the instruction
//! counter's `--mix`, `examples/on_off_instructions.rs`).

use axum::Router;

use super::in_process::send;
use hub_example::seed::SeedDocument;

/// One request of the load's mix (`hub-bench load`), in turn over its URLs.
#[derive(Debug, Clone)]
pub struct MixRequest {
    /// The mix entry's name.
    pub name: &'static str,
    entry: hub_bench::load::MixEntry,
}

/// The load's weighted mix for the seeded project whose agents are read
/// from `router` as the seeded member (the load client's own lookup).
pub async fn load_mix(router: &Router, seed: &SeedDocument) -> anyhow::Result<Vec<MixRequest>> {
    let list = format!("/api/v1/projects/{}/agents", seed.project_id);
    let token = Some(seed.member_token.as_str());
    let (_, body) = send(router, &list, http::Method::GET, token, None).await?;
    let ids = hub_bench::load::extract_agent_ids(&serde_json::from_slice(&body)?);
    anyhow::ensure!(!ids.is_empty(), "the seeded project lists no agents");
    let base = hub_bench::client::parse_hub_url("http://hub.invalid")?;
    Ok(hub_bench::load::mix(&base, &seed.project_id, &ids)
        .into_iter()
        .map(|entry| MixRequest {
            name: entry.name,
            entry,
        })
        .collect())
}

/// The names and weights of the load's mix entries, in its order (no Hub
/// needed).
pub fn load_mix_names() -> Vec<(&'static str, u32)> {
    let base = hub_bench::client::parse_hub_url("http://hub.invalid").expect("a valid base URL");
    hub_bench::load::mix(&base, "project", &["agent".to_owned()])
        .into_iter()
        .map(|entry| (entry.name, entry.weight))
        .collect()
}

/// Sends request `turn` of `mix` (its URLs taken in turn) to `router` as the
/// load client sends it; fails unless the status is one the mix expects.
pub async fn send_mix(
    router: &Router,
    mix: &MixRequest,
    turn: usize,
    token: &str,
) -> anyhow::Result<usize> {
    let entry = &mix.entry;
    let url = &entry.urls[turn % entry.urls.len()];
    let uri = match url.query() {
        Some(query) => format!("{}?{query}", url.path()),
        None => url.path().to_owned(),
    };
    let token = entry.member.then_some(token);
    let (status, body) = send(router, &uri, entry.method.clone(), token, entry.body).await?;
    anyhow::ensure!(
        entry.expected.contains(&status.as_u16()),
        "{} answered {status}",
        mix.name
    );
    Ok(body.len())
}
