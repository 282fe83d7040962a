//! `apibench`: timed requests to the agent-list endpoints as the seeded
//! member, written as a JSON report.
//!
//! Three scenarios run one after the other, each `--warmup` unrecorded
//! attempts then `--runs` recorded ones:
//!
//! | scenario | request |
//! | --- | --- |
//! | `project-agents-list` | `GET /api/v1/projects/{projectId}/agents` |
//! | `global-agents-list-unscoped` | `GET /api/v1/agents` |
//! | `global-agents-list-scoped` | `GET /api/v1/agents?projectId={projectId}` |
//!
//! Time to first byte is the time to the response headers; total time runs to
//! the end of the body. With `--want-perf-trace` the requests carry
//! `X-Scion-Perf-Trace: 1` and any `X-Scion-Perf-*` response headers are kept
//! (source `headers`). With `--hub-perf-log` the hub's log is read after the
//! run and each attempt is joined to its `perf_trace` line by the
//! `X-Request-ID` the hub returned; the rebuilt header-shaped trace (which,
//! unlike headers, includes `serialize`) replaces header data when both exist
//! (source `hub-log`): the log line is the complete record of the request.
//! Attempts without a line keep their headers, if any.

use std::io::IsTerminal as _;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use clap::Args;
use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};
use reqwest::{Client, Url};

use crate::client::{endpoint_url, error_chain, path_and_query};
use crate::machine;
use crate::perf_log;
use crate::report::{
    write_json, Attempt, EffectiveSettings, PerfTraceMap, PerfTraceSource, Report, ScenarioReport,
};
use crate::run_start::{RunInputs, RunStart};
use crate::stats;
use crate::table;
use perf_trace_core::line::scion::header;

/// The flags of `apibench`.
#[derive(Debug, Clone, Args)]
pub struct ApibenchArgs {
    /// Base URL of the hub, e.g. http://127.0.0.1:19810
    #[arg(long, value_name = "URL")]
    pub hub: String,
    /// The seed JSON written by `seed` (project id and member token)
    #[arg(long, value_name = "SEED.json")]
    pub seed: PathBuf,
    /// Recorded attempts per scenario
    #[arg(long, default_value_t = 5, value_parser = clap::value_parser!(u32).range(1..=100_000))]
    pub runs: u32,
    /// Unrecorded attempts per scenario, sent before the recorded ones
    #[arg(long, default_value_t = 1, value_parser = clap::value_parser!(u32).range(0..=100_000))]
    pub warmup: u32,
    /// Per-request timeout in seconds, headers and body included
    #[arg(long, default_value_t = 60, value_parser = clap::value_parser!(u64).range(1..=86_400))]
    pub timeout_seconds: u64,
    /// Send `X-Scion-Perf-Trace: 1` and keep any X-Scion-Perf-* headers that come back
    #[arg(long)]
    pub want_perf_trace: bool,
    /// The hub's JSON log: join each attempt to its perf_trace line by request id
    #[arg(long, value_name = "LOG")]
    pub hub_perf_log: Option<PathBuf>,
    /// Where to write the JSON report
    #[arg(long, value_name = "REPORT.json")]
    pub out: PathBuf,
    /// Free text for the report: anything it cannot capture (e.g. other hubs on the host)
    #[arg(long, value_name = "TEXT", default_value = "")]
    pub notes: String,
    /// Print nothing and draw no progress bar (for callers with their own output).
    #[arg(skip)]
    pub quiet: bool,
}

/// One scenario to run: its name and the URL it requests.
#[derive(Debug, Clone)]
pub struct Scenario {
    /// Scenario name.
    pub name: &'static str,
    /// The full URL requested.
    pub url: Url,
}

/// The three agent-list scenarios for `project_id`, in the order they run.
pub fn scenarios(base: &Url, project_id: &str) -> Vec<Scenario> {
    vec![
        Scenario {
            name: "project-agents-list",
            url: endpoint_url(base, &["api", "v1", "projects", project_id, "agents"], &[]),
        },
        Scenario {
            name: "global-agents-list-unscoped",
            url: endpoint_url(base, &["api", "v1", "agents"], &[]),
        },
        Scenario {
            name: "global-agents-list-scoped",
            url: endpoint_url(base, &["api", "v1", "agents"], &[("projectId", project_id)]),
        },
    ]
}

