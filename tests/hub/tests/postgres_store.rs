//! The Hub on PostgreSQL against the Hub on SQLite: the same seed gives the
//! same data, and every request of the count budgets and snapshots gives the
//! same store calls, decisions, phases, status and body bytes on both
//! stores (so the budgets of `perf_budget.rs` and the snapshots of
//! `count_snapshots.rs` hold on PostgreSQL too); writes, migrations, the
//! faults of an unavailable database or an exhausted pool, and the load
//! tool spreading its users over two Hubs sharing one database.
//!
//! The server is `PERF_TRACE_PG_URL`; without it these tests are skipped
//! (one line on standard error says so). Each test seeds a schema or a
//! database of its own and drops it.

mod budget_requests;
mod hub_support;
mod served;

use std::time::Duration;

use axum::http::{Method, StatusCode};
use axum::Router;
use budget_requests::{first_request, get_as, shapes, Caller, AGENTS, SMALL_AGENTS};
use hub_example::log::CaptureBuffer;
use hub_example::perf::keys::HubSchema;
use hub_example::seed::{seed, SeedError, SeedOptions};
use hub_example::serve::SchemaUpdate;
use hub_example::store::db::{Db, DbError, PoolOptions, LATEST_VERSION};
use hub_example::Hub;
use hub_support::pg_url::pg_url;
use hub_support::postgres::{PgDatabase, PgSchema};
use hub_support::{hub_options, Reply, Seeded, TestHub, SECRET, TRACED};
use perf_trace_core::snapshot::CountsView;
use perf_trace_core::testing::perf_traced_request;

/// Every budget request's counts, status and body on `router` as `caller`.
async fn answers(
    router: &Router,
    seeded: &Seeded,
    caller: Caller,
) -> Vec<(&'static str, CountsView, Vec<u8>)> {
    let doc = &seeded.doc;
    let picks = first_request(router, doc).await;
    let mut out = Vec::new();
    for shape in shapes(doc, &picks) {
        let response = perf_traced_request::<HubSchema, _, _, _>(
            router.clone(),
            get_as(doc, caller, &shape.uri),
        )
        .await
        .unwrap();
        assert_eq!(response.status, StatusCode::OK, "{caller} {}", shape.name);
        out.push((
            shape.name,
            CountsView::from(&response),
            response.body.to_vec(),
        ));
    }
    out
}

async fn same_answers_on_both_stores(agents: u32, server: &str) {
    let sqlite = TestHub::over(Seeded::on_sqlite(agents), TRACED);
    let postgres = TestHub::over(Seeded::on_postgres(agents, server), TRACED);
    assert_eq!(sqlite.doc().project_id, postgres.doc().project_id);
    assert_eq!(sqlite.doc().member_token, postgres.doc().member_token);
    for caller in [Caller::Member, Caller::Admin] {
        let on_sqlite = answers(&sqlite.router, &sqlite.seeded, caller).await;
        let on_postgres = answers(&postgres.router, &postgres.seeded, caller).await;
        assert_eq!(on_sqlite.len(), on_postgres.len());
        for ((name, counts_sqlite, body_sqlite), (_, counts_pg, body_pg)) in
            on_sqlite.iter().zip(&on_postgres)
        {
            println!(
                "{caller} {name} at {agents} agents: store calls {} / {}, decisions {} / {}, bytes {} / {}",
                counts_sqlite.store_calls.total,
                counts_pg.store_calls.total,
                counts_sqlite.decisions.map_or(0, |d| d.records),
                counts_pg.decisions.map_or(0, |d| d.records),
                body_sqlite.len(),
                body_pg.len()
            );
            assert_eq!(
                counts_sqlite, counts_pg,
                "{caller} {name} at {agents} agents: counts differ between SQLite and PostgreSQL"
            );
            assert!(
                body_sqlite == body_pg,
                "{caller} {name} at {agents} agents: bodies differ between SQLite and PostgreSQL:\n{}\n{}",
                String::from_utf8_lossy(body_sqlite),
                String::from_utf8_lossy(body_pg)
            );
        }
    }
}

#[tokio::test]
async fn budget_requests_count_the_same_on_both_stores() {
    let Some(server) = pg_url() else { return };
    same_answers_on_both_stores(AGENTS, &server).await;
    same_answers_on_both_stores(SMALL_AGENTS, &server).await;
}

