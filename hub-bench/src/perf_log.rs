//! The Hub's `perf_trace` lines as the header-shaped trace that reports
//! carry, and the index that joins them to requests by request id.
//!
//! Lines are read by `perf-trace-cli`'s reader ([`line::parse_profile`]
//! with the Hub's figures), the one the `perf-trace` command uses:
//! [`parse_perf_line`] keeps a whole perf line with an `endpoint` and an
//! `elapsed_us`; anything else (other messages, non-JSON output, truncated
//! lines) is `None`. Lines in GCP format carry the message under `message`
//! instead of `msg` and are deliberately *not* joined: apibench expects the
//! default format, as the hub's guide says.
//!
//! Figures that are absent read as 0 (the hub leaves out empty phases, store
//! methods and pool figures). A known figure of the wrong type (a string, a
//! negative or fractional number) makes the whole line `None`: it was not
//! written by the hub. Fields the Hub does not write are passed over.

use std::collections::{BTreeMap, HashMap};
use std::path::{Path, PathBuf};

use anyhow::Context as _;
use perf_trace_cli::input::{self, Source};
use perf_trace_cli::line::{self, classify, FigureKind, Parsed, Unit};
use perf_trace_core::line::scion::{self, field, header};

use crate::report::PerfTraceMap;

/// How many times a phase or store method was entered, and for how long.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct CountUs {
    /// Entries (`_n`).
    pub count: u64,
    /// Total microseconds (`_us`).
    pub us: u64,
}

/// The decision (audit) figures of a line.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct DecisionFigures {
    /// `audit_records`.
    pub records: u64,
    /// `audit_allow`.
    pub allow: u64,
    /// `audit_deny`.
    pub deny: u64,
    /// `audit_other`.
    pub other: u64,
    /// `audit_emit_us`.
    pub emit_us: u64,
}

/// The database pool figures of a line, as written (whole microseconds).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct LinePoolFigures {
    /// `db_wait_count`.
    pub wait_count: u64,
    /// `db_wait_us`.
    pub wait_us: u64,
    /// `db_in_use`.
    pub in_use: u64,
    /// `db_open`.
    pub open: u64,
}

/// One parsed `perf_trace` line.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct PerfLine {
    /// The endpoint class.
    pub endpoint: String,
    /// `elapsed_us`.
    pub elapsed_us: u64,
    /// Phases by name (`phase_<name>_us` / `_n`).
    pub phases: BTreeMap<String, CountUs>,
    /// Store methods by name (`store_<Method>_n` / `_us`).
    pub store_calls: BTreeMap<String, CountUs>,
    /// `authz_store_calls`.
    pub authz_store_calls: u64,
    /// `authz_store_us`.
    pub authz_store_us: u64,
    /// The `audit_*` figures.
    pub decisions: DecisionFigures,
    /// `sse_events` (0 when absent).
    pub sse_events: u64,
    /// The `db_*` figures, when the line has any.
    pub db: Option<LinePoolFigures>,
    /// `sse_stage` on SSE lines.
    pub sse_stage: Option<String>,
    /// The HTTP method.
    pub method: String,
    /// The request id, when present and not empty.
    pub request_id: Option<String>,
}

/// Whether a field is one of the Hub's figures: its phases, store methods,
/// authorization, decision, event-stream and pool figures.
fn is_hub_figure(name: &str) -> bool {
    matches!(
        name,
        field::AUTHZ_STORE_CALLS
            | field::AUTHZ_STORE_US
            | field::AUDIT_RECORDS
            | field::AUDIT_ALLOW
            | field::AUDIT_DENY
            | field::AUDIT_OTHER
            | field::AUDIT_EMIT_US
            | field::SSE_EVENTS
            | field::DB_WAIT_COUNT
            | field::DB_WAIT_US
            | field::DB_IN_USE
            | field::DB_OPEN
    ) || matches!(
        classify(name),
        FigureKind::Phase(..) | FigureKind::Store(..)
    )
}

fn put(map: &mut BTreeMap<String, CountUs>, name: &str, unit: Unit, value: u64) {
    let entry = map.entry(name.to_owned()).or_default();
    match unit {
        Unit::Micros => entry.us = value,
        Unit::Count => entry.count = value,
    }
}

/// Parses one log line. Returns `None` for anything that is not a
/// default-format `perf_trace` line (see the module documentation). Never
/// panics, whatever the input.
pub fn parse_perf_line(text: &str) -> Option<PerfLine> {
    match line::parse_profile(text, is_hub_figure) {
        Parsed::Perf(read) if !read.gcp_form => Some(PerfLine::from_line(&read)),
        _ => None,
    }
}

