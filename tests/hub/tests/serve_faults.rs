//! `serve` facing faults outside the Hub: standard output that cannot be
//! written, a database file that is missing, read-only or not a database,
//! and SIGTERM while clients hold connections open. The Hub keeps serving
//! in the first case and reports it once; it refuses to start in the
//! second, with one line and a non-zero exit; in the third it ends its
//! event streams, cuts off what outlives the shutdown deadline, logs both
//! ends of the shutdown and exits.

mod hub_support;

use std::io::{Read, Write};
use std::net::TcpStream;
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::Duration;

use hub_support::process::{
    exchange, first_agent, free_port, read_until_closed, secret_file, seed_in, serve,
    wait_until_listening, RunningHub,
};
use hub_support::SECRET;

fn seeded(dir: &Path, agents: u32) -> hub_example::seed::SeedDocument {
    seed_in(dir, agents, "faults")
}

/// `serve` on the database `db`, tracing on.
fn traced_serve(db: &Path) -> Command {
    let mut command = serve(db);
    command.env("SCION_SERVER_HUB_PERFTRACE", "true");
    command
}

/// `GET path`, with `token` if any, asking for the perf headers.
fn traced_get(addr: &str, path: &str, token: Option<&str>) -> String {
    let auth = token
        .map(|t| format!("Authorization: Bearer {t}\r\n"))
        .unwrap_or_default();
    exchange(
        addr,
        &format!("GET {path} HTTP/1.1\r\n{auth}X-Scion-Perf-Trace: 1"),
    )
}

#[test]
fn a_closed_standard_output_is_reported_once_and_the_hub_keeps_serving() {
    let dir = tempfile::tempdir().unwrap();
    let doc = seeded(dir.path(), 5);
    let port = free_port();
    let mut child = traced_serve(&dir.path().join("hub.db"))
        .args(["--session-secret", SECRET, "--port", &port.to_string()])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    // Nobody will ever read what the Hub writes: every write fails.
    drop(child.stdout.take());

    let addr = format!("127.0.0.1:{port}");
    wait_until_listening(&addr);
    let list = format!("/api/v1/projects/{}/agents", doc.project_id);
    for _ in 0..10 {
        let health = traced_get(&addr, "/healthz", None);
        assert!(health.starts_with("HTTP/1.1 200"), "{health}");
        let agents = traced_get(&addr, &list, Some(&doc.admin_token));
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
        let out = traced_serve(db)
            .args([
                "--session-secret",
                SECRET,
                "--port",
                &free_port().to_string(),
            ])
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

#[test]
fn sigterm_ends_streams_cuts_off_slow_clients_at_the_deadline_and_exits() {
    let dir = tempfile::tempdir().unwrap();
    let doc = seeded(dir.path(), 5);
    let port = free_port();
    let mut command = traced_serve(&dir.path().join("hub.db"));
    command
        .arg("--session-secret-file")
        .arg(secret_file(dir.path()))
        .args(["--port", &port.to_string()])
        .args(["--shutdown-timeout", "1s", "--request-timeout", "60s"]);
    let mut hub = RunningHub::start(command, &[port]);
    let addr = format!("127.0.0.1:{port}");
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

    hub.terminate();
    let status = hub.wait_for_exit(Duration::from_secs(20));
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

    let log = hub.text();
    let lines = hub.lines();
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
