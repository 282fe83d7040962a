//! The JSON reports the harness writes: the one schema module.
//!
//! Field names are camelCase. Optional values that the reading guide says are
//! "null when there is nothing" serialize as `null`; `perfTrace` and
//! `perfTraceSource` are left out of an attempt that has no trace data.

use std::collections::BTreeMap;
use std::path::Path;

use anyhow::Context as _;
use serde::{Deserialize, Serialize};

/// Writes `value` as pretty JSON with a trailing newline.
pub fn write_json<T: Serialize>(path: &Path, value: &T) -> anyhow::Result<()> {
    let mut text = serde_json::to_string_pretty(value).context("encode report")?;
    text.push('\n');
    std::fs::write(path, text).with_context(|| format!("write report {}", path.display()))
}

/// A perf trace in header form: `X-Scion-Perf-*` header name to value.
pub type PerfTraceMap = BTreeMap<String, String>;

/// Where the harness's own commit came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum CommitSource {
    /// Read with `git` from the source tree the harness was built from, at run time.
    Git,
    /// Embedded when the harness was built.
    Build,
    /// Neither worked: the commit is empty.
    Unknown,
}

/// The commit of the harness that produced a report.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct HarnessCommit {
    /// The full commit hash, empty when unknown.
    pub harness_commit: String,
    /// Whether the source tree had uncommitted changes (including untracked files).
    pub harness_commit_dirty: bool,
    /// Where the hash came from.
    pub harness_commit_source: CommitSource,
}

/// The host a report was measured on.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Machine {
    /// Operating system (`linux`, `macos`, ...).
    pub os: String,
    /// CPU architecture (`x86_64`, `aarch64`, ...).
    pub arch: String,
    /// CPUs available to the process.
    pub num_cpu: usize,
    /// `rustc --version` of the toolchain found at run time; empty when unknown.
    pub rust_version: String,
    /// Host name; empty when unknown.
    pub hostname: String,
    /// Free text from `--notes`: whatever the report cannot capture.
    pub notes: String,
    /// 1, 5 and 15 minute load averages when the run started (zeros when unknown).
    pub load_avg_start: [f64; 3],
    /// 1, 5 and 15 minute load averages when the run ended (zeros when unknown).
    pub load_avg_end: [f64; 3],
    /// Seconds since the host booted, when the run started (0 when unknown).
    pub uptime_seconds: f64,
}

/// The settings an apibench run used.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct EffectiveSettings {
    /// Recorded attempts per scenario.
    pub runs: u32,
    /// Unrecorded attempts sent before the recorded ones, per scenario.
    pub warmup: u32,
    /// Per-request timeout, headers and body included.
    pub timeout_seconds: u64,
    /// Whether requests carried `X-Scion-Perf-Trace: 1`.
    pub want_perf_trace: bool,
}

/// Where an attempt's trace data came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum PerfTraceSource {
    /// The `X-Scion-Perf-*` response headers (admin callers only).
    #[serde(rename = "headers")]
    Headers,
    /// The hub's `perf_trace` log line, joined by request id.
    #[serde(rename = "hub-log")]
    HubLog,
}

/// One timed request of a scenario.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Attempt {
    /// 0-based index among the scenario's recorded attempts.
    pub index: u32,
    /// HTTP status, 0 when no response arrived.
    pub status: u16,
    /// A 2xx status with the whole body read.
    pub success: bool,
    /// Why the attempt failed; `null` on success.
    pub error: Option<String>,
    /// Body length in bytes (what was read before a failure).
    pub bytes: u64,
    /// Time to the response headers, in milliseconds (0 without a response).
    pub ttfb_ms: f64,
    /// Time to the end of the body (or to the failure), in milliseconds.
    pub total_ms: f64,
    /// The hub's `X-Request-ID` response header; empty when absent.
    pub request_id: String,
    /// The trace in header form, when any was found.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub perf_trace: Option<PerfTraceMap>,
    /// Where `perfTrace` came from; present exactly when `perfTrace` is.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub perf_trace_source: Option<PerfTraceSource>,
}

