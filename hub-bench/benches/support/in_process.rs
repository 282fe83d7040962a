//! The Hub's router served in-process, with no network in between: one
//! seeded database opened once per [`Side`] (the untraced Hub, perf-trace,
//! perf-trace tail-sampled and, with the feature `peers`, the peers), and
//! the demo's three agent-list requests as the seeded member, sent straight
//! to each router. The router benchmark (`benches/router_on_off.rs`) and
//! the instruction counter (`examples/on_off_instructions.rs`) share it.

use std::path::Path;

use axum::body::Body;
use axum::Router;
use http_body_util::BodyExt;
use tower::ServiceExt;

use hub_bench::hubs::Tracing;
use hub_example::app::Hub;
use hub_example::seed::{seed_to_file, SeedDocument, SeedOptions};

const SESSION_SECRET: &str = "in-process-bench-secret";

/// The tail-sampled side keeps 1 in this many unremarkable requests' lines.
pub const SAMPLED_ONE_IN: u64 = 100;

/// How a side's Hub is instrumented.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Side {
    /// Untraced: the baseline every other side is set against.
    Off,
    /// perf-trace, every line written.
    On,
    /// perf-trace with tail sampling keeping 1 in [`SAMPLED_ONE_IN`] (and
    /// every request slower than the Hub's default 250 ms).
    Sampled,
    /// The untraced Hub under a peer instrumentation.
    #[cfg(feature = "peers")]
    Peer(hub_example::perf::peers::Peer),
}

impl Side {
    /// Every side this build has, the baseline first.
    pub fn all() -> Vec<Side> {
        #[allow(unused_mut)]
        let mut sides = vec![Side::Off, Side::On];
        #[cfg(feature = "peers")]
        sides.extend(hub_example::perf::peers::Peer::ALL.map(Side::Peer));
        sides.push(Side::Sampled);
        sides
    }

    /// The side's name in the tables and on the command line.
    pub fn name(self) -> &'static str {
        match self {
            Side::Off => "off",
            Side::On => "on",
            Side::Sampled => "sampled",
            #[cfg(feature = "peers")]
            Side::Peer(peer) => peer.name(),
        }
    }

    /// The peer instrumenting this side, if any.
    #[cfg(feature = "peers")]
    pub fn peer(self) -> Option<hub_example::perf::peers::Peer> {
        match self {
            Side::Peer(peer) => Some(peer),
            _ => None,
        }
    }
}

/// The Hub of `side` over the seeded database at `db_path`, and its router
/// (a peer's with the peer's request layer), as [`hub_writing_every`]
/// makes it. A peer's lines go where its subscriber writes them.
pub fn side_hub(
    side: Side,
    db_path: &Path,
    log_path: &Path,
    interval: std::time::Duration,
    cached: bool,
) -> anyhow::Result<(Hub, Router)> {
    let hub = match side {
        Side::Sampled => {
            let sampling = perf_trace_core::exits::sampling::TailSampling::one_in(SAMPLED_ONE_IN)
                .slow_over(std::time::Duration::from_millis(250));
            let exits = hub_example::perf::exits::HubExits {
                sampling: Some(sampling),
                background_lines: Some(interval),
                ..Default::default()
            };
            hub_bench::hubs::seeded_hub_with_exits(
                db_path,
                SESSION_SECRET,
                Tracing::On,
                log_path,
                cache_settings(cached),
                exits,
            )?
        }
        #[cfg(feature = "peers")]
        Side::Peer(peer) => {
            // The spans peer's Hub puts its store behind the counted
            // decorator, as `serve` does for it.
            hub_example::perf::peers::building_for(peer, || {
                hub_writing_every(db_path, Tracing::Off, log_path, interval, cached)
            })?
        }
        side => {
            let tracing = match side {
                Side::On => Tracing::On,
                _ => Tracing::Off,
            };
            hub_writing_every(db_path, tracing, log_path, interval, cached)?
        }
    };
    let router = hub.router();
    #[cfg(feature = "peers")]
    let router = match side {
        Side::Peer(_) => hub_example::perf::peers::traced(router),
        _ => router,
    };
    Ok((hub, router))
}

fn cache_settings(cached: bool) -> hub_example::settings::CacheSettings {
    match cached {
        true => hub_example::settings::CacheSettings::default(),
        false => hub_example::settings::CacheSettings::disabled(),
    }
}

/// One of the demo's scenarios, as a path and query for the router.
#[derive(Debug, Clone)]
pub struct Scenario {
    /// The demo's scenario name.
    pub name: &'static str,
    /// What is sent: path and query.
    pub uri: String,
}

/// A seeded database in `dir` with `agents` agents (`hub<agents>.db`, its
/// seed document beside it), seeded as the demo seeds (rand seed 42).
pub fn seed(dir: &Path, agents: u32) -> anyhow::Result<SeedDocument> {
    let options = SeedOptions {
        db_path: dir.join(format!("hub{agents}.db")),
        session_secret: SESSION_SECRET.into(),
        agents,
        project_slug: format!("bench-{agents}"),
        rand_seed: 42,
    };
    Ok(seed_to_file(
        &options,
        &dir.join(format!("seed-{agents}.json")),
    )?)
}

/// A Hub over the seeded database at `db_path`, tracing on or off, its log
/// (and, traced, its perf_trace lines) written to a new file at `log_path`
/// as the demo serves it, its lines written out every `interval`, with the
/// response cache on (the Hub's default settings) when `cached`.
pub fn hub_writing_every(
    db_path: &Path,
    tracing: Tracing,
    log_path: &Path,
    interval: std::time::Duration,
    cached: bool,
) -> anyhow::Result<Hub> {
    hub_bench::hubs::seeded_hub_writing_every(
        db_path,
        SESSION_SECRET,
        tracing,
        log_path,
        interval,
        cache_settings(cached),
    )
}

/// The demo's scenarios for the seeded project.
pub fn scenarios(seed: &SeedDocument) -> Vec<Scenario> {
    let base = hub_bench::client::parse_hub_url("http://hub.invalid").expect("a valid base URL");
    hub_bench::apibench::scenarios(&base, &seed.project_id)
        .into_iter()
        .map(|s| Scenario {
            name: s.name,
            uri: match s.url.query() {
                Some(query) => format!("{}?{query}", s.url.path()),
                None => s.url.path().to_owned(),
            },
        })
        .collect()
}

/// Sends one GET of `scenario` as `token` to `router` and reads the whole
/// body; fails unless the answer is 200. Returns the body's length.
pub async fn get(router: &Router, scenario: &Scenario, token: &str) -> anyhow::Result<usize> {
    let (status, body) = send(router, &scenario.uri, http::Method::GET, Some(token), None).await?;
    anyhow::ensure!(
        status == http::StatusCode::OK,
        "{} answered {status}",
        scenario.name
    );
    Ok(body.len())
}

/// Sends one request to `router` and reads the whole body.
pub async fn send(
    router: &Router,
    uri: &str,
    method: http::Method,
    token: Option<&str>,
    body: Option<&'static str>,
) -> anyhow::Result<(http::StatusCode, axum::body::Bytes)> {
    let mut request = http::Request::builder().method(method).uri(uri);
    if let Some(token) = token {
        request = request.header("authorization", format!("Bearer {token}"));
    }
    if body.is_some() {
        request = request.header("content-type", "application/json");
    }
    let request = request.body(body.map_or_else(Body::empty, Body::from))?;
    let response = router.clone().oneshot(request).await?;
    let status = response.status();
    let body = response.into_body().collect().await?.to_bytes();
    Ok((status, body))
}
