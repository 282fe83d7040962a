//! `load --csv DIR`: the per-endpoint figures of a run as CSV, one row per
//! endpoint and an `all` row, named after the JSON report
//! (`load-on.json` gives `DIR/load-on.csv`).

use std::path::{Path, PathBuf};

use anyhow::Context as _;

use crate::report::{LatencySummary, LoadReport};

/// The CSV header.
pub const HEADER: &str = "endpoint,method,path,count,rps,expected_failures,unexpected_failures,abandoned,avg_ms,p50_ms,p75_ms,p90_ms,p95_ms,p99_ms,max_ms";

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

/// Where the CSV of the report written to `json` goes in `dir`.
pub fn csv_path(dir: &Path, json: &Path) -> PathBuf {
    let stem = json
        .file_stem()
        .map_or_else(|| "load".into(), |s| s.to_string_lossy().into_owned());
    dir.join(format!("{stem}.csv"))
}

/// Writes the CSV into `dir` (created when missing) and returns its path.
pub fn write_csv(dir: &Path, json: &Path, report: &LoadReport) -> anyhow::Result<PathBuf> {
    std::fs::create_dir_all(dir).with_context(|| format!("--csv: create {}", dir.display()))?;
    let path = csv_path(dir, json);
    std::fs::write(&path, to_csv(report))
        .with_context(|| format!("--csv: write {}", path.display()))?;
    Ok(path)
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
    }
}
