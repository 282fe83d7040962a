//! Two `serve` processes on one PostgreSQL database: an agent's status
//! written through one reaches an event stream open on the other, also
//! after the other's listening connection was terminated (it connects
//! again, and the stream is not dropped); and with one replica killed, the
//! other keeps serving and a client can open its stream there.
//!
//! The server is `PERF_TRACE_PG_URL`; without it the test is skipped (one
//! line on standard error says so; with `CI=true` it fails). The test seeds
//! a schema of its own and drops it.

mod served_process;

use std::io::{Read, Write};
use std::net::TcpStream;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use hub_example::seed::{seed, SeedDocument, SeedOptions};
use served_process::{free_port, KillOnDrop};

const SECRET: &str = "bench-secret-1";
const PG_URL_VAR: &str = "PERF_TRACE_PG_URL";

fn pg_url() -> Option<String> {
    match std::env::var(PG_URL_VAR) {
        Ok(url) if !url.trim().is_empty() => Some(url.trim().to_owned()),
        _ => {
            assert!(
                std::env::var("CI").map_or(true, |v| v != "true"),
                "{PG_URL_VAR} is not set and CI=true: CI runs the PostgreSQL tests"
            );
            let _ = writeln!(
                std::io::stderr(),
                "PostgreSQL tests skipped: {PG_URL_VAR} is not set \
                 (set it to a server's URL, e.g. postgres://postgres@127.0.0.1:5432/test)"
            );
            None
        }
    }
}

/// Runs `sql` on the server (the test is synchronous: no runtime here).
fn admin_query(url: &str, sql: &str) -> Vec<postgres::Row> {
    let mut client = postgres::Client::connect(url, postgres::NoTls).unwrap();
    client.query(sql, &[]).unwrap()
}

/// A schema of its own, dropped on drop.
struct Schema {
    server: String,
    name: String,
}

impl Schema {
    fn create(server: &str) -> Schema {
        let name = format!("hub_replicas_{}", std::process::id());
        admin_query(server, &format!("DROP SCHEMA IF EXISTS {name} CASCADE"));
        admin_query(server, &format!("CREATE SCHEMA {name}"));
        Schema {
            server: server.to_owned(),
            name,
        }
    }

    fn url(&self) -> String {
        let sep = if self.server.contains('?') { '&' } else { '?' };
        format!("{}{sep}options=-csearch_path%3D{}", self.server, self.name)
    }
}

impl Drop for Schema {
    fn drop(&mut self) {
        admin_query(
            &self.server,
            &format!("DROP SCHEMA IF EXISTS {} CASCADE", self.name),
        );
    }
}

fn replica(url: &str) -> (KillOnDrop, String) {
    let port = free_port();
    let child = Command::new(env!("CARGO_BIN_EXE_hub-example"))
        .args(["serve", "--db", url, "--session-secret", SECRET])
        .args(["--port", &port.to_string()])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let addr = format!("127.0.0.1:{port}");
    let start = Instant::now();
    while TcpStream::connect(&addr).is_err() {
        assert!(
            start.elapsed() < Duration::from_secs(30),
            "{addr} never listened"
        );
        std::thread::sleep(Duration::from_millis(50));
    }
    (KillOnDrop(child), addr)
}

fn request(addr: &str, method: &str, path: &str, token: &str, body: &str) -> String {
    let mut stream = TcpStream::connect(addr).unwrap();
    write!(
        stream,
        "{method} {path} HTTP/1.1\r\nHost: {addr}\r\nAuthorization: Bearer {token}\r\n\
         Content-Length: {}\r\nConnection: close\r\n\r\n{body}",
        body.len()
    )
    .unwrap();
    let mut response = String::new();
    stream.read_to_string(&mut response).unwrap();
    response
}

/// An open event stream on the project's agents.
struct Stream {
    stream: TcpStream,
    seen: String,
}

impl Stream {
    fn open(addr: &str, doc: &SeedDocument) -> Stream {
        let mut stream = TcpStream::connect(addr).unwrap();
        write!(
            stream,
            "GET /events?sub=projects.{}.agents.%3E HTTP/1.1\r\nHost: {addr}\r\n\
             Authorization: Bearer {}\r\n\r\n",
            doc.project_id, doc.owner_token
        )
        .unwrap();
        let mut s = Stream {
            stream,
            seen: String::new(),
        };
        assert!(s.wait_for("200 OK"), "the stream did not open: {}", s.seen);
        s
    }

