//! What apibench and the browser benchmark do before their first request:
//! read their inputs (each a one-line error before anything is sent), then
//! note the commit and the host and ask the Hub its version.

use std::path::Path;
use std::time::Duration;

use reqwest::{Client, Url};

use crate::client;
use crate::machine;
use crate::perf_log;
use crate::report::{HarnessCommit, Machine};
use crate::seed_file::LoadedSeed;

/// A run's inputs, read and checked.
#[derive(Debug)]
pub struct RunInputs {
    /// The `--hub` base URL.
    pub base: Url,
    /// The seed file.
    pub loaded: LoadedSeed,
}

impl RunInputs {
    /// Reads `--hub`, the seed file and, when given, checks that the Hub's
    /// log can be opened (`read hub perf log: ...`).
    pub fn read(hub: &str, seed: &Path, perf_log: Option<&Path>) -> anyhow::Result<RunInputs> {
        let base = client::parse_hub_url(hub)?;
        let loaded = LoadedSeed::load(seed)?;
        if let Some(log) = perf_log {
            perf_log::check_perf_log(log)?;
        }
        Ok(RunInputs { base, loaded })
    }
}

/// What a run notes when it starts.
#[derive(Debug)]
pub struct RunStart {
    /// The harness's commit.
    pub harness: HarnessCommit,
    /// The host, its load averages taken now.
    pub machine: Machine,
    /// The HTTP client.
    pub http: Client,
    /// The Hub's version; empty when unknown.
    pub hub_version: String,
}

impl RunStart {
    /// Notes the commit and the host, builds the client (`timeout` per
    /// request, `idle_per_host` idle connections) and asks `base` its version.
    pub async fn now(
        base: &Url,
        notes: &str,
        timeout: Duration,
        idle_per_host: usize,
    ) -> anyhow::Result<RunStart> {
        let harness = machine::harness_commit();
        let machine = machine::machine_at_start(notes);
        let http = client::build_client(Some(timeout), idle_per_host)?;
        let hub_version = client::hub_version(&http, base).await;
        Ok(RunStart {
            harness,
            machine,
            http,
            hub_version,
        })
    }
}
