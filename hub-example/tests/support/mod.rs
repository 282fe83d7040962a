//! What the tests that run the `hub-example` binary share: a seeded
//! database, a free loopback port, a running Hub whose log is read as it is
//! written (and which never outlives its test), and raw HTTP/1.1 exchanges.

// Each test file is a crate of its own and uses only part of this module.
#![allow(dead_code)]

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitStatus, Stdio};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use hub_example::seed::{seed, SeedDocument, SeedOptions};
use serde_json::Value;

/// The session secret the tests seed and serve with.
pub const SECRET: &str = "bench-secret-1";

/// How long a Hub may take to listen or a test may wait for a line: a
/// liveness bound only.
const LIVENESS: Duration = Duration::from_secs(30);

/// The `hub-example` binary, ready for arguments.
pub fn hub_example() -> Command {
    Command::new(env!("CARGO_BIN_EXE_hub-example"))
}

/// `hub-example serve --db DB`, ready for more arguments.
pub fn serve(db: &Path) -> Command {
    let mut command = hub_example();
    command.args(["serve", "--db", db.to_str().unwrap()]);
    command
}

/// `agents` agents seeded into `dir/hub.db` under the project `slug`.
pub fn seed_in(dir: &Path, agents: u32, slug: &str) -> SeedDocument {
    seed(&SeedOptions {
        db_path: dir.join("hub.db"),
        session_secret: SECRET.into(),
        agents,
        project_slug: slug.into(),
        rand_seed: 42,
    })
    .unwrap()
}

/// [`SECRET`] in a file of `dir`, as `--session-secret-file` reads it.
pub fn secret_file(dir: &Path) -> PathBuf {
    let path = dir.join("secret");
    std::fs::write(&path, format!("{SECRET}\n")).unwrap();
    path
}

/// A child process killed (if still running) when the test ends, even by
/// a failed assertion.
pub struct KillOnDrop(pub Child);

impl Drop for KillOnDrop {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
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
        let started = Instant::now();
        loop {
            if let Some(line) = self.lines().into_iter().find(&wanted) {
                return line;
            }
            assert!(
                started.elapsed() < Duration::from_secs(20),
                "no {what} line: {}",
                self.text()
            );
            std::thread::sleep(Duration::from_millis(20));
        }
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
        let sent = Instant::now();
        let status = loop {
            if let Some(status) = self.process().try_wait().unwrap() {
                break status;
            }
            assert!(
                sent.elapsed() < limit,
                "the Hub was still running {} s after SIGTERM",
                limit.as_secs()
            );
            std::thread::sleep(Duration::from_millis(20));
        };
        self.finish_log();
        status
    }

    /// Kills the process outright and waits for the last of its log.
    pub fn kill(&mut self) {
        self.process().kill().unwrap();
        self.process().wait().unwrap();
        self.finish_log();
    }

    fn finish_log(&mut self) {
        if let Some(reader) = self.reader.take() {
            reader.join().unwrap();
        }
    }
}

/// Sends `request` as it is on a fresh connection and reads the answer
/// until the Hub closes the connection (within a liveness bound).
pub fn try_round_trip(addr: &str, request: &str) -> std::io::Result<String> {
    let mut stream = TcpStream::connect(addr)?;
    stream.set_read_timeout(Some(Duration::from_secs(10)))?;
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

/// Reads until the Hub closes the connection, for at most `limit` (a
/// liveness bound); returns what came and whether it closed.
pub fn read_until_closed(stream: &mut TcpStream, limit: Duration) -> (String, bool) {
    stream.set_read_timeout(Some(limit)).unwrap();
    let mut bytes = Vec::new();
    let closed = stream.read_to_end(&mut bytes).is_ok();
    (String::from_utf8_lossy(&bytes).into_owned(), closed)
}
