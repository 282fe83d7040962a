//! Hub processes, run from the Hub's command line as a user runs it: its
//! help and one-line errors, `seed`, a `serve` whose log is read as it is
//! written, replicas killed or run two on one database; and what a client
//! does with them over plain HTTP/1.1: a request, an agent's status, an
//! event stream read as it comes. Every process is killed (if still
//! running) when its test ends, even by a failed assertion.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitStatus, Stdio};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use hub_example::seed::SeedDocument;
use serde_json::Value;

use super::SECRET;

/// How long a Hub may take to listen or a client may wait for an answer:
/// a liveness bound only.
const LIVENESS: Duration = Duration::from_secs(30);

/// The Hub's command line, ready for arguments: `hub-process`, built in
/// this package from `hub_example::cli` (cargo gives a package's tests the
/// paths of its own binaries only), named `hub-example` as a user runs it.
pub fn hub_example() -> Command {
    let mut command = Command::new(env!("CARGO_BIN_EXE_hub-process"));
    command.arg0("hub-example");
    command
}

/// `hub-example serve --db DB`, ready for more arguments.
pub fn serve(db: &Path) -> Command {
    let mut command = hub_example();
    command.args(["serve", "--db", db.to_str().unwrap()]);
    command
}

/// `agents` agents seeded into `dir/hub.db` under the project `slug`.
pub fn seed_in(dir: &Path, agents: u32, slug: &str) -> SeedDocument {
    super::seed_into(dir.join("hub.db"), agents, slug)
}

/// [`SECRET`] in a file of `dir`, as `--session-secret-file` reads it.
pub fn secret_file(dir: &Path) -> PathBuf {
    let path = dir.join("secret");
    std::fs::write(&path, format!("{SECRET}\n")).unwrap();
    path
}

/// The id of an agent of `project_id` in the SQLite database at `db`.
pub fn first_agent(db: &Path, project_id: &str) -> String {
    rusqlite::Connection::open(db)
        .unwrap()
        .query_row(
            "SELECT id FROM agents WHERE project_id = ?1 LIMIT 1",
            [project_id],
            |r| r.get(0),
        )
        .unwrap()
}

/// A loopback port free right now (the OS picks it).
pub fn free_port() -> u16 {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    listener.local_addr().unwrap().port()
}