fn ms(d: Duration) -> f64 {
    stats::round_ms(d.as_secs_f64() * 1000.0)
}

/// Sends one timed GET as `token`; never fails, a failure is recorded in the
/// attempt (status 0 when no response arrived).
pub async fn timed_get(client: &Client, url: &Url, token: &str, want_perf_trace: bool) -> Attempt {
    let mut req = client.get(url.clone()).bearer_auth(token);
    if want_perf_trace {
        req = req.header(header::TRIGGER, "1");
    }
    let start = Instant::now();
    let mut attempt = Attempt {
        index: 0,
        status: 0,
        success: false,
        error: None,
        bytes: 0,
        ttfb_ms: 0.0,
        total_ms: 0.0,
        request_id: String::new(),
        perf_trace: None,
        perf_trace_source: None,
    };
    let mut resp = match req.send().await {
        Ok(resp) => resp,
        Err(e) => {
            attempt.total_ms = ms(start.elapsed());
            attempt.error = Some(error_chain(&e));
            return attempt;
        }
    };
    attempt.ttfb_ms = ms(start.elapsed());
    attempt.status = resp.status().as_u16();
    attempt.request_id = resp
        .headers()
        .get("x-request-id")
        .and_then(|v| v.to_str().ok())
        .unwrap_or_default()
        .to_owned();
    if want_perf_trace {
        let trace: PerfTraceMap = resp
            .headers()
            .iter()
            .filter(|(name, _)| perf_log::is_perf_header(name.as_str()))
            .filter_map(|(name, value)| {
                Some((
                    perf_log::canonical_header_name(name.as_str()),
                    value.to_str().ok()?.to_owned(),
                ))
            })
            .collect();
        if !trace.is_empty() {
            attempt.perf_trace = Some(trace);
            attempt.perf_trace_source = Some(PerfTraceSource::Headers);
        }
    }
    loop {
        match resp.chunk().await {
            Ok(Some(chunk)) => attempt.bytes += chunk.len() as u64,
            Ok(None) => break,
            Err(e) => {
                attempt.error = Some(format!("reading body: {}", error_chain(&e)));
                break;
            }
        }
    }
    attempt.total_ms = ms(start.elapsed());
    let status = resp.status();
    if attempt.error.is_none() && !status.is_success() {
        attempt.error = Some(format!("HTTP {status}"));
    }
    attempt.success = attempt.error.is_none();
    attempt
}

/// Builds a scenario's figures from its attempts: counts, and medians, extremes
/// and deviation over the successful attempts only.
pub fn summarize(
    name: &str,
    endpoint: String,
    agent_count: u64,
    attempts: Vec<Attempt>,
) -> ScenarioReport {
    let ok: Vec<&Attempt> = attempts.iter().filter(|a| a.success).collect();
    let totals: Vec<f64> = ok.iter().map(|a| a.total_ms).collect();
    let ttfbs: Vec<f64> = ok.iter().map(|a| a.ttfb_ms).collect();
    let round = |v: Option<f64>| v.map(stats::round_ms);
    ScenarioReport {
        name: name.to_owned(),
        endpoint,
        agent_count,
        runs: attempts.len() as u32,
        success_count: ok.len() as u32,
        failure_count: (attempts.len() - ok.len()) as u32,
        median_ttfb_ms: round(stats::median(&ttfbs)),
        median_total_ms: round(stats::median(&totals)),
        min_total_ms: round(stats::min(&totals)),
        max_total_ms: round(stats::max(&totals)),
        stddev_total_ms: round(stats::stddev(&totals)),
        perf_trace_available: attempts.iter().any(|a| a.perf_trace.is_some()),
        attempts,
    }
}

