//! The browser benchmark's JSON report (camelCase; values that can be
//! missing are `null`), beside the API reports of [`crate::report`] and
//! sharing their machine and commit fields.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use crate::report::{HarnessCommit, Machine, PerfTraceMap};

/// The report of `hub-bench web`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct BrowserReport {
    /// When the report was written (RFC 3339, UTC).
    pub generated_at: String,
    /// The harness's commit.
    #[serde(flatten)]
    pub harness: HarnessCommit,
    /// The hub's version from `GET /api/v1/settings/public`; empty when unknown.
    pub hub_scion_version: String,
    /// The `--hub` URL.
    pub hub_base_url: String,
    /// `chromium --version`; empty when unknown.
    pub browser_version: String,
    /// The settings the run used.
    pub effective_settings: WebSettings,
    /// The seed file's JSON with every token and the session secret redacted.
    pub seed: serde_json::Value,
    /// The scenarios, in the order they ran.
    pub scenarios: Vec<WebScenarioReport>,
    /// The host.
    pub machine: Machine,
}

/// The flags a run used.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct WebSettings {
    /// Runs per view scenario.
    pub runs: u32,
    /// Next-page clicks per paged run.
    pub page_changes: u32,
    /// Runs of the burst scenario.
    pub burst_runs: u32,
    /// Status changes per burst.
    pub burst_count: u32,
    /// Whether only the burst scenario ran.
    pub burst_only: bool,
    /// Page-load timeout.
    pub nav_timeout_ms: u64,
    /// How long a view may take to show its first page.
    pub populate_timeout_ms: u64,
    /// How long a page change or a burst may take to show.
    pub settle_timeout_ms: u64,
    /// Whether readiness marks were expected (the setting on).
    pub expect_readiness_marks: bool,
}

/// Count, median, min and max of a set of milliseconds; all `null` when empty.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct MsStats {
    /// Samples.
    pub count: u32,
    /// Median.
    pub median_ms: Option<f64>,
    /// Smallest.
    pub min_ms: Option<f64>,
    /// Largest.
    pub max_ms: Option<f64>,
}

impl MsStats {
    /// The figures of `samples`.
    pub fn of(samples: &[f64]) -> MsStats {
        let round = |ms: Option<f64>| ms.map(crate::stats::round_ms);
        MsStats {
            count: samples.len() as u32,
            median_ms: round(crate::stats::median(samples)),
            min_ms: round(crate::stats::min(samples)),
            max_ms: round(crate::stats::max(samples)),
        }
    }
}

/// The readiness marks of a scenario's populated runs, per mark name: the
/// cold run (the first in a fresh browser) apart from the warm ones.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ReadinessMarkStats {
    /// The first run of the scenario, in a fresh browser profile.
    pub cold: BTreeMap<String, MsStats>,
    /// The later runs, with the browser's caches warm.
    pub warm: BTreeMap<String, MsStats>,
}

/// One scenario's figures.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct WebScenarioReport {
    /// `project-grid`, `project-list`, `project-graph-embedded`,
    /// `standalone-graph` or `sse-burst`.
    pub name: String,
    /// The view measured (`grid`, `list`, `graph`).
    pub view: String,
    /// The page's path.
    pub path: String,
    /// Agents in the seeded project.
    pub agent_count: u32,
    /// Runs made.
    pub runs: u32,
    /// Runs whose view populated within `--populate-timeout-ms`.
    pub populated_run_count: u32,
    /// Runs that failed (not populated, or an error on the way).
    pub failure_count: u32,
    /// First page rendered (ms since navigation start), over populated runs.
    pub first_page: MsStats,
    /// The pager's page size (paged views).
    pub page_size: Option<u32>,
    /// The pager's page count (paged views).
    pub page_count: Option<u32>,
    /// Next-page click to the next page shown, every change of every run.
    pub page_change: MsStats,
    /// Burst scenario: status change sent to the card updated, every update.
    pub burst_update: Option<MsStats>,
    /// Burst scenario: updates that never showed within `--settle-timeout-ms`.
    pub burst_missing_count: Option<u32>,
    /// Readiness marks, cold and warm.
    pub readiness_marks: ReadinessMarkStats,
    /// With `--expect-readiness-marks`: populated runs lacking one of the
    /// scenario's two marks after 3 s.
    pub readiness_marks_missing_run_count: u32,
    /// Without it: populated runs that found any readiness mark.
    pub readiness_marks_unexpected_run_count: u32,
    /// Whether any API request of the scenario was joined to its `perf_trace` line.
    pub perf_trace_available: bool,
    /// Every run.
    pub attempts: Vec<WebRun>,
}

/// One run of a scenario.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct WebRun {
    /// 0-based; run 0 is cold.
    pub index: u32,
    /// Whether this was the scenario's cold run.
    pub cold: bool,
    /// Whether the view populated.
    pub populated: bool,
    /// Why the run failed, when it did.
    pub error: Option<String>,
    /// First page rendered, ms since navigation start.
    pub first_page_ms: Option<f64>,
    /// Agents shown on the first page (the graph: all of them).
    pub items: Option<u32>,
    /// The pager's page size.
    pub page_size: Option<u32>,
    /// The pager's page count.
    pub page_count: Option<u32>,
    /// Each page change, in ms.
    pub page_change_ms: Vec<f64>,
    /// Each burst update, in ms from the burst's start; `null`: never shown.
    pub burst_update_ms: Vec<Option<f64>>,
    /// The readiness marks read before any interaction: name to ms since
    /// navigation start.
    pub readiness_marks: BTreeMap<String, f64>,
    /// The page's API and event-stream requests.
    pub api_requests: Vec<PageRequest>,
}

/// One API request the page made, as the browser saw it.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct PageRequest {
    /// HTTP method.
    pub method: String,
    /// Path and query.
    pub path: String,
    /// Response status.
    pub status: u16,
    /// The `X-Request-ID` the Hub returned.
    pub request_id: Option<String>,
    /// The joined `perf_trace` line in header form.
    pub perf_trace: Option<PerfTraceMap>,
    /// `hub-log` when joined.
    pub perf_trace_source: Option<String>,
}
