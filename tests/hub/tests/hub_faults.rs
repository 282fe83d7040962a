//! Faults: a handler that panics, a client that goes away mid-response, a
//! locked database, SSE clients that leave or never read. In each the Hub
//! answers clearly, keeps serving, and writes each request's line once.
//! (Closed standard output and unusable database files need the binary:
//! hub-example/tests/serve_faults.rs.)

mod hub_support;
mod served;

use std::collections::HashMap;
use std::time::Duration;

use axum::http::{Method, StatusCode};
use axum::routing::get;
use axum::Router;
use hub_example::db::{Db, OpenMode, PoolOptions};
use hub_example::events::HubEvent;
use hub_example::log::CaptureBuffer;
use hub_example::settings::Settings;
use hub_example::{Hub, HubOptions};
use hub_support::{Seeded, TestHub, SECRET};
use serde_json::Value;
use served::{head_header, read_head, send_get, wait_for_lines, Served};
use tokio::io::AsyncReadExt;

const TRACED: Settings = Settings {
    perf_trace: true,
    gcp_logs: false,
};

fn options(log: &CaptureBuffer) -> HubOptions {
    HubOptions {
        session_secret: SECRET.into(),
        settings: TRACED,
        log: log.writer(),
    }
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
    let hub = Hub::with_extra_routes(seeded.db(), options(&log), extra);
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
    let hub = TestHub::traced(2000);
    let doc = hub.doc().clone();
    let served = Served::start(hub.router.clone()).await;
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

#[tokio::test]
async fn a_database_locked_past_the_busy_timeout_is_a_503_with_the_line_and_pool_figures() {
    let seeded = Seeded::new(4);
    let path = seeded.dir.path().join("hub.db");
    let short = PoolOptions {
        busy_timeout: Duration::from_millis(100),
        checkout_timeout: Duration::from_millis(200),
        ..PoolOptions::default()
    };
    let db = Db::open(&path, OpenMode::MustExist, short).unwrap();
    let log = CaptureBuffer::new();
    let hub = Hub::new(db, options(&log));
    let hub = TestHubLike {
        router: hub.router(),
        log,
    };
    let doc = seeded.doc.clone();
    let list_uri = format!("/api/v1/projects/{}/agents", doc.project_id);
    let list = hub.call(Method::GET, &list_uri, &doc.owner_token, "").await;
    let agent = list.1["agents"][0]["id"].as_str().unwrap().to_owned();
    let status_uri = format!("/api/v1/agents/{agent}/status");

    // Another process holds the write lock.
    let locker = Db::open(&path, OpenMode::MustExist, PoolOptions::default()).unwrap();
    let lock = locker.conn().unwrap();
    lock.execute_batch("BEGIN EXCLUSIVE; UPDATE hub_settings SET updated_at = updated_at;")
        .unwrap();

    let (status, body, headers) = hub
        .call_full(
            Method::PUT,
            &status_uri,
            &doc.owner_token,
            r#"{"phase":"stopped"}"#,
        )
        .await;
    assert_eq!(status, StatusCode::SERVICE_UNAVAILABLE);
    assert_eq!(
        body,
        serde_json::json!({"error": "database busy or locked, try again later"})
    );
    assert_eq!(headers["retry-after"], "1");
    let id = headers["x-request-id"].to_str().unwrap().to_owned();
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
    let (status, _) = hub.call(Method::GET, &list_uri, &doc.owner_token, "").await;
    assert_eq!(status, StatusCode::OK);

    lock.execute_batch("COMMIT").unwrap();
    let (status, body) = hub
        .call(
            Method::PUT,
            &status_uri,
            &doc.owner_token,
            r#"{"phase":"stopped"}"#,
        )
        .await;
    assert_eq!(status, StatusCode::OK, "{body}");
    assert_eq!(served::perf_values(&hub.log).len(), 4);
}

/// A router and its log, for hubs built by hand.
struct TestHubLike {
    router: Router,
    log: CaptureBuffer,
}

impl TestHubLike {
    async fn call_full(
        &self,
        method: Method,
        uri: &str,
        token: &str,
        body: &str,
    ) -> (StatusCode, Value, axum::http::HeaderMap) {
        use http_body_util::BodyExt;
        use tower::ServiceExt;
        let request = axum::http::Request::builder()
            .method(method)
            .uri(uri)
            .header("authorization", format!("Bearer {token}"))
            .header("content-type", "application/json")
            .body(axum::body::Body::from(body.to_owned()))
            .unwrap();
        let response = self.router.clone().oneshot(request).await.unwrap();
        let status = response.status();
        let headers = response.headers().clone();
        let bytes = response.into_body().collect().await.unwrap().to_bytes();
        (status, serde_json::from_slice(&bytes).unwrap(), headers)
    }

    async fn call(
        &self,
        method: Method,
        uri: &str,
        token: &str,
        body: &str,
    ) -> (StatusCode, Value) {
        let (status, body, _) = self.call_full(method, uri, token, body).await;
        (status, body)
    }
}

fn marker_event(project: &str, marker: &str) -> HubEvent {
    HubEvent {
        kind: "agent.status",
        subjects: vec![format!("projects.{project}.agents.marker.status")],
        data: format!("{{\"marker\":\"{marker}\"}}"),
    }
}

#[tokio::test]
async fn an_sse_client_that_goes_away_gets_one_close_line() {
    let hub = TestHub::traced(3);
    let doc = hub.doc().clone();
    let served = Served::start(hub.router.clone()).await;
    let path = format!("/events?sub=projects.{}.agents.%3E", doc.project_id);

    let mut stream = send_get(served.addr, &path, &doc.member_token).await;
    let (head, _) = read_head(&mut stream).await;
    assert!(head.starts_with("HTTP/1.1 200"), "{head}");
    let id = head_header(&head, "x-request-id").unwrap();
    wait_for_lines(&hub.log, 1000, |lines| {
        lines
            .iter()
            .any(|l| l["request_id"] == id.as_str() && l["sse_stage"] == "connect")
    })
    .await;
    drop(stream);

    // A write to the closed connection ends the stream if the server has not
    // noticed yet.
    let bus = hub.hub.bus().clone();
    for i in 0..1000 {
        let closed = served::perf_values(&hub.log)
            .iter()
            .any(|l| l["request_id"] == id.as_str() && l["sse_stage"] == "close");
        if closed {
            break;
        }
        bus.publish(marker_event(&doc.project_id, &format!("m{i}")));
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
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
    let hub = TestHub::traced(3);
    let doc = hub.doc().clone();
    let served = Served::start(hub.router.clone()).await;
    let path = format!("/events?sub=projects.{}.agents.%3E", doc.project_id);

    // The slow one: subscribes, reads its head, then never reads again.
    let mut slow = send_get(served.addr, &path, &doc.member_token).await;
    let (head, _) = read_head(&mut slow).await;
    let slow_id = head_header(&head, "x-request-id").unwrap();

    // The reader reads everything until the final marker.
    let mut reader = send_get(served.addr, &path, &doc.member_token).await;
    let (head, rest) = read_head(&mut reader).await;
    assert!(head.starts_with("HTTP/1.1 200"), "{head}");
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
            .call(
                Method::PUT,
                &format!("/api/v1/agents/{agent}/status"),
                Some(&doc.owner_token),
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
    for i in 0..1000 {
        if bus.subscribers() == 0 {
            break;
        }
        bus.publish(marker_event(&doc.project_id, &format!("wake{i}")));
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    served.stop().await;
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
