//! The Hub's paths beyond the authorization store on PostgreSQL, each
//! against its SQLite behaviour: audit records written and read back
//! through `GET /api/v1/admin/audit-events` (the same JSON on both stores)
//! and the audit writer riding out an unavailable server; browser sessions
//! (sign-in, the page shell, sign-out, the test login); the readiness marks
//! changed through one Hub and read by another on the same schema; and a
//! project's delegations, listed the same on both stores with the same
//! counts.
//!
//! The server is `PERF_TRACE_PG_URL`; without it these tests are skipped
//! (one line on standard error says so; with `CI=true` they fail). Each
//! test seeds a schema or a database of its own and drops it.

mod hub_support;

use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use axum::body::Body;
use axum::http::{header, Method, Request, StatusCode};
use axum::Router;
use hub_example::authz::audit::{AuditBackend, WRITER_BUSY_TIMEOUT};
use hub_example::authz::{
    Action, AuditEmitter, AuditEntry, AuditOutcome, AuditRecord, ChannelAuditSink,
};
use hub_example::authz::{AuditLog, Resource};
use hub_example::log::CaptureBuffer;
use hub_example::model::PrincipalRef;
use hub_example::settings::Settings;
use hub_example::store;
use hub_example::web::{self, WebOptions};
use hub_example::Hub;
use hub_support::pg_url::pg_url;
use hub_support::postgres::PgDatabase;
use hub_support::sql::{off_runtime, query};
use hub_support::web::{
    assert_session_stored_as_hash, cookie_pair, send, sign_in_request, web_request, with_cookie,
    Answer,
};
use hub_support::{counts, hub_options, Seeded, TestHub, TRACED};
use serde_json::{json, Value};

/// The same seed on SQLite and in a schema of the PostgreSQL server. The
/// Hubs keep audit rows a century: the fixed records are dated from
/// [`T0`], which their writers' retention window would otherwise expire.
fn both_stores(server: &str) -> (TestHub, TestHub) {
    let hubs = (
        TestHub::over(Seeded::on_sqlite(4), TRACED),
        TestHub::over(Seeded::on_postgres(4, server), TRACED),
    );
    for hub in [&hubs.0, &hubs.1] {
        hub.hub
            .audit_log()
            .set_retention(Duration::from_secs(100 * 365 * 86_400));
    }
    hubs
}

/// Start of the fixed records' window: 2026-01-01T00:00:00Z.
const T0: i64 = 1_767_225_600_000;

/// 50 records, two per second from [`T0`], over every outcome and kind of
/// resource.
fn fixed_records() -> Vec<AuditRecord> {
    let outcomes = [AuditOutcome::Allow, AuditOutcome::Deny, AuditOutcome::Error];
    (0..50u64)
        .map(|i| AuditRecord {
            at: UNIX_EPOCH + Duration::from_millis(T0 as u64 + (i / 2) * 1_000),
            principal: if i % 4 == 3 {
                PrincipalRef::agent(format!("agent-{i}"))
            } else {
                PrincipalRef::user(format!("user-{}", i % 3))
            },
            action: [Action::AgentRead, Action::AgentList, Action::HubAdmin][i as usize % 3],
            resource: match i % 5 {
                0 => Resource::Hub,
                1 => Resource::Project(format!("p-{i}").into()),
                2 => Resource::Agent(format!("a-{i}").into()),
                3 => Resource::Group(format!("g-{i}").into()),
                _ => Resource::User(format!("u-{i}").into()),
            },
            outcome: outcomes[i as usize % 3],
        })
        .collect()
}

fn write_directly(mut backend: Box<dyn AuditBackend>, batch: Vec<AuditRecord>) {
    let batch: Vec<AuditEntry> = batch.into_iter().map(AuditEntry::from).collect();
    off_runtime(move || backend.write_batch(&batch).unwrap());
}

/// Every page of `query` as the admin, following `nextCursor`.
async fn pages(hub: &TestHub, query: &str) -> Vec<Value> {
    let mut out = Vec::new();
    let mut cursor: Option<String> = None;
    loop {
        let uri = match &cursor {
            Some(c) => format!("/api/v1/admin/audit-events?{query}&cursor={c}"),
            None => format!("/api/v1/admin/audit-events?{query}"),
        };
        let reply = hub.get(&uri, Some(&hub.doc().admin_token)).await;
        assert_eq!(reply.status, StatusCode::OK, "{:?}", reply.json());
        let page = reply.json();
        cursor = page["nextCursor"].as_str().map(str::to_owned);
        out.push(page);
        if cursor.is_none() {
            return out;
        }
    }
}