#[tokio::test]
async fn a_status_write_and_a_settings_write_are_read_back() {
    let Some(server) = pg_url() else { return };
    let hub = TestHub::over(Seeded::on_postgres(4, &server), TRACED);
    let doc = hub.doc().clone();
    let agent = hub.first_agent_id().await;

    let put = hub
        .put_status(
            &agent,
            &doc.owner_token,
            &[],
            r#"{"phase":"stopped","activity":"blocked"}"#,
        )
        .await;
    assert_eq!(put.status, StatusCode::OK, "{:?}", put.json());
    let read = hub
        .get(&format!("/api/v1/agents/{agent}"), Some(&doc.owner_token))
        .await
        .json();
    assert_eq!(read["phase"], "stopped");
    assert_eq!(read["activity"], "blocked");
    assert_eq!(read["updatedAt"], put.json()["updatedAt"]);

    let config = hub
        .call(
            Method::PUT,
            "/api/v1/admin/server-config",
            Some(&doc.admin_token),
            &[("content-type", "application/json")],
            r#"{"hub":{"motd":"hello"}}"#,
        )
        .await;
    assert_eq!(config.status, StatusCode::OK, "{:?}", config.json());
    let db = hub.seeded.db();
    let stored = std::thread::spawn(move || {
        let mut conn = db.pg_conn().unwrap();
        conn.query_opt("SELECT value FROM hub_settings WHERE key = 'hub.motd'", &[])
            .unwrap()
            .map(|r| r.get::<_, String>(0))
    })
    .join()
    .unwrap();
    assert_eq!(stored.as_deref(), Some("\"hello\""));
}

#[test]
fn migrations_apply_once_and_an_outdated_schema_is_refused_without_them() {
    let Some(server) = pg_url() else { return };
    let schema = PgSchema::create(&server);
    let url = std::path::PathBuf::from(schema.url());
    let err = Db::open_for_serving(&url, SchemaUpdate::Refuse).unwrap_err();
    assert!(
        matches!(err, DbError::SchemaOutdated { found: 0, .. }),
        "{err}"
    );
    drop(Db::open_for_serving(&url, SchemaUpdate::Migrate).unwrap());
    // Applied once: a second start (another replica) finds nothing to do.
    let db = Db::open_for_serving(&url, SchemaUpdate::Refuse).unwrap();
    let version = std::thread::spawn(move || db.schema_version().unwrap())
        .join()
        .unwrap();
    assert_eq!(version, LATEST_VERSION);
}

#[test]
fn seeding_a_schema_that_holds_tables_is_refused_and_changes_nothing() {
    let Some(server) = pg_url() else { return };
    let seeded = Seeded::on_postgres(3, &server);
    let url = seeded.pg.as_ref().unwrap().url().to_owned();
    let err = seed(&SeedOptions {
        db_path: url.clone().into(),
        session_secret: SECRET.into(),
        agents: 7,
        project_slug: "again".into(),
        rand_seed: 1,
    })
    .unwrap_err();
    assert!(matches!(err, SeedError::NotEmpty(_)), "{err}");
    let db = seeded.db();
    let agents: i64 = std::thread::spawn(move || {
        db.pg_conn()
            .unwrap()
            .query_opt("SELECT COUNT(*) FROM agents", &[])
            .unwrap()
            .unwrap()
            .get(0)
    })
    .join()
    .unwrap();
    assert_eq!(agents, 3 + 10);
}

#[test]
fn an_unreachable_server_is_one_clear_error() {
    if pg_url().is_none() {
        return;
    }
    // A port nothing listens on (the discard port, refused on loopback).
    let err = Db::open_postgres(
        "postgres://hub:s3cret@127.0.0.1:9/none",
        PoolOptions {
            checkout_timeout: Duration::from_secs(2),
            ..PoolOptions::default()
        },
    )
    .unwrap_err();
    let text = err.to_string();
    assert!(
        text.starts_with("cannot connect to PostgreSQL at postgres://hub:***@127.0.0.1:9/none"),
        "{text}"
    );
    assert!(!text.contains("s3cret"), "{text}");
    assert_eq!(text.lines().count(), 1, "{text}");
}

/// A Hub over a schema of `database`, with a short checkout timeout and
/// `max_size` connections, its log captured.
fn hub_over_database(database: &PgDatabase, agents: u32, max_size: u32) -> TestHub {
    TestHub::over_small_pool(
        Seeded::on_postgres(agents, database.url()),
        TRACED,
        max_size,
    )
}

/// A database of its own and a Hub over it with `max_size` connections,
/// checked to answer the member; `None` without a server.
async fn hub_on_a_database_of_its_own(max_size: u32) -> Option<(PgDatabase, TestHub)> {
    let database = PgDatabase::create(&pg_url()?);
    let hub = hub_over_database(&database, 4, max_size);
    assert_eq!(member_lists_agents(&hub).await.status, StatusCode::OK);
    Some((database, hub))
}

