//! The report page's charts as inline SVG: drawn on the server side, so the
//! page needs no script and loads nothing.

use std::fmt::Write as _;

use crate::dist::TimeDist;
use crate::output::ms;
use crate::summary::ClassSummary;

/// Phase colours, in turn; the time outside every phase is grey.
pub const PALETTE: &[&str] = &[
    "#4e79a7", "#f28e2b", "#e15759", "#76b7b2", "#59a14f", "#edc948", "#b07aa1", "#ff9da7",
    "#9c755f", "#86bcb6", "#d37295", "#a0cbe8",
];

/// Grey for the time no phase accounts for.
pub const OUTSIDE: &str = "#cccccc";

/// Escapes text for HTML and SVG.
pub fn escape(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            c => out.push(c),
        }
    }
    out
}

/// A phase's colour by its place in the class's phase list.
pub fn phase_colour(index: usize) -> &'static str {
    PALETTE[index % PALETTE.len()]
}

/// One bar of the class's elapsed time split by phase share, the rest grey.
/// Phases that nest add up to more than the whole: then the bar is scaled
/// to their sum and has no grey.
pub fn phase_bar(class: &ClassSummary) -> String {
    let (width, height) = (640.0, 26.0);
    let total: f64 = class.phases.iter().map(|p| p.share).sum::<f64>().max(1.0);
    let mut svg = format!(
        r#"<svg class="bar" role="img" aria-label="time by phase" width="{width}" height="{height}" viewBox="0 0 {width} {height}">"#
    );
    let mut x = 0.0;
    for (i, p) in class.phases.iter().enumerate() {
        let w = p.share / total * width;
        let _ = write!(
            svg,
            r#"<rect x="{x:.2}" y="0" width="{w:.2}" height="{height}" fill="{}"><title>{}: {:.1}%</title></rect>"#,
            phase_colour(i),
            escape(&p.name),
            p.share * 100.0
        );
        x += w;
    }
    if x < width - 0.01 {
        let _ = write!(
            svg,
            r#"<rect x="{x:.2}" y="0" width="{:.2}" height="{height}" fill="{OUTSIDE}"><title>outside phases</title></rect>"#,
            width - x
        );
    }
    svg.push_str("</svg>");
    svg
}

/// A latency histogram over log-spaced bins, with the first, middle and
/// last bounds labelled in milliseconds.
pub fn latency_histogram(elapsed: &TimeDist) -> String {
    let bins = elapsed.log_bins(30);
    let (width, height, base) = (640.0, 150.0, 130.0);
    let mut svg = format!(
        r#"<svg class="hist" role="img" aria-label="latency histogram" width="{width}" height="{height}" viewBox="0 0 {width} {height}">"#
    );
    let top = bins.iter().map(|b| b.1).max().unwrap_or(0).max(1) as f64;
    let slot = width / bins.len().max(1) as f64;
    let mut lower = 0;
    for (i, &(upper, n)) in bins.iter().enumerate() {
        let h = n as f64 / top * (base - 10.0);
        let _ = write!(
            svg,
            r##"<rect x="{:.2}" y="{:.2}" width="{:.2}" height="{h:.2}" fill="#4e79a7"><title>{}–{} ms: {n} requests</title></rect>"##,
            i as f64 * slot + 1.0,
            base - h,
            (slot - 2.0).max(1.0),
            ms(lower),
            ms(upper)
        );
        lower = upper;
    }
    let _ = write!(
        svg,
        r##"<line x1="0" y1="{base}" x2="{width}" y2="{base}" stroke="#555"/>"##
    );
    if let Some(last) = bins.last() {
        let middle = bins[bins.len() / 2 - usize::from(bins.len() > 1)].0;
        for (x, anchor, us) in [
            (0.0, "start", elapsed.quantile(0.0)),
            (width / 2.0, "middle", middle),
            (width, "end", last.0),
        ] {
            let _ = write!(
                svg,
                r#"<text x="{x}" y="{}" font-size="11" text-anchor="{anchor}">{} ms</text>"#,
                base + 15.0,
                ms(us)
            );
        }
    }
    svg.push_str("</svg>");
    svg
}

/// One store method's calls per request as a range: a line from the
/// smallest to the largest, a box from the median to the 95th percentile,
/// on a scale shared by the class (`scale_max` calls across the width).
pub fn spread(min: u64, p50: u64, p95: u64, max: u64, scale_max: u64) -> String {
    let (width, height) = (240.0, 16.0);
    let x = |v: u64| 4.0 + v as f64 / scale_max.max(1) as f64 * (width - 8.0);
    format!(
        r##"<svg class="spread" role="img" aria-label="calls per request: min {min}, median {p50}, p95 {p95}, max {max}" width="{width}" height="{height}" viewBox="0 0 {width} {height}"><line x1="{:.2}" y1="8" x2="{:.2}" y2="8" stroke="#555"/><rect x="{:.2}" y="3" width="{:.2}" height="10" fill="#f28e2b"/><line x1="{:.2}" y1="1" x2="{:.2}" y2="15" stroke="#000" stroke-width="2"/></svg>"##,
        x(min),
        x(max),
        x(p50),
        (x(p95) - x(p50)).max(2.0),
        x(p50),
        x(p50)
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn escapes_markup() {
        assert_eq!(
            escape(r#"<a href="x">&'"#),
            "&lt;a href=&quot;x&quot;&gt;&amp;&#39;"
        );
    }

    #[test]
    fn histogram_has_a_bar_per_bin_and_labels() {
        let mut d = TimeDist::default();
        for us in [1000, 2000, 4000, 8000] {
            d.record(us);
        }
        let svg = latency_histogram(&d);
        assert_eq!(svg.matches("<rect").count(), 30);
        assert!(svg.contains("1.00 ms") && svg.contains("8.00 ms"), "{svg}");
        assert!(svg.starts_with("<svg") && svg.ends_with("</svg>"));
    }
}
