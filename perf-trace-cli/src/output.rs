//! `summary`'s three renderings: a table per class for a terminal, the whole
//! [`Summary`] as JSON, and one CSV row per figure.

use std::io::Write;

use comfy_table::presets::NOTHING;
use comfy_table::{CellAlignment, Table};

use crate::dist::{CountStats, TimeStats};
use crate::summary::{ClassSummary, Summary};
use crate::suspects::Suspect;

/// Microseconds as milliseconds with two decimals.
pub fn ms(us: u64) -> String {
    format!("{:.2}", us as f64 / 1000.0)
}

/// A plain table: no borders, the first column left and the rest right.
fn table(header: &[&str]) -> Table {
    let mut t = Table::new();
    t.load_preset(NOTHING).set_header(header.to_vec());
    for i in 1..header.len() {
        if let Some(column) = t.column_mut(i) {
            column.set_cell_alignment(CellAlignment::Right);
        }
    }
    t
}

fn statuses(class: &ClassSummary) -> String {
    if class.statuses.is_empty() {
        return String::new();
    }
    let parts: Vec<String> = class
        .statuses
        .iter()
        .map(|(status, n)| format!("{status} {n}"))
        .collect();
    format!(" ({})", parts.join(", "))
}

fn count_cells(s: &CountStats) -> Vec<String> {
    vec![
        format!("{:.2}", s.mean),
        s.p50.to_string(),
        s.p95.to_string(),
        s.max.to_string(),
    ]
}

fn time_cells(s: &TimeStats) -> Vec<String> {
    vec![ms(s.p50_us), ms(s.p95_us), ms(s.max_us)]
}

/// One class as text tables.
pub fn class_table(class: &ClassSummary, top: usize) -> String {
    let e = &class.elapsed;
    let mut out = format!(
        "== {}: {} requests{}\nelapsed ms: p50 {}  p95 {}  p99 {}  max {}\n",
        class.endpoint,
        class.requests,
        statuses(class),
        ms(e.p50_us),
        ms(e.p95_us),
        ms(e.p99_us),
        ms(e.max_us)
    );
    if !class.phases.is_empty() {
        let mut t = table(&["phase", "share", "calls/req", "p50 ms", "p95 ms", "max ms"]);
        for p in &class.phases {
            let mut row = vec![
                p.name.clone(),
                format!("{:.1}%", p.share * 100.0),
                format!("{:.2}", p.calls.mean),
            ];
            row.extend(time_cells(&p.time));
            t.add_row(row);
        }
        out.push_str(&format!("{t}\n"));
    }
    if !class.store.is_empty() {
        let mut t = table(&["store calls/req", "mean", "p50", "p95", "max", "p50 ms"]);
        for s in &class.store {
            let mut row = vec![s.method.clone()];
            row.extend(count_cells(&s.calls));
            row.push(ms(s.time.p50_us));
            t.add_row(row);
        }
        let mut total = vec!["(total)".to_owned()];
        total.extend(count_cells(&class.store_calls));
        total.push(class.store_time.map_or_else(String::new, |t| ms(t.p50_us)));
        t.add_row(total);
        out.push_str(&format!("{t}\n"));
    }
    if !class.counters.is_empty() || !class.timers.is_empty() {
        let mut t = table(&["per request", "mean", "p50", "p95", "max"]);
        for c in &class.counters {
            let mut row = vec![c.name.clone()];
            row.extend(count_cells(&c.per_request));
            t.add_row(row);
        }
        for timer in &class.timers {
            let s = &timer.per_request;
            t.add_row(vec![
                format!("{} (ms)", timer.name),
                ms(s.mean_us as u64),
                ms(s.p50_us),
                ms(s.p95_us),
                ms(s.max_us),
            ]);
        }
        out.push_str(&format!("{t}\n"));
    }
    if top > 0 && !class.slowest.is_empty() {
        out.push_str("slowest:\n");
        for slow in class.slowest.iter().take(top) {
            let id = if slow.request_id.is_empty() {
                "(no id)"
            } else {
                &slow.request_id
            };
            out.push_str(&format!("  {:>10} ms  {id}\n", ms(slow.elapsed_us)));
        }
    }
    out
}

/// A suspect's correlation as text: `0.98`, or `-` when there is none.
pub fn rho_text(suspect: &Suspect) -> String {
    suspect
        .rho
        .map_or_else(|| "-".to_owned(), |r| format!("{r:.2}"))
}

