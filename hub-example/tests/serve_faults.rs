//! `serve` facing faults outside the Hub: standard output that cannot be
//! written, a database file that is missing, read-only or not a database,
//! and SIGTERM while clients hold connections open. The Hub keeps serving
//! in the first case and reports it once; it refuses to start in the
//! second, with one line and a non-zero exit; in the third it ends its
//! event streams, cuts off what outlives the shutdown deadline, logs both
//! ends of the shutdown and exits.

mod served_process;

use std::io::{Read, Write};
use std::net::TcpStream;
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use hub_example::seed::{seed, SeedOptions};
use served_process::{first_agent, free_port, KillOnDrop};

const SECRET: &str = "bench-secret-1";

fn hub_example() -> Command {
    Command::new(env!("CARGO_BIN_EXE_hub-example"))
}

fn seeded(dir: &Path, agents: u32) -> hub_example::seed::SeedDocument {
    seed(&SeedOptions {
        db_path: dir.join("hub.db"),
        session_secret: SECRET.into(),
        agents,
        project_slug: "faults".into(),
        rand_seed: 42,
    })
    .unwrap()
}

fn http_get(addr: &str, path: &str, token: Option<&str>) -> String {
    let mut stream = TcpStream::connect(addr).unwrap();
    let auth = token
        .map(|t| format!("Authorization: Bearer {t}\r\n"))
        .unwrap_or_default();
    write!(
        stream,
        "GET {path} HTTP/1.1\r\nHost: {addr}\r\n{auth}X-Scion-Perf-Trace: 1\r\nConnection: close\r\n\r\n"
    )
    .unwrap();
    let mut response = String::new();
    stream.read_to_string(&mut response).unwrap();
    response
}

#[test]
fn a_closed_standard_output_is_reported_once_and_the_hub_keeps_serving() {
    let dir = tempfile::tempdir().unwrap();
    let doc = seeded(dir.path(), 5);
    let port = free_port();
    let mut child = hub_example()
        .args([
            "serve",
            "--db",
            dir.path().join("hub.db").to_str().unwrap(),
            "--session-secret",
            SECRET,
            "--port",
            &port.to_string(),
        ])
        .env("SCION_SERVER_HUB_PERFTRACE", "true")
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    // Nobody will ever read what the Hub writes: every write fails.
    drop(child.stdout.take());

    let addr = format!("127.0.0.1:{port}");
    let started = Instant::now();
    while TcpStream::connect(&addr).is_err() {
        assert!(
            started.elapsed() < Duration::from_secs(30),
            "hub did not start"
        );
        std::thread::sleep(Duration::from_millis(50));
    }
    let list = format!("/api/v1/projects/{}/agents", doc.project_id);
    for _ in 0..10 {
        let health = http_get(&addr, "/healthz", None);
        assert!(health.starts_with("HTTP/1.1 200"), "{health}");
        let agents = http_get(&addr, &list, Some(&doc.admin_token));
        assert!(agents.starts_with("HTTP/1.1 200"), "{agents}");
        // Headers do not depend on the log: the admin still gets them.
        assert!(agents.contains("x-scion-perf-endpoint: agents.project.legacy"));
    }

    child.kill().unwrap();
    let mut stderr = String::new();
    child
        .stderr
        .take()
        .unwrap()
        .read_to_string(&mut stderr)
        .unwrap();
    child.wait().unwrap();
    let lines: Vec<&str> = stderr.lines().collect();
    assert_eq!(lines.len(), 1, "{stderr}");
    let report: serde_json::Value = serde_json::from_str(lines[0]).unwrap();
    assert_eq!(report["level"], "ERROR");
    assert_eq!(
        report["msg"],
        "log lines cannot be written; further failures are not reported"
    );
    assert!(
        report["error"].as_str().unwrap().contains("pipe"),
        "{report}"
    );
    assert!(!stderr.contains(SECRET) && !stderr.contains(&doc.admin_token));
}

fn refused_at_start(db: &Path, expected: &str) {
    let (code, stdout, stderr) = {
        let out = hub_example()
            .args([
                "serve",
                "--db",
                db.to_str().unwrap(),
                "--session-secret",
                SECRET,
                "--port",
                &free_port().to_string(),
            ])
            .env("SCION_SERVER_HUB_PERFTRACE", "true")
            .output()
            .unwrap();
        (
            out.status.code(),
            String::from_utf8_lossy(&out.stdout).into_owned(),
            String::from_utf8_lossy(&out.stderr).into_owned(),
        )
    };
    assert_eq!(code, Some(1), "{stderr}");
    assert!(stdout.is_empty(), "{stdout}");
    assert_eq!(stderr.lines().count(), 1, "{stderr}");
    assert!(stderr.starts_with("hub-example: error: "), "{stderr}");
    assert!(stderr.contains(expected), "{stderr}");
    assert!(!stderr.contains("panicked") && !stderr.contains(SECRET));
}