/// Waits until the writer has written every record accepted so far.
fn wait_flushed(log: &AuditLog) {
    let until = Instant::now() + Duration::from_secs(20);
    while log.flushed() < log.sent() && Instant::now() < until {
        std::thread::sleep(Duration::from_millis(5));
    }
    assert_eq!(log.flushed(), log.sent(), "the audit writer fell behind");
}

fn now_ms() -> i64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap()
        .as_millis() as i64
}

#[tokio::test]
async fn audit_records_are_written_and_read_back_with_the_same_json_as_on_sqlite() {
    let Some(server) = pg_url() else { return };
    let (sqlite, postgres) = both_stores(&server);
    assert_eq!(sqlite.hub.audit_log().health().backend, "sqlite");
    assert_eq!(postgres.hub.audit_log().health().backend, "postgres");

    // The same records at fixed times, written before any request: the
    // same ids on both stores.
    write_directly(
        Box::new(store::audit::open(sqlite.hub.db(), WRITER_BUSY_TIMEOUT).unwrap()),
        fixed_records(),
    );
    write_directly(
        Box::new(store::audit::open(postgres.hub.db(), WRITER_BUSY_TIMEOUT).unwrap()),
        fixed_records(),
    );
    let to = T0 + 25_000;
    for query in [
        // Exact count, per-minute histogram, cursor pages of 7.
        format!("from={T0}&to={to}&limit=7&time_resolution=minute"),
        // A window past an hour: the count estimated from the ids.
        format!(
            "from={}&to={to}&limit=20&time_resolution=hour",
            T0 - 3_600_000
        ),
    ] {
        let on_sqlite = pages(&sqlite, &query).await;
        let on_postgres = pages(&postgres, &query).await;
        assert_eq!(on_sqlite, on_postgres, "{query}");
        let events: usize = on_postgres
            .iter()
            .map(|p| p["events"].as_array().unwrap().len())
            .sum();
        assert_eq!(events, 50, "{query}");
        assert_eq!(on_postgres[0]["count"], 50, "{query}");
    }

    // The Hub's own decisions: the member's lists, written by each Hub's
    // writer and read back the same (but for their times).
    let from = now_ms();
    for hub in [&sqlite, &postgres] {
        for _ in 0..3 {
            let list = hub
                .get(&hub.project_agents_uri(), Some(&hub.doc().member_token))
                .await;
            assert_eq!(list.status, StatusCode::OK);
        }
    }
    wait_flushed(sqlite.hub.audit_log());
    wait_flushed(postgres.hub.audit_log());
    let to = now_ms() + 1;
    // The audit read itself is a decision: let it fall after the window.
    tokio::time::sleep(Duration::from_millis(5)).await;
    let query = format!("from={from}&to={to}&limit=500");
    let without_times = |mut page: Value| {
        for key in ["from", "to"] {
            page.as_object_mut().unwrap().remove(key);
        }
        for event in page["events"].as_array_mut().unwrap() {
            event.as_object_mut().unwrap().remove("at");
        }
        page
    };
    let on_sqlite = without_times(pages(&sqlite, &query).await.remove(0));
    let on_postgres = without_times(pages(&postgres, &query).await.remove(0));
    assert_eq!(on_sqlite, on_postgres);
    let events = on_postgres["events"].as_array().unwrap();
    assert!(!events.is_empty(), "{on_postgres}");
    assert_eq!(on_postgres["count"], events.len());
    for event in events {
        assert_eq!(
            event["principal"],
            json!({"kind": "user", "id": postgres.doc().member_user_id})
        );
    }
}

/// The rows of `hub`'s audit table, oldest first: time and decisions.
fn stored(hub: &TestHub) -> Vec<(i64, i64)> {
    hub_support::sql::query(
        &hub.seeded.db(),
        "SELECT at_ms, CAST(allowed + denied + errors AS BIGINT) FROM audit_events ORDER BY at_ms, id",
        &[],
    )
    .iter()
    .map(|row| (row[0].int(), row[1].int()))
    .collect()
}

