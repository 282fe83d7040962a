//! Shared fixtures of the hub tests: a seeded database, the Hub built over
//! it in-process with its log captured, and helpers to call it and read its
//! lines; the Hub run as a process is [`process`]'s.
//!
//! The database is an SQLite file in a temporary folder, or, with
//! `HUB_TEST_STORE=postgres`, a schema of its own on the server of
//! `PERF_TRACE_PG_URL` (see [`store`]): the same suites run on both stores.

#![allow(dead_code)]

#[path = "../../../../perf-trace-sql/tests/common/pg_url.rs"]
pub mod pg_url;
pub mod postgres;
pub mod process;
pub mod sql;
pub mod store;
pub mod web;

use axum::body::Body;
use axum::http::{HeaderMap, Method, Request, StatusCode};
use axum::Router;
use http_body_util::BodyExt;
use hub_example::auth::tokens::access_token_from_bytes;
use hub_example::log::CaptureBuffer;
use hub_example::seed::{seed, SeedDocument, SeedOptions};
use hub_example::settings::Settings;
use hub_example::store::db::{Db, OpenMode, PoolOptions};
use hub_example::store::tokens::{insert_user_access_token, NewAccessToken};
use hub_example::{Hub, HubBuilder, HubOptions};
use serde_json::Value;
use tower::ServiceExt;

/// The session secret every fixture uses.
pub const SECRET: &str = "bench-secret-1";

/// A seeded database.
pub struct Seeded {
    pub doc: SeedDocument,
    /// A folder of the test's own (on SQLite, the database file is in it).
    pub dir: tempfile::TempDir,
    /// Where the rows are, when seeded into PostgreSQL (in a schema of its own).
    pub pg: Option<postgres::PgSchema>,
}

impl Seeded {
    /// `agents` agents (and the fixed users, groups and roles) in the store
    /// the suites run on (see [`store::test_store`]).
    pub fn new(agents: u32) -> Seeded {
        match store::test_store() {
            store::TestStore::Sqlite => Self::on_sqlite(agents),
            store::TestStore::Postgres { server } => Self::on_postgres(agents, server),
        }
    }

    /// The same data as [`Seeded::new`], in an SQLite file whatever the
    /// suites' store.
    pub fn on_sqlite(agents: u32) -> Seeded {
        let dir = tempfile::tempdir().unwrap();
        let doc = seed_into(dir.path().join("hub.db"), agents, &bench_slug(agents));
        Seeded { doc, dir, pg: None }
    }

    /// The same data as [`Seeded::new`], seeded into a new schema of the
    /// PostgreSQL server at `server`.
    pub fn on_postgres(agents: u32, server: &str) -> Seeded {
        let dir = tempfile::tempdir().unwrap();
        let schema = postgres::PgSchema::create(server);
        let doc = seed_into(schema.url().into(), agents, &bench_slug(agents));
        Seeded {
            doc,
            dir,
            pg: Some(schema),
        }
    }

    /// A new pool over the seeded database.
    pub fn db(&self) -> Db {
        if let Some(schema) = &self.pg {
            return Db::open_postgres(schema.url(), PoolOptions::default()).unwrap();
        }
        Db::open(
            &self.dir.path().join("hub.db"),
            OpenMode::MustExist,
            PoolOptions::default(),
        )
        .unwrap()
    }
}

/// `agents` agents (and the fixed users, groups and roles) seeded into the
/// database at `db_path` (a file, or a PostgreSQL URL) under the project
/// `slug`.
fn seed_into(db_path: std::path::PathBuf, agents: u32, slug: &str) -> SeedDocument {
    seed(&SeedOptions {
        db_path,
        session_secret: SECRET.into(),
        agents,
        project_slug: slug.into(),
        rand_seed: 42,
    })
    .unwrap()
}

/// The project slug of a fixture of `agents` agents.
fn bench_slug(agents: u32) -> String {
    format!("bench-{agents}")
}

/// A Hub over a seeded database, with its log captured.
pub struct TestHub {
    pub seeded: Seeded,
    pub hub: Hub,
    pub router: Router,
    pub log: CaptureBuffer,
}

