//! Hub processes (`hub-process serve`, the Hub's command line) for the tests
//! that kill a replica or run two of them on one database, and what a client
//! does with them over plain HTTP/1.1: a request, an agent's status, an
//! event stream read as it comes.

use std::io::{Read, Write};
use std::net::TcpStream;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use hub_example::seed::SeedDocument;

use super::SECRET;

/// A Hub process, killed (if still running) when the test ends.
pub struct Replica {
    pub child: Child,
    /// `127.0.0.1:PORT`.
    pub addr: String,
}

impl Replica {
    /// `serve` on `db_url`; returns once it listens.
    pub fn serve(db_url: &str) -> Replica {
        Self::serve_with(db_url, &[])
    }

    /// `serve` on `db_url` with the variables `env` set; returns once it
    /// listens.
    pub fn serve_with(db_url: &str, env: &[(&str, &str)]) -> Replica {
        Self::serve_command(Command::new(env!("CARGO_BIN_EXE_hub-process")), db_url, env)
    }

    /// `serve` on `db_url` in a process whose descriptor limit, soft and
    /// hard, is `nofile` (so the Hub cannot raise it); returns once it
    /// listens.
    pub fn serve_with_descriptor_limit(db_url: &str, nofile: u64) -> Replica {
        use std::os::unix::process::CommandExt;
        let mut command = Command::new(env!("CARGO_BIN_EXE_hub-process"));
        // SAFETY: between fork and exec the closure only calls setrlimit,
        // which is async-signal-safe, and allocates nothing.
        unsafe {
            command.pre_exec(move || rlimit::setrlimit(rlimit::Resource::NOFILE, nofile, nofile));
        }
        Self::serve_command(command, db_url, &[])
    }

    fn serve_command(mut command: Command, db_url: &str, env: &[(&str, &str)]) -> Replica {
        let port = std::net::TcpListener::bind("127.0.0.1:0")
            .unwrap()
            .local_addr()
            .unwrap()
            .port();
        let child = command
            .args(["serve", "--db", db_url, "--session-secret", SECRET])
            .args(["--port", &port.to_string()])
            .envs(env.iter().copied())
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
        Replica { child, addr }
    }

    /// `http://127.0.0.1:PORT`.
    pub fn url(&self) -> String {
        format!("http://{}", self.addr)
    }

    /// SIGKILL, and the process reaped.
    pub fn kill(&mut self) {
        self.child.kill().unwrap();
        self.child.wait().unwrap();
    }
}

impl Drop for Replica {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Sends `request` as it is on a fresh connection; the whole answer as
/// text, read until the Hub closes the connection.
pub fn round_trip(addr: &str, request: &str) -> String {
    round_trip_within(addr, request, None)
}

/// [`round_trip`], failing when a read waits longer than `bound` (a
/// liveness bound).
pub fn round_trip_within(addr: &str, request: &str, bound: Option<Duration>) -> String {
    let mut stream = TcpStream::connect(addr).unwrap();
    stream.set_read_timeout(bound).unwrap();
    stream.write_all(request.as_bytes()).unwrap();
    let mut response = String::new();
    stream.read_to_string(&mut response).unwrap();
    response
}

/// One request with a JSON `body` on a fresh connection, closed after the
/// answer; the whole answer as text.
pub fn request(addr: &str, method: &str, path: &str, token: &str, body: &str) -> String {
    round_trip(
        addr,
        &format!(
            "{method} {path} HTTP/1.1\r\nHost: {addr}\r\nAuthorization: Bearer {token}\r\n\
             Content-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
            body.len()
        ),
    )
}

/// Sets `agent`'s phase through the Hub at `addr`, which must accept it.
pub fn put_status(addr: &str, doc: &SeedDocument, agent: &str, phase: &str) {
    let response = request(
        addr,
        "PUT",
        &format!("/api/v1/agents/{agent}/status"),
        &doc.owner_token,
        &format!(r#"{{"phase":"{phase}"}}"#),
    );
    assert!(response.starts_with("HTTP/1.1 200"), "{response}");
}

/// The id of the first agent of the project, as the Hub at `addr` lists it
/// to the owner.
pub fn first_listed_agent(addr: &str, doc: &SeedDocument) -> String {
    let list = request(
        addr,
        "GET",
        &format!("/api/v1/projects/{}/agents?limit=1", doc.project_id),
        &doc.owner_token,
        "",
    );
    list.split("\"id\":\"")
        .nth(1)
        .and_then(|rest| rest.split('"').next())
        .unwrap_or_else(|| panic!("no agent listed: {list}"))
        .to_owned()
}

/// An open event stream on the project's agents, and what it has sent.
pub struct EventStream {
    stream: TcpStream,
    pub seen: String,
}

impl EventStream {
    /// Opens the stream as the owner; returns once the Hub accepted it.
    pub fn open(addr: &str, doc: &SeedDocument) -> EventStream {
        let mut stream = TcpStream::connect(addr).unwrap();
        write!(
            stream,
            "GET /events?sub=projects.{}.agents.%3E HTTP/1.1\r\nHost: {addr}\r\n\
             Authorization: Bearer {}\r\n\r\n",
            doc.project_id, doc.owner_token
        )
        .unwrap();
        stream
            .set_read_timeout(Some(Duration::from_secs(10)))
            .unwrap();
        let mut s = EventStream {
            stream,
            seen: String::new(),
        };
        assert!(s.wait_for("200 OK"), "the stream did not open: {}", s.seen);
        s
    }

    /// Reads until `needle` has come (true) or the stream ends or stays
    /// silent for a generous liveness bound (false).
    pub fn wait_for(&mut self, needle: &str) -> bool {
        let mut buf = [0u8; 4096];
        while !self.seen.contains(needle) {
            match self.stream.read(&mut buf) {
                Ok(0) | Err(_) => return false,
                Ok(n) => self.seen.push_str(&String::from_utf8_lossy(&buf[..n])),
            }
        }
        true
    }

    /// Whether the server ended the stream (end of file or reset) within
    /// the read timeout.
    pub fn ended(&mut self) -> bool {
        let mut buf = [0u8; 4096];
        loop {
            match self.stream.read(&mut buf) {
                Ok(0) => return true,
                Ok(n) => self.seen.push_str(&String::from_utf8_lossy(&buf[..n])),
                Err(e) => {
                    return !matches!(
                        e.kind(),
                        std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut
                    )
                }
            }
        }
    }
}