/// Joins attempts to the log's lines by request id (see the module
/// documentation for which source wins). Returns `(joined, attempts)`.
pub fn join_perf_log(
    scenarios: &mut [ScenarioReport],
    index: &std::collections::HashMap<String, perf_log::PerfLine>,
) -> (usize, usize) {
    let mut joined = 0;
    let mut total = 0;
    for attempt in scenarios.iter_mut().flat_map(|s| s.attempts.iter_mut()) {
        total += 1;
        if attempt.request_id.is_empty() {
            continue;
        }
        if let Some(line) = index.get(&attempt.request_id) {
            attempt.perf_trace = Some(line.header_map());
            attempt.perf_trace_source = Some(PerfTraceSource::HubLog);
            joined += 1;
        }
    }
    for s in scenarios.iter_mut() {
        s.perf_trace_available = s.attempts.iter().any(|a| a.perf_trace.is_some());
    }
    (joined, total)
}

/// How long to keep re-reading the log for lines not yet written: the hub
/// writes a line as its response ends, so the last one can trail the client.
const JOIN_SETTLE: Duration = Duration::from_secs(1);

/// How long to wait for a traced Hub's first lines before concluding that
/// the log holds none of the run's requests.
const FIRST_LINES: Duration = Duration::from_millis(400);

async fn join_with_settle(
    log: &Path,
    scenarios: &mut [ScenarioReport],
) -> anyhow::Result<(usize, usize)> {
    let wanted = scenarios
        .iter()
        .flat_map(|s| &s.attempts)
        .filter(|a| !a.request_id.is_empty())
        .count();
    let settle_until = Instant::now() + JOIN_SETTLE;
    let first_lines_until = Instant::now() + FIRST_LINES;
    let join = |index: &_| join_perf_log(scenarios, index);
    perf_log::join_settled(log, join, |joined, _| {
        // Zero joins once a Hub has had time to write its lines (it may
        // render and write them a flush interval after the requests end)
        // means tracing is off or the log is another hub's: do not wait.
        let now = Instant::now();
        let none_by_now = joined == 0 && now >= first_lines_until;
        none_by_now || joined >= wanted || now >= settle_until
    })
    .await
}

fn progress_bar(len: u64) -> ProgressBar {
    if !std::io::stderr().is_terminal() {
        return ProgressBar::hidden();
    }
    let bar = ProgressBar::with_draw_target(Some(len), ProgressDrawTarget::stderr());
    if let Ok(style) = ProgressStyle::with_template("{msg:32} [{bar:30}] {pos}/{len} {elapsed}") {
        bar.set_style(style.progress_chars("=> "));
    }
    bar
}

/// A count from a trace map: the sum of the `Store-Calls` values, or the
/// `count=` of `Decisions`.
pub fn trace_count(trace: &PerfTraceMap, header: &str) -> Option<u64> {
    let value = trace.get(header)?;
    if header == header::DECISIONS {
        return value
            .split(',')
            .find_map(|p| p.strip_prefix("count="))
            .and_then(|v| v.parse().ok());
    }
    value
        .split(',')
        .map(|p| p.rsplit_once('=').and_then(|(_, v)| v.parse::<u64>().ok()))
        .sum()
}

/// One scenario's count over its attempts: the value when every attempt
/// agrees, `min..max` when they differ, `-` without trace data.
pub fn count_cell(s: &ScenarioReport, header: &str) -> String {
    let counts = s
        .attempts
        .iter()
        .filter_map(|a| trace_count(a.perf_trace.as_ref()?, header));
    match stats::count_range(counts) {
        Some((lo, hi)) if lo == hi => lo.to_string(),
        Some((lo, hi)) => format!("{lo}..{hi}"),
        None => "-".to_owned(),
    }
}

/// The end-of-run summary: one row per scenario. Counts that differ between
/// attempts show as `min..max`.
pub fn summary_table(report: &Report) -> String {
    table::rows(
        &report.scenarios,
        &[
            ("scenario", &|s: &ScenarioReport| s.name.clone()),
            ("ok", &|s| format!("{}/{}", s.success_count, s.runs)),
            ("median total ms", &|s| table::ms(s.median_total_ms)),
            ("median ttfb ms", &|s| table::ms(s.median_ttfb_ms)),
            ("store calls", &|s| count_cell(s, header::STORE_CALLS)),
            ("decisions", &|s| count_cell(s, header::DECISIONS)),
        ],
    )
}

