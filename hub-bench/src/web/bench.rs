//! `hub-bench web`: the browser benchmark. It signs in as the seeded member
//! in headless Chromium and measures the project page's grid, list and
//! embedded graph, the standalone graph, and how fast a burst of status
//! changes reaches the grid's cards over the event stream.
//!
//! Each scenario runs in a fresh browser (a new profile), so its first run
//! is cold and the others warm. A run is populated when its view showed its
//! first page (the graph: laid out and fitted) within
//! `--populate-timeout-ms`; the readiness marks are read then, before any
//! interaction, and the paged views are then paged `--page-changes` times.

use std::collections::{BTreeMap, HashMap};
use std::path::PathBuf;
use std::time::{Duration, Instant};

use anyhow::{bail, Context};
use clap::Args;
use serde_json::{json, Value};

use super::browser::{Browser, BrowserPaths};
use super::page::{self, View, AGENTS_DATA_MARK};
use super::report::{
    BrowserReport, MsStats, PageRequest, ReadinessMarkStats, WebRun, WebScenarioReport, WebSettings,
};
use crate::client;
use crate::machine;
use crate::perf_log::{self, PerfLine};
use crate::report::write_json;
use crate::run_start::{RunInputs, RunStart};
use crate::seed_file::LoadedSeed;
use crate::stats::round_ms;
use crate::table;

/// How long a run with `--expect-readiness-marks` waits for its two marks.
pub const MARK_WAIT: Duration = Duration::from_secs(3);

/// The flags of `hub-bench web`.
#[derive(Debug, Clone, Args)]
pub struct WebArgs {
    /// Base URL of the hub's web server, e.g. http://127.0.0.1:18080
    #[arg(long, value_name = "URL")]
    pub hub: String,
    /// The seed JSON written by `seed` (project id, member and owner tokens)
    #[arg(long, value_name = "SEED.json")]
    pub seed: PathBuf,
    /// Where to write the JSON report
    #[arg(long, value_name = "browser.json")]
    pub out: PathBuf,
    /// Runs per view scenario (the first cold, the others warm)
    #[arg(long, default_value_t = 5, value_parser = clap::value_parser!(u32).range(1..=1_000))]
    pub runs: u32,
    /// Next-page clicks per run of the grid and list
    #[arg(long, default_value_t = 3, value_parser = clap::value_parser!(u32).range(0..=1_000))]
    pub page_changes: u32,
    /// Runs of the SSE burst scenario
    #[arg(long, default_value_t = 3, value_parser = clap::value_parser!(u32).range(0..=1_000))]
    pub burst_runs: u32,
    /// Status changes per burst, on agents of the grid's first page
    #[arg(long, default_value_t = 15, value_parser = clap::value_parser!(u32).range(1..=500))]
    pub burst_count: u32,
    /// Run only the SSE burst scenario
    #[arg(long)]
    pub burst_only: bool,
    /// Page-load timeout in ms
    #[arg(long, default_value_t = 120_000, value_parser = clap::value_parser!(u64).range(1..=3_600_000))]
    pub nav_timeout_ms: u64,
    /// How long a view may take to show its first page, in ms
    #[arg(long, default_value_t = 120_000, value_parser = clap::value_parser!(u64).range(1..=3_600_000))]
    pub populate_timeout_ms: u64,
    /// How long a page change or a burst may take to show, in ms
    #[arg(long, default_value_t = 30_000, value_parser = clap::value_parser!(u64).range(1..=3_600_000))]
    pub settle_timeout_ms: u64,
    /// The hub's profiling.readiness_marks setting is on: wait for each run's marks
    #[arg(long)]
    pub expect_readiness_marks: bool,
    /// The hub's JSON log: join the page's API requests to their perf_trace lines by request id
    #[arg(long, value_name = "LOG")]
    pub hub_perf_log: Option<PathBuf>,
    /// Free text for the report: anything it cannot capture (e.g. other hubs on the host)
    #[arg(long, value_name = "TEXT", default_value = "")]
    pub notes: String,
    /// Print nothing (for callers with their own output).
    #[arg(skip)]
    pub quiet: bool,
}

/// One view scenario.
#[derive(Debug, Clone)]
struct Scenario {
    name: &'static str,
    view: View,
    path: String,
}

