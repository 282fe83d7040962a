//! SIGTERM under load: the Hub stops taking requests, drains its audit
//! queue within the deadline and logs the outcome once, and every record it
//! accepted is either in `audit_events` or counted as lost.

mod served_process;

use std::io::{Read, Write};
use std::net::TcpStream;
use std::process::{Command, Stdio};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use hub_example::seed::{seed, SeedOptions};
use served_process::{free_port, KillOnDrop};

const SECRET: &str = "bench-secret-1";

/// One GET on a fresh connection; the status code, or `None` when the Hub
/// refused or closed the connection (it is shutting down).
fn get_status(addr: &str, path: &str, token: &str) -> Option<u16> {
    let mut stream = TcpStream::connect(addr).ok()?;
    stream
        .set_read_timeout(Some(Duration::from_secs(10)))
        .ok()?;
    write!(
        stream,
        "GET {path} HTTP/1.1\r\nHost: {addr}\r\nAuthorization: Bearer {token}\r\nConnection: close\r\n\r\n"
    )
    .ok()?;
    let mut response = String::new();
    stream.read_to_string(&mut response).ok()?;
    response.get(9..12)?.parse().ok()
}

#[test]
fn sigterm_under_load_writes_or_counts_every_accepted_audit_record() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("hub.db");
    let doc = seed(&SeedOptions {
        db_path: db.clone(),
        session_secret: SECRET.into(),
        agents: 40,
        project_slug: "drain".into(),
        rand_seed: 42,
    })
    .unwrap();
    let secret_file = dir.path().join("secret");
    std::fs::write(&secret_file, format!("{SECRET}\n")).unwrap();
    let port = free_port();
    let mut child = KillOnDrop(
        Command::new(env!("CARGO_BIN_EXE_hub-example"))
            .args([
                "serve",
                "--db",
                db.to_str().unwrap(),
                "--session-secret-file",
                secret_file.to_str().unwrap(),
                "--port",
                &port.to_string(),
                "--shutdown-timeout",
                "5s",
            ])
            // Every list decides afresh: a response-cache hit makes no decision.
            .env("SCION_CACHE_ENABLED", "false")
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .unwrap(),
    );
    let mut stdout = child.0.stdout.take().unwrap();
    let log = std::thread::spawn(move || {
        let mut text = String::new();
        stdout.read_to_string(&mut text).unwrap();
        text
    });
    let addr = format!("127.0.0.1:{port}");
    let started = Instant::now();
    while TcpStream::connect(&addr).is_err() {
        assert!(
            started.elapsed() < Duration::from_secs(30),
            "hub did not start"
        );
        std::thread::sleep(Duration::from_millis(50));
    }

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
    let term = Command::new("kill")
        .args(["-TERM", &child.0.id().to_string()])
        .status()
        .unwrap();
    assert!(term.success());
    let sent = Instant::now();
    let status = loop {
        if let Some(status) = child.0.try_wait().unwrap() {
            break status;
        }
        assert!(
            sent.elapsed() < Duration::from_secs(30),
            "the Hub was still running 30 s after SIGTERM"
        );
        std::thread::sleep(Duration::from_millis(20));
    };
    stop.store(true, Ordering::Relaxed);
    for user in users {
        user.join().unwrap();
    }
    assert!(status.success(), "{status:?}");

    let log = log.join().unwrap();
    let outcomes: Vec<serde_json::Value> = log
        .lines()
        .map(|l| serde_json::from_str::<serde_json::Value>(l).unwrap())
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
