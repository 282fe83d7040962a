//! The demo (`cargo run --release -p hub-bench`): seeds fresh Hubs at
//! several sizes, serves each traced and untraced, runs apibench against the
//! traced one with its log joined, measures the tracing on/off latency ratio
//! with the same requests on the same data, and prints one table; then its
//! browser table ([`browser`]). The Hubs are served by [`crate::hubs`].

use std::io::IsTerminal;
use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use anyhow::Context as _;
use clap::Args;
use hub_example::app::RunningHub;
use hub_example::seed::{seed_to_file, SeedDocument, SeedOptions};
use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};
use perf_trace_core::line::scion::header;

use crate::apibench::{self, count_cell, scenarios, timed_get, ApibenchArgs};
use crate::hubs::{start_hub, Tracing};
use crate::report::Report;
use crate::table::{self, ms};
use crate::{client, stats};

pub mod browser;

const SESSION_SECRET: &str = "demo-session-secret";

/// `hub-bench demo` (also what runs with no subcommand).
#[derive(Debug, Clone, Args)]
pub struct DemoArgs {
    /// Agent counts to seed, one Hub each.
    #[arg(long, value_delimiter = ',', default_values_t = [25u32, 100, 500],
          value_parser = clap::value_parser!(u32).range(1..=100_000))]
    pub sizes: Vec<u32>,
    /// Timed apibench attempts per scenario (after one warm-up).
    #[arg(long, default_value_t = 5, value_parser = clap::value_parser!(u32).range(1..=1000))]
    pub runs: u32,
    /// Requests per scenario and side in the tracing on/off comparison.
    #[arg(long, default_value_t = 200, value_parser = clap::value_parser!(u32).range(1..=10_000))]
    pub compare_rounds: u32,
    /// Folder for the databases, logs and reports (default: a new folder
    /// under the system's temporary folder). Kept after the run.
    #[arg(long, value_name = "DIR")]
    pub out_dir: Option<PathBuf>,
}

impl Default for DemoArgs {
    fn default() -> Self {
        DemoArgs {
            sizes: vec![25, 100, 500],
            runs: 5,
            compare_rounds: 200,
            out_dir: None,
        }
    }
}

/// One scenario at one size.
#[derive(Debug, Clone, PartialEq)]
pub struct DemoRow {
    /// The apibench scenario.
    pub scenario: String,
    /// Agents in the seeded project.
    pub agents: u32,
    /// Median total time of the traced apibench attempts.
    pub median_ms: Option<f64>,
    /// Authorization store calls per attempt (`a..b` when attempts differ).
    pub store_calls: String,
    /// Decisions per attempt (`a..b` when attempts differ).
    pub decisions: String,
    /// Median traced / median untraced, same requests, interleaved.
    pub on_off_ratio: Option<f64>,
}

/// What the demo measured, and where it left its files.
#[derive(Debug, Clone)]
pub struct DemoOutcome {
    /// Every scenario at every size.
    pub rows: Vec<DemoRow>,
    /// The folder with the databases, logs and reports.
    pub out_dir: PathBuf,
}

impl DemoOutcome {
    /// Whether each scenario made the same store calls at every size.
    pub fn store_calls_flat(&self) -> bool {
        let mut by_scenario: std::collections::BTreeMap<&str, Vec<&str>> = Default::default();
        for row in &self.rows {
            by_scenario
                .entry(&row.scenario)
                .or_default()
                .push(&row.store_calls);
        }
        by_scenario.values().all(|calls| {
            calls
                .iter()
                .all(|c| *c == calls[0] && !c.contains("..") && *c != "-")
        })
    }

    /// The table printed at the end.
    pub fn table(&self) -> String {
        table::rows(
            &self.rows,
            &[
                ("scenario", &|r: &DemoRow| r.scenario.clone()),
                ("agents", &|r| r.agents.to_string()),
                ("median ms", &|r| ms(r.median_ms)),
                ("store calls", &|r| r.store_calls.clone()),
                ("decisions", &|r| r.decisions.clone()),
                ("on/off", &|r| {
                    r.on_off_ratio.map_or("-".into(), |x| format!("{x:.3}"))
                }),
            ],
        )
    }
}

/// Runs the demo and prints its table.
pub async fn run(args: DemoArgs) -> anyhow::Result<DemoOutcome> {
    let out_dir = match &args.out_dir {
        Some(dir) => dir.clone(),
        None => default_out_dir(),
    };
    std::fs::create_dir_all(&out_dir).with_context(|| format!("create {}", out_dir.display()))?;
    let progress = Progress::new((args.sizes.len() * 4) as u64);
    let mut rows = Vec::new();
    for &agents in &args.sizes {
        rows.extend(run_size(&args, agents, &out_dir, &progress).await?);
    }
    progress.finish();
    let outcome = DemoOutcome { rows, out_dir };
    print!("{}", outcome.table());
    println!(
        "store calls equal at every size: {}",
        if outcome.store_calls_flat() {
            "yes"
        } else {
            "NO"
        }
    );
    println!(
        "on/off: wall-clock latency over HTTP, median traced / median untraced over {} \
         interleaved requests per side (it moves between runs on a busy machine; \
         instructions per request, which repeat: \
         cargo run --release -p hub-bench --example on_off_instructions)",
        args.compare_rounds
    );
    browser::run_browser_table(&outcome.out_dir, SESSION_SECRET).await?;
    println!(
        "databases, hub logs and apibench reports: {}",
        outcome.out_dir.display()
    );
    Ok(outcome)
}