fn scenarios(project_id: &str) -> Vec<Scenario> {
    vec![
        Scenario {
            name: "project-grid",
            view: View::Grid,
            path: page::project_path(project_id, View::Grid),
        },
        Scenario {
            name: "project-list",
            view: View::List,
            path: page::project_path(project_id, View::List),
        },
        Scenario {
            name: "project-graph-embedded",
            view: View::Graph,
            path: page::project_path(project_id, View::Graph),
        },
        Scenario {
            name: "standalone-graph",
            view: View::Graph,
            path: page::standalone_graph_path(project_id),
        },
    ]
}

/// What a run needs besides the browser.
struct Plan<'a> {
    args: &'a WebArgs,
    base: String,
    seed: &'a LoadedSeed,
}

impl Plan<'_> {
    fn url(&self, path: &str) -> String {
        format!("{}{path}", self.base)
    }

    fn populate_timeout(&self) -> Duration {
        Duration::from_millis(self.args.populate_timeout_ms)
    }

    fn settle_timeout(&self) -> Duration {
        Duration::from_millis(self.args.settle_timeout_ms)
    }
}

/// The page's API and event-stream requests in the DevTools events.
fn page_requests(events: &[Value]) -> Vec<PageRequest> {
    let mut methods: HashMap<&str, &str> = HashMap::new();
    let mut out = Vec::new();
    for event in events {
        let params = &event["params"];
        match event["method"].as_str() {
            Some("Network.requestWillBeSent") => {
                if let (Some(id), Some(method)) = (
                    params["requestId"].as_str(),
                    params["request"]["method"].as_str(),
                ) {
                    methods.insert(id, method);
                }
            }
            Some("Network.responseReceived") => {
                let response = &params["response"];
                let Some(url) = response["url"]
                    .as_str()
                    .and_then(|u| url::Url::parse(u).ok())
                else {
                    continue;
                };
                if !(url.path().starts_with("/api/") || url.path() == "/events") {
                    continue;
                }
                let request_id = response["headers"].as_object().and_then(|headers| {
                    headers
                        .iter()
                        .find(|(name, _)| name.eq_ignore_ascii_case("x-request-id"))
                        .and_then(|(_, v)| v.as_str())
                        .map(str::to_owned)
                });
                let method = params["requestId"]
                    .as_str()
                    .and_then(|id| methods.get(id))
                    .unwrap_or(&"GET");
                out.push(PageRequest {
                    method: (*method).to_owned(),
                    path: client::path_and_query(&url),
                    status: response["status"].as_f64().unwrap_or(0.0) as u16,
                    request_id,
                    perf_trace: None,
                    perf_trace_source: None,
                });
            }
            _ => {}
        }
    }
    out
}

/// Reads the run's marks: waits for the scenario's two when they are
/// expected, and checks each detail holds only the view.
async fn read_marks(
    browser: &Browser,
    plan: &Plan<'_>,
    view: View,
    run: &mut WebRun,
) -> anyhow::Result<()> {
    let client = browser.client();
    let marks = if plan.args.expect_readiness_marks {
        page::wait_for_marks(client, &[AGENTS_DATA_MARK, view.rows_mark()], MARK_WAIT).await?
    } else {
        page::readiness_marks(client).await?
    };
    for (name, at, detail) in marks {
        let expected = json!({ "view": view.name() });
        if detail != expected {
            run.error = Some(format!(
                "readiness mark {name} has detail {detail}, not {expected}"
            ));
        }
        run.readiness_marks.entry(name).or_insert(round_ms(at));
    }
    Ok(())
}

/// Pages of the seeded project at the pager's page size.
/// Keeps the populated first page's figures in `run`.
fn first_page(plan: &Plan<'_>, run: &mut WebRun, populated: &page::Populated) {
    run.populated = true;
    run.first_page_ms = Some(round_ms(populated.at_ms));
    run.items = Some(populated.items);
    run.page_size = populated.page_size;
    run.page_count = page_count(plan, populated.page_size);
}

fn page_count(plan: &Plan<'_>, page_size: Option<u32>) -> Option<u32> {
    page_size
        .filter(|size| *size > 0)
        .map(|size| plan.seed.seed.agent_count.div_ceil(size).max(1))
}

