//! Two `serve` processes on one PostgreSQL database: an agent's status
//! written through one reaches an event stream open on the other, also
//! after the other's listening connection was terminated (it connects
//! again, the stream is not dropped, and it is told to resync since it may
//! have missed events); and with one replica killed, the
//! other keeps serving and a client can open its stream there.
//!
//! With the response cache on (and TTLs far longer than the tests, so only
//! an invalidation can end an entry): a status written through either
//! replica invalidates the other's cached reads, which then miss and show
//! it; a replica whose listening connection was lost serves nothing it
//! cached before; and readiness marks set through one are read on the
//! other.
//!
//! The server is `PERF_TRACE_PG_URL`; without it the test is skipped (one
//! line on standard error says so; with `CI=true` it fails). The test seeds
//! a schema of its own and drops it.

mod hub_support;

use std::time::{Duration, Instant};

use hub_example::seed::SeedDocument;
use hub_support::pg_url::pg_url;
use hub_support::postgres::{admin_rows, PgSchema};
use hub_support::process::{
    first_listed_agent, put_status, request, round_trip, EventStream, Replica,
};
use hub_support::Seeded;
use serde_json::Value;

/// A schema of its own on the PostgreSQL server, seeded, for replicas to
/// serve.
struct Fixture {
    server: String,
    seeded: Seeded,
}

impl Fixture {
    /// `None` when no server is configured (see [`pg_url`]).
    fn new() -> Option<Fixture> {
        let server = pg_url()?;
        let seeded = Seeded::on_postgres(4, &server);
        Some(Fixture { server, seeded })
    }

    fn schema(&self) -> &PgSchema {
        self.seeded.pg.as_ref().unwrap()
    }

    fn doc(&self) -> &SeedDocument {
        &self.seeded.doc
    }

    /// A `serve` process on the schema, with `env` set, and its address.
    fn replica(&self, env: &[(&str, &str)]) -> (Replica, String) {
        let replica = Replica::serve_with(self.schema().url(), env);
        let addr = replica.addr.clone();
        (replica, addr)
    }

    /// Two of them, A and B.
    fn pair(&self, env: &[(&str, &str)]) -> [(Replica, String); 2] {
        [self.replica(env), self.replica(env)]
    }

    /// The backends listening for this schema's events.
    fn listeners(&self) -> Vec<i32> {
        admin_rows(
            &self.server,
            &format!(
                "SELECT pid FROM pg_stat_activity WHERE query = 'LISTEN \"hub_events:{}\"'",
                self.schema().name()
            ),
        )
        .iter()
        .map(|r| r.get(0))
        .collect()
    }

