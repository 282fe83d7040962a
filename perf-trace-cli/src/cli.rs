//! The command line: `perf-trace summary | diff | report`.

use std::io::Write as _;
use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::Context as _;
use clap::builder::RangedU64ValueParser;
use clap::{Args, Parser, Subcommand, ValueEnum};

use crate::aggregate::Limits;
use crate::diff::{self, FailOn};
use crate::scan::{self, Bounds, Counts, Filter};
use crate::suspects::Rule;
use crate::{html, input, output, summary};

/// Reads perf_trace lines (any profile, plain or GCP form, gzip'd or not)
/// from files, glob patterns or standard input.
#[derive(Debug, Parser)]
#[command(
    name = "perf-trace",
    version,
    about,
    after_help = "Exit status: 0 when done (lines skipped or folded by the bounds are \
                  said on standard error), 1 when a diff moved, 2 on an error (a bad \
                  flag, an unreadable log)."
)]
pub struct Cli {
    /// What to do.
    #[command(subcommand)]
    pub command: Command,
}

/// The subcommands.
#[derive(Debug, Subcommand)]
pub enum Command {
    /// Per endpoint class: requests, statuses, elapsed percentiles, phases,
    /// store calls, counters and timers, the slowest requests; then the N+1
    /// suspects.
    ///
    /// A store method's calls per request (`store_<M>_n`) or the SQL
    /// wrapper's `sql_repeated_n` is an N+1 suspect in a class of at least
    /// --n1-min-requests requests when its p95 is at least --n1-p95, or when
    /// it grows with the response: its Spearman rank correlation with the
    /// response's size (see --n1-size) is at least --n1-rho and it reaches 3
    /// at p95. Each suspect is listed with its p50 / p95 / max, the
    /// correlation and the reasons.
    Summary(SummaryArgs),
    /// What moved between two logs of the same workload; exits 1 when a
    /// key named by --fail-on moved.
    Diff(DiffArgs),
    /// One self-contained HTML page of the logs, N+1 suspects marked per
    /// class (the rule is `summary`'s).
    Report(ReportArgs),
}

/// Which lines count (shared by every subcommand).
#[derive(Debug, Args, Clone, Default)]
pub struct FilterArgs {
    /// Only these endpoint classes (glob patterns, e.g. 'agents.*'; repeatable).
    #[arg(long = "endpoint", value_name = "CLASS")]
    pub endpoints: Vec<String>,
    /// Only lines whose `time` is at or after this (2026-01-01T10:00:00Z, or a date).
    #[arg(long, value_name = "TIME")]
    pub since: Option<String>,
    /// Only lines whose `time` is before this.
    #[arg(long, value_name = "TIME")]
    pub until: Option<String>,
    /// The slowest requests listed per class.
    #[arg(long, value_name = "N", default_value_t = 5)]
    pub top: usize,
    /// Lines longer than this are skipped unread and counted (a gzip bomb
    /// of zeros is one such line).
    #[arg(long, value_name = "BYTES", default_value_t = input::DEFAULT_MAX_LINE,
          value_parser = RangedU64ValueParser::<usize>::new().range(1..=1 << 30),
          help_heading = "Bounds")]
    pub max_line_bytes: usize,
    /// Endpoint classes held; lines of further classes are read as the
    /// class `(other)`.
    #[arg(long, value_name = "N", default_value_t = Limits::default().classes,
          value_parser = RangedU64ValueParser::<usize>::new().range(1..),
          help_heading = "Bounds")]
    pub max_classes: usize,
    /// Keys (figure names) held over every class; figures of further keys
    /// are added to their class's `(other)` / `(other)_us`.
    #[arg(long, value_name = "N", default_value_t = Limits::default().keys,
          help_heading = "Bounds")]
    pub max_keys: usize,
}

impl FilterArgs {
    fn filter(&self) -> anyhow::Result<Filter> {
        let endpoints = self
            .endpoints
            .iter()
            .map(|p| glob::Pattern::new(p).with_context(|| format!("--endpoint {p}")))
            .collect::<anyhow::Result<_>>()?;
        let time = |t: &Option<String>| t.as_deref().map(scan::parse_time).transpose();
        Ok(Filter {
            endpoints,
            since: time(&self.since)?,
            until: time(&self.until)?,
        })
    }