async fn view_run(
    browser: &Browser,
    plan: &Plan<'_>,
    scenario: &Scenario,
    run: &mut WebRun,
) -> anyhow::Result<()> {
    let client = browser.client();
    client
        .goto(&plan.url(&scenario.path))
        .await
        .with_context(|| format!("open {}", scenario.path))?;
    let Some(populated) =
        page::wait_populated(client, scenario.view, plan.populate_timeout()).await?
    else {
        bail!(
            "the {} view did not populate within {} ms",
            scenario.view.name(),
            plan.args.populate_timeout_ms
        );
    };
    first_page(plan, run, &populated);
    read_marks(browser, plan, scenario.view, run).await?;
    if scenario.view != View::Graph {
        for _ in 0..plan.args.page_changes {
            match page::next_page(client, scenario.view, plan.settle_timeout()).await? {
                Some(ms) => run.page_change_ms.push(round_ms(ms)),
                None => break,
            }
        }
    }
    Ok(())
}

/// Sends `--burst-count` status changes at once, as the project's owner,
/// from the page itself (so both ends are timed on the page's clock), and
/// times each card's update from the burst's start.
async fn burst_run(browser: &Browser, plan: &Plan<'_>, run: &mut WebRun) -> anyhow::Result<()> {
    let client = browser.client();
    let path = page::project_path(&plan.seed.seed.project_id, View::Grid);
    client
        .goto(&plan.url(&path))
        .await
        .context("open the grid")?;
    let Some(populated) = page::wait_populated(client, View::Grid, plan.populate_timeout()).await?
    else {
        bail!(
            "the grid did not populate within {} ms",
            plan.args.populate_timeout_ms
        );
    };
    first_page(plan, run, &populated);
    read_marks(browser, plan, View::Grid, run).await?;
    let answer = client
        .execute_async(
            r#"
const [count, token, timeoutMs, done] = arguments;
const cards = [...document.querySelectorAll('.agent-card[data-agent-id]')].slice(0, count);
const phaseOf = (card) => card.querySelector('[data-field="phase"]')?.textContent.trim();
const targets = new Map(cards.map((c) => [c.dataset.agentId,
  phaseOf(c) === 'running' ? 'stopped' : 'running']));
const seen = new Map();
const start = performance.now();
const check = () => {
  for (const [id, phase] of targets) {
    if (seen.has(id)) continue;
    const card = document.querySelector(`.agent-card[data-agent-id="${CSS.escape(id)}"]`);
    if (card && phaseOf(card) === phase) seen.set(id, performance.now() - start);
  }
};
const observer = new MutationObserver(check);
observer.observe(document.body, { subtree: true, childList: true, characterData: true });
const statuses = [];
for (const [id, phase] of targets) {
  fetch(`/api/v1/agents/${id}/status`, { method: 'PUT', credentials: 'omit',
    headers: { Authorization: 'Bearer ' + token, 'Content-Type': 'application/json' },
    body: JSON.stringify({ phase }) }).then((r) => statuses.push(r.status), () => statuses.push(0));
}
const until = start + timeoutMs;
const finish = () => {
  check();
  if (seen.size < targets.size && performance.now() < until) return setTimeout(finish, 10);
  observer.disconnect();
  done({ updates: [...targets.keys()].map((id) => seen.get(id) ?? null), statuses });
};
finish();
"#,
            vec![
                json!(plan.args.burst_count),
                json!(plan.seed.seed.owner_token),
                json!(plan.args.settle_timeout_ms),
            ],
        )
        .await
        .context("send the burst")?;
    let updates: Vec<Option<f64>> = serde_json::from_value(answer["updates"].clone())?;
    run.burst_update_ms = updates.into_iter().map(|u| u.map(round_ms)).collect();
    let refused: Vec<&Value> = answer["statuses"]
        .as_array()
        .into_iter()
        .flatten()
        .filter(|s| !matches!(s.as_u64(), Some(200..=299)))
        .collect();
    if !refused.is_empty() {
        bail!("status changes refused by the hub: {refused:?}");
    }
    Ok(())
}

/// Runs one scenario in a fresh browser.
async fn run_scenario(
    paths: &BrowserPaths,
    plan: &Plan<'_>,
    name: &str,
    scenario: Option<&Scenario>,
    runs: u32,
) -> anyhow::Result<Vec<WebRun>> {
    let browser = Browser::launch(paths, Duration::from_millis(plan.args.nav_timeout_ms)).await?;
    let outcome = async {
        page::sign_in(browser.client(), &plan.base, &plan.seed.seed.member_token).await?;
        browser.devtools_events().await?;
        let mut out = Vec::with_capacity(runs as usize);
        for index in 0..runs {
            let mut run = WebRun {
                index,
                cold: index == 0,
                ..WebRun::default()
            };
            let result = match scenario {
                Some(scenario) => view_run(&browser, plan, scenario, &mut run).await,
                None => burst_run(&browser, plan, &mut run).await,
            };
            if let Err(e) = result {
                run.error = Some(format!("{name}: {e:#}"));
            }
            run.api_requests = page_requests(&browser.devtools_events().await?);
            out.push(run);
        }
        anyhow::Ok(out)
    }
    .await;
    browser.close().await;
    outcome
}