impl PerfLine {
    /// The Hub's figures of a line read by the generic reader.
    fn from_line(read: &line::PerfLine<'_>) -> PerfLine {
        let mut out = PerfLine {
            endpoint: read.endpoint.clone().into_owned(),
            elapsed_us: read.elapsed_us,
            method: read.method.as_deref().unwrap_or_default().to_owned(),
            request_id: read.request_id.as_deref().map(str::to_owned),
            sse_stage: read.text(field::SSE_STAGE).map(str::to_owned),
            ..PerfLine::default()
        };
        let mut db: Option<LinePoolFigures> = None;
        for (name, value) in &read.figures {
            let value = *value;
            let d = &mut out.decisions;
            match name.as_ref() {
                field::AUTHZ_STORE_CALLS => out.authz_store_calls = value,
                field::AUTHZ_STORE_US => out.authz_store_us = value,
                field::AUDIT_RECORDS => d.records = value,
                field::AUDIT_ALLOW => d.allow = value,
                field::AUDIT_DENY => d.deny = value,
                field::AUDIT_OTHER => d.other = value,
                field::AUDIT_EMIT_US => d.emit_us = value,
                field::SSE_EVENTS => out.sse_events = value,
                field::DB_WAIT_COUNT => db.get_or_insert_default().wait_count = value,
                field::DB_WAIT_US => db.get_or_insert_default().wait_us = value,
                field::DB_IN_USE => db.get_or_insert_default().in_use = value,
                field::DB_OPEN => db.get_or_insert_default().open = value,
                other => match classify(other) {
                    FigureKind::Phase(phase, unit) => put(&mut out.phases, phase, unit, value),
                    FigureKind::Store(method, unit) => {
                        put(&mut out.store_calls, method, unit, value)
                    }
                    FigureKind::StoreTotal(_) | FigureKind::Other(_) => {}
                },
            }
        }
        out.db = db;
        out
    }
}

fn pairs(map: &BTreeMap<String, CountUs>, value: impl Fn(&CountUs) -> u64) -> String {
    scion::pairs_value(map.iter().map(|(name, stat)| (name.as_str(), value(stat))))
}

impl PerfLine {
    /// The trace as the hub's response headers would render it: `name=int`
    /// pairs sorted by name, joined by `,`; empty sets left out; `Decisions`
    /// always; `DB` when the line has pool figures. Unlike real headers, the
    /// phases include `serialize` (the line is written after the body).
    pub fn header_map(&self) -> PerfTraceMap {
        let mut m = PerfTraceMap::new();
        let mut put = |name: &str, value: String| {
            if !value.is_empty() {
                m.insert(name.to_owned(), value);
            }
        };
        put(header::ENDPOINT, self.endpoint.clone());
        put(header::PHASES, pairs(&self.phases, |s| s.us));
        put(header::PHASE_COUNTS, pairs(&self.phases, |s| s.count));
        put(header::STORE_CALLS, pairs(&self.store_calls, |s| s.count));
        put(header::STORE_US, pairs(&self.store_calls, |s| s.us));
        let d = &self.decisions;
        put(
            header::DECISIONS,
            scion::decisions_value(d.records, d.allow, d.deny, d.other, d.emit_us),
        );
        if let Some(db) = &self.db {
            put(
                header::DB,
                scion::db_value(db.wait_count, db.wait_us, db.in_use, db.open),
            );
        }
        m
    }
}

fn read_context(path: &Path) -> String {
    format!("read hub perf log: {}", path.display())
}

/// Checks that the log at `path` can be opened for reading. The error reads
/// `read hub perf log: <path>: <reason>`.
pub fn check_perf_log(path: &Path) -> anyhow::Result<()> {
    input::open(&Source::File(path.to_owned()))
        .map(drop)
        .with_context(|| read_context(path))
}

/// Reads every `perf_trace` line of the log at `path` (gzip'd or not), in
/// file order. Lines that [`parse_perf_line`] rejects (and lines that are
/// not UTF-8) are skipped. Errors read `read hub perf log: <path>: <reason>`.
pub fn read_perf_lines(path: &Path) -> anyhow::Result<Vec<PerfLine>> {
    let mut lines = Vec::new();
    input::for_each_line(&Source::File(PathBuf::from(path)), |bytes, _| {
        if let Some(line) = std::str::from_utf8(bytes).ok().and_then(parse_perf_line) {
            lines.push(line);
        }
    })
    .with_context(|| read_context(path))?;
    Ok(lines)
}

