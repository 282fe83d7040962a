//! `perf-trace diff BEFORE AFTER`: per endpoint class and key, what moved.
//!
//! Counts are compared exactly: a key moved when its smallest, median, 95th
//! percentile or largest value per request differs (absent counts are 0), or
//! when a class is in one log only. Times (`elapsed_us`, every `_us` key)
//! get the ratio of medians with a 95 % bootstrap interval; with
//! `time:<t>%` a time moved when the whole interval lies above `1 + t` or
//! below `1 - t`, and both sides have at least [`MIN_TIMED`] values (a
//! handful of requests says little about a median).

use std::collections::BTreeSet;

use anyhow::{bail, Context as _};
use serde::Serialize;

use crate::aggregate::{Aggregate, ClassAgg, Figure};
use crate::bootstrap::{ratio_of_medians, RatioInterval};
use crate::dist::{CountDist, CountStats, TimeDist, TimeStats};

/// Values each side needs before a time can fail the diff.
pub const MIN_TIMED: u64 = 20;

/// What makes `diff` exit 1.
#[derive(Debug, Clone, Copy, PartialEq, Default, Serialize)]
pub struct FailOn {
    /// Any count that moved.
    pub counts: bool,
    /// Any time whose interval lies beyond this fraction (0.1 for 10 %).
    pub time: Option<f64>,
}

impl std::str::FromStr for FailOn {
    type Err = anyhow::Error;

    /// `counts`, `time:10%`, or both joined by `,`.
    fn from_str(text: &str) -> anyhow::Result<FailOn> {
        let mut out = FailOn::default();
        for part in text.split(',').map(str::trim).filter(|p| !p.is_empty()) {
            if part == "counts" {
                out.counts = true;
            } else if let Some(pct) = part.strip_prefix("time:") {
                let number = pct.strip_suffix('%').unwrap_or(pct);
                let value: f64 = number.parse().with_context(|| {
                    format!("`{part}`: the time threshold is a percentage like time:10%")
                })?;
                if !(value > 0.0 && value < 100.0) {
                    bail!("`{part}`: the time threshold is between 0% and 100%");
                }
                out.time = Some(value / 100.0);
            } else {
                bail!("`{part}`: --fail-on takes `counts` and `time:<n>%`, joined by commas");
            }
        }
        Ok(out)
    }
}

/// One count key of a class on both sides.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct CountDiff {
    /// The field name (`store_GetUser_n`, `store_calls` for the total).
    pub key: String,
    /// Per request before.
    pub before: CountStats,
    /// Per request after.
    pub after: CountStats,
    /// Whether it moved.
    pub moved: bool,
}

/// One time key of a class on both sides.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct TimeDiff {
    /// The field name (`elapsed_us`, `phase_enrich_us`, `store_us` for the total).
    pub key: String,
    /// Before.
    pub before: TimeStats,
    /// After.
    pub after: TimeStats,
    /// The ratio of medians and its interval, when both sides have values.
    pub interval: Option<RatioInterval>,
    /// Whether it moved beyond the `time:` threshold (false without one).
    pub moved: bool,
}

/// One class on both sides.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ClassDiff {
    /// The endpoint class.
    pub endpoint: String,
    /// Requests before.
    pub before_requests: u64,
    /// Requests after.
    pub after_requests: u64,
    /// Count keys.
    pub counts: Vec<CountDiff>,
    /// Time keys.
    pub times: Vec<TimeDiff>,
}

/// The whole comparison.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Diff {
    /// What fails it.
    pub fail_on: FailOn,
    /// Per class, by name.
    pub classes: Vec<ClassDiff>,
    /// One message per key that moved and fails the diff.
    pub failures: Vec<String>,
}

fn counts_of<'a>(class: Option<&'a ClassAgg>, key: &str) -> (Option<&'a CountDist>, u64) {
    let requests = class.map_or(0, |c| c.requests);
    let dist = class.and_then(|c| match key {
        "store_calls" => Some(&c.store_total),
        _ => match c.figures.get(key) {
            Some(Figure::Count(d)) => Some(d),
            _ => None,
        },
    });
    (dist, requests)
}

fn times_of<'a>(class: Option<&'a ClassAgg>, key: &str) -> Option<&'a TimeDist> {
    class.and_then(|c| match key {
        "elapsed_us" => Some(&c.elapsed),
        "store_us" => Some(&c.store_total_us),
        _ => match c.figures.get(key) {
            Some(Figure::Time(d)) => Some(d),
            _ => None,
        },
    })
}

fn keys(class: Option<&ClassAgg>, counts: bool) -> BTreeSet<String> {
    let Some(class) = class else {
        return BTreeSet::new();
    };
    let mut out: BTreeSet<String> = class
        .figures
        .iter()
        .filter(|(_, f)| matches!(f, Figure::Count(_)) == counts)
        .map(|(k, _)| k.clone())
        .collect();
    if counts {
        out.insert("store_calls".to_owned());
    } else {
        out.insert("elapsed_us".to_owned());
        if !class.store_total_us.is_empty() {
            out.insert("store_us".to_owned());
        }
    }
    out
}

