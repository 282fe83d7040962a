//! The report page in headless Chromium: it renders its charts, logs no
//! console error, and its screenshot is written next to the test binaries
//! (`report.png` under the target's temporary directory).

mod fixtures;

use std::path::Path;
use std::process::Command;
use std::time::Duration;

use fantoccini::Locator;
use fixtures::{arg, sample_text, write, HUB};
use headless_chromium::{Browser, BrowserPaths};
use perf_trace_cli::sample::Profile;
use serde_json::Value;

fn write_logs(dir: &Path) -> [String; 2] {
    [("hub.log", HUB), ("orders.log", Profile::Plain)].map(|(name, profile)| {
        arg(&write(dir, name, &sample_text(profile, 600, 1, 0, 0))).to_owned()
    })
}

#[tokio::test(flavor = "multi_thread")]
async fn the_report_page_renders_in_chromium_without_console_errors() {
    let Some(paths) =
        BrowserPaths::for_test("the_report_page_renders_in_chromium_without_console_errors")
    else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let [hub, orders] = write_logs(dir.path());
    let page = dir.path().join("report.html");
    let status = Command::new(env!("CARGO_BIN_EXE_perf-trace"))
        .args(["report", &hub, &orders, "-o", arg(&page), "--top", "3"])
        .status()
        .unwrap();
    assert!(status.success());

    let browser = Browser::launch(&paths, Duration::from_secs(30))
        .await
        .expect("start Chromium");
    let client = browser.client();
    client.set_window_size(1280, 1500).await.unwrap();
    client
        .goto(&format!("file://{}", page.display()))
        .await
        .unwrap();
    assert_eq!(client.title().await.unwrap(), "perf_trace report");

    let headings = client.find_all(Locator::Css("h2")).await.unwrap();
    let mut names = Vec::new();
    for h in &headings {
        names.push(h.text().await.unwrap());
    }
    assert_eq!(
        names,
        [
            "agents.global.sorted",
            "agents.project.legacy",
            "orders.get",
            "orders.list",
            "sse.events"
        ]
    );
    // Every chart is laid out at its size: one phase bar and one histogram
    // per class, drawn (not an empty box).
    for (css, count, width) in [
        ("svg.bar", 5, 640.0),
        ("svg.hist", 5, 640.0),
        ("svg.spread", 9, 240.0),
    ] {
        let charts = client.find_all(Locator::Css(css)).await.unwrap();
        assert_eq!(charts.len(), count, "{css}");
        let (_, _, w, h) = charts[0].rectangle().await.unwrap();
        assert!((w - width).abs() < 1.0 && h > 10.0, "{css}: {w}x{h}");
    }
    let bars = client
        .find_all(Locator::Css("svg.hist rect"))
        .await
        .unwrap();
    let (_, _, _, tallest) = {
        let mut tallest = (0.0, 0.0, 0.0, 0.0);
        for bar in bars.iter().take(30) {
            let r = bar.rectangle().await.unwrap();
            if r.3 > tallest.3 {
                tallest = r;
            }
        }
        tallest
    };
    assert!(
        tallest > 100.0,
        "the histogram's tallest bar is drawn: {tallest}"
    );

    let log = browser.console_entries().await.expect("the browser log");
    let errors: Vec<&Value> = log
        .iter()
        .filter(|entry| entry["level"] == "SEVERE")
        .collect();
    assert!(errors.is_empty(), "console errors: {errors:?}");

    // The screenshot shows the Hub's richest class.
    let anchored = format!("file://{}#agents.project.legacy", page.display());
    client.goto(&anchored).await.unwrap();
    let png = client.screenshot().await.unwrap();
    assert!(png.starts_with(b"\x89PNG"), "a PNG");
    let shot = Path::new(env!("CARGO_TARGET_TMPDIR")).join("report.png");
    std::fs::write(&shot, png).unwrap();
    browser.close().await;
}
