//! Reading logs into an [`Aggregate`]: the line filters (`--endpoint`,
//! `--since`, `--until`) and the account of what was skipped.

use std::time::SystemTime;

use anyhow::Context as _;
use serde::Serialize;

use crate::aggregate::{Aggregate, Limits, OTHER};
use crate::input::{self, Line, Source};
use crate::line::{self, Parsed, PerfLine, NEEDLE};

/// Which perf lines count.
#[derive(Debug, Clone, Default)]
pub struct Filter {
    /// Endpoint class patterns (`agents.*`); empty: every class.
    pub endpoints: Vec<glob::Pattern>,
    /// Lines at or after this time only.
    pub since: Option<SystemTime>,
    /// Lines before this time only.
    pub until: Option<SystemTime>,
}

/// Parses a `--since` / `--until` value: RFC 3339 (`2026-01-01T10:00:00Z`,
/// fractions allowed), the same with a space, or a date alone (midnight UTC).
pub fn parse_time(text: &str) -> anyhow::Result<SystemTime> {
    let text = text.trim();
    let full = if text.len() == 10 {
        format!("{text}T00:00:00Z")
    } else {
        text.to_owned()
    };
    humantime::parse_rfc3339_weak(&full)
        .with_context(|| format!("`{text}` is not a UTC time like 2026-01-01T10:00:00Z"))
}

/// The account of one read.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct Counts {
    /// Input lines read.
    pub lines: u64,
    /// Perf lines read whole.
    pub perf_lines: u64,
    /// Perf lines counted (after the filters).
    pub counted: u64,
    /// Perf lines that could not be read.
    pub malformed: u64,
    /// The first of them: `source:line: reason`.
    pub first_malformed: Option<String>,
    /// Perf lines left out by `--endpoint`.
    pub other_endpoints: u64,
    /// Perf lines left out by `--since` / `--until`.
    pub outside_window: u64,
    /// Perf lines left out because a time window was asked for and the line
    /// has no readable `time`.
    pub without_time: u64,
    /// Lines longer than the line bound, skipped unread (perf lines or not).
    pub too_long: u64,
    /// The first of them: `source:line: N bytes`.
    pub first_too_long: Option<String>,
    /// Perf lines whose class was past the class bound, read as `(other)`.
    pub folded_class_lines: u64,
    /// Figures whose key was past the key bound, added to `(other)`.
    pub folded_key_values: u64,
    /// Values recorded approximately once the figures took their bytes.
    pub approximated_values: u64,
}

/// How much one read may hold.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Bounds {
    /// Lines longer than this many bytes are skipped unread.
    pub max_line: usize,
    /// Classes, keys and the figures' bytes.
    pub limits: Limits,
}

impl Default for Bounds {
    fn default() -> Self {
        Bounds {
            max_line: input::DEFAULT_MAX_LINE,
            limits: Limits::default(),
        }
    }
}

/// `bytes` in the largest binary unit it reaches, to one decimal.
fn size(bytes: u64) -> String {
    match bytes {
        b if b >= 1 << 30 => format!("{:.1} GiB", b as f64 / (1u64 << 30) as f64),
        b if b >= 1 << 20 => format!("{:.1} MiB", b as f64 / (1u64 << 20) as f64),
        b if b >= 1 << 10 => format!("{:.1} KiB", b as f64 / 1024.0),
        b => format!("{b} bytes"),
    }
}

impl Counts {
    /// The one message about malformed lines, when there were any.
    pub fn malformed_note(&self) -> Option<String> {
        let first = self.first_malformed.as_deref()?;
        Some(format!(
            "{} malformed perf_trace line{} skipped (first at {first})",
            self.malformed,
            if self.malformed == 1 { "" } else { "s" }
        ))
    }

    /// The messages about what the bounds left out or folded, given the
    /// bounds of the read.
    pub fn bound_notes(&self, bounds: &Bounds) -> Vec<String> {
        let mut notes = Vec::new();
        if let Some(first) = &self.first_too_long {
            notes.push(format!(
                "{} line{} longer than the {} line bound skipped unread (first at {first}; --max-line-bytes)",
                self.too_long,
                if self.too_long == 1 { "" } else { "s" },
                size(bounds.max_line as u64),
            ));
        }
        if self.folded_class_lines > 0 {
            notes.push(format!(
                "{} perf_trace line(s) of classes past the {}-class bound read as {OTHER} (--max-classes)",
                self.folded_class_lines, bounds.limits.classes
            ));
        }
        if self.folded_key_values > 0 {
            notes.push(format!(
                "{} figure(s) of keys past the {}-key bound added to their class's {OTHER} (--max-keys)",
                self.folded_key_values, bounds.limits.keys
            ));
        }
        if self.approximated_values > 0 {
            notes.push(format!(
                "{} figure value(s) recorded approximately: the figures reached their {} bound \
                 (a count at the nearest value held, a time in a histogram's top bucket or a sample)",
                self.approximated_values,
                size(bounds.limits.figure_bytes as u64)
            ));
        }
        notes
    }