/// Waits until something accepts connections on `addr`.
pub fn wait_until_listening(addr: &str) {
    let started = Instant::now();
    while TcpStream::connect(addr).is_err() {
        assert!(started.elapsed() < LIVENESS, "nothing listens on {addr}");
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// What `probe` finds, polled every 20 ms; fails saying `failure()` once
/// `limit` has passed without it.
fn poll_until<T>(
    limit: Duration,
    mut probe: impl FnMut() -> Option<T>,
    failure: impl Fn() -> String,
) -> T {
    let started = Instant::now();
    loop {
        if let Some(found) = probe() {
            return found;
        }
        assert!(started.elapsed() < limit, "{}", failure());
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// Kills `child` if it still runs and reaps it.
fn stop(child: &mut Child) {
    let _ = child.kill();
    let _ = child.wait();
}

/// A child process killed (if still running) when the test ends.
pub struct KillOnDrop(pub Child);

impl KillOnDrop {
    /// SIGKILL, and the process reaped.
    pub fn kill(&mut self) {
        self.0.kill().unwrap();
        self.0.wait().unwrap();
    }
}

impl Drop for KillOnDrop {
    fn drop(&mut self) {
        stop(&mut self.0);
    }
}

/// A Hub process on a database given by URL (a PostgreSQL schema or an
/// SQLite file), its output discarded.
pub struct Replica {
    pub child: KillOnDrop,
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
        Self::serve_command(hub_example(), db_url, env)
    }

    /// `serve` on `db_url` in a process whose descriptor limit, soft and
    /// hard, is `nofile` (so the Hub cannot raise it); returns once it
    /// listens.
    pub fn serve_with_descriptor_limit(db_url: &str, nofile: u64) -> Replica {
        let mut command = hub_example();
        // SAFETY: between fork and exec the closure only calls setrlimit,
        // which is async-signal-safe, and allocates nothing.
        unsafe {
            command.pre_exec(move || rlimit::setrlimit(rlimit::Resource::NOFILE, nofile, nofile));
        }
        Self::serve_command(command, db_url, &[])
    }

    fn serve_command(mut command: Command, db_url: &str, env: &[(&str, &str)]) -> Replica {
        let port = free_port();
        let child = command
            .args(["serve", "--db", db_url, "--session-secret", SECRET])
            .args(["--port", &port.to_string()])
            .envs(env.iter().copied())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        // Killed even when it never listens.
        let replica = Replica {
            child: KillOnDrop(child),
            addr: format!("127.0.0.1:{port}"),
        };
        wait_until_listening(&replica.addr);
        replica
    }

    /// `http://127.0.0.1:PORT`.
    pub fn url(&self) -> String {
        format!("http://{}", self.addr)
    }

    /// SIGKILL, and the process reaped.
    pub fn kill(&mut self) {
        self.child.kill();
    }
}

/// A running Hub and the log lines it has written so far (its standard
/// output, read on a thread of its own).
pub struct RunningHub {
    child: KillOnDrop,
    log: Arc<Mutex<Vec<String>>>,
    reader: Option<JoinHandle<()>>,
}

impl RunningHub {
    /// Starts `command` with its standard output read as it comes, and
    /// returns once every port of `ports` listens.
    pub fn start(mut command: Command, ports: &[u16]) -> RunningHub {
        let mut child = command
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        let stdout = child.stdout.take().unwrap();
        let log = Arc::new(Mutex::new(Vec::new()));
        let lines = Arc::clone(&log);
        let reader = std::thread::spawn(move || {
            let mut text = String::new();
            let mut reader = BufReader::new(stdout);
            while reader.read_line(&mut text).unwrap_or(0) > 0 {
                lines.lock().unwrap().push(std::mem::take(&mut text));
            }
        });
        let hub = RunningHub {
            child: KillOnDrop(child),
            log,
            reader: Some(reader),
        };
        for port in ports {
            wait_until_listening(&format!("127.0.0.1:{port}"));
        }
        hub
    }

    /// The lines written so far, parsed.
    pub fn lines(&self) -> Vec<Value> {
        let log = self.log.lock().unwrap();
        log.iter()
            .map(|l| serde_json::from_str(l).unwrap())
            .collect()
    }

    /// The lines written so far, as written.
    pub fn text(&self) -> String {
        self.log.lock().unwrap().concat()
    }

    /// Waits (a liveness bound only) until a line matches `wanted`.
    pub fn wait_for_line(&self, what: &str, wanted: impl Fn(&Value) -> bool) -> Value {
        poll_until(
            LIVENESS,
            || self.lines().into_iter().find(&wanted),
            || format!("no {what} line: {}", self.text()),
        )
    }

    /// The process.
    pub fn process(&mut self) -> &mut Child {
        &mut self.child.0
    }

    /// Sends SIGTERM.
    pub fn terminate(&mut self) {
        let term = Command::new("kill")
            .args(["-TERM", &self.process().id().to_string()])
            .status()
            .unwrap();
        assert!(term.success());
    }

    /// Waits for the exit, for at most `limit`, then for the last of its
    /// log; its exit status.
    pub fn wait_for_exit(&mut self, limit: Duration) -> ExitStatus {
        let status = poll_until(
            limit,
            || self.process().try_wait().unwrap(),
            || {
                format!(
                    "the Hub was still running {} s after SIGTERM",
                    limit.as_secs()
                )
            },
        );
        self.finish_log();
        status
    }

    /// Kills the process outright and waits for the last of its log.
    pub fn kill(&mut self) {
        self.child.kill();
        self.finish_log();
    }

    fn finish_log(&mut self) {
        if let Some(reader) = self.reader.take() {
            reader.join().unwrap();
        }
    }
}

/// Sends `request` as it is on a fresh connection and reads the answer
/// until the Hub closes the connection, failing when a read waits longer
/// than the liveness bound; the answer as text, or why there is none.
pub fn try_round_trip(addr: &str, request: &str) -> std::io::Result<String> {
    let mut stream = TcpStream::connect(addr)?;
    stream.set_read_timeout(Some(LIVENESS))?;
    stream.write_all(request.as_bytes())?;
    let mut response = Vec::new();
    stream.read_to_end(&mut response)?;
    Ok(String::from_utf8_lossy(&response).into_owned())
}

/// [`try_round_trip`], which must succeed.
pub fn round_trip(addr: &str, request: &str) -> String {
    try_round_trip(addr, request).unwrap_or_else(|e| panic!("no answer ({e}) to {request}"))
}

/// One request on a fresh connection (`head`: the request line and any
/// header lines, without `Host`), closed after the answer; the whole
/// answer as text, or why there is none.
pub fn try_exchange(addr: &str, head: &str) -> std::io::Result<String> {
    try_round_trip(
        addr,
        &format!("{head}\r\nHost: {addr}\r\nConnection: close\r\n\r\n"),
    )
}

/// [`try_exchange`], which must succeed.
pub fn exchange(addr: &str, head: &str) -> String {
    try_exchange(addr, head).unwrap_or_else(|e| panic!("no answer ({e}) to {head}"))
}

/// The head of `GET path` with `token`.
pub fn get_head(path: &str, token: &str) -> String {
    format!("GET {path} HTTP/1.1\r\nAuthorization: Bearer {token}")
}

/// `GET path` with `token`; the whole answer as text.
pub fn get(addr: &str, path: &str, token: &str) -> String {
    exchange(addr, &get_head(path, token))
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

/// Reads until the Hub closes the connection, for at most `limit` (a
/// liveness bound); returns what came and whether it closed.
pub fn read_until_closed(stream: &mut TcpStream, limit: Duration) -> (String, bool) {
    stream.set_read_timeout(Some(limit)).unwrap();
    let mut bytes = Vec::new();
    let closed = stream.read_to_end(&mut bytes).is_ok();
    (String::from_utf8_lossy(&bytes).into_owned(), closed)
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