/// One scenario of an apibench run: an endpoint requested `runs` times.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ScenarioReport {
    /// Scenario name, e.g. `project-agents-list`.
    pub name: String,
    /// Method and path requested, e.g. `GET /api/v1/agents?projectId=...`.
    pub endpoint: String,
    /// Agents in the seeded project.
    pub agent_count: u64,
    /// Recorded attempts.
    pub runs: u32,
    /// Every recorded attempt, failures included.
    pub attempts: Vec<Attempt>,
    /// Successful attempts.
    pub success_count: u32,
    /// Failed attempts.
    pub failure_count: u32,
    /// Median time to headers over successful attempts.
    pub median_ttfb_ms: Option<f64>,
    /// Median total time over successful attempts.
    pub median_total_ms: Option<f64>,
    /// Fastest successful attempt.
    pub min_total_ms: Option<f64>,
    /// Slowest successful attempt.
    pub max_total_ms: Option<f64>,
    /// Population standard deviation of the successful attempts' total times.
    pub stddev_total_ms: Option<f64>,
    /// True when at least one attempt has trace data; always present.
    pub perf_trace_available: bool,
}

/// The apibench report.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Report {
    /// When the report was written (RFC 3339, UTC).
    pub generated_at: String,
    /// The harness's commit.
    #[serde(flatten)]
    pub harness: HarnessCommit,
    /// The hub's version from `GET /api/v1/settings/public`; empty when unknown.
    pub hub_scion_version: String,
    /// The `--hub` URL.
    pub hub_base_url: String,
    /// The settings the run used.
    pub effective_settings: EffectiveSettings,
    /// The seed file's JSON with every token and the session secret redacted.
    pub seed: serde_json::Value,
    /// The scenarios, in the order they ran.
    pub scenarios: Vec<ScenarioReport>,
    /// The host.
    pub machine: Machine,
}

/// Latency figures over a set of requests, in milliseconds. Percentiles are
/// exact nearest-rank values; every figure is `null` when `count` is 0.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct LatencySummary {
    /// Requests measured.
    pub count: u64,
    /// Mean.
    pub avg_ms: Option<f64>,
    /// Median (nearest rank).
    pub p50_ms: Option<f64>,
    /// 75th percentile (absent from reports written before it existed).
    #[serde(default)]
    pub p75_ms: Option<f64>,
    /// 90th percentile.
    pub p90_ms: Option<f64>,
    /// 95th percentile.
    pub p95_ms: Option<f64>,
    /// 99th percentile.
    pub p99_ms: Option<f64>,
    /// Slowest.
    pub max_ms: Option<f64>,
}

/// One endpoint of the load mix.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct EndpointLoad {
    /// Endpoint name, e.g. `project-agents-list`.
    pub name: String,
    /// HTTP method.
    pub method: String,
    /// Path and query, with the seeded ids filled in.
    pub path: String,
    /// Relative weight in the mix.
    pub weight: u32,
    /// The statuses that count as expected.
    pub expected_statuses: Vec<u16>,
    /// Requests started (completed plus abandoned).
    pub sent: u64,
    /// Requests started but abandoned at the end of the grace period.
    pub abandoned: u64,
    /// Completed requests with an expected 4xx/5xx status.
    pub expected_failures: u64,
    /// Completed requests with an unexpected status, or no response at all.
    pub unexpected_failures: u64,
    /// Completed requests per status (`"0"`: no response).
    pub status_counts: BTreeMap<String, u64>,
    /// The first unexpected outcome seen, for diagnosis.
    pub first_unexpected: Option<String>,
    /// Completed requests of this endpoint per second of the run.
    #[serde(default)]
    pub rps: f64,
    /// Latency over completed requests; `count` is the number completed.
    #[serde(flatten)]
    pub latency: LatencySummary,
}

