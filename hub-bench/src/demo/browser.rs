//! The demo's browser table: `hub-bench web` once per view against a fresh
//! 100-agent Hub served with its web client, tracing on and readiness marks
//! on. Skipped with a one-line note when no Chromium is installed.

use std::path::Path;

use anyhow::Context;
use hub_example::seed::{seed_to_file, SeedOptions};

use crate::hubs::{seeded_hub, Tracing, WebHub};

use crate::web::bench::summary_table;
use crate::web::{self, BrowserPaths, BrowserReport, WebArgs};

/// Agents of the browser table's Hub.
pub const BROWSER_AGENTS: u32 = 100;

/// Runs the browser table's benchmark in `out_dir` (`web-100.db`,
/// `web-100.log`, `browser-100.json`); `None` after a one-line note when no
/// browser is installed.
pub async fn run_browser_table(
    out_dir: &Path,
    session_secret: &str,
) -> anyhow::Result<Option<BrowserReport>> {
    if let Err(why) = BrowserPaths::find() {
        println!("browser table skipped: {why}");
        return Ok(None);
    }
    let db = out_dir.join(format!("web-{BROWSER_AGENTS}.db"));
    let seed = out_dir.join(format!("web-seed-{BROWSER_AGENTS}.json"));
    let options = SeedOptions {
        db_path: db.clone(),
        session_secret: session_secret.into(),
        agents: BROWSER_AGENTS,
        project_slug: format!("web-{BROWSER_AGENTS}"),
        rand_seed: 42,
    };
    let seed_out = seed.clone();
    tokio::task::spawn_blocking(move || seed_to_file(&options, &seed_out))
        .await?
        .context("seed the browser table's hub")?;
    let log = out_dir.join(format!("web-{BROWSER_AGENTS}.log"));
    let hub = WebHub::serve(seeded_hub(&db, session_secret, Tracing::On, &log)?).await?;
    hub.set_readiness_marks(true)?;
    let report = web::run(WebArgs {
        hub: hub.url().to_owned(),
        seed,
        out: out_dir.join(format!("browser-{BROWSER_AGENTS}.json")),
        runs: 1,
        page_changes: 1,
        burst_runs: 1,
        burst_count: 15,
        burst_only: false,
        nav_timeout_ms: 120_000,
        populate_timeout_ms: 120_000,
        settle_timeout_ms: 30_000,
        expect_readiness_marks: true,
        hub_perf_log: Some(log),
        notes: "hub-bench demo: one run per view".into(),
        quiet: true,
    })
    .await?;
    print!("{}", summary_table(&report));
    Ok(Some(report))
}