/// The member's listing of the project's agents.
async fn member_lists_agents(hub: &TestHub) -> Reply {
    hub.get(&hub.project_agents_uri(), Some(&hub.doc().member_token))
        .await
}

/// A 503 that asks the client to retry in a second.
fn assert_retry_later(reply: &Reply) {
    assert_eq!(
        reply.status,
        StatusCode::SERVICE_UNAVAILABLE,
        "{:?}",
        reply.json()
    );
    assert_eq!(reply.headers["retry-after"], "1");
}

/// A 503 for a database that could not serve the request in time.
fn assert_database_busy(reply: &Reply) {
    assert_retry_later(reply);
    assert_eq!(
        reply.json(),
        serde_json::json!({"error": "database busy or locked, try again later"})
    );
}

/// A thread keeping hold of something (a connection, a row lock) until
/// released: the Hub meets what it holds meanwhile.
struct Holder {
    release: std::sync::mpsc::Sender<()>,
    thread: std::thread::JoinHandle<()>,
}

impl Holder {
    /// Starts `hold`, which takes its hold, calls the `wait` it is given
    /// and lets go when that returns; returns once the hold is taken.
    fn start(hold: impl FnOnce(&dyn Fn()) + Send + 'static) -> Holder {
        let (held_tx, held_rx) = std::sync::mpsc::channel();
        let (release, release_rx) = std::sync::mpsc::channel::<()>();
        let thread = std::thread::spawn(move || {
            hold(&|| {
                held_tx.send(()).unwrap();
                release_rx.recv().unwrap();
            })
        });
        held_rx.recv().unwrap();
        Holder { release, thread }
    }

    /// Lets go and waits for the thread to end.
    fn release(self) {
        self.release.send(()).unwrap();
        self.thread.join().unwrap();
    }
}

#[tokio::test]
async fn an_unavailable_database_is_a_503_with_retry_after_and_its_line_and_the_hub_recovers() {
    let Some((database, hub)) = hub_on_a_database_of_its_own(4).await else {
        return;
    };
    // A refused credential is answered by authentication, untraced.
    let refused = hub
        .get(&hub.project_agents_uri(), Some("scb1.not.a-token"))
        .await;
    assert_eq!(refused.status, StatusCode::UNAUTHORIZED);
    assert!(!refused.headers.contains_key("x-request-id"));
    let mut requests = 1;
    assert_eq!(hub.perf_lines().len(), requests);

    database.cut_off();
    for _ in 0..3 {
        let reply = member_lists_agents(&hub).await;
        requests += 1;
        assert_database_busy(&reply);
        // Authentication could not read the credential's user: the 503 is
        // the Hub's failure, not a refusal, and writes exactly one line.
        let id = reply.headers["x-request-id"].to_str().unwrap();
        let line = hub.line_of(id);
        assert_eq!(line["method"], "GET", "{line}");
        for key in ["db_wait_count", "db_wait_us", "db_in_use", "db_open"] {
            assert!(line[key].is_u64(), "{key}: {line}");
        }
    }

    database.reopen();
    // The pool replaces the connections the server closed; a few requests
    // may still meet one before it is found broken, none after.
    let mut recovered = false;
    for _ in 0..20 {
        let reply = member_lists_agents(&hub).await;
        requests += 1;
        if reply.status == StatusCode::OK {
            recovered = true;
            break;
        }
        assert_eq!(reply.status, StatusCode::SERVICE_UNAVAILABLE);
    }
    assert!(recovered, "the Hub did not recover without a restart");
    let ok = member_lists_agents(&hub).await;
    requests += 1;
    assert_eq!(ok.status, StatusCode::OK);
    // One line per request throughout, the refused credential's aside.
    assert_eq!(hub.perf_lines().len(), requests);
}

#[tokio::test]
async fn an_exhausted_pool_is_a_503_with_retry_after_until_a_connection_frees_up() {
    // The database lives to the test's end: dropping it drops it.
    let Some((_database, hub)) = hub_on_a_database_of_its_own(1).await else {
        return;
    };

    // Hold the Hub's only connection: every checkout waits, then times out.
    let db = hub.hub.db().clone();
    let holder = Holder::start(move |wait| {
        let _conn = db.pg_conn().unwrap();
        wait();
    });
    let reply = member_lists_agents(&hub).await;
    assert_database_busy(&reply);
    // Its line shows why: a checkout (made while authenticating, before
    // the layer's own clock) that waited out the pool's 300 ms timeout,
    // with the one connection open and in use.
    let id = reply.headers["x-request-id"].to_str().unwrap().to_owned();
    let line = hub.line_of(&id);
    assert!(line["db_wait_count"].as_u64().unwrap() >= 1, "{line}");
    assert!(line["db_wait_us"].as_u64().unwrap() >= 250_000, "{line}");
    assert_eq!(line["db_in_use"], 1, "{line}");
    assert_eq!(line["db_open"], 1, "{line}");

    holder.release();
    assert_eq!(member_lists_agents(&hub).await.status, StatusCode::OK);
}