    fn bounds(&self) -> Bounds {
        Bounds {
            max_line: self.max_line_bytes,
            limits: Limits {
                classes: self.max_classes,
                keys: self.max_keys,
                ..Limits::default()
            },
        }
    }
}

/// How `summary` writes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum Format {
    /// Text tables.
    Table,
    /// One JSON document.
    Json,
    /// `endpoint,section,key,stat,value` rows.
    Csv,
}

/// How N+1 suspects are found (`summary` and `report`).
#[derive(Debug, Args, Clone)]
#[command(next_help_heading = "N+1 suspects")]
pub struct SuspectArgs {
    /// Requests a class needs before its counts are judged.
    #[arg(long = "n1-min-requests", value_name = "N", default_value_t = Rule::default().min_requests)]
    pub min_requests: u64,
    /// A store method's calls (`store_<M>_n`) or `sql_repeated_n` at least
    /// this high at p95 per request make a suspect.
    #[arg(long = "n1-p95", value_name = "CALLS", default_value_t = Rule::default().p95)]
    pub p95: u64,
    /// So does a Spearman rank correlation with the response's size of at
    /// least this (-1 to 1), over a sample of 256 requests per class, when
    /// the count reaches 3 at p95.
    #[arg(long = "n1-rho", value_name = "RHO", default_value_t = Rule::default().rho,
          value_parser = rho)]
    pub rho: f64,
    /// The count field that stands for the response's size; by default the
    /// first of `response_bytes`, another `..bytes`, then `..rows` /
    /// `..items` (each also with `_n`) that the class's lines carry.
    #[arg(long = "n1-size", value_name = "KEY")]
    pub size_key: Option<String>,
}

fn rho(text: &str) -> Result<f64, String> {
    let value: f64 = text.parse().map_err(|e| format!("{e}"))?;
    if (-1.0..=1.0).contains(&value) {
        Ok(value)
    } else {
        Err(format!("{value} is not between -1 and 1"))
    }
}

impl SuspectArgs {
    fn rule(&self) -> Rule {
        Rule {
            min_requests: self.min_requests,
            p95: self.p95,
            rho: self.rho,
            size_key: self.size_key.clone(),
        }
    }
}

/// `perf-trace summary`.
#[derive(Debug, Args)]
pub struct SummaryArgs {
    /// Log files or glob patterns; `-` or none: standard input.
    #[arg(value_name = "LOG")]
    pub logs: Vec<String>,
    /// Output format.
    #[arg(long, value_enum, default_value_t = Format::Table)]
    pub format: Format,
    /// Which lines count.
    #[command(flatten)]
    pub filter: FilterArgs,
    /// How N+1 suspects are found.
    #[command(flatten)]
    pub suspects: SuspectArgs,
}

/// `perf-trace diff`.
#[derive(Debug, Args)]
pub struct DiffArgs {
    /// The earlier log (file, gzip'd file, glob pattern, or `-`).
    pub before: String,
    /// The later log.
    pub after: String,
    /// What fails the diff: `counts`, `time:<n>%`, or both joined by `,`.
    #[arg(long, value_name = "WHAT", default_value = "counts")]
    pub fail_on: FailOn,
    /// Keys left out of the comparison (glob patterns, e.g. 'db_*' for
    /// pool-wide figures that move with concurrency; repeatable).
    #[arg(long, value_name = "KEY")]
    pub ignore: Vec<String>,
    /// Write the comparison as JSON instead of text.
    #[arg(long)]
    pub json: bool,
    /// Also write the two logs side by side as an HTML page here.
    #[arg(long, value_name = "FILE")]
    pub html: Option<PathBuf>,
    /// Which lines count.
    #[command(flatten)]
    pub filter: FilterArgs,
}

/// `perf-trace report`.
#[derive(Debug, Args)]
pub struct ReportArgs {
    /// Log files or glob patterns; `-` or none: standard input.
    #[arg(value_name = "LOG")]
    pub logs: Vec<String>,
    /// Where to write the page.
    #[arg(short, long, value_name = "FILE", default_value = "report.html")]
    pub output: PathBuf,
    /// Which lines count.
    #[command(flatten)]
    pub filter: FilterArgs,
    /// How N+1 suspects are found.
    #[command(flatten)]
    pub suspects: SuspectArgs,
}