/// The N+1 suspects as one table, or a line saying there are none.
pub fn suspects_table(suspects: &[Suspect]) -> String {
    if suspects.is_empty() {
        return "== N+1 suspects: none\n".to_owned();
    }
    let mut t = table(&[
        "class", "key", "requests", "p50", "p95", "max", "rho", "size", "why",
    ]);
    for s in suspects {
        t.add_row(vec![
            s.endpoint.clone(),
            s.key.clone(),
            s.requests.to_string(),
            s.calls.p50.to_string(),
            s.calls.p95.to_string(),
            s.calls.max.to_string(),
            rho_text(s),
            s.size_key.clone().unwrap_or_else(|| "-".to_owned()),
            s.why.join("; "),
        ]);
    }
    for text in [1, 7, 8] {
        if let Some(column) = t.column_mut(text) {
            column.set_cell_alignment(CellAlignment::Left);
        }
    }
    format!(
        "== N+1 suspects: {} (calls per request; rho: rank correlation with the size)\n{t}\n",
        suspects.len()
    )
}

/// Every class as text tables, separated by blank lines, then the N+1
/// suspects.
pub fn write_table(out: &mut impl Write, summary: &Summary, top: usize) -> std::io::Result<()> {
    if summary.classes.is_empty() {
        writeln!(out, "no perf_trace lines counted")?;
        return Ok(());
    }
    for class in &summary.classes {
        write!(out, "{}", class_table(class, top))?;
        writeln!(out)?;
    }
    write!(out, "{}", suspects_table(&summary.suspects))
}

/// The summary as one JSON document.
pub fn write_json(out: &mut impl Write, summary: &Summary) -> std::io::Result<()> {
    serde_json::to_writer_pretty(&mut *out, summary)?;
    writeln!(out)
}

fn count_rows(prefix: [&str; 3], s: &CountStats) -> Vec<[String; 5]> {
    let [class, section, key] = prefix;
    [
        ("mean", format!("{}", s.mean)),
        ("p50", s.p50.to_string()),
        ("p95", s.p95.to_string()),
        ("max", s.max.to_string()),
    ]
    .into_iter()
    .map(|(stat, v)| row(class, section, key, stat, v))
    .collect()
}

fn time_rows(prefix: [&str; 3], s: &TimeStats) -> Vec<[String; 5]> {
    let [class, section, key] = prefix;
    [
        ("requests", s.requests_with),
        ("sum_us", s.sum_us),
        ("p50_us", s.p50_us),
        ("p95_us", s.p95_us),
        ("p99_us", s.p99_us),
        ("max_us", s.max_us),
    ]
    .into_iter()
    .map(|(stat, v)| row(class, section, key, stat, v))
    .collect()
}

/// One CSV row: `endpoint,section,key,stat,value`.
fn row(class: &str, section: &str, key: &str, stat: &str, value: impl ToString) -> [String; 5] {
    [
        class.into(),
        section.into(),
        key.into(),
        stat.into(),
        value.to_string(),
    ]
}

/// The summary as CSV: `endpoint,section,key,stat,value`, one row per figure.
pub fn write_csv(out: &mut impl Write, summary: &Summary) -> anyhow::Result<()> {
    let mut w = csv::Writer::from_writer(out);
    w.write_record(["endpoint", "section", "key", "stat", "value"])?;
    for c in &summary.classes {
        let e = c.endpoint.as_str();
        let mut rows = vec![row(e, "requests", "", "count", c.requests)];
        for (status, n) in &c.statuses {
            rows.push(row(e, "status", status, "count", n));
        }
        rows.extend(time_rows([e, "elapsed", "elapsed_us"], &c.elapsed));
        for p in &c.phases {
            rows.push(row(e, "phase", &p.name, "share", p.share));
            rows.extend(count_rows([e, "phase_calls", &p.name], &p.calls));
            rows.extend(time_rows([e, "phase_time", &p.name], &p.time));
        }
        for s in &c.store {
            rows.extend(count_rows([e, "store_calls", &s.method], &s.calls));
            rows.extend(time_rows([e, "store_time", &s.method], &s.time));
        }
        rows.extend(count_rows([e, "store_calls", "(total)"], &c.store_calls));
        for counter in &c.counters {
            rows.extend(count_rows(
                [e, "counter", &counter.name],
                &counter.per_request,
            ));
        }
        for timer in &c.timers {
            rows.extend(time_rows([e, "timer", &timer.name], &timer.per_request));
        }
        for slow in &c.slowest {
            rows.push(row(
                e,
                "slowest",
                &slow.request_id,
                "elapsed_us",
                slow.elapsed_us,
            ));
        }
        for row in rows {
            w.write_record(&row)?;
        }
    }
    for s in &summary.suspects {
        let (e, key) = (s.endpoint.as_str(), s.key.as_str());
        let mut rows = count_rows([e, "suspect", key], &s.calls);
        if let Some(rho) = s.rho {
            rows.push(row(e, "suspect", key, "rho", rho));
        }
        if let Some(size) = &s.size_key {
            rows.push(row(e, "suspect", key, "size_key", size));
        }
        rows.push(row(e, "suspect", key, "why", s.why.join("; ")));
        for row in rows {
            w.write_record(&row)?;
        }
    }
    w.flush()?;
    Ok(())
}