fn stats_moved(a: &CountStats, b: &CountStats) -> bool {
    (a.min, a.p50, a.p95, a.max) != (b.min, b.p50, b.p95, b.max)
}

fn diff_class(
    endpoint: &str,
    before: Option<&ClassAgg>,
    after: Option<&ClassAgg>,
    fail_on: FailOn,
    ignore: &[glob::Pattern],
) -> ClassDiff {
    let ignored = |key: &str| ignore.iter().any(|p| p.matches(key));
    let count_keys: BTreeSet<String> = &keys(before, true) | &keys(after, true);
    let counts = count_keys
        .into_iter()
        .filter(|k| !ignored(k))
        .map(|key| {
            let stats = |side| {
                let (dist, requests) = counts_of(side, &key);
                dist.map_or_else(
                    || CountDist::default().stats(requests),
                    |d| d.stats(requests),
                )
            };
            let (b, a) = (stats(before), stats(after));
            let moved = stats_moved(&b, &a);
            CountDiff {
                key,
                before: b,
                after: a,
                moved,
            }
        })
        .collect();
    let time_keys: BTreeSet<String> = &keys(before, false) | &keys(after, false);
    let times = time_keys
        .into_iter()
        .filter(|k| !ignored(k))
        .map(|key| {
            let (b, a) = (times_of(before, &key), times_of(after, &key));
            let interval = match (b, a) {
                (Some(b), Some(a)) => ratio_of_medians(b, a),
                _ => None,
            };
            let enough = [b, a]
                .iter()
                .all(|d| d.is_some_and(|d| d.len() >= MIN_TIMED));
            let moved = match (fail_on.time, interval) {
                (Some(t), Some(r)) if enough => r.low > 1.0 + t || r.high < 1.0 - t,
                _ => false,
            };
            let stats = |d: Option<&TimeDist>| d.map(TimeDist::stats).unwrap_or_default();
            TimeDiff {
                key,
                before: stats(b),
                after: stats(a),
                interval,
                moved,
            }
        })
        .collect();
    ClassDiff {
        endpoint: endpoint.to_owned(),
        before_requests: before.map_or(0, |c| c.requests),
        after_requests: after.map_or(0, |c| c.requests),
        counts,
        times,
    }
}

/// Compares two aggregates class by class; `ignore` patterns leave keys
/// out (`db_*` for pool-wide figures that move with concurrency).
pub fn diff(
    before: &Aggregate,
    after: &Aggregate,
    fail_on: FailOn,
    ignore: &[glob::Pattern],
) -> Diff {
    let names: BTreeSet<&String> = before.classes.keys().chain(after.classes.keys()).collect();
    let classes: Vec<ClassDiff> = names
        .into_iter()
        .map(|name| {
            diff_class(
                name,
                before.classes.get(name),
                after.classes.get(name),
                fail_on,
                ignore,
            )
        })
        .collect();
    let mut failures = Vec::new();
    for class in &classes {
        let e = &class.endpoint;
        if fail_on.counts && (class.before_requests == 0) != (class.after_requests == 0) {
            failures.push(format!(
                "{e}: requests {} -> {} (the class is in one log only)",
                class.before_requests, class.after_requests
            ));
        }
        if fail_on.counts && class.before_requests > 0 && class.after_requests > 0 {
            for c in class.counts.iter().filter(|c| c.moved) {
                failures.push(format!(
                    "{e}: {} per request {}",
                    c.key,
                    count_change(&c.before, &c.after)
                ));
            }
        }
        for t in class.times.iter().filter(|t| t.moved) {
            let r = t.interval.expect("a moved time has an interval");
            failures.push(format!(
                "{e}: {} median {}",
                t.key,
                ratio_text(&t.before, &t.after, &r)
            ));
        }
    }
    Diff {
        fail_on,
        classes,
        failures,
    }
}

/// `p50 13 -> 14, max 13 -> 14`: the percentiles that differ.
pub fn count_change(b: &CountStats, a: &CountStats) -> String {
    let parts: Vec<String> = [
        ("min", b.min, a.min),
        ("p50", b.p50, a.p50),
        ("p95", b.p95, a.p95),
        ("max", b.max, a.max),
    ]
    .into_iter()
    .filter(|(_, x, y)| x != y)
    .map(|(name, x, y)| format!("{name} {x} -> {y}"))
    .collect();
    parts.join(", ")
}