/// Says once on standard error what was skipped or folded.
fn notes(counts: &Counts, bounds: &Bounds) {
    let mut err = std::io::stderr().lock();
    let notes = [counts.malformed_note(), counts.without_time_note()]
        .into_iter()
        .flatten()
        .chain(counts.bound_notes(bounds));
    for note in notes {
        let _ = writeln!(err, "perf-trace: {note}");
    }
    if counts.perf_lines == 0 {
        let _ = writeln!(
            err,
            "perf-trace: no perf_trace line in {} lines read",
            counts.lines
        );
    }
}

fn read(
    logs: &[String],
    filter: &FilterArgs,
) -> anyhow::Result<(crate::aggregate::Aggregate, Counts)> {
    let sources = input::sources(logs)?;
    let bounds = filter.bounds();
    let read = scan::read(&sources, &filter.filter()?, filter.top, &bounds)?;
    notes(&read.1, &bounds);
    Ok(read)
}

fn write_file(path: &PathBuf, text: &str) -> anyhow::Result<()> {
    std::fs::write(path, text).with_context(|| format!("write {}", path.display()))?;
    let _ = writeln!(std::io::stderr(), "perf-trace: wrote {}", path.display());
    Ok(())
}

fn summary(args: &SummaryArgs) -> anyhow::Result<ExitCode> {
    let (agg, counts) = read(&args.logs, &args.filter)?;
    let summary = summary::summarize(&agg, counts, &args.suspects.rule());
    let mut out = std::io::stdout().lock();
    match args.format {
        Format::Table => output::write_table(&mut out, &summary, args.filter.top)?,
        Format::Json => output::write_json(&mut out, &summary)?,
        Format::Csv => output::write_csv(&mut out, &summary)?,
    }
    out.flush()?;
    Ok(ExitCode::SUCCESS)
}

fn diff(args: &DiffArgs) -> anyhow::Result<ExitCode> {
    if args.before == "-" && args.after == "-" {
        anyhow::bail!("only one of BEFORE and AFTER can be standard input");
    }
    let before = read(std::slice::from_ref(&args.before), &args.filter)?;
    let after = read(std::slice::from_ref(&args.after), &args.filter)?;
    let ignore: Vec<glob::Pattern> = args
        .ignore
        .iter()
        .map(|p| glob::Pattern::new(p).with_context(|| format!("--ignore {p}")))
        .collect::<anyhow::Result<_>>()?;
    let d = diff::diff(&before.0, &after.0, args.fail_on, &ignore);
    let mut out = std::io::stdout().lock();
    if args.json {
        serde_json::to_writer_pretty(&mut out, &d)?;
        writeln!(out)?;
    } else {
        diff::write_text(&mut out, &d)?;
    }
    out.flush()?;
    if let Some(path) = &args.html {
        let page = html::diff_page(
            [&args.before, &args.after],
            [(&before.0, &before.1), (&after.0, &after.1)],
            &d,
        );
        write_file(path, &page)?;
    }
    if d.failures.is_empty() {
        return Ok(ExitCode::SUCCESS);
    }
    let mut err = std::io::stderr().lock();
    writeln!(err, "perf-trace: {} key(s) moved:", d.failures.len())?;
    for failure in &d.failures {
        writeln!(err, "  {failure}")?;
    }
    Ok(ExitCode::from(1))
}

fn report(args: &ReportArgs) -> anyhow::Result<ExitCode> {
    let (agg, counts) = read(&args.logs, &args.filter)?;
    let names = if args.logs.is_empty() {
        "<stdin>".to_owned()
    } else {
        args.logs.join(" ")
    };
    let page = html::report_page(&names, &agg, &counts, &args.suspects.rule());
    write_file(&args.output, &page)?;
    Ok(ExitCode::SUCCESS)
}

/// Runs a parsed command line: 0 when done, 1 when a diff moved, 2 on an
/// error (said on standard error).
pub fn run(cli: &Cli) -> ExitCode {
    let result = match &cli.command {
        Command::Summary(args) => summary(args),
        Command::Diff(args) => diff(args),
        Command::Report(args) => report(args),
    };
    result.unwrap_or_else(|e| {
        let _ = writeln!(std::io::stderr(), "perf-trace: {e:#}");
        ExitCode::from(2)
    })
}