fn default_out_dir() -> PathBuf {
    let stamp = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_secs())
        .unwrap_or_default();
    std::env::temp_dir().join(format!("perf-trace-demo-{stamp}-{}", std::process::id()))
}

async fn run_size(
    args: &DemoArgs,
    agents: u32,
    out_dir: &Path,
    progress: &Progress,
) -> anyhow::Result<Vec<DemoRow>> {
    progress.step(format!("seeding {agents} agents"));
    let db_path = out_dir.join(format!("hub{agents}.db"));
    let seed_path = out_dir.join(format!("seed-{agents}.json"));
    let seed = {
        let options = SeedOptions {
            db_path: db_path.clone(),
            session_secret: SESSION_SECRET.into(),
            agents,
            project_slug: format!("bench-{agents}"),
            rand_seed: 42,
        };
        let out = seed_path.clone();
        tokio::task::spawn_blocking(move || seed_to_file(&options, &out)).await??
    };

    progress.step(format!("serving {agents} agents, traced and untraced"));
    let log_path = out_dir.join(format!("hub{agents}.log"));
    let traced = start_hub(&db_path, SESSION_SECRET, Tracing::On, &log_path).await?;
    let untraced = start_hub(
        &db_path,
        SESSION_SECRET,
        Tracing::Off,
        &out_dir.join(format!("hub{agents}-off.log")),
    )
    .await?;

    progress.step(format!("apibench on {agents} agents"));
    let report_path = out_dir.join(format!("api-{agents}.json"));
    let report = apibench::run(ApibenchArgs {
        hub: traced.url(),
        seed: seed_path,
        runs: args.runs,
        warmup: 1,
        timeout_seconds: 60,
        want_perf_trace: true,
        hub_perf_log: Some(log_path),
        out: report_path,
        notes: "demo: traced and untraced hubs in one process".into(),
        quiet: true,
    })
    .await?;

    progress.step(format!("tracing on/off comparison on {agents} agents"));
    let ratios = on_off_ratios(&traced, &untraced, &seed, args.compare_rounds).await?;
    traced.stop().await?;
    untraced.stop().await?;
    Ok(rows_of(&report, agents, &ratios))
}

fn rows_of(report: &Report, agents: u32, ratios: &[(String, Option<f64>)]) -> Vec<DemoRow> {
    report
        .scenarios
        .iter()
        .map(|s| DemoRow {
            scenario: s.name.clone(),
            agents,
            median_ms: s.median_total_ms,
            store_calls: count_cell(s, header::STORE_CALLS),
            decisions: count_cell(s, header::DECISIONS),
            on_off_ratio: ratios
                .iter()
                .find(|(name, _)| *name == s.name)
                .and_then(|(_, r)| *r),
        })
        .collect()
}

/// The same requests against the traced and the untraced Hub, interleaved
/// (and the order flipped every round) so drift and warm-up hit both alike.
async fn on_off_ratios(
    traced: &RunningHub,
    untraced: &RunningHub,
    seed: &SeedDocument,
    rounds: u32,
) -> anyhow::Result<Vec<(String, Option<f64>)>> {
    let http = client::build_client(Some(Duration::from_secs(60)), 2)?;
    let on_plan = scenarios(&client::parse_hub_url(&traced.url())?, &seed.project_id);
    let off_plan = scenarios(&client::parse_hub_url(&untraced.url())?, &seed.project_id);
    let mut ratios = Vec::new();
    for (on, off) in on_plan.iter().zip(&off_plan) {
        for _ in 0..3 {
            timed_get(&http, &on.url, &seed.member_token, false).await;
            timed_get(&http, &off.url, &seed.member_token, false).await;
        }
        let (mut on_ms, mut off_ms) = (Vec::new(), Vec::new());
        for round in 0..rounds {
            let order = if round % 2 == 0 {
                [true, false]
            } else {
                [false, true]
            };
            for traced_side in order {
                let url = if traced_side { &on.url } else { &off.url };
                let attempt = timed_get(&http, url, &seed.member_token, false).await;
                if attempt.success {
                    if traced_side {
                        on_ms.push(attempt.total_ms);
                    } else {
                        off_ms.push(attempt.total_ms);
                    }
                }
            }
        }
        let ratio = match (stats::median(&on_ms), stats::median(&off_ms)) {
            (Some(a), Some(b)) if b > 0.0 => Some(a / b),
            _ => None,
        };
        ratios.push((on.name.to_owned(), ratio));
    }
    Ok(ratios)
}

/// Progress on standard error: a bar on a terminal, one line per step otherwise.
struct Progress {
    bar: Option<ProgressBar>,
}

impl Progress {
    fn new(steps: u64) -> Self {
        if !std::io::stderr().is_terminal() {
            return Progress { bar: None };
        }
        let bar = ProgressBar::with_draw_target(Some(steps), ProgressDrawTarget::stderr());
        if let Ok(style) = ProgressStyle::with_template("{msg:48} [{bar:30}] {pos}/{len} {elapsed}")
        {
            bar.set_style(style.progress_chars("=> "));
        }
        bar.enable_steady_tick(Duration::from_millis(200));
        Progress { bar: Some(bar) }
    }

    fn step(&self, message: String) {
        match &self.bar {
            Some(bar) => {
                if !bar.message().is_empty() {
                    bar.inc(1);
                }
                bar.set_message(message);
            }
            None => eprintln!("demo: {message}"),
        }
    }

    fn finish(&self) {
        if let Some(bar) = &self.bar {
            bar.finish_and_clear();
        }
    }
}
