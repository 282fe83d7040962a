//! Reporting: the run's report written as JSON to `--out` and printed as
//! tables (per endpoint, the Hub's side, per replica), then `--csv`
//! ([`super::csv`]) and `--compare` ([`super::compare`]).

use std::path::Path;

use super::hub_state::CacheRoute;
use super::{compare, csv};
use crate::report::{write_json, LatencySummary, LoadReport};
use crate::table::{self, Table};

/// Writes `report` to `out` and prints it: its tables, where it went, the
/// CSV files (with `--csv DIR`), and the comparison with `before` (with
/// `--compare`).
pub(super) fn write_and_print(
    report: &LoadReport,
    out: &Path,
    csv_dir: Option<&Path>,
    before: Option<&LoadReport>,
) -> anyhow::Result<()> {
    write_json(out, report)?;
    print!("{}", load_table(report));
    if !report.replicas.is_empty() {
        print!("{}", replica_table(report));
    }
    println!("wrote {}", out.display());
    if let Some(dir) = csv_dir {
        for path in csv::write_csv(dir, out, report)? {
            println!("wrote {}", path.display());
        }
    }
    if let Some(before) = before {
        print!("\n{}", compare::compare(before, report));
    }
    Ok(())
}

/// The columns every figures row shares, after its first (its name).
const FIGURE_COLUMNS: [&str; 11] = [
    "count",
    "rps",
    "exp fail",
    "unexp fail",
    "avg ms",
    "p50 ms",
    "p75 ms",
    "p90 ms",
    "p95 ms",
    "p99 ms",
    "max ms",
];

/// A table whose columns are `first`, the figures, then `last`.
fn figures_table(first: &[&str], last: &[&str]) -> Table {
    Table::new(first.iter().chain(&FIGURE_COLUMNS).chain(last).copied())
}

/// The cells under [`FIGURE_COLUMNS`].
fn figure_cells(
    latency: &LatencySummary,
    rps: f64,
    expected_failures: u64,
    unexpected_failures: u64,
) -> Vec<String> {
    let mut row = vec![
        latency.count.to_string(),
        format!("{rps:.1}"),
        expected_failures.to_string(),
        unexpected_failures.to_string(),
    ];
    row.extend(
        [
            latency.avg_ms,
            latency.p50_ms,
            latency.p75_ms,
            latency.p90_ms,
            latency.p95_ms,
            latency.p99_ms,
            latency.max_ms,
        ]
        .map(table::ms),
    );
    row
}

/// The per-replica table of a run over several replicas: its users'
/// figures, then its process's CPU (average and peak, 100% = one core) and
/// RSS (peak); below it, why a replica's process has no figures, or that it
/// was gone before the end.
pub fn replica_table(report: &LoadReport) -> String {
    let mut t = figures_table(
        &["replica", "users"],
        &["pid", "cpu avg %", "cpu max %", "rss max MiB"],
    );
    let mut notes = String::new();
    for r in &report.replicas {
        let mut row = vec![r.hub_base_url.clone(), r.users_started.to_string()];
        row.extend(figure_cells(
            &r.latency,
            r.rps,
            r.expected_failures,
            r.unexpected_failures,
        ));
        match &r.hub_process {
            Some(p) => {
                row.extend([
                    p.pid.to_string(),
                    format!("{:.1}", p.cpu_percent_avg),
                    format!("{:.1}", p.cpu_percent_max),
                    format!("{:.1}", p.rss_mib_max),
                ]);
                if p.exited_during_run {
                    notes.push_str(&format!(
                        "{}: process {} exited during the run\n",
                        r.hub_base_url, p.pid
                    ));
                }
            }
            None => row.extend(["-", "-", "-", "-"].map(str::to_owned)),
        }
        if let Some(reason) = &r.hub_process_missing {
            notes.push_str(&format!(
                "{}: process not sampled: {reason}\n",
                r.hub_base_url
            ));
        }
        t.row(row);
    }
    format!("per replica:\n{}{notes}", t.render())
}

/// The report as a table: a headline, then one row per endpoint and a total row.
pub fn load_table(report: &LoadReport) -> String {
    let mut t = figures_table(&["endpoint"], &[]);
    for e in &report.endpoints {
        let mut row = vec![e.name.clone()];
        row.extend(figure_cells(
            &e.latency,
            e.rps,
            e.expected_failures,
            e.unexpected_failures,
        ));
        t.row(row);
    }
    let mut row = vec!["all".to_owned()];
    row.extend(figure_cells(
        &report.overall,
        report.rps,
        report.expected_failures,
        report.unexpected_failures,
    ));
    t.row(row);
    format!(
        "{} users ({} started), {:.1}s: {} requests, {:.1} rps, {} expected failures, {} unexpected failures, {} abandoned\n{}{}",
        report.users,
        report.users_started,
        report.duration_seconds,
        report.total_requests,
        report.rps,
        report.expected_failures,
        report.unexpected_failures,
        report.abandoned_requests,
        t.render(),
        hub_tables(report)
    )
}

