//! Faults: a handler that panics, a client that goes away mid-response, a
//! locked database, SSE clients that leave or never read, clients that send
//! slowly or not at all, too many streams, streams that outlive their
//! credential, concurrent writes, and shutdown with all of these open. In
//! each the Hub answers clearly, keeps serving, and writes each request's
//! line once.
//! (Closed standard output and unusable database files need the binary:
//! serve_faults.rs.)

mod hub_support;
mod served;

use std::collections::HashMap;
use std::time::Duration;

use axum::http::{Method, StatusCode};
use axum::routing::get;
use axum::Router;
use hub_example::events::HubEvent;
use hub_example::log::CaptureBuffer;
use hub_example::seed::SeedDocument;
use hub_example::settings::ServerLimits;
use hub_example::store::db::{Db, OpenMode, PoolOptions};
use hub_example::{Hub, HubOptions};
use hub_support::store::skip_on_postgres;
use hub_support::{hub_options, Reply, Seeded, TestHub, SECRET, TRACED};
use serde_json::Value;
use served::{
    head_header, perf_values, read_head, read_to_close, send_get, wait_for_lines, wait_for_stage,
    Served,
};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

fn options(log: &CaptureBuffer) -> HubOptions {
    hub_options(TRACED, log)
}

/// Lines per request id; every id must appear once.
fn ids_once(lines: &[Value]) -> HashMap<String, usize> {
    let mut ids: HashMap<String, usize> = HashMap::new();
    for line in lines {
        *ids.entry(line["request_id"].as_str().unwrap().to_owned())
            .or_default() += 1;
    }
    assert!(ids.values().all(|n| *n == 1), "{ids:?}");
    ids
}

#[tokio::test]
async fn a_panicking_handler_is_a_json_500_with_its_line_and_the_hub_serves_on() {
    let seeded = Seeded::new(3);
    let log = CaptureBuffer::new();
    let member = seeded.doc.member_token.clone();
    let project = seeded.doc.project_id.clone();
    // Routes the real Hub does not have, mounted only here.
    let extra = Router::new()
        .route(
            "/test/panic-now",
            get(|| async {
                if true {
                    panic!("boom: secret detail");
                }
                "unreachable"
            }),
        )
        .route(
            "/test/panic-later",
            get(|| async {
                tokio::task::yield_now().await;
                if true {
                    panic!("boom after a wait");
                }
                "unreachable"
            }),
        );
    let hub = Hub::builder(seeded.db(), options(&log))
        .extra_routes(extra)
        .build();
    let served = Served::start(hub.router()).await;
    let client = reqwest::Client::new();
    let get = |path: &str| {
        client
            .get(format!("{}{path}", served.url()))
            .bearer_auth(&member)
            .send()
    };

    for path in ["/test/panic-now", "/test/panic-later", "/test/panic-now"] {
        let reply = get(path).await.unwrap();
        assert_eq!(reply.status(), StatusCode::INTERNAL_SERVER_ERROR, "{path}");
        assert_eq!(reply.headers()["content-type"], "application/json");
        let body: Value = serde_json::from_slice(&reply.bytes().await.unwrap()).unwrap();
        assert_eq!(body, serde_json::json!({"error": "internal error"}));
    }
    // The same server, and the same connection pool, go on serving.
    let list = get(&format!("/api/v1/projects/{project}/agents"))
        .await
        .unwrap();
    assert_eq!(list.status(), StatusCode::OK);
    let health = get("/healthz").await.unwrap();
    assert_eq!(health.status(), StatusCode::OK);
    served.stop().await;

    let lines = served::perf_values(&log);
    assert_eq!(lines.len(), 5, "{lines:?}");
    assert_eq!(ids_once(&lines).len(), 5);
    let panicked: Vec<&Value> = lines.iter().filter(|l| l["endpoint"] == "other").collect();
    // Three panics and /healthz, all `other`; the list is classified.
    assert_eq!(panicked.len(), 4);
    assert!(lines
        .iter()
        .any(|l| l["endpoint"] == "agents.project.legacy"));
    assert!(!log.contents().contains("secret detail"));
}

#[tokio::test]
async fn a_client_that_leaves_mid_response_still_gets_exactly_one_line() {
    let (hub, served) = served_traced(2000).await;
    let doc = hub.doc().clone();
    let path = hub.project_agents_uri();

    // Each client reads the head and part of a large body (about 2 MB),
    // then drops the connection.
    let mut ids = Vec::new();
    for read in [16usize, 64 * 1024, 512 * 1024] {
        let mut stream = send_get(served.addr, &path, &doc.member_token).await;
        let (head, body) = read_head(&mut stream).await;
        assert!(head.starts_with("HTTP/1.1 200"), "{head}");
        ids.push(head_header(&head, "x-request-id").unwrap());
        let mut part = vec![0u8; read.saturating_sub(body.len())];
        stream.read_exact(&mut part).await.unwrap();
        drop(stream);
    }

    // Each line is written once the server notices; stopping the server then
    // waits for every connection to end.
    wait_for_lines(&hub.log, 3000, |lines| lines.len() >= 3).await;
    served.stop().await;
    let lines = hub.perf_values();
    assert_eq!(lines.len(), 3, "{lines:?}");
    let once = ids_once(&lines);
    for id in &ids {
        assert_eq!(once.get(id), Some(&1), "{id}");
    }
    assert!(lines
        .iter()
        .all(|l| l["endpoint"] == "agents.project.legacy" && l["phase_serialize_n"] == 1));
}