/// Indexes lines by request id; lines without one are left out. When two
/// lines share an id (it is random per request, so only a foreign log would
/// do that) the first one is kept.
pub fn index_by_request_id(lines: Vec<PerfLine>) -> HashMap<String, PerfLine> {
    let mut index = HashMap::with_capacity(lines.len());
    for line in lines {
        if let Some(id) = line.request_id.clone() {
            index.entry(id).or_insert(line);
        }
    }
    index
}

/// Reads the log at `path` and indexes its `perf_trace` lines by request id.
pub fn read_perf_log(path: &Path) -> anyhow::Result<HashMap<String, PerfLine>> {
    read_perf_lines(path).map(index_by_request_id)
}

/// Joins a run's requests to the log's lines, reading the log again every
/// 100 ms (the Hub writes a line as its response ends, so the last ones can
/// trail the client) until `settled(joined, total)`; returns `(joined, total)`.
pub async fn join_settled(
    log: &Path,
    mut join: impl FnMut(&HashMap<String, PerfLine>) -> (usize, usize),
    mut settled: impl FnMut(usize, usize) -> bool,
) -> anyhow::Result<(usize, usize)> {
    loop {
        let (joined, total) = join(&read_perf_log(log)?);
        if settled(joined, total) {
            return Ok((joined, total));
        }
        tokio::time::sleep(std::time::Duration::from_millis(100)).await;
    }
}

/// Whether a response header name is a trace header (`X-Scion-Perf-*`, any case).
pub fn is_perf_header(name: &str) -> bool {
    let prefix = scion::HEADER_PREFIX;
    name.len() > prefix.len()
        && name.is_char_boundary(prefix.len())
        && name[..prefix.len()].eq_ignore_ascii_case(prefix)
}