#[tokio::test]
async fn a_list_batch_and_the_retention_window_store_and_prune_the_same_on_both_stores() {
    let Some(server) = pg_url() else { return };
    let (sqlite, postgres) = both_stores(&server);
    // The fixed records one by one, then a batch of ten agents' reads
    // summarized into one row.
    let mut batch = (0..10).map(|i| AuditRecord {
        at: UNIX_EPOCH + Duration::from_millis(T0 as u64 + 60_000),
        principal: PrincipalRef::user("user-0"),
        action: Action::AgentRead,
        resource: Resource::Agent(format!("a-{i}").into()),
        outcome: [AuditOutcome::Allow, AuditOutcome::Deny][i % 2],
    });
    let summary = hub_example::authz::audit::summarize(&mut batch);
    assert_eq!(summary.len(), 1);
    let mut sqlite_backend = store::audit::open(sqlite.hub.db(), WRITER_BUSY_TIMEOUT).unwrap();
    let postgres_backend = store::audit::open(postgres.hub.db(), WRITER_BUSY_TIMEOUT).unwrap();
    let entries: Vec<AuditEntry> = fixed_records()
        .into_iter()
        .map(AuditEntry::from)
        .chain(summary)
        .collect();
    sqlite_backend.write_batch(&entries).unwrap();
    let (postgres_backend, deleted) = off_runtime(move || {
        let mut backend = postgres_backend;
        backend.write_batch(&entries).unwrap();
        // Expire the first 20 s of records (40 rows) in passes of 15.
        let deleted: Vec<u64> = (0..4)
            .map(|_| backend.prune(T0 + 20_000, 15).unwrap())
            .collect();
        (backend, deleted)
    });
    drop(postgres_backend);
    let sqlite_deleted: Vec<u64> = (0..4)
        .map(|_| sqlite_backend.prune(T0 + 20_000, 15).unwrap())
        .collect();
    assert_eq!(deleted, vec![15, 15, 10, 0]);
    assert_eq!(sqlite_deleted, deleted);
    let left = stored(&postgres);
    assert_eq!(left, stored(&sqlite));
    assert_eq!(left.len(), 11, "ten newer records and the list's row");
    assert!(left.iter().all(|(at, _)| *at >= T0 + 20_000));
    assert_eq!(
        left.last(),
        Some(&(T0 + 60_000, 10)),
        "the list's row stands for ten"
    );

    let query = format!("from={T0}&to={}&limit=50", T0 + 120_000);
    let (on_sqlite, on_postgres) = (pages(&sqlite, &query).await, pages(&postgres, &query).await);
    assert_eq!(on_sqlite, on_postgres);
    let newest = &on_postgres[0]["events"][0];
    assert_eq!(
        newest["decisions"],
        json!({"allow": 5, "deny": 5, "error": 0})
    );
    assert_eq!(
        newest["deniedIds"],
        json!(["a-1", "a-3", "a-5", "a-7", "a-9"])
    );
    assert_eq!(newest["resource"], json!({"kind": "agent", "id": null}));
}

#[test]
fn an_unavailable_server_fails_the_audit_flushes_which_are_retried_and_lose_nothing() {
    let Some(server) = pg_url() else { return };
    let database = PgDatabase::create(&server);
    let seeded = Seeded::on_postgres(1, database.url());
    let db = seeded.db();
    let backend = store::audit::open(&db, WRITER_BUSY_TIMEOUT).unwrap();
    let (sink, log) = ChannelAuditSink::start_with(Box::new(backend), 1_024, 0);
    let records = fixed_records();
    sink.emit(records[0].clone());
    wait_flushed(&log);

    database.cut_off();
    for record in records.iter().cycle().take(200) {
        sink.emit(record.clone());
    }
    let until = Instant::now() + Duration::from_secs(20);
    while log.failed_flushes() < 2 && Instant::now() < until {
        std::thread::sleep(Duration::from_millis(5));
    }
    assert!(log.failed_flushes() >= 2, "the outage fails the flushes");
    assert_eq!(log.flushed(), 1);
    database.reopen();
    wait_flushed(&log);
    let health = log.health();
    assert_eq!(
        (
            health.accepted,
            health.flushed,
            health.rejected,
            health.queue_size
        ),
        (201, 201, 0, 0)
    );
    assert!(health.is_degraded(), "a failed flush degrades the health");
    // Every record written exactly once, the ids in the order emitted (read
    // through a new pool: the outage closed the old one's connections).
    let rows: Vec<(i64, i64)> = query(
        &seeded.db(),
        "SELECT id, at_ms FROM audit_events ORDER BY id",
        &[],
    )
    .iter()
    .map(|r| (r[0].int(), r[1].int()))
    .collect();
    assert_eq!(rows.len(), 201);
    let emitted: Vec<i64> = std::iter::once(&records[0])
        .chain(records.iter().cycle().take(200))
        .map(|r| r.at.duration_since(UNIX_EPOCH).unwrap().as_millis() as i64)
        .collect();
    assert_eq!(rows.iter().map(|r| r.1).collect::<Vec<_>>(), emitted);
}

/// The `name=value` part of an answer's `Set-Cookie`.
fn cookie_of(answer: &Answer) -> String {
    cookie_pair(answer.cookie.as_deref().expect("a session cookie"))
}