/// A response, body read to the end (so the request's line is written).
#[derive(Debug)]
pub struct Reply {
    pub status: StatusCode,
    pub headers: HeaderMap,
    pub body: Vec<u8>,
}

impl Reply {
    pub fn json(&self) -> Value {
        serde_json::from_slice(&self.body)
            .unwrap_or_else(|e| panic!("not JSON ({e}): {}", String::from_utf8_lossy(&self.body)))
    }

    pub fn perf_headers(&self) -> Vec<(String, String)> {
        let mut h: Vec<(String, String)> = self
            .headers
            .iter()
            .filter(|(k, _)| k.as_str().starts_with("x-scion-perf-"))
            .map(|(k, v)| (k.as_str().to_owned(), v.to_str().unwrap().to_owned()))
            .collect();
        h.sort();
        h
    }
}

/// Tracing on and the response cache off: every request is served afresh,
/// so each is measured with its own work.
pub const TRACED: Settings = Settings {
    perf_trace: true,
    gcp_logs: false,
    cache: hub_example::settings::CacheSettings::disabled(),
};

impl TestHub {
    pub fn new(agents: u32, settings: Settings) -> TestHub {
        Self::over(Seeded::new(agents), settings)
    }

    /// A traced Hub without the response cache: the tracing, budget, exit
    /// and fault tests measure each request's own work.
    pub fn traced(agents: u32) -> TestHub {
        Self::new(agents, TRACED)
    }

    /// A Hub over `agents` agents with `settings` and what `build` adds to
    /// its builder (limits, exits, audit bounds or backend), writing to the
    /// fixture's log.
    pub fn built(
        agents: u32,
        settings: Settings,
        build: impl FnOnce(HubBuilder) -> HubBuilder,
    ) -> TestHub {
        let seeded = Seeded::new(agents);
        let log = CaptureBuffer::new();
        let builder = Hub::builder(seeded.db(), hub_options(settings, &log));
        let hub = build(builder).build();
        Self::assemble(seeded, hub, log)
    }

    /// A traced Hub, as [`TestHub::traced`], with what `build` adds to its
    /// builder.
    pub fn traced_built(agents: u32, build: impl FnOnce(HubBuilder) -> HubBuilder) -> TestHub {
        Self::built(agents, TRACED, build)
    }

    /// A traced Hub with the response cache as configured by `cache`.
    pub fn cached(agents: u32, cache: hub_example::settings::CacheSettings) -> TestHub {
        Self::new(agents, Settings { cache, ..TRACED })
    }

    pub fn over(seeded: Seeded, settings: Settings) -> TestHub {
        let db = seeded.db();
        Self::over_db(seeded, db, settings)
    }

    /// A Hub over a PostgreSQL fixture whose pool has `max_size`
    /// connections and gives up on a checkout or a lock after 300 ms, so
    /// the fault tests see an exhausted pool or a held lock quickly.
    pub fn over_small_pool(seeded: Seeded, settings: Settings, max_size: u32) -> TestHub {
        let url = seeded.pg.as_ref().expect("a PostgreSQL fixture").url();
        let db = Db::open_postgres(
            url,
            PoolOptions {
                max_size,
                min_idle: 1,
                checkout_timeout: std::time::Duration::from_millis(300),
                busy_timeout: std::time::Duration::from_millis(300),
            },
        )
        .unwrap();
        Self::over_db(seeded, db, settings)
    }

    fn over_db(seeded: Seeded, db: Db, settings: Settings) -> TestHub {
        let log = CaptureBuffer::new();
        let hub = Hub::new(db, hub_options(settings, &log));
        Self::assemble(seeded, hub, log)
    }

    /// A fixture of a Hub built elsewhere, its router taken from it.
    pub fn assemble(seeded: Seeded, hub: Hub, log: CaptureBuffer) -> TestHub {
        let router = hub.router();
        TestHub {
            seeded,
            hub,
            router,
            log,
        }
    }

