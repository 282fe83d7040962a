//! The report page: one self-contained HTML file (its style inline, its
//! charts inline SVG, no script, nothing loaded from elsewhere), readable
//! with scripts off. `report` writes one log's page; `diff --html` writes
//! two logs side by side with what moved on top.

use std::fmt::Write as _;

use crate::aggregate::{Aggregate, ClassAgg};
use crate::diff::{count_change, ratio_text, Diff};
use crate::output::{ms, rho_text};
use crate::scan::Counts;
use crate::summary::{summarize_class, ClassSummary, CounterRow, StoreRow, TimerRow};
use crate::suspects::{self, Rule, Suspect};
use crate::svg::{escape, latency_histogram, phase_bar, phase_colour, spread, OUTSIDE};

const STYLE: &str = "
body{font:14px/1.45 system-ui,sans-serif;margin:24px;color:#222;background:#fff}
h1{font-size:22px;margin:0 0 4px}h2{font-size:18px;margin:28px 0 6px;border-bottom:1px solid #ddd}
h3{font-size:14px;margin:14px 0 4px;color:#444}
table{border-collapse:collapse;margin:4px 0}td,th{padding:2px 10px;text-align:right;border-bottom:1px solid #eee}
td:first-child,th:first-child{text-align:left}th{background:#f5f5f5}
.meta{color:#555}.legend span{display:inline-block;margin-right:12px}
.sw{display:inline-block;width:10px;height:10px;margin-right:4px;vertical-align:middle}
pre{white-space:pre-wrap;word-break:break-all;background:#f7f7f7;padding:6px;font-size:12px;margin:2px 0 8px}
.sides{display:grid;grid-template-columns:1fr 1fr;gap:24px}.sides>div{min-width:0}
.moved{color:#b00020;font-weight:600}.ok{color:#2e7d32;font-weight:600}
svg.bar,svg.hist{max-width:100%;height:auto}
";

/// A whole page around `body`.
pub fn page(title: &str, body: &str) -> String {
    format!(
        "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">\
<meta name=\"viewport\" content=\"width=device-width,initial-scale=1\">\
<title>{}</title><style>{STYLE}</style></head><body>\n{body}</body></html>\n",
        escape(title)
    )
}

fn table(out: &mut String, header: &[&str], rows: &[Vec<String>]) {
    out.push_str("<table><tr>");
    for h in header {
        let _ = write!(out, "<th>{}</th>", escape(h));
    }
    out.push_str("</tr>");
    for row in rows {
        out.push_str("<tr>");
        for cell in row {
            // Cells are escaped by the callers that build them from text.
            let _ = write!(out, "<td>{cell}</td>");
        }
        out.push_str("</tr>");
    }
    out.push_str("</table>\n");
}

fn phases(out: &mut String, class: &ClassSummary) {
    out.push_str("<h3>Where the time goes, by phase (share of elapsed)</h3>");
    out.push_str(&phase_bar(class));
    out.push_str("<div class=\"legend\">");
    for (i, p) in class.phases.iter().enumerate() {
        let _ = write!(
            out,
            "<span><i class=\"sw\" style=\"background:{}\"></i>{} {:.1}%</span>",
            phase_colour(i),
            escape(&p.name),
            p.share * 100.0
        );
    }
    let _ = write!(
        out,
        "<span><i class=\"sw\" style=\"background:{OUTSIDE}\"></i>outside phases</span></div>"
    );
    let rows: Vec<Vec<String>> = class
        .phases
        .iter()
        .map(|p| {
            vec![
                escape(&p.name),
                format!("{:.1}%", p.share * 100.0),
                format!("{:.2}", p.calls.mean),
                ms(p.time.p50_us),
                ms(p.time.p95_us),
                ms(p.time.max_us),
            ]
        })
        .collect();
    if !rows.is_empty() {
        table(
            out,
            &["phase", "share", "calls/req", "p50 ms", "p95 ms", "max ms"],
            &rows,
        );
    }
}

fn store_row(s: &StoreRow, scale: u64) -> Vec<String> {
    let c = &s.calls;
    vec![
        escape(&s.method),
        spread(c.min, c.p50, c.p95, c.max, scale),
        c.p50.to_string(),
        c.p95.to_string(),
        c.max.to_string(),
        ms(s.time.p50_us),
    ]
}

fn store(out: &mut String, class: &ClassSummary) {
    if class.store.is_empty() {
        return;
    }
    out.push_str("<h3>Store calls per request (line: min to max; box: median to p95)</h3>");
    let scale = class.store.iter().map(|s| s.calls.max).max().unwrap_or(1);
    let t = &class.store_calls;
    let total = vec![
        "<b>total</b>".to_owned(),
        String::new(),
        t.p50.to_string(),
        t.p95.to_string(),
        t.max.to_string(),
        class.store_time.map_or_else(String::new, |s| ms(s.p50_us)),
    ];
    let rows: Vec<Vec<String>> = class
        .store
        .iter()
        .map(|s| store_row(s, scale))
        .chain([total])
        .collect();
    table(
        out,
        &["method", "spread", "p50", "p95", "max", "p50 ms"],
        &rows,
    );
}

fn counter_row(c: &CounterRow) -> Vec<String> {
    let s = &c.per_request;
    vec![
        escape(&c.name),
        format!("{:.2}", s.mean),
        s.p50.to_string(),
        s.p95.to_string(),
        s.max.to_string(),
    ]
}

fn timer_row(t: &TimerRow) -> Vec<String> {
    let s = &t.per_request;
    vec![
        format!("{} (ms)", escape(&t.name)),
        ms(s.mean_us as u64),
        ms(s.p50_us),
        ms(s.p95_us),
        ms(s.max_us),
    ]
}

fn counters(out: &mut String, class: &ClassSummary) {
    if class.counters.is_empty() && class.timers.is_empty() {
        return;
    }
    out.push_str("<h3>Counters and timers per request</h3>");
    let counters = class.counters.iter().map(counter_row);
    let rows: Vec<Vec<String>> = counters.chain(class.timers.iter().map(timer_row)).collect();
    table(out, &["figure", "mean", "p50", "p95", "max"], &rows);
}

fn suspects_table(out: &mut String, suspects: &[Suspect]) {
    if suspects.is_empty() {
        return;
    }
    out.push_str("<h3 class=\"moved\">N+1 suspects (calls per request; rho: rank correlation with the size)</h3>");
    let rows: Vec<Vec<String>> = suspects
        .iter()
        .map(|s| {
            vec![
                escape(&s.key),
                s.calls.p50.to_string(),
                s.calls.p95.to_string(),
                s.calls.max.to_string(),
                rho_text(s),
                escape(s.size_key.as_deref().unwrap_or("-")),
                escape(&s.why.join("; ")),
            ]
        })
        .collect();
    table(
        out,
        &["key", "p50", "p95", "max", "rho", "size", "why"],
        &rows,
    );
}

/// One class: its figures, charts, N+1 suspects (none on a diff's page)
/// and slowest requests.
pub fn class_section(class: &ClassSummary, agg: &ClassAgg, suspects: &[Suspect]) -> String {
    let e = &class.elapsed;
    let statuses: Vec<String> = class
        .statuses
        .iter()
        .map(|(s, n)| format!("{s} {n}"))
        .collect();
    let mut out = format!(
        "<section><h2 id=\"{0}\">{0}</h2><p class=\"meta\">{1} requests{2} · elapsed p50 {3} ms · p95 {4} ms · p99 {5} ms · max {6} ms</p>",
        escape(&class.endpoint),
        class.requests,
        if statuses.is_empty() { String::new() } else { format!(" ({})", statuses.join(", ")) },
        ms(e.p50_us),
        ms(e.p95_us),
        ms(e.p99_us),
        ms(e.max_us)
    );
    phases(&mut out, class);
    out.push_str("<h3>Latency (requests per elapsed time, log scale)</h3>");
    out.push_str(&latency_histogram(&agg.elapsed));
    store(&mut out, class);
    suspects_table(&mut out, suspects);
    counters(&mut out, class);
    if !class.slowest.is_empty() {
        out.push_str("<h3>Slowest requests</h3>");
        for slow in &class.slowest {
            let id = if slow.request_id.is_empty() {
                "(no id)"
            } else {
                &slow.request_id
            };
            let _ = write!(
                out,
                "<div>{} · {} ms</div><pre>{}</pre>",
                escape(id),
                ms(slow.elapsed_us),
                escape(&slow.line)
            );
        }
    }
    out.push_str("</section>\n");
    out
}

fn input_note(sources: &str, counts: &Counts) -> String {
    let mut note = format!(
        "<p class=\"meta\">{} · {} lines read · {} perf_trace lines counted",
        escape(sources),
        counts.lines,
        counts.counted
    );
    if let Some(m) = counts.malformed_note() {
        let _ = write!(note, " · {}", escape(&m));
    }
    for (n, what) in [
        (counts.too_long, "over-long lines skipped unread"),
        (
            counts.folded_class_lines,
            "lines of classes past the bound read as (other)",
        ),
        (
            counts.folded_key_values,
            "figures of keys past the bound added to (other)",
        ),
        (
            counts.approximated_values,
            "figure values recorded approximately (memory bound)",
        ),
    ] {
        if n > 0 {
            let _ = write!(note, " · {n} {}", escape(what));
        }
    }
    note.push_str("</p>\n");
    note
}

/// The page of one read, with the N+1 suspects by `rule`.
pub fn report_page(sources: &str, agg: &Aggregate, counts: &Counts, rule: &Rule) -> String {
    let mut body = String::from("<h1>perf_trace report</h1>");
    body.push_str(&input_note(sources, counts));
    body.push_str("<p>");
    for name in agg.classes.keys() {
        let _ = write!(body, "<a href=\"#{0}\">{0}</a> ", escape(name));
    }
    body.push_str("</p>\n");
    let found: Vec<(&String, &ClassAgg, Vec<Suspect>)> = agg
        .classes
        .iter()
        .map(|(name, class)| (name, class, suspects::of_class(name, class, rule)))
        .collect();
    let named: Vec<String> = found
        .iter()
        .flat_map(|(_, _, s)| s)
        .map(|s| {
            format!(
                "<a href=\"#{}\">{}</a> {}",
                escape(&s.endpoint),
                escape(&s.endpoint),
                escape(&s.key)
            )
        })
        .collect();
    if named.is_empty() {
        body.push_str("<p class=\"ok\">No N+1 suspects.</p>\n");
    } else {
        let _ = writeln!(
            body,
            "<p class=\"moved\">N+1 suspects: {}</p>",
            named.join(", ")
        );
    }
    for (name, class, suspects) in &found {
        body.push_str(&class_section(
            &summarize_class(name, class),
            class,
            suspects,
        ));
    }
    page("perf_trace report", &body)
}

fn moved_list(d: &Diff) -> String {
    if d.failures.is_empty() {
        return "<p class=\"ok\">Nothing moved.</p>\n".to_owned();
    }
    let mut out = String::from("<p class=\"moved\">Moved:</p><ul>");
    for f in &d.failures {
        let _ = write!(out, "<li>{}</li>", escape(f));
    }
    out.push_str("</ul>\n");
    out
}

/// The page of a diff: what moved, then per class the two logs side by side.
pub fn diff_page(names: [&str; 2], sides: [(&Aggregate, &Counts); 2], d: &Diff) -> String {
    let mut body = format!(
        "<h1>perf_trace diff</h1><p>before: {} · after: {}</p>",
        escape(names[0]),
        escape(names[1])
    );
    body.push_str(&moved_list(d));
    for class in &d.classes {
        let _ = write!(
            body,
            "<h2>{}</h2><p class=\"meta\">requests {} → {}</p>",
            escape(&class.endpoint),
            class.before_requests,
            class.after_requests
        );
        let mut rows: Vec<Vec<String>> = class
            .counts
            .iter()
            .filter(|c| c.moved)
            .map(|c| {
                vec![
                    escape(&c.key),
                    "<span class=\"moved\">count</span>".into(),
                    escape(&count_change(&c.before, &c.after)),
                ]
            })
            .collect();
        rows.extend(class.times.iter().filter_map(|t| {
            let r = t.interval?;
            let mark = if t.moved {
                "<span class=\"moved\">time</span>"
            } else {
                "time"
            };
            (t.key == "elapsed_us" || t.moved || r.low > 1.0 || r.high < 1.0).then(|| {
                vec![
                    escape(&t.key),
                    mark.into(),
                    escape(&ratio_text(&t.before, &t.after, &r)),
                ]
            })
        }));
        table(&mut body, &["key", "kind", "before → after"], &rows);
        body.push_str("<div class=\"sides\">");
        for (side, (agg, counts)) in sides.iter().enumerate() {
            let _ = write!(
                body,
                "<div><h3>{}</h3>{}",
                ["before", "after"][side],
                input_note(names[side], counts)
            );
            match agg.classes.get(&class.endpoint) {
                Some(c) => {
                    body.push_str(&class_section(&summarize_class(&class.endpoint, c), c, &[]))
                }
                None => body.push_str("<p>No requests of this class.</p>"),
            }
            body.push_str("</div>");
        }
        body.push_str("</div>\n");
    }
    page("perf_trace diff", &body)
}