/// Summarizes a scenario's runs.
pub fn summarize(
    name: &str,
    view: View,
    path: &str,
    agent_count: u32,
    expect_marks: bool,
    attempts: Vec<WebRun>,
) -> WebScenarioReport {
    let populated: Vec<&WebRun> = attempts.iter().filter(|r| r.populated).collect();
    let first_pages: Vec<f64> = populated.iter().filter_map(|r| r.first_page_ms).collect();
    let changes: Vec<f64> = attempts
        .iter()
        .flat_map(|r| r.page_change_ms.iter().copied())
        .collect();
    let mut marks = ReadinessMarkStats::default();
    let mut samples: [BTreeMap<String, Vec<f64>>; 2] = Default::default();
    for run in &populated {
        let side = &mut samples[usize::from(!run.cold)];
        for (mark, at) in &run.readiness_marks {
            side.entry(mark.clone()).or_default().push(*at);
        }
    }
    let [cold, warm] = samples;
    marks.cold = cold
        .iter()
        .map(|(k, v)| (k.clone(), MsStats::of(v)))
        .collect();
    marks.warm = warm
        .iter()
        .map(|(k, v)| (k.clone(), MsStats::of(v)))
        .collect();
    let wanted = [AGENTS_DATA_MARK, view.rows_mark()];
    let missing = populated
        .iter()
        .filter(|r| wanted.iter().any(|m| !r.readiness_marks.contains_key(*m)))
        .count() as u32;
    let unexpected = populated
        .iter()
        .filter(|r| !r.readiness_marks.is_empty())
        .count() as u32;
    let is_burst = name == "sse-burst";
    let updates: Vec<Option<f64>> = attempts
        .iter()
        .flat_map(|r| r.burst_update_ms.iter().copied())
        .collect();
    let shown: Vec<f64> = updates.iter().flatten().copied().collect();
    WebScenarioReport {
        name: name.to_owned(),
        view: view.name().to_owned(),
        path: path.to_owned(),
        agent_count,
        runs: attempts.len() as u32,
        populated_run_count: populated.len() as u32,
        failure_count: attempts.iter().filter(|r| r.error.is_some()).count() as u32,
        first_page: MsStats::of(&first_pages),
        page_size: populated.iter().find_map(|r| r.page_size),
        page_count: populated.iter().find_map(|r| r.page_count),
        page_change: MsStats::of(&changes),
        burst_update: is_burst.then(|| MsStats::of(&shown)),
        burst_missing_count: is_burst.then(|| (updates.len() - shown.len()) as u32),
        readiness_marks: marks,
        readiness_marks_missing_run_count: if expect_marks { missing } else { 0 },
        readiness_marks_unexpected_run_count: if expect_marks { 0 } else { unexpected },
        perf_trace_available: attempts
            .iter()
            .flat_map(|r| &r.api_requests)
            .any(|q| q.perf_trace.is_some()),
        attempts,
    }
}

/// Joins every page request to its `perf_trace` line; returns (joined, total).
pub fn join_perf_log(
    scenarios: &mut [WebScenarioReport],
    index: &HashMap<String, PerfLine>,
) -> (usize, usize) {
    let (mut joined, mut total) = (0, 0);
    for scenario in scenarios.iter_mut() {
        for request in scenario
            .attempts
            .iter_mut()
            .flat_map(|r| &mut r.api_requests)
        {
            total += 1;
            if let Some(line) = request.request_id.as_ref().and_then(|id| index.get(id)) {
                request.perf_trace = Some(line.header_map());
                request.perf_trace_source = Some("hub-log".into());
                joined += 1;
            }
        }
        scenario.perf_trace_available = scenario
            .attempts
            .iter()
            .flat_map(|r| &r.api_requests)
            .any(|q| q.perf_trace.is_some());
    }
    (joined, total)
}

fn chromium_version(paths: &BrowserPaths) -> String {
    std::process::Command::new(&paths.chromium)
        .arg("--version")
        .output()
        .ok()
        .filter(|o| o.status.success())
        .map(|o| String::from_utf8_lossy(&o.stdout).trim().to_owned())
        .unwrap_or_default()
}