    /// The one message about lines the time window could not place.
    pub fn without_time_note(&self) -> Option<String> {
        (self.without_time > 0).then(|| {
            format!(
                "{} perf_trace line(s) without a readable `time` left out of the time window",
                self.without_time
            )
        })
    }
}

impl Filter {
    /// Whether a line passes, counting the ones that do not.
    fn admits(&self, line: &PerfLine<'_>, counts: &mut Counts) -> bool {
        if !self.endpoints.is_empty() && !self.endpoints.iter().any(|p| p.matches(&line.endpoint)) {
            counts.other_endpoints += 1;
            return false;
        }
        if self.since.is_none() && self.until.is_none() {
            return true;
        }
        let Some(at) = line
            .time
            .as_deref()
            .and_then(|t| humantime::parse_rfc3339_weak(t).ok())
        else {
            counts.without_time += 1;
            return false;
        };
        let inside = self.since.is_none_or(|s| at >= s) && self.until.is_none_or(|u| at < u);
        if !inside {
            counts.outside_window += 1;
        }
        inside
    }
}

/// Reads every source into one aggregate, within `bounds`.
pub fn read(
    sources: &[Source],
    filter: &Filter,
    top: usize,
    bounds: &Bounds,
) -> anyhow::Result<(Aggregate, Counts)> {
    let mut agg = Aggregate::with_limits(top, bounds.limits);
    let mut counts = Counts::default();
    for source in sources {
        let name = source.name();
        input::for_each_line_bounded(source, bounds.max_line, |line, number| {
            counts.lines += 1;
            let bytes = match line {
                Line::Whole(bytes) => bytes,
                Line::TooLong(len) => {
                    counts.too_long += 1;
                    if counts.first_too_long.is_none() {
                        counts.first_too_long = Some(format!("{name}:{number}: {len} bytes"));
                    }
                    return;
                }
            };
            if memchr::memmem::find(bytes, NEEDLE).is_none() {
                return;
            }
            let mut malformed = |reason: &str| {
                counts.malformed += 1;
                if counts.first_malformed.is_none() {
                    counts.first_malformed = Some(format!("{name}:{number}: {reason}"));
                }
            };
            let Ok(text) = std::str::from_utf8(bytes) else {
                malformed("not UTF-8");
                return;
            };
            match line::parse(text) {
                Parsed::NotPerf => {}
                Parsed::Malformed(reason) => malformed(&reason),
                Parsed::Perf(line) => {
                    counts.perf_lines += 1;
                    if filter.admits(&line, &mut counts) {
                        counts.counted += 1;
                        agg.add(&line, text);
                    }
                }
            }
        })?;
    }
    counts.folded_class_lines = agg.folded.class_lines;
    counts.folded_key_values = agg.folded.key_values;
    counts.approximated_values = agg.folded.approximated;
    Ok((agg, counts))
}

#[cfg(test)]
mod tests {
    use super::*;

    const LINE: &str =
        r#"{"time":"2026-01-01T10:00:00.5Z","msg":"perf_trace","endpoint":"a.b","elapsed_us":5}"#;

    #[test]
    fn times_parse_in_three_spellings() {
        let full = parse_time("2026-01-01T00:00:00Z").unwrap();
        assert_eq!(parse_time("2026-01-01").unwrap(), full);
        assert_eq!(parse_time("2026-01-01 00:00:00").unwrap(), full);
        assert!(parse_time("yesterday").is_err());
    }

    #[test]
    fn filters_count_what_they_leave_out() {
        let Parsed::Perf(line) = line::parse(LINE) else {
            panic!()
        };
        let mut counts = Counts::default();
        let by_class = Filter {
            endpoints: vec![glob::Pattern::new("x.*").unwrap()],
            ..Filter::default()
        };
        assert!(!by_class.admits(&line, &mut counts));
        let window = Filter {
            since: Some(parse_time("2026-01-01T10:00:00Z").unwrap()),
            until: Some(parse_time("2026-01-01T10:00:01Z").unwrap()),
            ..Filter::default()
        };
        assert!(window.admits(&line, &mut counts));
        let later = Filter {
            since: Some(parse_time("2026-01-01T10:00:01Z").unwrap()),
            ..Filter::default()
        };
        assert!(!later.admits(&line, &mut counts));
        let Parsed::Perf(timeless) =
            line::parse(r#"{"msg":"perf_trace","endpoint":"a","elapsed_us":1}"#)
        else {
            panic!()
        };
        assert!(!later.admits(&timeless, &mut counts));
        assert_eq!(
            (
                counts.other_endpoints,
                counts.outside_window,
                counts.without_time
            ),
            (1, 1, 1)
        );
        assert!(counts.without_time_note().is_some());
    }
}
