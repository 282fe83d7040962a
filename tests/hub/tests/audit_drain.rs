//! SIGTERM under load: the Hub stops taking requests, drains its audit
//! queue within the deadline and logs the outcome once, and every record it
//! accepted is either in `audit_events` or counted as lost.

mod hub_support;

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use hub_support::process::{
    free_port, get_head, secret_file, seed_in, serve, try_exchange, RunningHub,
};

/// One GET on a fresh connection; the status code, or `None` when the Hub
/// refused or closed the connection (it is shutting down).
fn get_status(addr: &str, path: &str, token: &str) -> Option<u16> {
    let response = try_exchange(addr, &get_head(path, token)).ok()?;
    response.get(9..12)?.parse().ok()
}

#[test]
fn sigterm_under_load_writes_or_counts_every_accepted_audit_record() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("hub.db");
    let doc = seed_in(dir.path(), 40, "drain");
    let port = free_port();
    let mut command = serve(&db);
    command
        .arg("--session-secret-file")
        .arg(secret_file(dir.path()))
        .args(["--port", &port.to_string(), "--shutdown-timeout", "5s"])
        // Every list decides afresh: a response-cache hit makes no decision.
        .env("SCION_CACHE_ENABLED", "false");
    let mut hub = RunningHub::start(command, &[port]);
    let addr = format!("127.0.0.1:{port}");
    let started = Instant::now();

    let stop = Arc::new(AtomicBool::new(false));
    let answered = Arc::new(AtomicU64::new(0));
    let path = format!("/api/v1/projects/{}/agents", doc.project_id);
    let users: Vec<_> = (0..4)
        .map(|_| {
            let (stop, answered) = (stop.clone(), answered.clone());
            let (addr, path, token) = (addr.clone(), path.clone(), doc.member_token.clone());
            std::thread::spawn(move || {
                while !stop.load(Ordering::Relaxed) {
                    match get_status(&addr, &path, &token) {
                        Some(200) => {
                            answered.fetch_add(1, Ordering::Relaxed);
                        }
                        Some(other) => panic!("unexpected status {other}"),
                        None => std::thread::sleep(Duration::from_millis(5)),
                    }
                }
            })
        })
        .collect();
    while answered.load(Ordering::Relaxed) < 20 {
        assert!(started.elapsed() < Duration::from_secs(60), "no load");
        std::thread::sleep(Duration::from_millis(10));
    }
    hub.terminate();
    let status = hub.wait_for_exit(Duration::from_secs(30));
    stop.store(true, Ordering::Relaxed);
    for user in users {
        user.join().unwrap();
    }
    assert!(status.success(), "{status:?}");

    let log = hub.text();
    let outcomes: Vec<serde_json::Value> = hub
        .lines()
        .into_iter()
        .filter(|l| l["msg"] == "audit drained" || l["msg"] == "audit records lost at shutdown")
        .collect();
    assert_eq!(outcomes.len(), 1, "logged once: {log}");
    let outcome = &outcomes[0];
    let figure = |key: &str| {
        outcome[key]
            .as_u64()
            .unwrap_or_else(|| panic!("{key}: {outcome}"))
    };
    let (accepted, flushed, lost) = (figure("accepted"), figure("flushed"), figure("lost"));
    assert_eq!(accepted, flushed + lost, "{outcome}");
    // One decision per listed agent at least, for every answered list.
    assert!(
        accepted >= 40 * answered.load(Ordering::Relaxed),
        "{outcome}"
    );
    // A list's decisions are stored as one row per question, counted.
    let decisions: u64 = rusqlite::Connection::open(&db)
        .unwrap()
        .query_row(
            "SELECT COALESCE(SUM(allowed + denied + errors), 0) FROM audit_events",
            [],
            |r| r.get(0),
        )
        .unwrap();
    assert_eq!(
        decisions, flushed,
        "the table holds exactly what was flushed"
    );
}