#[tokio::test]
async fn a_web_session_is_created_used_and_ended_on_postgres() {
    let Some(server) = pg_url() else { return };
    let hub = TestHub::over(Seeded::on_postgres(4, &server), Settings::default());
    let web = web::router(&hub.hub, WebOptions { test_login: true });
    let doc = hub.doc().clone();

    let signed_in = send(&web, sign_in_request(&doc.member_token)).await;
    assert_eq!(signed_in.status, StatusCode::OK, "{:?}", signed_in.json());
    assert_eq!(signed_in.json()["user"]["id"], json!(doc.member_user_id));
    let cookie = cookie_of(&signed_in);
    let profiling = |cookie: &str| with_cookie(web_request("GET", "/api/v1/profiling"), cookie);
    let read = send(&web, profiling(&cookie)).await;
    assert_eq!(
        (read.status, read.json()),
        (StatusCode::OK, json!({"readiness_marks": false}))
    );
    // The page shell reads the same session.
    let shell = send(&web, with_cookie(web_request("GET", "/"), &cookie)).await;
    assert_eq!(shell.status, StatusCode::OK);
    assert!(shell.text.contains(r#""signedIn":true"#));

    assert_session_stored_as_hash(hub.hub.db(), &cookie, &doc.member_user_id);

    let out = send(
        &web,
        with_cookie(web_request("DELETE", "/api/v1/auth/session"), &cookie),
    )
    .await;
    assert_eq!(out.status, StatusCode::OK);
    let after = send(&web, profiling(&cookie)).await;
    assert_eq!(
        (after.status, after.json()),
        (
            StatusCode::UNAUTHORIZED,
            json!({"error": "session expired or signed out"})
        )
    );

    // The test login finds the user by email.
    let login = send(
        &web,
        web_request("POST", "/api/v1/auth/test-login")
            .header(header::CONTENT_TYPE, "application/json")
            .body(Body::from(json!({"email": doc.owner_email}).to_string()))
            .unwrap(),
    )
    .await;
    assert_eq!(login.status, StatusCode::OK, "{:?}", login.json());
    assert_eq!(login.json()["user"]["id"], json!(doc.owner_user_id));
    assert_eq!(
        send(&web, profiling(&cookie_of(&login))).await.status,
        StatusCode::OK
    );
}

async fn bearer_call(
    router: &Router,
    method: Method,
    uri: &str,
    token: &str,
    body: &str,
) -> Answer {
    let request = Request::builder()
        .method(method)
        .uri(uri)
        .header(header::AUTHORIZATION, format!("Bearer {token}"))
        .body(Body::from(body.to_owned()))
        .unwrap();
    send(router, request).await
}

#[tokio::test]
async fn readiness_marks_changed_through_one_hub_are_read_by_another() {
    let Some(server) = pg_url() else { return };
    let seeded = Seeded::on_postgres(4, &server);
    let doc = seeded.doc.clone();
    let hubs: Vec<Router> = (0..2)
        .map(|_| {
            Hub::new(
                seeded.db(),
                hub_options(Settings::default(), &CaptureBuffer::new()),
            )
            .router()
        })
        .collect();
    for (writer, reader, on) in [(0, 1, true), (1, 0, false)] {
        let put = bearer_call(
            &hubs[writer],
            Method::PUT,
            "/api/v1/admin/profiling",
            &doc.admin_token,
            &json!({"readiness_marks": on}).to_string(),
        )
        .await;
        assert_eq!(put.status, StatusCode::OK, "{:?}", put.json());
        let read = bearer_call(
            &hubs[reader],
            Method::GET,
            "/api/v1/profiling",
            &doc.member_token,
            "",
        )
        .await;
        assert_eq!(
            (read.status, read.json()),
            (StatusCode::OK, json!({"readiness_marks": on})),
            "written through Hub {writer}, read through Hub {reader}"
        );
    }
}

#[tokio::test]
async fn delegations_list_the_same_with_the_same_counts_on_both_stores() {
    let Some(server) = pg_url() else { return };
    let (sqlite, postgres) = both_stores(&server);
    let mut answers = Vec::new();
    for hub in [&sqlite, &postgres] {
        let uri = format!("/api/v1/projects/{}/delegations", hub.doc().project_id);
        let reply = hub.get(&uri, Some(&hub.doc().member_token)).await;
        assert_eq!(reply.status, StatusCode::OK, "{:?}", reply.json());
        let id = reply.headers["x-request-id"].to_str().unwrap().to_owned();
        answers.push((reply.body.clone(), counts(&hub.line_of(&id))));
    }
    let delegations: Value = serde_json::from_slice(&answers[1].0).unwrap();
    assert_eq!(
        delegations["delegations"].as_array().unwrap().len(),
        1,
        "{delegations}"
    );
    assert_eq!(
        String::from_utf8_lossy(&answers[0].0),
        String::from_utf8_lossy(&answers[1].0)
    );
    assert_eq!(answers[0].1, answers[1].1, "counts differ between stores");
}