/// The report's summary table.
pub fn summary_table(report: &BrowserReport) -> String {
    let count = |n: Option<u32>| n.map_or("-".into(), |n| n.to_string());
    table::rows(
        &report.scenarios,
        &[
            ("scenario", &|s: &WebScenarioReport| s.name.clone()),
            ("agents", &|s| s.agent_count.to_string()),
            ("populated", &|s| {
                format!("{}/{}", s.populated_run_count, s.runs)
            }),
            ("first page ms", &|s| table::ms(s.first_page.median_ms)),
            ("page size", &|s| count(s.page_size)),
            ("pages", &|s| count(s.page_count)),
            ("page change ms", &|s| table::ms(s.page_change.median_ms)),
            ("burst update ms", &|s| {
                table::ms(s.burst_update.as_ref().and_then(|b| b.median_ms))
            }),
            ("marks missing", &|s| {
                s.readiness_marks_missing_run_count.to_string()
            }),
            ("marks unexpected", &|s| {
                s.readiness_marks_unexpected_run_count.to_string()
            }),
        ],
    )
}

/// Runs the browser benchmark, writes the report to `--out`, prints the
/// summary and returns the report.
///
/// A bad `--hub`, an unreadable seed file or `--hub-perf-log`, a missing
/// browser, or a refused sign-in fail the run before any report is written;
/// a view that does not populate is recorded as a failed run.
pub async fn run(args: WebArgs) -> anyhow::Result<BrowserReport> {
    let RunInputs { base, loaded } =
        RunInputs::read(&args.hub, &args.seed, args.hub_perf_log.as_deref())?;
    let paths = BrowserPaths::find().map_err(anyhow::Error::msg)?;
    let RunStart {
        harness,
        machine: mut machine_info,
        http: _,
        hub_version,
    } = RunStart::now(&base, &args.notes, Duration::from_secs(30), 2).await?;
    let plan = Plan {
        args: &args,
        base: base.as_str().trim_end_matches('/').to_owned(),
        seed: &loaded,
    };
    let agents = loaded.seed.agent_count;
    let mut reports = Vec::new();
    if !args.burst_only {
        for scenario in scenarios(&loaded.seed.project_id) {
            if !args.quiet {
                eprintln!("web: {} ({} runs)", scenario.name, args.runs);
            }
            let runs = run_scenario(&paths, &plan, scenario.name, Some(&scenario), args.runs)
                .await
                .with_context(|| scenario.name)?;
            reports.push(summarize(
                scenario.name,
                scenario.view,
                &scenario.path,
                agents,
                args.expect_readiness_marks,
                runs,
            ));
        }
    }
    if args.burst_runs > 0 {
        if !args.quiet {
            eprintln!("web: sse-burst ({} runs)", args.burst_runs);
        }
        let runs = run_scenario(&paths, &plan, "sse-burst", None, args.burst_runs)
            .await
            .context("sse-burst")?;
        reports.push(summarize(
            "sse-burst",
            View::Grid,
            &page::project_path(&loaded.seed.project_id, View::Grid),
            agents,
            args.expect_readiness_marks,
            runs,
        ));
    }
    machine::finish(&mut machine_info);
    if let Some(log) = &args.hub_perf_log {
        let until = Instant::now() + Duration::from_secs(2);
        let join = |index: &_| join_perf_log(&mut reports, index);
        let (joined, total) = perf_log::join_settled(log, join, |joined, total| {
            joined >= total || joined == 0 || Instant::now() >= until
        })
        .await?;
        if !args.quiet {
            println!("joined {joined} of {total} page requests to hub perf_trace lines");
        }
    }
    let report = BrowserReport {
        generated_at: machine::now_rfc3339(),
        harness,
        hub_scion_version: hub_version,
        hub_base_url: args.hub.clone(),
        browser_version: chromium_version(&paths),
        effective_settings: WebSettings {
            runs: args.runs,
            page_changes: args.page_changes,
            burst_runs: args.burst_runs,
            burst_count: args.burst_count,
            burst_only: args.burst_only,
            nav_timeout_ms: args.nav_timeout_ms,
            populate_timeout_ms: args.populate_timeout_ms,
            settle_timeout_ms: args.settle_timeout_ms,
            expect_readiness_marks: args.expect_readiness_marks,
        },
        seed: loaded.redacted(),
        scenarios: reports,
        machine: machine_info,
    };
    write_json(&args.out, &report)?;
    if !args.quiet {
        print!("{}", summary_table(&report));
    }
    Ok(report)
}