/// The Hub's side of the run: its process (and the load client's own, to
/// set it against), its cache per route, its audit health; each line only
/// when the report has it.
pub fn hub_tables(report: &LoadReport) -> String {
    let mut out = process_lines(report);
    out.push_str(&cache_lines(report));
    match &report.audit {
        Some(a) => out.push_str(&format!(
            "audit ({}, {}): accepted {}, flushed {}, rejected {}, failed flushes {}, queue {}\n",
            a.backend, a.status, a.accepted, a.flushed, a.rejected, a.failed_flushes, a.queue_size
        )),
        None if report.cache.is_some() => out.push_str("audit health unavailable\n"),
        None => {}
    }
    if report.replicas.len() > 1 {
        out.push_str("(cache and audit above: every replica's added up)\n");
    }
    for (i, r) in report.replicas.iter().enumerate() {
        let cache = match &r.cache {
            Some(c) if c.available => {
                let (hits, answers) = c.routes.iter().fold((0, 0), |(h, n), route| {
                    (h + route.hits, n + route.hits + route.misses + route.shared)
                });
                format!("cache {hits} hits of {answers} answers")
            }
            Some(_) => "cache table unavailable".to_owned(),
            None => continue,
        };
        let audit = r
            .audit
            .as_ref()
            .map_or("audit health unavailable".to_owned(), |a| {
                format!("audit {}, rejected {}", a.status, a.rejected)
            });
        out.push_str(&format!(
            "replica {} ({}): {cache}; {audit}\n",
            i + 1,
            r.hub_base_url
        ));
    }
    out
}

/// The Hub's process (CPU, RSS, threads by name), or why it was not
/// sampled, and the load client's own.
fn process_lines(report: &LoadReport) -> String {
    let mut out = String::new();
    if let Some(p) = &report.hub_process {
        out.push_str(&format!(
            "hub process {} (found by {}): CPU {:.1}% avg ({:.1}% in the kernel), {:.1}% max (100% = one core); RSS {:.1} MiB at start, {:.1} MiB max, {:.1} MiB at end{}\n",
            p.pid, p.found_by, p.cpu_percent_avg, p.system_percent_avg, p.cpu_percent_max, p.rss_mib_start, p.rss_mib_max, p.rss_mib_end,
            if p.exited_during_run { "; exited during the run" } else { "" }
        ));
        let threads: Vec<String> = p
            .threads
            .iter()
            .filter(|t| t.cpu_percent_avg > 0.0)
            .map(|t| {
                format!(
                    "{} x{} {:.1}% ({:.1}% kernel)",
                    t.name, t.threads, t.cpu_percent_avg, t.system_percent_avg
                )
            })
            .collect();
        if !threads.is_empty() {
            out.push_str(&format!("hub threads by name: {}\n", threads.join(", ")));
        }
    }
    if let Some(reason) = &report.hub_process_missing {
        out.push_str(&format!("hub process not sampled: {reason}\n"));
    }
    if let Some(p) = &report.load_process {
        out.push_str(&format!(
            "load client process {}: CPU {:.1}% avg, {:.1}% max; RSS {:.1} MiB max\n",
            p.pid, p.cpu_percent_avg, p.cpu_percent_max, p.rss_mib_max
        ));
    }
    out
}

/// The cache table per route, or why it is unavailable.
fn cache_lines(report: &LoadReport) -> String {
    let mut out = String::new();
    match &report.cache {
        Some(cache) if cache.available => {
            let t = table::rows(
                &cache.routes,
                &[
                    ("cached route", &|r: &CacheRoute| r.route.clone()),
                    ("ttl ms", &|r| r.ttl_ms.to_string()),
                    ("hits", &|r| r.hits.to_string()),
                    ("misses", &|r| r.misses.to_string()),
                    ("shared in-flight", &|r| r.shared.to_string()),
                    ("hit rate", &|r| format!("{:.1}%", r.hit_rate * 100.0)),
                ],
            );
            let state = if cache.enabled { "on" } else { "off" };
            out.push_str(&format!("cache ({state}):\n{t}"));
        }
        Some(cache) => out.push_str(&format!(
            "cache table unavailable: {}\n",
            cache
                .unavailable_reason
                .as_deref()
                .unwrap_or("no reason given")
        )),
        None => {}
    }
    out
}
