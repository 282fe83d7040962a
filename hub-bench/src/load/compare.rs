//! `load --compare BEFORE.json`: the run's figures beside an earlier run's,
//! as seed 001's "Overall result" and "Endpoint result" tables, each metric
//! with its change in percent. Over several replicas the Hub's CPU and RSS
//! are the sums over their processes (so one replica compares with two).

use std::path::Path;

use anyhow::Context as _;

use super::hub_process::HubProcessReport;
use crate::report::{LatencySummary, LoadReport};
use crate::table::Table;

/// Reads a report written by an earlier `load --out`.
pub fn read_report(path: &Path) -> anyhow::Result<LoadReport> {
    let text = std::fs::read_to_string(path)
        .with_context(|| format!("--compare: cannot read {}", path.display()))?;
    serde_json::from_str(&text).with_context(|| {
        format!(
            "--compare: {} is not a load report written by `hub-bench load --out`",
            path.display()
        )
    })
}

/// `after` against `before` in percent, signed, one decimal (`+800.0%`);
/// `n/a` when either is missing or `before` is 0.
pub fn change(before: Option<f64>, after: Option<f64>) -> String {
    match (before, after) {
        (Some(b), Some(a)) if b != 0.0 => format!("{:+.1}%", (a - b) / b * 100.0),
        (Some(b), Some(a)) if b == a => "+0.0%".to_owned(),
        _ => "n/a".to_owned(),
    }
}

fn ms(value: Option<f64>) -> String {
    value.map_or_else(|| "-".to_owned(), |v| format!("{v:.1} ms"))
}

fn count(value: Option<f64>) -> String {
    value.map_or_else(|| "-".to_owned(), |v| format!("{v}"))
}

/// Reads one figure of a latency summary.
type Figure = fn(&LatencySummary) -> Option<f64>;

/// The latency metrics compared, with how each is read.
const LATENCIES: [(&str, Figure); 7] = [
    ("Avg latency", |l| l.avg_ms),
    ("p50", |l| l.p50_ms),
    ("p75", |l| l.p75_ms),
    ("p90", |l| l.p90_ms),
    ("p95", |l| l.p95_ms),
    ("p99", |l| l.p99_ms),
    ("Max", |l| l.max_ms),
];

/// The "Overall result" table.
pub fn overall_table(before: &LoadReport, after: &LoadReport) -> String {
    let mut t = Table::new(["Metric", "Before", "After", "Change"]);
    let mut row = |name: &str, b: Option<f64>, a: Option<f64>, show: fn(Option<f64>) -> String| {
        t.row([name.to_owned(), show(b), show(a), change(b, a)]);
    };
    row(
        "Total requests",
        Some(before.total_requests as f64),
        Some(after.total_requests as f64),
        count,
    );
    row("RPS", Some(before.rps), Some(after.rps), count);
    for (name, read) in LATENCIES {
        row(name, read(&before.overall), read(&after.overall), ms);
    }
    row(
        "Unexpected failures",
        Some(before.unexpected_failures as f64),
        Some(after.unexpected_failures as f64),
        count,
    );
    let cpu = |r: &LoadReport| all_hubs(r, |p| p.cpu_percent_avg);
    let rss = |r: &LoadReport| all_hubs(r, |p| p.rss_mib_max);
    row("Hub CPU % (avg)", cpu(before), cpu(after), count);
    row("Hub RSS MiB (max)", rss(before), rss(after), count);
    t.render()
}

/// A Hub process figure summed over every Hub of the run (one, or each
/// replica), rounded to one decimal; `None` unless every one was sampled.
fn all_hubs(report: &LoadReport, figure: fn(&HubProcessReport) -> f64) -> Option<f64> {
    let sum: f64 = report
        .hub_processes()
        .into_iter()
        .map(|p| p.map(figure))
        .sum::<Option<f64>>()?;
    Some((sum * 10.0).round() / 10.0)
}

/// The "Endpoint result" table: per endpoint of either run (matched by
/// name), its RPS and latency percentiles before and after.
pub fn endpoint_table(before: &LoadReport, after: &LoadReport) -> String {
    let mut t = Table::new(["Endpoint", "Metric", "Before", "After", "Change"]);
    let mut names: Vec<&str> = after.endpoints.iter().map(|e| e.name.as_str()).collect();
    for e in &before.endpoints {
        if !names.contains(&e.name.as_str()) {
            names.push(&e.name);
        }
    }
    for name in names {
        let b = before.endpoints.iter().find(|e| e.name == name);
        let a = after.endpoints.iter().find(|e| e.name == name);
        let (b_rps, a_rps) = (b.map(|e| e.rps), a.map(|e| e.rps));
        t.row([
            name.to_owned(),
            "RPS".to_owned(),
            count(b_rps),
            count(a_rps),
            change(b_rps, a_rps),
        ]);
        for (metric, read) in LATENCIES.iter().filter(|(m, _)| m.starts_with('p')) {
            let (bv, av) = (
                b.and_then(|e| read(&e.latency)),
                a.and_then(|e| read(&e.latency)),
            );
            t.row([
                String::new(),
                (*metric).to_owned(),
                ms(bv),
                ms(av),
                change(bv, av),
            ]);
        }
    }
    t.render()
}

/// Both tables with their titles.
pub fn compare(before: &LoadReport, after: &LoadReport) -> String {
    format!(
        "Overall result\n\n{}\nEndpoint result\n\n{}",
        overall_table(before, after),
        endpoint_table(before, after)
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn changes_are_signed_percentages_of_the_before_value() {
        assert_eq!(change(Some(261.6), Some(2355.4)), "+800.4%");
        assert_eq!(change(Some(2405.6), Some(354.7)), "-85.3%");
        assert_eq!(change(Some(0.0), Some(0.0)), "+0.0%");
        assert_eq!(change(Some(0.0), Some(3.0)), "n/a");
        assert_eq!(change(None, Some(3.0)), "n/a");
    }
}