    /// Waits until `n` backends other than `not` listen; their pids.
    fn wait_for_listeners(&self, n: usize, not: &[i32]) -> Vec<i32> {
        let start = Instant::now();
        loop {
            let pids: Vec<i32> = self
                .listeners()
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

    /// Ends the backends `pids`.
    fn terminate(&self, pids: &[i32]) {
        admin_rows(
            &self.server,
            &format!(
                "SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE pid IN ({})",
                pids.iter()
                    .map(i32::to_string)
                    .collect::<Vec<_>>()
                    .join(",")
            ),
        );
    }
}

#[test]
fn an_event_written_on_one_replica_reaches_streams_on_the_other() {
    let Some(fx) = Fixture::new() else { return };
    let doc = fx.doc();
    let [(a, addr_a), (_b, addr_b)] = fx.pair(&[]);
    let listening = fx.wait_for_listeners(2, &[]);

    let agent = first_listed_agent(&addr_a, doc);

    let mut on_b = EventStream::open(&addr_b, doc);
    put_status(&addr_a, doc, &agent, "stopped");
    assert!(
        on_b.wait_for("\"phase\":\"stopped\""),
        "the event written on A never reached B's stream: {}",
        on_b.seen
    );

    // B's listening connection is terminated: it connects again, and the
    // stream it serves stays open and gets the next event.
    fx.terminate(&listening);
    fx.wait_for_listeners(2, &listening);
    put_status(&addr_a, doc, &agent, "running");
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
    let mut moved = EventStream::open(&addr_b, doc);
    put_status(&addr_b, doc, &agent, "error");
    assert!(moved.wait_for("\"phase\":\"error\""), "{}", moved.seen);
    assert!(on_b.wait_for("\"phase\":\"error\""), "{}", on_b.seen);
}

#[test]
fn a_stream_is_told_to_resync_once_its_replica_listens_again() {
    let Some(fx) = Fixture::new() else { return };
    let doc = fx.doc();
    let (_b, addr_b) = fx.replica(&[]);
    let b_listener = fx.wait_for_listeners(1, &[]);
    let (_a, addr_a) = fx.replica(&[]);
    fx.wait_for_listeners(1, &b_listener);
    let agent = first_listed_agent(&addr_b, doc);
    let before = phase_of(
        &traced_get(&addr_b, &agent_path(&agent), doc).json(),
        &agent,
    );
    let phase = another_phase(before.as_deref().unwrap_or("stopped"));
    let mut on_b = EventStream::open(&addr_b, doc);

    // B's listening backend is terminated mid-stream and A writes: B may
    // never hear of it, so once B listens again its stream is told to
    // resync, and what a page then refetches from B holds the write.
    fx.terminate(&b_listener);
    put_status(&addr_a, doc, &agent, phase);
    fx.wait_for_listeners(2, &b_listener);
    assert!(
        on_b.wait_for("event: resync\ndata: {\"reason\":\"relay_reconnected\"}\n"),
        "B's stream was not told to resync: {}",
        on_b.seen
    );
    let refetched = traced_get(&addr_b, &agent_path(&agent), doc).json();
    assert_eq!(phase_of(&refetched, &agent).as_deref(), Some(phase));

    // The stream stays open and gets the next event.
    let next = another_phase(phase);
    put_status(&addr_a, doc, &agent, next);
    assert!(
        on_b.wait_for(&format!("\"phase\":\"{next}\"")),
        "after the resync the event never reached B's stream: {}",
        on_b.seen
    );
}

fn agent_path(agent: &str) -> String {
    format!("/api/v1/agents/{agent}")
}

/// Tracing on (a request's cache outcome is in its perf headers), and agent
/// entries that outlive the test: only an invalidation ends them.
const CACHED: [(&str, &str); 4] = [
    ("SCION_SERVER_HUB_PERFTRACE", "true"),
    ("SCION_CACHE_AGENTS_PROJECT_TTL_MS", "600000"),
    ("SCION_CACHE_AGENTS_GLOBAL_TTL_MS", "600000"),
    ("SCION_CACHE_AGENTS_BY_ID_TTL_MS", "600000"),
];

/// How long another replica may take to be told of a write, at most.
const TOLD_WITHIN: Duration = Duration::from_secs(5);

/// A response, read to its end.
#[derive(Debug)]
struct Reply {
    status: u16,
    headers: Vec<(String, String)>,
    body: String,
}

impl Reply {
    fn parse(raw: &str) -> Reply {
        let (head, body) = raw.split_once("\r\n\r\n").expect("a response head");
        let mut lines = head.split("\r\n");
        let status = lines.next().unwrap().split(' ').nth(1).unwrap();
        let headers: Vec<(String, String)> = lines
            .filter_map(|l| l.split_once(':'))
            .map(|(k, v)| (k.trim().to_ascii_lowercase(), v.trim().to_owned()))
            .collect();
        let mut reply = Reply {
            status: status.parse().unwrap(),
            headers,
            body: body.to_owned(),
        };
        if reply.header("transfer-encoding") == Some("chunked") {
            reply.body = dechunk(body);
        }
        reply
    }

    fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(k, _)| k == name)
            .map(|(_, v)| v.as_str())
    }

    /// The cache outcome the perf headers report; `None` when the request
    /// did not go through the cache.
    fn cache(&self) -> Option<&str> {
        self.header("x-scion-perf-cache")
    }

    fn json(&self) -> Value {
        serde_json::from_str(&self.body).unwrap_or_else(|e| panic!("{e}: {}", self.body))
    }
}

fn dechunk(mut body: &str) -> String {
    let mut out = String::new();
    loop {
        let (size, rest) = body.split_once("\r\n").expect("a chunk size");
        let size = usize::from_str_radix(size.trim(), 16).unwrap();
        if size == 0 {
            return out;
        }
        out.push_str(&rest[..size]);
        body = &rest[size + 2..];
    }
}

/// `GET path` by the admin, asking for the perf headers.
fn traced_get(addr: &str, path: &str, doc: &SeedDocument) -> Reply {
    let raw = round_trip(
        addr,
        &format!(
            "GET {path} HTTP/1.1\r\nHost: {addr}\r\nAuthorization: Bearer {}\r\n\
             X-Scion-Perf-Trace: 1\r\nConnection: close\r\n\r\n",
            doc.admin_token
        ),
    );
    let reply = Reply::parse(&raw);
    assert_eq!(reply.status, 200, "{path}: {}", reply.body);
    reply
}

/// The phase of `agent` wherever it is in `body` (a read or a list).
fn phase_of(body: &Value, agent: &str) -> Option<String> {
    match body {
        Value::Object(fields) if fields.get("id").and_then(Value::as_str) == Some(agent) => fields
            .get("phase")
            .and_then(Value::as_str)
            .map(str::to_owned),
        Value::Object(fields) => fields.values().find_map(|v| phase_of(v, agent)),
        Value::Array(items) => items.iter().find_map(|v| phase_of(v, agent)),
        _ => None,
    }
}