    /// Reads until `needle` has come (true) or nothing more comes within a
    /// generous liveness bound (false).
    fn wait_for(&mut self, needle: &str) -> bool {
        self.stream
            .set_read_timeout(Some(Duration::from_secs(10)))
            .unwrap();
        let mut buf = [0u8; 4096];
        while !self.seen.contains(needle) {
            match self.stream.read(&mut buf) {
                Ok(0) | Err(_) => return false,
                Ok(n) => self.seen.push_str(&String::from_utf8_lossy(&buf[..n])),
            }
        }
        true
    }
}

fn put_status(addr: &str, doc: &SeedDocument, agent: &str, phase: &str) {
    let response = request(
        addr,
        "PUT",
        &format!("/api/v1/agents/{agent}/status"),
        &doc.owner_token,
        &format!(r#"{{"phase":"{phase}"}}"#),
    );
    assert!(response.starts_with("HTTP/1.1 200"), "{response}");
}

/// The backends listening for this schema's events.
fn listeners(server: &str, schema: &Schema) -> Vec<i32> {
    admin_query(
        server,
        &format!(
            "SELECT pid FROM pg_stat_activity WHERE query = 'LISTEN \"hub_events:{}\"'",
            schema.name
        ),
    )
    .iter()
    .map(|r| r.get(0))
    .collect()
}

fn wait_for_listeners(server: &str, schema: &Schema, n: usize, not: &[i32]) -> Vec<i32> {
    let start = Instant::now();
    loop {
        let pids: Vec<i32> = listeners(server, schema)
            .into_iter()
            .filter(|p| !not.contains(p))
            .collect();
        if pids.len() >= n {
            return pids;
        }
        assert!(
            start.elapsed() < Duration::from_secs(30),
            "{n} listeners never connected"
        );
        std::thread::sleep(Duration::from_millis(50));
    }
}

#[test]
fn an_event_written_on_one_replica_reaches_streams_on_the_other() {
    let Some(server) = pg_url() else { return };
    let schema = Schema::create(&server);
    let url = schema.url();
    let doc = seed(&SeedOptions {
        db_path: url.clone().into(),
        session_secret: SECRET.into(),
        agents: 4,
        project_slug: "replicas".into(),
        rand_seed: 42,
    })
    .unwrap();
    let (a, addr_a) = replica(&url);
    let (_b, addr_b) = replica(&url);
    let listening = wait_for_listeners(&server, &schema, 2, &[]);

    let list = request(
        &addr_a,
        "GET",
        &format!("/api/v1/projects/{}/agents?limit=1", doc.project_id),
        &doc.owner_token,
        "",
    );
    let agent = list
        .split("\"id\":\"")
        .nth(1)
        .and_then(|rest| rest.split('"').next())
        .unwrap()
        .to_owned();

    let mut on_b = Stream::open(&addr_b, &doc);
    put_status(&addr_a, &doc, &agent, "stopped");
    assert!(
        on_b.wait_for("\"phase\":\"stopped\""),
        "the event written on A never reached B's stream: {}",
        on_b.seen
    );

    // B's listening connection is terminated: it connects again, and the
    // stream it serves stays open and gets the next event.
    admin_query(
        &server,
        &format!(
            "SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE pid IN ({})",
            listening
                .iter()
                .map(i32::to_string)
                .collect::<Vec<_>>()
                .join(",")
        ),
    );
    wait_for_listeners(&server, &schema, 2, &listening);
    put_status(&addr_a, &doc, &agent, "running");
    assert!(
        on_b.wait_for("\"phase\":\"running\""),
        "after the reconnect the event never reached B's stream: {}",
        on_b.seen
    );

    // A is killed: B keeps serving, and A's clients can stream from B.
    drop(a);
    let list_on_b = request(
        &addr_b,
        "GET",
        &format!("/api/v1/projects/{}/agents?limit=1", doc.project_id),
        &doc.owner_token,
        "",
    );
    assert!(list_on_b.starts_with("HTTP/1.1 200"), "{list_on_b}");
    let mut moved = Stream::open(&addr_b, &doc);
    put_status(&addr_b, &doc, &agent, "error");
    assert!(moved.wait_for("\"phase\":\"error\""), "{}", moved.seen);
    assert!(on_b.wait_for("\"phase\":\"error\""), "{}", on_b.seen);
}