/// The load report.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct LoadReport {
    /// When the report was written (RFC 3339, UTC).
    pub generated_at: String,
    /// The harness's commit.
    #[serde(flatten)]
    pub harness: HarnessCommit,
    /// The `--hub` URL.
    pub hub_base_url: String,
    /// Virtual users requested.
    pub users: u32,
    /// Virtual users actually started before the deadline.
    pub users_started: u32,
    /// Users started per second.
    pub spawn_rate: u32,
    /// The `--duration`, in seconds.
    pub requested_duration_seconds: f64,
    /// Measured wall time from the first user's start to the last request's end.
    pub duration_seconds: f64,
    /// Completed requests (every endpoint).
    pub total_requests: u64,
    /// `totalRequests / durationSeconds`.
    pub rps: f64,
    /// Completed requests with an expected 4xx/5xx status.
    pub expected_failures: u64,
    /// Completed requests with an unexpected status, or no response at all.
    pub unexpected_failures: u64,
    /// Requests started (completed plus abandoned).
    pub sent_requests: u64,
    /// Requests still in flight after the grace period, abandoned.
    pub abandoned_requests: u64,
    /// True when the in-memory request cap stopped the run before the deadline.
    pub request_cap_reached: bool,
    /// Latency over every completed request.
    pub overall: LatencySummary,
    /// Per endpoint, in mix order.
    pub endpoints: Vec<EndpointLoad>,
    /// The Hub process's CPU and memory during a run against one Hub, when
    /// it was found (over several replicas, each one's is in `replicas`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub hub_process: Option<crate::load::hub_process::HubProcessReport>,
    /// Why a run against one Hub has no `hubProcess` (a host that is not
    /// loopback, a process that is not visible).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub hub_process_missing: Option<String>,
    /// The load client's own process over the same samples (`foundBy`
    /// `self`). On a machine the client shares with the Hub, what moves
    /// both from run to run (another guest on the host, the clock speed)
    /// moves the client's CPU per request with the Hub's: the Hub's CPU
    /// over the client's compares runs taken at different moments.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub load_process: Option<crate::load::hub_process::HubProcessReport>,
    /// The Hub's response cache per route, read at the end of the run.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cache: Option<crate::load::hub_state::CacheTable>,
    /// The Hub's audit health (`/healthz`), read at the end of the run.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub audit: Option<crate::load::hub_state::AuditHealth>,
    /// The host.
    pub machine: Machine,
    /// Per replica, in `--hub` order, when the run spread its users over
    /// several (absent for one).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub replicas: Vec<ReplicaLoad>,
}

/// What the users of one replica saw, in a run over several.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ReplicaLoad {
    /// The replica's base URL.
    pub hub_base_url: String,
    /// Virtual users started against it.
    pub users_started: u32,
    /// Completed requests.
    pub total_requests: u64,
    /// `totalRequests / durationSeconds` of the run.
    pub rps: f64,
    /// Completed requests with an expected 4xx/5xx status.
    pub expected_failures: u64,
    /// Completed requests with an unexpected status, or no response at all.
    pub unexpected_failures: u64,
    /// Requests abandoned after the grace period.
    pub abandoned_requests: u64,
    /// Latency over its completed requests.
    pub latency: LatencySummary,
    /// Its process's CPU and memory during the run, when it was found
    /// (absent from reports written before replicas were sampled).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub hub_process: Option<crate::load::hub_process::HubProcessReport>,
    /// Why it has no `hubProcess`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub hub_process_missing: Option<String>,
    /// Its response cache per route at the end of the run (the report's
    /// `cache` adds up every replica's).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cache: Option<crate::load::hub_state::CacheTable>,
    /// Its audit health at the end of the run.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub audit: Option<crate::load::hub_state::AuditHealth>,
}

impl LoadReport {
    /// Every Hub process of the run: the one Hub's, or each replica's in
    /// `--hub` order (`None` where it was not sampled).
    pub fn hub_processes(&self) -> Vec<Option<&crate::load::hub_process::HubProcessReport>> {
        if self.replicas.is_empty() {
            vec![self.hub_process.as_ref()]
        } else {
            self.replicas
                .iter()
                .map(|r| r.hub_process.as_ref())
                .collect()
        }
    }
}