#[test]
fn a_missing_read_only_or_foreign_database_file_stops_the_start() {
    let dir = tempfile::tempdir().unwrap();
    refused_at_start(&dir.path().join("absent.db"), "does not exist");
    assert!(!dir.path().join("absent.db").exists());

    seeded(dir.path(), 2);
    let db = dir.path().join("hub.db");
    let mut permissions = std::fs::metadata(&db).unwrap().permissions();
    permissions.set_readonly(true);
    std::fs::set_permissions(&db, permissions).unwrap();
    refused_at_start(&db, "is read-only");

    let foreign = dir.path().join("notes.db");
    std::fs::write(
        &foreign,
        "these are not the pages of a database\n".repeat(200),
    )
    .unwrap();
    refused_at_start(&foreign, "notes.db");
}

/// Reads a raw connection until the Hub closes it, for at most `limit` (a
/// liveness bound); returns what came and whether it closed.
fn read_until_closed(stream: &mut TcpStream, limit: Duration) -> (String, bool) {
    stream.set_read_timeout(Some(limit)).unwrap();
    let mut bytes = Vec::new();
    let closed = stream.read_to_end(&mut bytes).is_ok();
    (String::from_utf8_lossy(&bytes).into_owned(), closed)
}

#[test]
fn sigterm_ends_streams_cuts_off_slow_clients_at_the_deadline_and_exits() {
    let dir = tempfile::tempdir().unwrap();
    let doc = seeded(dir.path(), 5);
    let secret_file = dir.path().join("secret");
    std::fs::write(&secret_file, format!("{SECRET}\n")).unwrap();
    let port = free_port();
    let mut child = KillOnDrop(
        hub_example()
            .args([
                "serve",
                "--db",
                dir.path().join("hub.db").to_str().unwrap(),
                "--session-secret-file",
                secret_file.to_str().unwrap(),
                "--port",
                &port.to_string(),
                "--shutdown-timeout",
                "1s",
                "--request-timeout",
                "60s",
            ])
            .env("SCION_SERVER_HUB_PERFTRACE", "true")
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
    let agent = first_agent(&dir.path().join("hub.db"), &doc.project_id);

    // A body that will never be complete.
    let mut slow_body = TcpStream::connect(&addr).unwrap();
    write!(
        slow_body,
        "PUT /api/v1/agents/{agent}/status HTTP/1.1\r\nHost: {addr}\r\nAuthorization: Bearer {}\r\nContent-Length: 100\r\n\r\n{{",
        doc.owner_token
    )
    .unwrap();
    // An event stream, open and acknowledged.
    let mut stream = TcpStream::connect(&addr).unwrap();
    write!(
        stream,
        "GET /events?sub=projects.{}.agents.%3E HTTP/1.1\r\nHost: {addr}\r\nAuthorization: Bearer {}\r\n\r\n",
        doc.project_id, doc.member_token
    )
    .unwrap();
    let mut head = [0u8; 12];
    stream.read_exact(&mut head).unwrap();
    assert_eq!(&head, b"HTTP/1.1 200");
    // A head that will never be complete.
    let mut half_head = TcpStream::connect(&addr).unwrap();
    write!(half_head, "GET /healthz HTTP/1.1\r\nHost: {addr}\r\n").unwrap();
    std::thread::sleep(Duration::from_millis(200));

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
        if sent.elapsed() > Duration::from_secs(20) {
            panic!("the Hub was still running 20 s after SIGTERM");
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    assert!(status.success(), "{status:?}");

    let (events, closed) = read_until_closed(&mut stream, Duration::from_secs(5));
    assert!(closed);
    assert!(
        events.contains("event: end\ndata: {\"reason\":\"shutdown\"}"),
        "{events}"
    );
    for (name, conn) in [
        ("half-sent head", &mut half_head),
        ("slow body", &mut slow_body),
    ] {
        let (_, closed) = read_until_closed(conn, Duration::from_secs(5));
        assert!(closed, "{name} still open");
    }

    let log = log.join().unwrap();
    let lines: Vec<serde_json::Value> = log
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    let find = |msg: &str| {
        lines
            .iter()
            .find(|l| l["msg"] == msg)
            .unwrap_or_else(|| panic!("no {msg} line: {log}"))
    };
    let start = find("shutdown started");
    assert_eq!(start["requests_in_flight"], 2, "{start}");
    assert_eq!(start["event_streams"], 1, "{start}");
    assert_eq!(start["deadline_ms"], 1000, "{start}");
    let end = find("shutdown finished");
    assert_eq!(end["cut_off_requests"], 1, "{end}");
    assert_eq!(end["cut_off_connections"], 1, "{end}");
    // The audit queue is drained once no request is left, then the
    // shutdown's end is the last line.
    let last: Vec<&serde_json::Value> = lines.iter().rev().take(2).collect();
    assert_eq!(last[1]["msg"], "audit drained", "{log}");
    assert_eq!(last[0]["msg"], "shutdown finished", "{log}");
    // One line per request: the list, the PUT cut off, the stream's
    // connect and close lines (one request id).
    let perf: Vec<&serde_json::Value> = lines.iter().filter(|l| l["msg"] == "perf_trace").collect();
    assert_eq!(
        perf.iter().filter(|l| l["method"] == "PUT").count(),
        1,
        "{log}"
    );
    let stages: Vec<&str> = perf
        .iter()
        .filter_map(|l| l["sse_stage"].as_str())
        .collect();
    assert_eq!(stages, ["connect", "close"], "{log}");
    assert!(!log.contains(SECRET) && !log.contains(&doc.owner_token));
}