/// The canonical spelling of a trace header name as received (HTTP/1 header
/// names arrive lower-cased): the known names as the hub documents them
/// (`X-Scion-Perf-DB`), any other as `Title-Case`.
pub fn canonical_header_name(name: &str) -> String {
    if let Some(known) = header::ALL.iter().find(|h| h.eq_ignore_ascii_case(name)) {
        return (*known).to_owned();
    }
    name.split('-')
        .map(|part| {
            let mut chars = part.chars();
            match chars.next() {
                Some(first) => {
                    first.to_ascii_uppercase().to_string() + &chars.as_str().to_ascii_lowercase()
                }
                None => String::new(),
            }
        })
        .collect::<Vec<_>>()
        .join("-")
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The contract's example line (a member listing a 25-agent project).
    const GUIDE_LINE: &str = scion::EXAMPLE_LINE;

    #[test]
    fn parses_the_guide_line() {
        let l = parse_perf_line(GUIDE_LINE).expect("valid line");
        assert_eq!(l.endpoint, "agents.project.legacy");
        assert_eq!(l.elapsed_us, 557495);
        assert_eq!(l.phases.len(), 7);
        assert_eq!(
            l.phases["list_db_read"],
            CountUs {
                count: 2,
                us: 16435
            }
        );
        assert_eq!(
            l.store_calls["GetUser"],
            CountUs {
                count: 84,
                us: 472801
            }
        );
        assert_eq!(l.authz_store_calls, 88);
        assert_eq!(l.authz_store_us, 474434);
        assert_eq!(
            l.decisions,
            DecisionFigures {
                records: 255,
                allow: 162,
                deny: 93,
                other: 0,
                emit_us: 188
            }
        );
        assert_eq!(
            l.db,
            Some(LinePoolFigures {
                wait_count: 306,
                wait_us: 1887753,
                in_use: 1,
                open: 1
            })
        );
        assert_eq!(l.method, "GET");
        assert_eq!(
            l.request_id.as_deref(),
            Some("00000000-0000-4000-8000-000000000000")
        );
        assert_eq!(l.sse_stage, None);
        assert_eq!(l.sse_events, 0);
    }

    #[test]
    fn rebuilds_the_headers_of_the_guide_line() {
        let h = parse_perf_line(GUIDE_LINE).unwrap().header_map();
        let expected: Vec<(&str, &str)> = vec![
            ("X-Scion-Perf-DB", "wait_count=306,wait_us=1887753,in_use=1,open=1"),
            ("X-Scion-Perf-Decisions", "count=255,allow=162,deny=93,other=0,audit_us=188"),
            ("X-Scion-Perf-Endpoint", "agents.project.legacy"),
            (
                "X-Scion-Perf-Phase-Counts",
                "capabilities=1,enrich=1,list_db_read=2,list_read_authz=2,list_scope_authz=1,scope_capabilities=1,serialize=1",
            ),
            (
                "X-Scion-Perf-Phases",
                "capabilities=484223,enrich=43829,list_db_read=16435,list_read_authz=2695,list_scope_authz=1793,scope_capabilities=125,serialize=2917",
            ),
            (
                "X-Scion-Perf-Store-Calls",
                "GetEffectiveGroups=1,GetRoleDefinitionsByIDs=1,GetUser=84,ListAccessConstraints=1,ListRoleBindingsForPrincipals=1",
            ),
            (
                "X-Scion-Perf-Store-Us",
                "GetEffectiveGroups=631,GetRoleDefinitionsByIDs=358,GetUser=472801,ListAccessConstraints=303,ListRoleBindingsForPrincipals=340",
            ),
        ];
        let got: Vec<(&str, &str)> = h.iter().map(|(k, v)| (k.as_str(), v.as_str())).collect();
        assert_eq!(got, expected);
    }

    #[test]
    fn minimal_line_has_endpoint_and_decisions_only() {
        let l = parse_perf_line(
            r#"{"msg":"perf_trace","endpoint":"other","elapsed_us":12,"authz_store_calls":0,"authz_store_us":0,"audit_records":0,"audit_allow":0,"audit_deny":0,"audit_other":0,"audit_emit_us":0,"method":"GET"}"#,
        )
        .unwrap();
        assert_eq!(l.request_id, None);
        let h = l.header_map();
        assert_eq!(h.len(), 2);
        assert_eq!(h[header::ENDPOINT], "other");
        assert_eq!(
            h[header::DECISIONS],
            "count=0,allow=0,deny=0,other=0,audit_us=0"
        );
    }

    #[test]
    fn sse_line_fields() {
        let l = parse_perf_line(
            r#"{"msg":"perf_trace","endpoint":"sse.events","elapsed_us":5,"phase_sse_write_us":3,"phase_sse_write_n":2,"sse_events":2,"sse_stage":"close","method":"GET","request_id":""}"#,
        )
        .unwrap();
        assert_eq!(l.sse_events, 2);
        assert_eq!(l.sse_stage.as_deref(), Some("close"));
        assert_eq!(l.phases["sse_write"], CountUs { count: 2, us: 3 });
        // An empty request id is no request id.
        assert_eq!(l.request_id, None);
    }

    #[test]
    fn gcp_line_is_not_joined() {
        let gcp = GUIDE_LINE.replace(r#""msg":"perf_trace""#, r#""message":"perf_trace""#);
        assert_eq!(parse_perf_line(&gcp), None);
    }

    #[test]
    fn other_messages_and_garbage_are_skipped() {
        for line in [
            "",
            "   ",
            "not json at all",
            "Request performance tracing is on",
            r#"{"msg":"server started","endpoint":"x"}"#,
            r#"{"msg":"perf_trace"}"#,
            r#"{"msg":5,"endpoint":"other"}"#,
            r#"["msg","perf_trace"]"#,
            "null",
            "{",
            "{}",
            "\u{0}\u{1}{\"msg\"",
        ] {
            assert_eq!(parse_perf_line(line), None, "{line:?}");
        }
    }

    #[test]
    fn truncated_line_is_skipped() {
        for cut in [1, 10, GUIDE_LINE.len() / 2, GUIDE_LINE.len() - 1] {
            assert_eq!(parse_perf_line(&GUIDE_LINE[..cut]), None, "cut at {cut}");
        }
    }

    #[test]
    fn wrong_types_reject_the_line() {
        for (from, to) in [
            (r#""elapsed_us":557495"#, r#""elapsed_us":"557495""#),
            (r#""store_GetUser_n":84"#, r#""store_GetUser_n":-84"#),
            (r#""phase_enrich_us":43829"#, r#""phase_enrich_us":4.5"#),
            (r#""audit_records":255"#, r#""audit_records":null"#),
            (r#""db_open":1"#, r#""db_open":true"#),
            (
                r#""request_id":"00000000-0000-4000-8000-000000000000""#,
                r#""request_id":7"#,
            ),
            (r#""method":"GET""#, r#""method":["GET"]"#),
            (r#""endpoint":"agents.project.legacy""#, r#""endpoint":{}"#),
        ] {
            let line = GUIDE_LINE.replace(from, to);
            assert_ne!(line, GUIDE_LINE);
            assert_eq!(parse_perf_line(&line), None, "{to}");
        }
    }

    #[test]
    fn unknown_keys_are_ignored() {
        let line = GUIDE_LINE.replace(
            r#""method":"GET""#,
            r#""method":"GET","phase_x":1,"store_":"a","future_key":[1]"#,
        );
        let l = parse_perf_line(&line).unwrap();
        assert_eq!(l.phases.len(), 7);
        assert_eq!(l.store_calls.len(), 5);
    }

    #[test]
    fn reads_and_indexes_a_log() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("hub.log");
        let gcp = GUIDE_LINE.replace(r#""msg":"perf_trace""#, r#""message":"perf_trace""#);
        let second = GUIDE_LINE.replace("00000000-0000-4000-8000-000000000000", "r-2");
        let mut text = String::new();
        text.push_str("plain startup text\n");
        text.push_str(r#"{"level":"WARN","msg":"Request performance tracing is on"}"#);
        text.push('\n');
        text.push_str(GUIDE_LINE);
        text.push('\n');
        text.push_str(&gcp);
        text.push('\n');
        text.push_str(&second);
        text.push('\n');
        text.push_str(&GUIDE_LINE[..40]); // a truncated last line, no newline
        std::fs::write(&path, &text).unwrap();
        let mut bytes = std::fs::read(&path).unwrap();
        bytes.extend_from_slice(b"\n\xff\xfe not utf-8\n");
        std::fs::write(&path, bytes).unwrap();

        let lines = read_perf_lines(&path).unwrap();
        assert_eq!(lines.len(), 2);
        let index = read_perf_log(&path).unwrap();
        assert_eq!(index.len(), 2);
        assert!(index.contains_key("r-2"));
        assert!(index.contains_key("00000000-0000-4000-8000-000000000000"));
    }

    #[test]
    fn missing_log_error() {
        let e = read_perf_log(Path::new("/nonexistent/hub.log")).unwrap_err();
        let msg = format!("{e:#}");
        assert!(
            msg.starts_with("read hub perf log: /nonexistent/hub.log: "),
            "{msg}"
        );
        let dir = tempfile::tempdir().unwrap();
        let e = check_perf_log(dir.path()).unwrap_err();
        assert!(format!("{e:#}").ends_with("is a directory"), "{e:#}");
    }

    #[test]
    fn header_names() {
        assert!(is_perf_header("x-scion-perf-db"));
        assert!(is_perf_header("X-Scion-Perf-Phases"));
        assert!(!is_perf_header("x-scion-perf-"));
        assert!(!is_perf_header("x-request-id"));
        assert!(!is_perf_header("x-scion-perf\u{e9}-a"));
        assert_eq!(canonical_header_name("x-scion-perf-db"), "X-Scion-Perf-DB");
        assert_eq!(
            canonical_header_name("x-scion-perf-store-us"),
            "X-Scion-Perf-Store-Us"
        );
        assert_eq!(
            canonical_header_name("x-scion-perf-new-thing"),
            "X-Scion-Perf-New-Thing"
        );
    }

    mod fuzz {
        use super::*;
        use proptest::prelude::*;

        proptest! {
            #[test]
            fn fuzz_perf_line_never_panics_on_any_text(s in "\\PC*") {
                let _ = parse_perf_line(&s);
            }

            #[test]
            fn fuzz_perf_line_never_panics_on_json_like_text(s in r#"[{}\[\]":,0-9a-z_ .\-\\]{0,200}"#) {
                let _ = parse_perf_line(&s);
            }

            #[test]
            fn fuzz_perf_line_never_panics_on_mutated_guide_lines(
                cut in 0..GUIDE_LINE.len(),
                at in 0..GUIDE_LINE.len(),
                insert in "\\PC{0,8}",
            ) {
                let mut line = GUIDE_LINE.to_owned();
                line.truncate(cut.max(at));
                line.insert_str(at.min(line.len()), &insert);
                let _ = parse_perf_line(&line);
            }

            #[test]
            fn fuzz_perf_line_figure_values_parse_exactly(value in prop_oneof![
                any::<i64>().prop_map(|v| v.to_string()),
                any::<f64>().prop_map(|v| format!("{v:?}")),
                "\\PC{0,12}".prop_map(|s| serde_json::to_string(&s).unwrap()),
                Just("1e400".to_owned()),
                Just("18446744073709551616".to_owned()),
            ]) {
                let line = GUIDE_LINE.replace("\"elapsed_us\":557495", &format!("\"elapsed_us\":{value}"));
                if let Some(parsed) = parse_perf_line(&line) {
                    prop_assert_eq!(parsed.elapsed_us.to_string(), value);
                }
            }
        }
    }
}