/// The owner's listing of the main project's agents, asked for as JSON.
async fn owner_listing(hub: &TestHub) -> Reply {
    let doc = hub.doc();
    let uri = format!("/api/v1/projects/{}/agents", doc.project_id);
    let json_type = [("content-type", "application/json")];
    hub.call(Method::GET, &uri, Some(&doc.owner_token), &json_type, "")
        .await
}

#[tokio::test]
async fn a_database_locked_past_the_busy_timeout_is_a_503_with_the_line_and_pool_figures() {
    if skip_on_postgres("holds SQLite's file write lock; postgres_store.rs locks a row instead") {
        return;
    }
    let seeded = Seeded::new(4);
    let path = seeded.dir.path().join("hub.db");
    let short = PoolOptions {
        busy_timeout: Duration::from_millis(100),
        checkout_timeout: Duration::from_millis(200),
        ..PoolOptions::default()
    };
    let db = Db::open(&path, OpenMode::MustExist, short).unwrap();
    let log = CaptureBuffer::new();
    let hub = TestHub::assemble(seeded, Hub::new(db, options(&log)), log);
    let doc = hub.doc().clone();
    let json_type = [("content-type", "application/json")];
    let list = owner_listing(&hub).await;
    let agent = list.json()["agents"][0]["id"].as_str().unwrap().to_owned();
    let stop = r#"{"phase":"stopped"}"#;

    // Another process holds the write lock.
    let locker = Db::open(&path, OpenMode::MustExist, PoolOptions::default()).unwrap();
    let lock = locker.conn().unwrap();
    lock.execute_batch("BEGIN EXCLUSIVE; UPDATE hub_settings SET updated_at = updated_at;")
        .unwrap();

    let locked = hub
        .put_status(&agent, &doc.owner_token, &json_type, stop)
        .await;
    assert_eq!(locked.status, StatusCode::SERVICE_UNAVAILABLE);
    assert_eq!(
        locked.json(),
        serde_json::json!({"error": "database busy or locked, try again later"})
    );
    assert_eq!(locked.headers["retry-after"], "1");
    let id = locked.headers["x-request-id"].to_str().unwrap().to_owned();
    let line = served::perf_values(&hub.log)
        .into_iter()
        .find(|l| l["request_id"] == id.as_str())
        .expect("the 503's line");
    assert_eq!(line["method"], "PUT");
    for key in ["db_wait_count", "db_wait_us", "db_in_use", "db_open"] {
        assert!(line[key].is_u64(), "{key}: {line}");
    }
    assert!(line["db_open"].as_u64().unwrap() >= 1);

    // Readers are not blocked by the writer (WAL).
    assert_eq!(owner_listing(&hub).await.status, StatusCode::OK);

    lock.execute_batch("COMMIT").unwrap();
    let unlocked = hub
        .put_status(&agent, &doc.owner_token, &json_type, stop)
        .await;
    assert_eq!(unlocked.status, StatusCode::OK, "{}", unlocked.json());
    assert_eq!(served::perf_values(&hub.log).len(), 4);
}

fn marker_event(project: &str, marker: &str) -> HubEvent {
    HubEvent {
        kind: "agent.status",
        subjects: vec![format!("projects.{project}.agents.marker.status")],
        data: format!("{{\"marker\":\"{marker}\"}}"),
    }
}

/// The percent-encoded subject of every agent of the main project.
fn project_agents(doc: &SeedDocument) -> String {
    format!("projects.{}.agents.%3E", doc.project_id)
}

/// A traced Hub of `agents` agents, its router served on a port of its own.
async fn served_traced(agents: u32) -> (TestHub, Served) {
    let hub = TestHub::traced(agents);
    let served = Served::start(hub.router.clone()).await;
    (hub, served)
}

/// Opens the member's event stream on the main project's agents and checks
/// that it is accepted; the connection, its request id, and what came past
/// the head.
async fn member_stream(
    addr: std::net::SocketAddr,
    doc: &SeedDocument,
) -> (TcpStream, String, Vec<u8>) {
    let request = events_request(addr, &project_agents(doc), &doc.member_token);
    let mut stream = raw(addr, &request).await;
    let (head, rest) = read_head(&mut stream).await;
    assert!(head.starts_with("HTTP/1.1 200"), "{head}");
    let id = head_header(&head, "x-request-id").unwrap();
    (stream, id, rest)
}