#[tokio::test]
async fn a_row_locked_past_the_lock_timeout_is_a_503_with_the_line_and_pool_figures() {
    let Some(server) = pg_url() else { return };
    let database = PgDatabase::create(&server);
    let hub = hub_over_database(&database, 4, 2);
    let doc = hub.doc().clone();
    let agent = hub.first_agent_id().await;

    // Another client holds the agent's row in an open transaction.
    let url = hub.seeded.pg.as_ref().unwrap().url().to_owned();
    let locked = agent.clone();
    let locker = Holder::start(move |wait| {
        let mut client = postgres::Client::connect(&url, postgres::NoTls).unwrap();
        let mut tx = client.transaction().unwrap();
        tx.execute("SELECT 1 FROM agents WHERE id = $1 FOR UPDATE", &[&locked])
            .unwrap();
        wait();
        tx.rollback().unwrap();
    });

    let status_uri = format!("/api/v1/agents/{agent}/status");
    let body = r#"{"phase":"stopped"}"#;
    let reply = hub
        .call(Method::PUT, &status_uri, Some(&doc.owner_token), &[], body)
        .await;
    assert_retry_later(&reply);
    let id = reply.headers["x-request-id"].to_str().unwrap().to_owned();
    let line = hub.line_of(&id);
    assert_eq!(line["method"], "PUT");
    for key in ["db_wait_count", "db_wait_us", "db_in_use", "db_open"] {
        assert!(line[key].is_u64(), "{key}: {line}");
    }
    assert!(line["db_open"].as_u64().unwrap() >= 1, "{line}");

    locker.release();
    let reply = hub
        .call(Method::PUT, &status_uri, Some(&doc.owner_token), &[], body)
        .await;
    assert_eq!(reply.status, StatusCode::OK);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn load_over_two_replicas_reports_each_and_every_request_reaches_the_one_it_names() {
    let Some(server) = pg_url() else { return };
    let seeded = Seeded::on_postgres(8, &server);
    let hubs: Vec<(Hub, CaptureBuffer)> = (0..2)
        .map(|_| {
            let log = CaptureBuffer::new();
            let hub = Hub::new(seeded.db(), hub_options(TRACED, &log));
            (hub, log)
        })
        .collect();
    let mut served = Vec::new();
    for (hub, _) in &hubs {
        served.push(served::Served::hub(hub).await);
    }
    let seed_path = seeded.dir.path().join("seed.json");
    std::fs::write(&seed_path, serde_json::to_vec(&seeded.doc).unwrap()).unwrap();
    let report = hub_bench::run_load(hub_bench::LoadArgs {
        hub: format!("{},{}", served[0].url(), served[1].url()),
        seed: seed_path,
        users: 6,
        duration: Duration::from_secs(2),
        spawn_rate: 100,
        max_requests: 100_000,
        out: seeded.dir.path().join("load.json"),
        notes: String::new(),
        hub_pid: None,
        csv: None,
        compare: None,
    })
    .await
    .unwrap();
    for s in served {
        s.stop().await;
    }

    assert_eq!(report.unexpected_failures, 0, "{report:?}");
    assert_eq!(report.replicas.len(), 2);
    let total: u64 = report.replicas.iter().map(|r| r.total_requests).sum();
    assert_eq!(total, report.total_requests);
    for (i, (replica, (_, log))) in report.replicas.iter().zip(&hubs).enumerate() {
        assert_eq!(replica.users_started, 3, "replica {i}");
        assert!(replica.total_requests > 0, "replica {i}");
        let lines = log
            .lines()
            .iter()
            .filter(|l| l.contains("\"msg\":\"perf_trace\""))
            .count() as u64;
        // Every replica also answered the tool's reads of its cache table
        // and `/healthz` after the run, the first its agent-id lookup too.
        let lookups = if i == 0 { 3 } else { 2 };
        assert_eq!(
            lines,
            replica.total_requests + lookups,
            "replica {i}: one line per request it was sent"
        );
    }
}
