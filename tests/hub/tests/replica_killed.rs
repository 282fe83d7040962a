//! A replica killed during a load run: two Hub processes on one PostgreSQL
//! schema, `load` spreading its users over both, and one of them killed
//! with SIGKILL halfway. The other keeps serving its users without a
//! failure; the report counts the killed replica's failures as its own (and
//! says its process exited) instead of failing the run; and an event
//! stream that was open on the killed replica opens again on the other and
//! gets events there.
//!
//! The server is `PERF_TRACE_PG_URL`; without it the test is skipped (one
//! line on standard error says so; with `CI=true` it fails). The test seeds
//! a schema of its own and drops it.

mod hub_support;

use std::io::{Read, Write};
use std::net::TcpStream;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use hub_example::seed::SeedDocument;
use hub_support::postgres::pg_url;
use hub_support::{Seeded, SECRET};

/// A Hub process, killed (if still running) when the test ends.
struct Replica {
    child: Child,
    addr: String,
}

impl Replica {
    fn serve(db_url: &str) -> Replica {
        let port = std::net::TcpListener::bind("127.0.0.1:0")
            .unwrap()
            .local_addr()
            .unwrap()
            .port();
        let child = Command::new(env!("CARGO_BIN_EXE_hub-process"))
            .args(["serve", "--db", db_url, "--session-secret", SECRET])
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
        Replica { child, addr }
    }

    fn url(&self) -> String {
        format!("http://{}", self.addr)
    }

    /// SIGKILL, and the process reaped.
    fn kill(&mut self) {
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

/// An event stream on the project's agents, read on a thread of its own.
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
        stream
            .set_read_timeout(Some(Duration::from_secs(10)))
            .unwrap();
        let mut s = Stream {
            stream,
            seen: String::new(),
        };
        assert!(s.read_until(|seen| seen.contains("200 OK")), "{}", s.seen);
        s
    }

    /// Reads until `done` holds (true) or the stream ends or stays silent
    /// for a generous liveness bound (false).
    fn read_until(&mut self, done: impl Fn(&str) -> bool) -> bool {
        let mut buf = [0u8; 4096];
        while !done(&self.seen) {
            match self.stream.read(&mut buf) {
                Ok(0) | Err(_) => return false,
                Ok(n) => self.seen.push_str(&String::from_utf8_lossy(&buf[..n])),
            }
        }
        true
    }

    /// Whether the server ended the stream (end of file or reset) within
    /// the read timeout.
    fn ended(&mut self) -> bool {
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

fn put_status(addr: &str, doc: &SeedDocument, agent: &str, phase: &str) {
    let body = format!(r#"{{"phase":"{phase}"}}"#);
    let mut stream = TcpStream::connect(addr).unwrap();
    write!(
        stream,
        "PUT /api/v1/agents/{agent}/status HTTP/1.1\r\nHost: {addr}\r\n\
         Authorization: Bearer {}\r\nContent-Type: application/json\r\n\
         Content-Length: {}\r\nConnection: close\r\n\r\n{body}",
        doc.owner_token,
        body.len()
    )
    .unwrap();
    let mut response = String::new();
    stream.read_to_string(&mut response).unwrap();
    assert!(response.starts_with("HTTP/1.1 200"), "{response}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_replica_killed_under_load_fails_only_its_own_users_and_its_streams_move() {
    let Some(server) = pg_url() else { return };
    let seeded = Seeded::on_postgres(4, &server);
    let db_url = seeded.pg.as_ref().unwrap().url().to_owned();
    let doc = seeded.doc.clone();
    let survivor = Replica::serve(&db_url);
    let mut doomed = Replica::serve(&db_url);
    let survivor_pid = survivor.child.id();
    let mut on_doomed = Stream::open(&doomed.addr, &doc);

    let seed_path = seeded.dir.path().join("seed.json");
    std::fs::write(&seed_path, serde_json::to_vec(&doc).unwrap()).unwrap();
    let load = tokio::spawn(hub_bench::run_load(hub_bench::LoadArgs {
        hub: format!("{},{}", survivor.url(), doomed.url()),
        seed: seed_path,
        users: 6,
        duration: Duration::from_secs(4),
        spawn_rate: 100,
        max_requests: 1_000_000,
        out: seeded.dir.path().join("load.json"),
        notes: String::new(),
        hub_pid: None,
        csv: None,
        compare: None,
    }));

    tokio::time::sleep(Duration::from_millis(1500)).await;
    doomed.kill();
    // The survivor comes back from the thread: it serves until the run ends.
    let _survivor = tokio::task::spawn_blocking(move || {
        assert!(on_doomed.ended(), "the killed replica's stream did not end");
        // Its client opens the stream again on the other replica, and
        // events written there reach it.
        let mut moved = Stream::open(&survivor.addr, &doc);
        let agent = {
            let mut s = TcpStream::connect(&survivor.addr).unwrap();
            write!(
                s,
                "GET /api/v1/projects/{}/agents?limit=1 HTTP/1.1\r\nHost: {}\r\n\
                 Authorization: Bearer {}\r\nConnection: close\r\n\r\n",
                doc.project_id, survivor.addr, doc.owner_token
            )
            .unwrap();
            let mut list = String::new();
            s.read_to_string(&mut list).unwrap();
            list.split("\"id\":\"")
                .nth(1)
                .and_then(|rest| rest.split('"').next())
                .unwrap()
                .to_owned()
        };
        put_status(&survivor.addr, &doc, &agent, "stopped");
        assert!(
            moved.read_until(|seen| seen.contains("\"phase\":\"stopped\"")),
            "the moved stream got no event: {}",
            moved.seen
        );
        survivor
    })
    .await
    .unwrap();
    let report = load
        .await
        .unwrap()
        .expect("the run survives a dead replica");

    assert_eq!(report.replicas.len(), 2);
    let (live, dead) = (&report.replicas[0], &report.replicas[1]);
    assert_eq!((live.users_started, dead.users_started), (3, 3));
    assert_eq!(live.unexpected_failures, 0, "{live:?}");
    assert!(live.total_requests > 0);
    assert!(dead.unexpected_failures > 0, "{dead:?}");
    assert!(
        dead.total_requests > dead.unexpected_failures,
        "it served before it was killed: {dead:?}"
    );
    assert_eq!(report.unexpected_failures, dead.unexpected_failures);
    let live_process = live.hub_process.as_ref().expect("sampled by its port");
    assert_eq!(live_process.pid, survivor_pid);
    assert!(!live_process.exited_during_run);
    let dead_process = dead.hub_process.as_ref().expect("sampled until killed");
    assert!(dead_process.exited_during_run, "{dead_process:?}");
    let table = hub_bench::load::replica_table(&report);
    assert!(table.contains("exited during the run"), "{table}");
}
