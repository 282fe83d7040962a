//! `serve` facing faults outside the Hub: standard output that cannot be
//! written, and a database file that is missing, read-only or not a
//! database. The Hub keeps serving in the first case and reports it once;
//! it refuses to start in the others, with one line and a non-zero exit.

use std::io::{Read, Write};
use std::net::TcpStream;
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use hub_example::seed::{seed, SeedOptions};

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

fn free_port() -> u16 {
    let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    l.local_addr().unwrap().port()
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