    /// A traced Hub with these timeouts and caps.
    pub fn limited(agents: u32, limits: hub_example::settings::ServerLimits) -> TestHub {
        Self::traced_built(agents, |builder| builder.limits(limits))
    }

    /// A new access token of `user` in `project` (`id`, named `name`, its
    /// bytes all `seed`, expiring at `expires_at_ms`), stored in the Hub's
    /// database; the token.
    pub fn access_token(
        &self,
        id: &str,
        user: &str,
        project: &str,
        seed: u8,
        name: &str,
        expires_at_ms: i64,
    ) -> String {
        let token = access_token_from_bytes([seed; 32]);
        self.with_db(|db| {
            insert_user_access_token(
                db,
                &NewAccessToken {
                    id,
                    user_id: user,
                    project_id: project,
                    name,
                    token: &token,
                    expires_at_ms,
                },
                0,
            )
        })
        .unwrap();
        token
    }

    pub fn doc(&self) -> &SeedDocument {
        &self.seeded.doc
    }

    /// Whether the Hub serves PostgreSQL.
    pub fn on_postgres(&self) -> bool {
        self.seeded.pg.is_some()
    }

    /// The type of the Hub's store on this database (before any decorator).
    pub fn store_type_name(&self) -> &'static str {
        if self.on_postgres() {
            "hub_example::store::postgres::PostgresStore"
        } else {
            "hub_example::store::sqlite::SqliteStore"
        }
    }

    /// Runs `f` with the Hub's database on a thread of its own, as the Hub
    /// runs its own store calls (PostgreSQL's synchronous client may not run
    /// on the test's async runtime).
    pub fn with_db<T: Send>(&self, f: impl FnOnce(&Db) -> T + Send) -> T {
        let db = self.hub.db();
        sql::off_runtime(|| f(db))
    }

    /// Runs a statement on the Hub's database (see [`sql`]); the rows changed.
    pub fn execute(&self, sql: &str, params: &[&str]) -> u64 {
        sql::execute(self.hub.db(), sql, params)
    }

    /// The one row of a query on the Hub's database (see [`sql`]).
    pub fn query_row(&self, sql: &str, params: &[&str]) -> Vec<sql::Cell> {
        sql::query_row(self.hub.db(), sql, params)
    }

    pub async fn call(
        &self,
        method: Method,
        uri: &str,
        token: Option<&str>,
        headers: &[(&str, &str)],
        body: &str,
    ) -> Reply {
        let mut builder = Request::builder().method(method).uri(uri);
        if let Some(token) = token {
            builder = builder.header("authorization", format!("Bearer {token}"));
        }
        for (k, v) in headers {
            builder = builder.header(*k, *v);
        }
        let request = builder.body(Body::from(body.to_owned())).unwrap();
        send(&self.router, request).await
    }

    pub async fn get(&self, uri: &str, token: Option<&str>) -> Reply {
        self.call(Method::GET, uri, token, &[], "").await
    }

    /// `PUT /api/v1/admin/server-config` with `token` and a `content_type`
    /// body.
    pub async fn put_server_config(&self, token: &str, content_type: &str, body: &str) -> Reply {
        let headers = [("content-type", content_type)];
        let uri = "/api/v1/admin/server-config";
        self.call(Method::PUT, uri, Some(token), &headers, body)
            .await
    }

    /// `PUT /api/v1/agents/{agent}/status` with `token`, `headers` and `body`.
    pub async fn put_status(
        &self,
        agent: &str,
        token: &str,
        headers: &[(&str, &str)],
        body: &str,
    ) -> Reply {
        let uri = format!("/api/v1/agents/{agent}/status");
        self.call(Method::PUT, &uri, Some(token), headers, body)
            .await
    }

    /// Every log line, raw.
    pub fn lines(&self) -> Vec<String> {
        self.log.lines()
    }

    /// The perf_trace lines, raw.
    pub fn perf_lines(&self) -> Vec<String> {
        self.lines()
            .into_iter()
            .filter(|l| l.contains("\"subsystem\":\"hub.perf-trace\""))
            .collect()
    }

    /// The perf_trace lines, parsed.
    pub fn perf_values(&self) -> Vec<Value> {
        self.perf_lines()
            .iter()
            .map(|l| serde_json::from_str(l).unwrap())
            .collect()
    }

    /// The perf_trace line of one request id.
    pub fn line_of(&self, request_id: &str) -> Value {
        let found: Vec<Value> = self
            .perf_values()
            .into_iter()
            .filter(|v| v["request_id"] == request_id)
            .collect();
        assert_eq!(found.len(), 1, "one line for {request_id}: {found:?}");
        found.into_iter().next().unwrap()
    }

    pub fn project_agents_uri(&self) -> String {
        format!("/api/v1/projects/{}/agents", self.doc().project_id)
    }

    /// The id of the main project's first agent, as the owner lists them.
    pub async fn first_agent_id(&self) -> String {
        self.get(&self.project_agents_uri(), Some(&self.doc().owner_token))
            .await
            .json()["agents"][0]["id"]
            .as_str()
            .unwrap()
            .to_owned()
    }
}

