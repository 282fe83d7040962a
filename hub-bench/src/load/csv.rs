//! `load --csv DIR`: the per-endpoint figures of a run as CSV, one row per
//! endpoint and an `all` row, named after the JSON report
//! (`load-on.json` gives `DIR/load-on.csv`); and beside it the figures per
//! Hub, one row per `--hub` URL with its process's CPU and RSS
//! (`DIR/load-on-hubs.csv`).

use std::path::{Path, PathBuf};

use anyhow::Context as _;

use super::hub_process::HubProcessReport;
use crate::report::{LatencySummary, LoadReport, ReplicaLoad};

/// The CSV header.
pub const HEADER: &str = "endpoint,method,path,count,rps,expected_failures,unexpected_failures,abandoned,avg_ms,p50_ms,p75_ms,p90_ms,p95_ms,p99_ms,max_ms";

/// The header of the per-Hub CSV. The process columns are empty when the
/// process was not sampled, and `process_note` says why (or that it exited
/// during the run).
pub const HUBS_HEADER: &str = "hub,users,count,rps,expected_failures,unexpected_failures,abandoned,avg_ms,p50_ms,p75_ms,p90_ms,p95_ms,p99_ms,max_ms,pid,cpu_percent_avg,cpu_percent_max,rss_mib_start,rss_mib_max,rss_mib_end,process_note";

/// Quotes a field when it holds a comma, a quote or a line break (RFC 4180).
fn field(text: &str) -> String {
    if text.contains([',', '"', '\n', '\r']) {
        format!("\"{}\"", text.replace('"', "\"\""))
    } else {
        text.to_owned()
    }
}

fn latency_fields(l: &LatencySummary) -> String {
    [
        l.avg_ms, l.p50_ms, l.p75_ms, l.p90_ms, l.p95_ms, l.p99_ms, l.max_ms,
    ]
    .iter()
    .map(|v| v.map_or_else(String::new, |v| v.to_string()))
    .collect::<Vec<_>>()
    .join(",")
}

/// The report as CSV text.
pub fn to_csv(report: &LoadReport) -> String {
    let mut out = format!("{HEADER}\n");
    for e in &report.endpoints {
        out.push_str(&format!(
            "{},{},{},{},{},{},{},{},{}\n",
            field(&e.name),
            field(&e.method),
            field(&e.path),
            e.latency.count,
            e.rps,
            e.expected_failures,
            e.unexpected_failures,
            e.abandoned,
            latency_fields(&e.latency)
        ));
    }
    out.push_str(&format!(
        "all,,,{},{},{},{},{},{}\n",
        report.overall.count,
        report.rps,
        report.expected_failures,
        report.unexpected_failures,
        report.abandoned_requests,
        latency_fields(&report.overall)
    ));
    out
}

fn process_fields(process: Option<&HubProcessReport>, missing: Option<&str>) -> String {
    let note = match (process, missing) {
        (Some(p), _) if p.exited_during_run => "exited during the run",
        (_, Some(reason)) => reason,
        _ => "",
    };
    let figures = process.map_or_else(
        || ",,,,,".to_owned(),
        |p| {
            format!(
                "{},{},{},{},{},{}",
                p.pid,
                p.cpu_percent_avg,
                p.cpu_percent_max,
                p.rss_mib_start,
                p.rss_mib_max,
                p.rss_mib_end
            )
        },
    );
    format!("{figures},{}", field(note))
}

/// The per-Hub CSV text: one row per replica, or one for the one Hub.
pub fn hubs_csv(report: &LoadReport) -> String {
    let mut out = format!("{HUBS_HEADER}\n");
    let one_hub;
    let hubs = if report.replicas.is_empty() {
        one_hub = [the_one_hub(report)];
        &one_hub[..]
    } else {
        &report.replicas[..]
    };
    for r in hubs {
        out.push_str(&format!(
            "{},{},{},{},{},{},{},{},{}\n",
            field(&r.hub_base_url),
            r.users_started,
            r.latency.count,
            r.rps,
            r.expected_failures,
            r.unexpected_failures,
            r.abandoned_requests,
            latency_fields(&r.latency),
            process_fields(r.hub_process.as_ref(), r.hub_process_missing.as_deref())
        ));
    }
    out
}

/// The one Hub of a run without replicas, as a replica's figures.
fn the_one_hub(report: &LoadReport) -> ReplicaLoad {
    ReplicaLoad {
        hub_base_url: report.hub_base_url.clone(),
        users_started: report.users_started,
        total_requests: report.overall.count,
        rps: report.rps,
        expected_failures: report.expected_failures,
        unexpected_failures: report.unexpected_failures,
        abandoned_requests: report.abandoned_requests,
        latency: report.overall.clone(),
        hub_process: report.hub_process.clone(),
        hub_process_missing: report.hub_process_missing.clone(),
        cache: None,
        audit: None,
    }
}

fn stem(json: &Path) -> String {
    json.file_stem()
        .map_or_else(|| "load".into(), |s| s.to_string_lossy().into_owned())
}

/// Where the per-endpoint CSV of the report written to `json` goes in `dir`.
pub fn csv_path(dir: &Path, json: &Path) -> PathBuf {
    dir.join(format!("{}.csv", stem(json)))
}

/// Where the per-Hub CSV of the report written to `json` goes in `dir`.
pub fn hubs_csv_path(dir: &Path, json: &Path) -> PathBuf {
    dir.join(format!("{}-hubs.csv", stem(json)))
}

/// Writes both CSV files into `dir` (created when missing) and returns
/// their paths, per endpoint first.
pub fn write_csv(dir: &Path, json: &Path, report: &LoadReport) -> anyhow::Result<Vec<PathBuf>> {
    std::fs::create_dir_all(dir).with_context(|| format!("--csv: create {}", dir.display()))?;
    let files = [
        (csv_path(dir, json), to_csv(report)),
        (hubs_csv_path(dir, json), hubs_csv(report)),
    ];
    let mut written = Vec::with_capacity(files.len());
    for (path, text) in files {
        std::fs::write(&path, text).with_context(|| format!("--csv: write {}", path.display()))?;
        written.push(path);
    }
    Ok(written)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fields_with_commas_or_quotes_are_quoted() {
        assert_eq!(field("plain"), "plain");
        assert_eq!(field("/a?x=1,2"), "\"/a?x=1,2\"");
        assert_eq!(field("say \"hi\""), "\"say \"\"hi\"\"\"");
    }

    #[test]
    fn the_csv_is_named_after_the_json() {
        assert_eq!(
            csv_path(Path::new("out"), Path::new("/tmp/runs/load-on.json")),
            Path::new("out/load-on.csv")
        );
        assert_eq!(
            hubs_csv_path(Path::new("out"), Path::new("/tmp/runs/load-on.json")),
            Path::new("out/load-on-hubs.csv")
        );
    }
}