/// Runs apibench: the scenarios, the optional log join, then writes the
/// report to `--out`, prints the summary and returns the report.
///
/// Errors are one line: a bad `--hub`, an unreadable seed file, and a
/// `--hub-perf-log` that cannot be read (`read hub perf log: ...`, checked
/// before the first request and again at join time) all fail before any
/// report is written. Failed requests do not fail the run; they are recorded.
pub async fn run(args: ApibenchArgs) -> anyhow::Result<Report> {
    let RunInputs { base, loaded } =
        RunInputs::read(&args.hub, &args.seed, args.hub_perf_log.as_deref())?;
    let seed = &loaded.seed;
    let timeout = Duration::from_secs(args.timeout_seconds);
    let RunStart {
        harness,
        machine: mut machine_info,
        http,
        hub_version,
    } = RunStart::now(&base, &args.notes, timeout, 4).await?;

    let plan = scenarios(&base, &seed.project_id);
    let per_scenario = u64::from(args.warmup) + u64::from(args.runs);
    let bar = if args.quiet {
        ProgressBar::hidden()
    } else {
        progress_bar(per_scenario * plan.len() as u64)
    };
    let mut reports = Vec::with_capacity(plan.len());
    for scenario in &plan {
        bar.set_message(scenario.name);
        for _ in 0..args.warmup {
            timed_get(
                &http,
                &scenario.url,
                &seed.member_token,
                args.want_perf_trace,
            )
            .await;
            bar.inc(1);
        }
        let mut attempts = Vec::with_capacity(args.runs as usize);
        for index in 0..args.runs {
            let mut attempt = timed_get(
                &http,
                &scenario.url,
                &seed.member_token,
                args.want_perf_trace,
            )
            .await;
            attempt.index = index;
            attempts.push(attempt);
            bar.inc(1);
        }
        let endpoint = format!("GET {}", path_and_query(&scenario.url));
        reports.push(summarize(
            scenario.name,
            endpoint,
            u64::from(seed.agent_count),
            attempts,
        ));
    }
    bar.finish_and_clear();
    machine::finish(&mut machine_info);

    if let Some(log) = &args.hub_perf_log {
        let (joined, total) = join_with_settle(log, &mut reports).await?;
        if !args.quiet {
            println!("joined {joined} of {total} attempts to hub perf_trace lines");
        }
    }

    let report = Report {
        generated_at: machine::now_rfc3339(),
        harness,
        hub_scion_version: hub_version,
        hub_base_url: args.hub.clone(),
        effective_settings: EffectiveSettings {
            runs: args.runs,
            warmup: args.warmup,
            timeout_seconds: args.timeout_seconds,
            want_perf_trace: args.want_perf_trace,
        },
        seed: loaded.redacted(),
        scenarios: reports,
        machine: machine_info,
    };
    write_json(&args.out, &report)?;
    if !args.quiet {
        print!("{}", summary_table(&report));
        println!("wrote {}", args.out.display());
    }
    Ok(report)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::client;
    use clap::Parser;

    #[derive(Debug, Parser)]
    struct Cli {
        #[command(flatten)]
        args: ApibenchArgs,
    }

    fn attempt(success: bool, total: f64, ttfb: f64) -> Attempt {
        Attempt {
            index: 0,
            status: if success { 200 } else { 0 },
            success,
            error: (!success).then(|| "refused".to_owned()),
            bytes: 10,
            ttfb_ms: ttfb,
            total_ms: total,
            request_id: String::new(),
            perf_trace: None,
            perf_trace_source: None,
        }
    }

    #[test]
    fn flags_and_defaults() {
        let cli = Cli::try_parse_from([
            "apibench", "--hub", "http://h", "--seed", "s.json", "--out", "r.json",
        ])
        .unwrap();
        let a = cli.args;
        assert_eq!((a.runs, a.warmup, a.timeout_seconds), (5, 1, 60));
        assert!(!a.want_perf_trace);
        assert_eq!(a.hub_perf_log, None);
        assert_eq!(a.notes, "");
        let cli = Cli::try_parse_from([
            "apibench",
            "--hub",
            "http://h",
            "--seed",
            "s.json",
            "--runs",
            "3",
            "--warmup",
            "0",
            "--timeout-seconds",
            "120",
            "--want-perf-trace",
            "--hub-perf-log",
            "hub.log",
            "--out",
            "r.json",
            "--notes",
            "idle host",
        ])
        .unwrap();
        let a = cli.args;
        assert_eq!((a.runs, a.warmup, a.timeout_seconds), (3, 0, 120));
        assert!(a.want_perf_trace);
        assert_eq!(a.hub_perf_log.as_deref(), Some(Path::new("hub.log")));
        assert_eq!(a.notes, "idle host");
    }

    #[test]
    fn bad_flags_are_usage_errors() {
        for argv in [
            vec!["apibench", "--seed", "s.json", "--out", "r.json"],
            vec![
                "apibench", "--hub", "h", "--seed", "s", "--out", "r", "--runs", "0",
            ],
            vec![
                "apibench", "--hub", "h", "--seed", "s", "--out", "r", "--runs", "x",
            ],
            vec![
                "apibench", "--hub", "h", "--seed", "s", "--out", "r", "--bogus",
            ],
        ] {
            let e = Cli::try_parse_from(&argv).unwrap_err();
            assert!(e.use_stderr(), "{argv:?}");
            assert_eq!(e.exit_code(), 2, "{argv:?}");
        }
    }

    #[test]
    fn scenario_urls() {
        let base = client::parse_hub_url("http://127.0.0.1:19810").unwrap();
        let s = scenarios(&base, "p-1");
        let got: Vec<(&str, String)> = s.iter().map(|s| (s.name, path_and_query(&s.url))).collect();
        assert_eq!(
            got,
            vec![
                (
                    "project-agents-list",
                    "/api/v1/projects/p-1/agents".to_owned()
                ),
                ("global-agents-list-unscoped", "/api/v1/agents".to_owned()),
                (
                    "global-agents-list-scoped",
                    "/api/v1/agents?projectId=p-1".to_owned()
                ),
            ]
        );
    }

    #[test]
    fn summary_uses_successes_only() {
        let s = summarize(
            "x",
            "GET /".into(),
            25,
            vec![
                attempt(true, 10.0, 2.0),
                attempt(false, 99.0, 0.0),
                attempt(true, 20.0, 4.0),
                attempt(true, 30.0, 6.0),
            ],
        );
        assert_eq!((s.runs, s.success_count, s.failure_count), (4, 3, 1));
        assert_eq!(s.median_total_ms, Some(20.0));
        assert_eq!(s.median_ttfb_ms, Some(4.0));
        assert_eq!(s.min_total_ms, Some(10.0));
        assert_eq!(s.max_total_ms, Some(30.0));
        assert_eq!(s.stddev_total_ms, Some(8.165));
        assert!(!s.perf_trace_available);

        let none = summarize("x", "GET /".into(), 25, vec![attempt(false, 1.0, 0.0)]);
        assert_eq!(none.median_total_ms, None);
        assert_eq!(none.stddev_total_ms, None);
        let json = serde_json::to_value(&none).unwrap();
        assert_eq!(json["medianTotalMs"], serde_json::Value::Null);
        assert_eq!(json["perfTraceAvailable"], serde_json::json!(false));
        assert_eq!(json["attempts"][0]["error"], serde_json::json!("refused"));
        assert!(json["attempts"][0].get("perfTrace").is_none());
    }

    #[test]
    fn counts_from_traces() {
        let mut t = PerfTraceMap::new();
        t.insert(header::STORE_CALLS.into(), "GetEffectiveGroups=1,GetRoleDefinitionsByIDs=1,GetUser=84,ListAccessConstraints=1,ListRoleBindingsForPrincipals=1".into());
        t.insert(
            header::DECISIONS.into(),
            "count=255,allow=162,deny=93,other=0,audit_us=188".into(),
        );
        assert_eq!(trace_count(&t, header::STORE_CALLS), Some(88));
        assert_eq!(trace_count(&t, header::DECISIONS), Some(255));
        assert_eq!(trace_count(&t, "X-Scion-Perf-Phases"), None);
    }
}