/// The options of a Hub of the tests: [`SECRET`], `settings`, and its log
/// written to `log`.
pub fn hub_options(settings: Settings, log: &CaptureBuffer) -> HubOptions {
    HubOptions {
        session_secret: SECRET.into(),
        settings,
        log: log.writer(),
    }
}

/// Sends `request` to `router` and reads the response to its end.
pub async fn send(router: &Router, request: Request<Body>) -> Reply {
    let response = router.clone().oneshot(request).await.unwrap();
    let status = response.status();
    let headers = response.headers().clone();
    let body = response
        .into_body()
        .collect()
        .await
        .unwrap()
        .to_bytes()
        .to_vec();
    Reply {
        status,
        headers,
        body,
    }
}

/// The reason of the `end` event in an event stream's text.
pub fn end_event_reason(text: &str) -> String {
    let data = text
        .split("event: end\n")
        .nth(1)
        .and_then(|rest| rest.lines().next())
        .unwrap_or_else(|| panic!("no end event: {text}"));
    let json: Value = serde_json::from_str(data.trim_start_matches("data: ")).unwrap();
    json["reason"].as_str().unwrap().to_owned()
}

/// The keys of a one-level JSON object line, in order.
pub fn keys_in_order(line: &str) -> Vec<String> {
    let mut keys = Vec::new();
    let mut chars = line.chars().peekable();
    let mut depth = 0;
    let mut expect_key = false;
    while let Some(c) = chars.next() {
        match c {
            '{' | '[' => {
                depth += 1;
                expect_key = c == '{' && depth == 1;
            }
            '}' | ']' => depth -= 1,
            ',' if depth == 1 => expect_key = true,
            '"' => {
                let mut s = String::new();
                while let Some(c) = chars.next() {
                    match c {
                        '\\' => {
                            s.push(c);
                            if let Some(n) = chars.next() {
                                s.push(n);
                            }
                        }
                        '"' => break,
                        _ => s.push(c),
                    }
                }
                if expect_key && depth == 1 {
                    keys.push(s);
                    expect_key = false;
                }
            }
            _ => {}
        }
    }
    keys
}

/// The host-independent counts of a line: phase counts, store calls per
/// method, totals and decisions.
pub fn counts(line: &Value) -> Vec<(String, i64)> {
    let mut out: Vec<(String, i64)> = line
        .as_object()
        .unwrap()
        .iter()
        .filter(|(k, _)| {
            (k.starts_with("phase_") && k.ends_with("_n"))
                || (k.starts_with("store_") && k.ends_with("_n"))
                || matches!(
                    k.as_str(),
                    "authz_store_calls"
                        | "audit_records"
                        | "audit_allow"
                        | "audit_deny"
                        | "audit_other"
                )
        })
        .map(|(k, v)| (k.clone(), v.as_i64().unwrap()))
        .collect();
    out.sort();
    out
}

/// The store-call counts of a line (per method and total).
pub fn store_counts(line: &Value) -> Vec<(String, i64)> {
    counts(line)
        .into_iter()
        .filter(|(k, _)| k.starts_with("store_") || k == "authz_store_calls")
        .collect()
}