/// `1.20 -> 1.32 ms x1.10 (95% 1.04..1.17)`.
pub fn ratio_text(b: &TimeStats, a: &TimeStats, r: &RatioInterval) -> String {
    format!(
        "{} -> {} ms x{:.2} (95% {:.2}..{:.2})",
        crate::output::ms(b.p50_us),
        crate::output::ms(a.p50_us),
        r.ratio,
        r.low,
        r.high
    )
}

/// The budgets' wording: `measured: <class> key=median ...` over the after
/// log's counts.
pub fn measured_line(class: &ClassDiff) -> String {
    let mut line = format!("measured: {}", class.endpoint);
    for c in &class.counts {
        line.push_str(&format!(" {}={}", c.key, c.after.p50));
    }
    line
}

/// The comparison as text: per class a `measured:` line, the counts that
/// moved and the times whose interval leaves 1.
pub fn write_text(out: &mut impl std::io::Write, d: &Diff) -> std::io::Result<()> {
    for class in &d.classes {
        writeln!(
            out,
            "== {}: {} -> {} requests",
            class.endpoint, class.before_requests, class.after_requests
        )?;
        if class.after_requests > 0 {
            writeln!(out, "{}", measured_line(class))?;
        }
        for c in class.counts.iter().filter(|c| c.moved) {
            writeln!(
                out,
                "  count moved: {} per request {}",
                c.key,
                count_change(&c.before, &c.after)
            )?;
        }
        for t in &class.times {
            let Some(r) = t.interval else { continue };
            if t.key == "elapsed_us" || r.low > 1.0 || r.high < 1.0 {
                let mark = if t.moved { "time moved" } else { "time" };
                writeln!(
                    out,
                    "  {mark}: {} median {}",
                    t.key,
                    ratio_text(&t.before, &t.after, &r)
                )?;
            }
        }
    }
    if d.failures.is_empty() {
        writeln!(out, "nothing moved")?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::line::{parse, Parsed};

    fn aggregate(lines: u64, elapsed_us: u64, store_n: u64) -> Aggregate {
        let mut agg = Aggregate::new(1);
        for i in 0..lines {
            let text = format!(
                r#"{{"msg":"perf_trace","endpoint":"e","elapsed_us":{},"store_Get_n":{store_n}}}"#,
                elapsed_us + i % 7
            );
            let Parsed::Perf(line) = parse(&text) else {
                panic!("{text}")
            };
            agg.add(&line, &text);
        }
        agg
    }

    #[test]
    fn fail_on_parses_counts_and_a_time_threshold() {
        assert_eq!(
            "counts".parse::<FailOn>().unwrap(),
            FailOn {
                counts: true,
                time: None
            }
        );
        let both: FailOn = "counts,time:10%".parse().unwrap();
        assert!(both.counts && (both.time.unwrap() - 0.1).abs() < 1e-12);
        assert_eq!("time:5".parse::<FailOn>().unwrap().time, Some(0.05));
        for bad in ["speed", "time:x%", "time:0%", "time:150%"] {
            assert!(bad.parse::<FailOn>().is_err(), "{bad}");
        }
    }

    #[test]
    fn a_time_fails_only_with_enough_requests_on_both_sides() {
        let fail_on: FailOn = "time:10%".parse().unwrap();
        let few = diff(&aggregate(3, 1000, 1), &aggregate(3, 2000, 1), fail_on, &[]);
        assert!(few.failures.is_empty(), "{:?}", few.failures);
        let many = diff(
            &aggregate(40, 1000, 1),
            &aggregate(40, 2000, 1),
            fail_on,
            &[],
        );
        assert_eq!(many.failures.len(), 1, "{:?}", many.failures);
        assert!(
            many.failures[0].starts_with("e: elapsed_us median 1.00 -> 2.0"),
            "{:?}",
            many.failures
        );
        assert!(
            many.failures[0].contains(" x2.00 (95% "),
            "{:?}",
            many.failures
        );
    }

    #[test]
    fn counts_move_exactly_and_ignored_keys_do_not() {
        let fail_on = FailOn {
            counts: true,
            time: None,
        };
        let d = diff(
            &aggregate(5, 1000, 13),
            &aggregate(5, 1000, 14),
            fail_on,
            &[],
        );
        assert_eq!(
            d.failures,
            [
                "e: store_Get_n per request min 13 -> 14, p50 13 -> 14, p95 13 -> 14, max 13 -> 14",
                "e: store_calls per request min 13 -> 14, p50 13 -> 14, p95 13 -> 14, max 13 -> 14"
            ]
        );
        let ignore = [glob::Pattern::new("store_*").unwrap()];
        assert!(diff(
            &aggregate(5, 1000, 13),
            &aggregate(5, 1000, 14),
            fail_on,
            &ignore
        )
        .failures
        .is_empty());
        let gone = diff(&aggregate(5, 1000, 13), &Aggregate::new(1), fail_on, &[]);
        assert_eq!(
            gone.failures,
            ["e: requests 5 -> 0 (the class is in one log only)"]
        );
    }
}