/// Checks `done` up to `tries` times, 10 ms apart, calling `nudge` with the
/// try's number before each wait; whether `done` came to hold.
async fn poll(tries: usize, done: impl Fn() -> bool, mut nudge: impl FnMut(usize)) -> bool {
    for i in 0..tries {
        if done() {
            return true;
        }
        nudge(i);
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    done()
}

#[tokio::test]
async fn an_sse_client_that_goes_away_gets_one_close_line() {
    let (hub, served) = served_traced(3).await;
    let doc = hub.doc().clone();

    let (stream, id, _) = member_stream(served.addr, &doc).await;
    wait_for_stage(&hub.log, &id, "connect").await;
    drop(stream);

    // A write to the closed connection ends the stream if the server has not
    // noticed yet.
    let bus = hub.hub.bus().clone();
    let closed = || {
        served::perf_values(&hub.log)
            .iter()
            .any(|l| l["request_id"] == id.as_str() && l["sse_stage"] == "close")
    };
    poll(1000, closed, |i| {
        bus.publish(marker_event(&doc.project_id, &format!("m{i}")));
    })
    .await;
    served.stop().await;
    let mine: Vec<Value> = hub
        .perf_values()
        .into_iter()
        .filter(|l| l["request_id"] == id.as_str())
        .collect();
    let stages: Vec<&str> = mine
        .iter()
        .map(|l| l["sse_stage"].as_str().unwrap())
        .collect();
    assert_eq!(stages, ["connect", "close"], "{mine:?}");
    assert_eq!(bus.subscribers(), 0);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_slow_sse_consumer_blocks_neither_publishers_nor_other_subscribers() {
    let (hub, served) = served_traced(3).await;
    let doc = hub.doc().clone();

    // The slow one: subscribes, reads its head, then never reads again.
    let (slow, slow_id, _) = member_stream(served.addr, &doc).await;

    // The reader reads everything until the final marker.
    let (mut reader, _, rest) = member_stream(served.addr, &doc).await;
    let reading = tokio::spawn(async move {
        let mut text = String::from_utf8_lossy(&rest).into_owned();
        let mut chunk = vec![0u8; 64 * 1024];
        while !text.contains("final-marker") {
            let n = reader.read(&mut chunk).await.unwrap();
            assert!(n > 0, "stream ended early");
            text.push_str(&String::from_utf8_lossy(&chunk[..n]));
            // Keep only the tail: the marker is what matters.
            if text.len() > 1 << 20 {
                text.drain(..text.len() - 4096);
            }
        }
        reader
    });
    wait_for_lines(&hub.log, 1000, |lines| {
        lines.iter().filter(|l| l["sse_stage"] == "connect").count() == 2
    })
    .await;

    // Far more than the slow connection's buffers and the bus's capacity.
    let bus = hub.hub.bus().clone();
    let padding = "x".repeat(400);
    for i in 0..20_000 {
        let mut event = marker_event(&doc.project_id, &format!("{i}"));
        event.data = format!("{{\"n\":{i},\"pad\":\"{padding}\"}}");
        assert_eq!(bus.publish(event), 2);
    }
    // Publishing through the API is not held up either.
    let list = hub
        .get(&hub.project_agents_uri(), Some(&doc.owner_token))
        .await
        .json();
    let agent = list["agents"][0]["id"].as_str().unwrap().to_owned();
    for phase in ["stopped", "running", "stopped"] {
        let reply = hub
            .put_status(
                &agent,
                &doc.owner_token,
                &[],
                &format!("{{\"phase\":\"{phase}\"}}"),
            )
            .await;
        assert_eq!(reply.status, StatusCode::OK);
    }
    bus.publish(marker_event(&doc.project_id, "final-marker"));
    let reader = tokio::time::timeout(Duration::from_secs(60), reading)
        .await
        .expect("the reader got the final marker")
        .unwrap();

    drop(reader);
    drop(slow);
    // Wake both streams so they notice their connections are gone.
    poll(
        1000,
        || bus.subscribers() == 0,
        |i| {
            bus.publish(marker_event(&doc.project_id, &format!("wake{i}")));
        },
    )
    .await;
    served.stop().await;
    // The slow stream's close line comes as its body is dropped, which one
    // run saw happen only after the server's task had ended: waited for
    // here (a liveness bound), counted below.
    wait_for_lines(&hub.log, 1000, |lines| {
        lines.iter().filter(|l| l["sse_stage"] == "close").count() >= 2
    })
    .await;
    let lines = hub.perf_values();
    let close: Vec<&Value> = lines.iter().filter(|l| l["sse_stage"] == "close").collect();
    assert_eq!(close.len(), 2, "{lines:?}");
    assert!(close.iter().any(|l| l["request_id"] == slow_id.as_str()));
    ids_once(
        &lines
            .iter()
            .filter(|l| l["sse_stage"] == "close")
            .cloned()
            .collect::<Vec<_>>(),
    );
}

/// Small limits, so each test is quick; outcomes are asserted, never times.
fn small_limits() -> ServerLimits {
    ServerLimits {
        header_read_timeout: Duration::from_millis(200),
        idle_timeout: Duration::from_millis(300),
        request_timeout: Duration::from_millis(300),
        shutdown_timeout: Duration::from_millis(500),
        max_streams_per_principal: 2,
        max_streams: 3,
        stream_recheck_interval: Duration::from_millis(100),
        ..ServerLimits::default()
    }
}

/// A liveness bound for waits on the Hub: far above every limit above.
const LIVENESS: Duration = Duration::from_secs(10);

/// A traced Hub with [`small_limits`], served on a port of its own.
async fn served_with_small_limits() -> (TestHub, Served) {
    let hub = TestHub::limited(3, small_limits());
    let served = Served::hub(&hub.hub).await;
    (hub, served)
}

async fn raw(addr: std::net::SocketAddr, bytes: &str) -> TcpStream {
    let mut stream = TcpStream::connect(addr).await.unwrap();
    stream.write_all(bytes.as_bytes()).await.unwrap();
    stream
}

fn events_request(addr: std::net::SocketAddr, subject: &str, token: &str) -> String {
    format!(
        "GET /events?sub={subject} HTTP/1.1\r\nHost: {addr}\r\nAuthorization: Bearer {token}\r\n\r\n"
    )
}

/// Opens an event stream and returns the connection and its status.
async fn open_stream(
    addr: std::net::SocketAddr,
    subject: &str,
    token: &str,
) -> (TcpStream, u16, Vec<u8>) {
    let mut stream = raw(addr, &events_request(addr, subject, token)).await;
    let (head, rest) = tokio::time::timeout(LIVENESS, read_head(&mut stream))
        .await
        .expect("a response head");
    let status = head.split(' ').nth(1).unwrap().parse().unwrap();
    (stream, status, rest)
}

fn json_body(head_and_body: &[u8]) -> Value {
    let text = String::from_utf8_lossy(head_and_body);
    let body = text.split_once("\r\n\r\n").map_or(&*text, |(_, b)| b);
    serde_json::from_str(body.trim()).unwrap_or_else(|e| panic!("not JSON ({e}): {text}"))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn slow_and_idle_connections_are_closed_and_the_hub_keeps_answering() {
    let (_hub, served) = served_with_small_limits().await;
    let addr = served.addr;
    // Heads that never end, a connection that never speaks, and one that
    // finished a request and stays idle.
    let mut slow = Vec::new();
    for _ in 0..20 {
        slow.push(raw(addr, "GET /healthz HTTP/1.1\r\nHost: x\r\nX-Slow: ").await);
    }
    let mut silent = TcpStream::connect(addr).await.unwrap();
    let mut idle = raw(addr, "GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n").await;
    let (head, _) = read_head(&mut idle).await;
    assert!(head.starts_with("HTTP/1.1 200"), "{head}");

    let health = reqwest::get(format!("{}/healthz", served.url()))
        .await
        .unwrap();
    assert_eq!(health.status().as_u16(), 200);

    for (i, stream) in slow.iter_mut().enumerate() {
        let (_, closed) = read_to_close(stream, LIVENESS).await;
        assert!(closed, "half-sent head {i} still open");
    }
    let (bytes, closed) = read_to_close(&mut silent, LIVENESS).await;
    assert!(closed && bytes.is_empty(), "a silent connection is closed");
    let (_, closed) = read_to_close(&mut idle, LIVENESS).await;
    assert!(closed, "an idle keep-alive connection is closed");
    served.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_request_that_takes_too_long_is_a_json_408_with_its_one_line() {
    let (hub, served) = served_with_small_limits().await;
    let addr = served.addr;
    let agent = hub.first_agent_id().await;
    let lines_before = perf_values(&hub.log).len();
    // Ten bytes of a promised hundred.
    let mut stream = raw(
        addr,
        &format!(
            "PUT /api/v1/agents/{agent}/status HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer {}\r\nContent-Type: application/json\r\nContent-Length: 100\r\n\r\n{{\"phase\":",
            hub.doc().owner_token
        ),
    )
    .await;
    let (bytes, closed) = read_to_close(&mut stream, LIVENESS).await;
    assert!(closed, "answered and closed");
    let text = String::from_utf8_lossy(&bytes);
    assert!(text.starts_with("HTTP/1.1 408"), "{text}");
    assert_eq!(json_body(&bytes)["error"], "request timed out");
    let lines = wait_for_lines(&hub.log, 500, |l| l.len() > lines_before).await;
    let puts: Vec<&Value> = lines[lines_before..]
        .iter()
        .filter(|l| l["method"] == "PUT")
        .collect();
    assert_eq!(puts.len(), 1, "{puts:?}");
    served.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn event_streams_over_the_caps_are_refused_429_and_freed_when_they_end() {
    let (hub, served) = served_with_small_limits().await;
    let addr = served.addr;
    let doc = hub.doc().clone();
    let me = "users.me.%3E";
    let (first, status, _) = open_stream(addr, me, &doc.member_token).await;
    assert_eq!(status, 200);
    let (_second, status, _) = open_stream(addr, me, &doc.member_token).await;
    assert_eq!(status, 200);
    let (_, status, _) = open_stream(addr, me, &doc.member_token).await;
    assert_eq!(status, 429, "over the caller's cap");
    let (_owner, status, _) = open_stream(addr, me, &doc.owner_token).await;
    assert_eq!(status, 200);
    let (_, status, _) = open_stream(addr, me, &doc.admin_token).await;
    assert_eq!(status, 429, "over the Hub's cap");
    assert_eq!(hub.hub.streams().open(), 3);

    // A stream that ends gives its place back (noticed at its next write).
    drop(first);
    let freed = poll(
        500,
        || hub.hub.streams().open() < 3,
        |_| {
            hub.hub.bus().publish(HubEvent {
                kind: "agent.status",
                subjects: vec![format!("users.{}.ping", doc.member_user_id)],
                data: "{}".into(),
            });
        },
    )
    .await;
    assert!(freed, "the closed stream still counts");
    let (_admin, status, _) = open_stream(addr, me, &doc.admin_token).await;
    assert_eq!(status, 200);
    served.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_429_is_json_and_names_the_cap() {
    let (hub, served) = served_with_small_limits().await;
    let doc = hub.doc().clone();
    let mut open = Vec::new();
    for _ in 0..2 {
        open.push(open_stream(served.addr, "users.me.%3E", &doc.member_token).await);
    }
    let mut stream = raw(
        served.addr,
        &events_request(served.addr, "users.me.%3E", &doc.member_token),
    )
    .await;
    let (head, body) = read_head(&mut stream).await;
    assert!(head.starts_with("HTTP/1.1 429"), "{head}");
    assert_eq!(
        head_header(&head, "content-type").unwrap(),
        "application/json"
    );
    let mut body = body;
    while serde_json::from_slice::<Value>(&body).is_err() {
        let mut chunk = [0u8; 1024];
        let n = stream.read(&mut chunk).await.unwrap();
        assert!(n > 0);
        body.extend_from_slice(&chunk[..n]);
    }
    let json: Value = serde_json::from_slice(&body).unwrap();
    assert_eq!(json["error"], "too many event streams open for this caller");
    // Like a refused subscription: only the close line.
    let id = head_header(&head, "x-request-id").unwrap();
    let lines = wait_for_lines(&hub.log, 1000, |lines| {
        lines.iter().any(|l| l["request_id"] == id.as_str())
    })
    .await;
    let mine: Vec<&Value> = lines
        .iter()
        .filter(|l| l["request_id"] == id.as_str())
        .collect();
    assert_eq!(mine.len(), 1, "{mine:?}");
    assert_eq!(mine[0]["sse_stage"], "close");
    assert_eq!(mine[0]["audit_records"], 0, "refused before any decision");
    drop(open);
    served.stop().await;
}

/// Reads a stream until it closes and returns the `end` event's reason.
async fn end_reason(stream: &mut TcpStream, already: Vec<u8>) -> String {
    let (bytes, closed) = read_to_close(stream, LIVENESS).await;
    assert!(closed, "the stream did not end");
    hub_support::end_event_reason(&String::from_utf8_lossy(&[already, bytes].concat()))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_stream_ends_when_its_credential_expires() {
    let (hub, served) = served_with_small_limits().await;
    let doc = hub.doc().clone();
    let token = access_token_for(&hub, 40, hub_example::clock::now_ms() + 400);
    let subject = project_agents(&doc);
    let (mut stream, status, rest) = open_stream(served.addr, &subject, &token).await;
    assert_eq!(status, 200);
    assert_eq!(end_reason(&mut stream, rest).await, "credential_expired");

    // A session token that expires soon ends the same way.
    let session = hub_example::auth::tokens::TokenSigner::from_session_secret(SECRET).issue(
        &hub_example::auth::tokens::TokenSubject::User(doc.member_user_id.clone()),
        hub_example::clock::now_secs() + 1,
    );
    let (mut stream, status, rest) = open_stream(served.addr, &subject, &session).await;
    assert_eq!(status, 200);
    assert_eq!(end_reason(&mut stream, rest).await, "credential_expired");
    served.stop().await;
}

fn access_token_for(hub: &TestHub, seed: u8, expires_at_ms: i64) -> String {
    let doc = hub.doc();
    hub.access_token(
        &format!("{seed:08x}-0000-4000-8000-000000000000"),
        &doc.member_user_id,
        &doc.project_id,
        seed,
        "faults",
        expires_at_ms,
    )
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_stream_stops_when_its_token_is_revoked_or_its_role_removed() {
    let (hub, served) = served_with_small_limits().await;
    let doc = hub.doc().clone();
    let subject = project_agents(&doc);

    let token = access_token_for(&hub, 41, i64::MAX);
    let (mut revoked, status, rest) = open_stream(served.addr, &subject, &token).await;
    assert_eq!(status, 200);
    hub.with_db(|db| {
        hub_example::store::tokens::revoke_user_access_token(
            db,
            &format!("{:08x}-0000-4000-8000-000000000000", 41),
            1,
        )
    })
    .unwrap();
    assert_eq!(end_reason(&mut revoked, rest).await, "access_revoked");

    // The member reaches the project through its group's binding.
    let (mut removed, status, rest) = open_stream(served.addr, &subject, &doc.member_token).await;
    assert_eq!(status, 200);
    let log = hub.hub.audit_log().clone();
    let sent = log.sent();
    hub.execute(
        "DELETE FROM role_bindings WHERE principal_kind = 'group' AND scope_id = ?1",
        &[&doc.project_id],
    );
    assert_eq!(end_reason(&mut removed, rest).await, "access_revoked");
    // The re-check whose outcome changed wrote its decisions.
    assert!(log.sent() > sent, "the refusal is audited");
    // And it cannot subscribe again.
    let (_, status, _) = open_stream(served.addr, &subject, &doc.member_token).await;
    assert_eq!(status, 403);
    served.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn status_events_never_go_back_in_time_under_concurrent_writes() {
    let hub = TestHub::traced(3);
    let doc = hub.doc().clone();
    let agent = hub.first_agent_id().await;
    let mut events = hub.hub.bus().subscribe();
    let writers: Vec<_> = (0..8)
        .map(|w| {
            let router = hub.router.clone();
            let (agent, token) = (agent.clone(), doc.owner_token.clone());
            tokio::spawn(async move {
                for i in 0..25 {
                    let phase = if (w + i) % 2 == 0 {
                        "running"
                    } else {
                        "stopped"
                    };
                    let request =
                        axum::http::Request::put(format!("/api/v1/agents/{agent}/status"))
                            .header("authorization", format!("Bearer {token}"))
                            .header("content-type", "application/json")
                            .body(axum::body::Body::from(format!(r#"{{"phase":"{phase}"}}"#)))
                            .unwrap();
                    let response = tower::ServiceExt::oneshot(router.clone(), request)
                        .await
                        .unwrap();
                    assert_eq!(response.status(), StatusCode::OK);
                }
            })
        })
        .collect();
    for writer in writers {
        writer.await.unwrap();
    }
    let mut times = Vec::new();
    while let Ok(event) = events.try_recv() {
        let data: Value = serde_json::from_str(&event.data).unwrap();
        times.push(data["updatedAt"].as_str().unwrap().to_owned());
    }
    assert_eq!(times.len(), 200);
    let back: Vec<_> = times.windows(2).filter(|w| w[1] < w[0]).collect();
    assert!(
        back.is_empty(),
        "{} of 199 steps go back: {back:?}",
        back.len()
    );
    // And the last event is the row as stored.
    let stored = hub
        .get(&format!("/api/v1/agents/{agent}"), Some(&doc.owner_token))
        .await
        .json();
    assert_eq!(stored["updatedAt"].as_str().unwrap(), times.last().unwrap());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn shutdown_ends_streams_closes_idle_heads_and_cuts_off_what_outlives_the_deadline() {
    let (hub, served) = served_with_small_limits().await;
    let addr = served.addr;
    let doc = hub.doc().clone();
    let agent = hub.first_agent_id().await;
    let subject = project_agents(&doc);
    let (mut stream, status, rest) = open_stream(addr, &subject, &doc.member_token).await;
    assert_eq!(status, 200);
    let mut half_head = raw(addr, "GET /healthz HTTP/1.1\r\nHost: x\r\n").await;
    // A body that never completes, in a Hub whose request timeout is
    // longer than its shutdown deadline.
    let slow_hub = TestHub::limited(
        3,
        ServerLimits {
            request_timeout: Duration::from_secs(60),
            ..small_limits()
        },
    );
    let slow_served = Served::hub(&slow_hub.hub).await;
    let mut slow_body = raw(
        slow_served.addr,
        &format!(
            "PUT /api/v1/agents/{agent}/status HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer {}\r\nContent-Length: 100\r\n\r\n{{",
            slow_hub.doc().owner_token
        ),
    )
    .await;
    poll(1000, || slow_hub.hub.requests_in_flight() == 1, drop).await;
    assert_eq!(
        slow_hub.hub.requests_in_flight(),
        1,
        "the slow request is in"
    );

    tokio::time::timeout(LIVENESS, served.stop())
        .await
        .expect("shutdown finishes with a stream and a half-sent head open");
    assert_eq!(end_reason(&mut stream, rest).await, "shutdown");
    let (_, closed) = read_to_close(&mut half_head, LIVENESS).await;
    assert!(closed);

    tokio::time::timeout(LIVENESS, slow_served.stop())
        .await
        .expect("shutdown finishes with a slow body open");
    let (_, closed) = read_to_close(&mut slow_body, LIVENESS).await;
    assert!(closed);
    assert_eq!(slow_hub.hub.requests_in_flight(), 0);
    let lines = slow_hub.lines();
    let field = |msg: &str, key: &str| -> i64 {
        let line = lines
            .iter()
            .find(|l| l.contains(&format!("\"msg\":\"{msg}\"")))
            .unwrap_or_else(|| panic!("no {msg} line: {lines:?}"));
        serde_json::from_str::<Value>(line).unwrap()[key]
            .as_i64()
            .unwrap()
    };
    assert_eq!(field("shutdown started", "requests_in_flight"), 1);
    assert_eq!(field("shutdown started", "deadline_ms"), 500);
    assert_eq!(field("shutdown finished", "cut_off_requests"), 1);
    assert_eq!(field("shutdown finished", "cut_off_connections"), 1);
    // The cut-off request still wrote its one line.
    let puts = perf_values(&slow_hub.log)
        .into_iter()
        .filter(|l| l["method"] == "PUT")
        .count();
    assert_eq!(puts, 1);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_stream_s_re_checks_add_nothing_to_its_line() {
    let (hub, served) = served_with_small_limits().await;
    let doc = hub.doc().clone();
    let (mut stream, id, rest) = member_stream(served.addr, &doc).await;
    wait_for_stage(&hub.log, &id, "connect").await;
    // Each re-check makes a decision, not written while its outcome stays
    // the same: wait for two of them.
    let log = hub.hub.audit_log().clone();
    let (sent, before) = (log.sent(), log.unchanged_rechecks());
    poll(1000, || log.unchanged_rechecks() >= before + 2, drop).await;
    assert!(log.unchanged_rechecks() >= before + 2, "no re-check ran");
    assert_eq!(log.sent(), sent, "an unchanged re-check writes nothing");

    served.stop().await;
    assert_eq!(end_reason(&mut stream, rest).await, "shutdown");
    let mine: Vec<Value> = hub
        .perf_values()
        .into_iter()
        .filter(|l| l["request_id"] == id.as_str())
        .collect();
    assert_eq!(mine.len(), 2, "{mine:?}");
    let (connect, close) = (&mine[0], &mine[1]);
    assert_eq!(close["sse_stage"], "close");
    for key in ["authz_store_calls", "audit_records", "audit_allow"] {
        assert_eq!(close[key], connect[key], "{key}");
    }
}

/// A Hub served with at most `max` connections (`per_address` from one
/// address) and the default timeouts: only the caps decide what closes.
async fn served_with_connection_caps(max: usize, per_address: usize) -> (TestHub, Served) {
    let hub = TestHub::limited(
        3,
        ServerLimits {
            max_connections: Some(max),
            max_connections_per_address: Some(per_address),
            ..ServerLimits::default()
        },
    );
    let served = Served::hub(&hub.hub).await;
    (hub, served)
}

const ANONYMOUS: &str = "GET /api/v1/settings/public HTTP/1.1\r\nHost: x\r\n\r\n";

/// Opens `n` connections that each make one anonymous request and stay
/// open, idle.
async fn idle_anonymous(addr: std::net::SocketAddr, n: usize) -> Vec<TcpStream> {
    let mut idle = Vec::new();
    for _ in 0..n {
        let mut stream = raw(addr, ANONYMOUS).await;
        let (head, _) = read_head(&mut stream).await;
        assert!(head.starts_with("HTTP/1.1 200"), "{head}");
        idle.push(stream);
    }
    idle
}

/// Opens `n` connections that each make one request with `token` and stay
/// open, idle.
async fn idle_callers(addr: std::net::SocketAddr, token: &str, n: usize) -> Vec<TcpStream> {
    let mut callers = Vec::new();
    for _ in 0..n {
        let mut caller = send_get(addr, "/api/v1/profiling", token).await;
        let (head, _) = read_head(&mut caller).await;
        assert!(head.starts_with("HTTP/1.1 200"), "{head}");
        callers.push(caller);
    }
    callers
}

/// Sends an anonymous request on a new connection and checks it is refused
/// with `status` and `message`, `Retry-After`, and closed.
async fn assert_refused(addr: std::net::SocketAddr, status: u16, message: &str) {
    let mut stream = raw(addr, ANONYMOUS).await;
    let (bytes, closed) = read_to_close(&mut stream, LIVENESS).await;
    assert!(closed, "a refused connection is closed");
    let text = String::from_utf8_lossy(&bytes);
    assert!(text.starts_with(&format!("HTTP/1.1 {status} ")), "{text}");
    let (head, _) = text.split_once("\r\n\r\n").unwrap();
    assert_eq!(head_header(head, "retry-after").as_deref(), Some("1"));
    assert_eq!(json_body(&bytes)["error"], message);
}

/// `/healthz` on a new connection: its status and its `connections`.
async fn health_connections(addr: std::net::SocketAddr) -> (u16, Value) {
    let mut stream = raw(
        addr,
        "GET /healthz HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n",
    )
    .await;
    let (bytes, closed) = read_to_close(&mut stream, LIVENESS).await;
    assert!(closed);
    let text = String::from_utf8_lossy(&bytes);
    let status = text.split(' ').nth(1).unwrap().parse().unwrap();
    (status, json_body(&bytes)["connections"].clone())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn idle_anonymous_connections_at_the_cap_leave_healthz_and_callers_answered() {
    // 24 connections, 4 of them kept for /healthz and callers.
    let (hub, served) = served_with_connection_caps(24, 1_000).await;
    let addr = served.addr;
    let idle = idle_anonymous(addr, 20).await;

    assert_refused(addr, 503, "too many connections; retry later").await;
    let mut silent = TcpStream::connect(addr).await.unwrap();
    let (bytes, closed) = read_to_close(&mut silent, LIVENESS).await;
    assert!(closed && bytes.is_empty(), "a silent one in the headroom");

    let (status, connections) = health_connections(addr).await;
    assert_eq!(status, 200);
    assert_eq!(connections["capacity"], 24);
    assert_eq!(connections["headroom"], 4);
    assert_eq!(connections["perAddress"], 24, "never above the cap");
    // The idle ones and this one (and the refused ones, if their ends are
    // not counted yet).
    let open = connections["open"].as_u64().unwrap();
    assert!((21..=23).contains(&open), "{connections}");
    assert_eq!(connections["refused"], 2);
    // A health check in the headroom is answered, then its connection is
    // closed even though it asked to keep it.
    let mut keep_alive = raw(addr, "GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n").await;
    let (bytes, closed) = read_to_close(&mut keep_alive, LIVENESS).await;
    let text = String::from_utf8_lossy(&bytes);
    assert!(text.starts_with("HTTP/1.1 200") && closed, "{text}");

    let mut caller = send_get(addr, "/api/v1/profiling", &hub.doc().member_token).await;
    let (head, _) = read_head(&mut caller).await;
    assert!(head.starts_with("HTTP/1.1 200"), "{head}");
    // A cookie is a credential too; refused (it is no session), it keeps
    // no room.
    let mut cookie = raw(
        addr,
        "GET /api/v1/profiling HTTP/1.1\r\nHost: x\r\nCookie: scion_session=scws_x\r\n\r\n",
    )
    .await;
    let (bytes, closed) = read_to_close(&mut cookie, LIVENESS).await;
    let text = String::from_utf8_lossy(&bytes);
    assert!(text.starts_with("HTTP/1.1 401") && closed, "{text}");
    drop(idle);
    served.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_addresss_connections_past_its_cap_must_carry_a_credential() {
    let (hub, served) = served_with_connection_caps(100, 3).await;
    let addr = served.addr;
    let idle = idle_anonymous(addr, 3).await;
    assert_refused(
        addr,
        429,
        "too many connections from this address; retry later",
    )
    .await;
    let mut caller = send_get(addr, "/api/v1/profiling", &hub.doc().member_token).await;
    let (head, _) = read_head(&mut caller).await;
    assert!(head.starts_with("HTTP/1.1 200"), "{head}");
    let (status, connections) = health_connections(addr).await;
    assert_eq!(status, 200);
    assert_eq!(connections["refused"], 1);
    let open = connections["open"].as_u64().unwrap();
    assert!((5..=6).contains(&open), "{connections}");
    // Once one of the address's connections ends, a new one is welcome.
    drop(idle);
    drop(caller);
    let mut again = raw(addr, ANONYMOUS).await;
    let mut answered = false;
    for _ in 0..100 {
        let (head, _) = read_head(&mut again).await;
        if head.starts_with("HTTP/1.1 200") {
            answered = true;
            break;
        }
        // Counted before the drops reached the Hub: try again.
        tokio::time::sleep(Duration::from_millis(50)).await;
        again = raw(addr, ANONYMOUS).await;
    }
    assert!(
        answered,
        "the address's count fell as its connections ended"
    );
    served.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn idle_connections_are_closed_sooner_as_the_cap_nears() {
    // The idle timeout is a minute; at the cap an idle connection is kept
    // half a second, until the count is below it again.
    let (hub, served) = served_with_connection_caps(16, 1_000).await;
    let addr = served.addr;
    let callers = idle_callers(addr, &hub.doc().member_token, 16).await;
    let open = || hub.hub.connections().figures().unwrap().open;
    let start = std::time::Instant::now();
    while open() == 16 {
        assert!(
            start.elapsed() < LIVENESS,
            "no idle connection closed at the cap"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    // Room again: a new caller is served at once.
    let mut caller = send_get(addr, "/api/v1/profiling", &hub.doc().member_token).await;
    let (head, _) = read_head(&mut caller).await;
    assert!(head.starts_with("HTTP/1.1 200"), "{head}");
    assert_eq!(hub.hub.connections().figures().unwrap().refused, 0);
    drop(callers);
    served.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_listener_with_its_own_cap_is_served_when_the_hubs_is_reached() {
    let hub = TestHub::limited(
        3,
        ServerLimits {
            max_connections: Some(8),
            max_connections_per_address: Some(8),
            ..ServerLimits::default()
        },
    );
    let api = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let own = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let (api_addr, own_addr) = (api.local_addr().unwrap(), own.local_addr().unwrap());
    let pong = hub
        .hub
        .guarded(Router::new().route("/ping", get(|| async { "pong" })));
    let listeners = vec![
        hub_example::Listener::new("api", api, hub.hub.router()),
        hub_example::Listener::new("metrics", own, pong).with_max_connections(2),
    ];
    let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
    let serving = hub.hub.serving_listeners(listeners, async {
        let _ = stopped.await;
    });
    let task = tokio::spawn(serving);
    // The Hub's cap less its headroom of 4, all idle and anonymous.
    let idle = idle_anonymous(api_addr, 4).await;
    assert_refused(api_addr, 503, "too many connections; retry later").await;
    // Callers fill the headroom: the Hub's cap is reached.
    let callers = idle_callers(api_addr, &hub.doc().member_token, 4).await;
    // The capped listener is still accepted from, and an anonymous request
    // there is not on probation.
    let mut ping = raw(own_addr, "GET /ping HTTP/1.1\r\nHost: x\r\n\r\n").await;
    let (head, _) = read_head(&mut ping).await;
    assert!(head.starts_with("HTTP/1.1 200"), "{head}");
    drop((idle, callers, ping));
    let _ = stop.send(());
    task.await.unwrap().unwrap();
}