/// Reads `path` on `addr` until the cache answers it (a replica's cache
/// serves once it listens); returns the phase of `agent` it shows.
fn cache_on(addr: &str, path: &str, doc: &SeedDocument, agent: &str) -> String {
    let start = Instant::now();
    loop {
        let reply = traced_get(addr, path, doc);
        if reply.cache().is_some_and(|c| c.ends_with("_hit=1")) {
            return phase_of(&reply.json(), agent).expect("the agent is shown");
        }
        assert!(
            start.elapsed() < Duration::from_secs(30),
            "{addr} never served {path} from its cache: {:?}",
            reply.cache()
        );
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// Reads `path` on `addr` until it shows `agent` in `phase`, and asserts
/// the read that first shows it was computed (a miss), not served from an
/// entry: before it, an entry from before the write may still be served
/// (the notification is on its way), never after `TOLD_WITHIN`.
fn until_told(addr: &str, path: &str, doc: &SeedDocument, agent: &str, phase: &str) {
    let start = Instant::now();
    loop {
        let reply = traced_get(addr, path, doc);
        if phase_of(&reply.json(), agent).as_deref() == Some(phase) {
            let outcome = reply.cache().expect("a cached route reports its outcome");
            assert!(
                outcome.ends_with("_miss=1"),
                "{path} on {addr} showed the write as {outcome}"
            );
            return;
        }
        assert!(
            start.elapsed() < TOLD_WITHIN,
            "{addr} still serves {path} from before the write ({:?})",
            reply.cache()
        );
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// A phase `agent` is not in.
fn another_phase(current: &str) -> &'static str {
    if current == "stopped" {
        "running"
    } else {
        "stopped"
    }
}

#[test]
fn a_write_on_either_replica_invalidates_the_others_cache() {
    let Some(fx) = Fixture::new() else { return };
    let doc = fx.doc();
    let [(_a, addr_a), (_b, addr_b)] = fx.pair(&CACHED);
    fx.wait_for_listeners(2, &[]);
    let agent = first_listed_agent(&addr_a, doc);

    // B caches the agent's read; its status is written through A.
    let read = format!("/api/v1/agents/{agent}");
    let before = cache_on(&addr_b, &read, doc, &agent);
    let after = another_phase(&before);
    put_status(&addr_a, doc, &agent, after);
    until_told(&addr_b, &read, doc, &agent, after);

    // A caches the project's list; the status is written through B.
    let list = format!("/api/v1/projects/{}/agents", doc.project_id);
    assert_eq!(cache_on(&addr_a, &list, doc, &agent), after);
    put_status(&addr_b, doc, &agent, &before);
    until_told(&addr_a, &list, doc, &agent, &before);
}

#[test]
fn a_replica_that_stopped_listening_serves_nothing_it_cached_before() {
    let Some(fx) = Fixture::new() else { return };
    let doc = fx.doc();
    let [(_a, addr_a), (_b, addr_b)] = fx.pair(&CACHED);
    let listening = fx.wait_for_listeners(2, &[]);
    let agent = first_listed_agent(&addr_a, doc);
    let read = format!("/api/v1/agents/{agent}");
    let before = cache_on(&addr_b, &read, doc, &agent);
    let after = another_phase(&before);

    // A write B is never told of, as one sent while its listener is away:
    // B keeps serving its entry.
    let mut client = postgres::Client::connect(fx.schema().url(), postgres::NoTls).unwrap();
    let changed = client
        .execute(
            "UPDATE agents SET phase = $1 WHERE id = $2",
            &[&after, &agent],
        )
        .unwrap();
    assert_eq!(changed, 1);
    assert_eq!(cache_on(&addr_b, &read, doc, &agent), before);

    // The listening connections are lost and come back: B cannot know what
    // it missed, so nothing cached before is served. While B does not
    // listen it computes every read (no cache outcome); once it listens
    // again its first read is a miss.
    fx.terminate(&listening);
    fx.wait_for_listeners(2, &listening);
    let start = Instant::now();
    loop {
        let reply = traced_get(&addr_b, &read, doc);
        assert_eq!(
            phase_of(&reply.json(), &agent).as_deref(),
            Some(after),
            "B served its entry from before the outage ({:?})",
            reply.cache()
        );
        if let Some(outcome) = reply.cache() {
            assert_eq!(outcome, "agents.by_id_miss=1");
            break;
        }
        assert!(
            start.elapsed() < TOLD_WITHIN,
            "B's cache never served again"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
}

#[test]
fn readiness_marks_set_through_one_replica_are_read_on_the_other() {
    let Some(fx) = Fixture::new() else { return };
    let doc = fx.doc();
    let [(_a, addr_a), (_b, addr_b)] = fx.pair(&CACHED);
    for on in [true, false] {
        let put = request(
            &addr_a,
            "PUT",
            "/api/v1/admin/profiling",
            &doc.admin_token,
            &format!(r#"{{"readiness_marks":{on}}}"#),
        );
        assert!(put.starts_with("HTTP/1.1 200"), "{put}");
        let got = traced_get(&addr_b, "/api/v1/profiling", doc);
        assert_eq!(got.json(), serde_json::json!({ "readiness_marks": on }));
    }
}
