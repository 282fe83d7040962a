//! Bad input, one table: malformed and unknown ids, cursors, limits, sorts,
//! subject lists, audit windows and parameters, credentials, perf-trace
//! trigger values, oversized headers and query strings, paths that are not
//! UTF-8, two credentials, deep or large settings bodies. Each row is a request sent
//! to a served Hub over a real connection and the status it must get. Every
//! error is JSON `{"error": "<string>"}` and holds neither the session
//! secret, nor the credential sent, nor the row's distinctive input.

mod hub_support;
mod served;

use base64::Engine as _;
use hub_example::auth::tokens::{access_token_from_bytes, TokenSigner, TokenSubject};
use hub_example::seed::TOKEN_EXPIRY_SECS;
use hub_example::store::tokens::revoke_user_access_token;
use hub_support::{TestHub, SECRET};
use reqwest::header::{HeaderName, HeaderValue};
use reqwest::Method;
use served::Served;

const UNKNOWN: &str = "00000000-0000-4000-8000-00000000abcd";

/// The credential a row sends.
#[derive(Clone)]
enum Cred {
    None,
    /// `Authorization: Bearer <token>`.
    Bearer(String),
    /// The whole `Authorization` value, as bytes.
    Raw(Vec<u8>),
}

struct Row {
    name: &'static str,
    method: Method,
    /// Path and query exactly as sent (percent-encoded where needed).
    target: String,
    cred: Cred,
    headers: Vec<(&'static str, Vec<u8>)>,
    body: String,
    status: u16,
    /// Input that must not come back in the body.
    echo: Option<String>,
}

fn row(name: &'static str, target: impl Into<String>, cred: &Cred, status: u16) -> Row {
    Row {
        name,
        method: Method::GET,
        target: target.into(),
        cred: cred.clone(),
        headers: Vec::new(),
        body: String::new(),
        status,
        echo: None,
    }
}

impl Row {
    fn echo(mut self, input: impl Into<String>) -> Row {
        self.echo = Some(input.into());
        self
    }

    fn header(mut self, name: &'static str, value: impl Into<Vec<u8>>) -> Row {
        self.headers.push((name, value.into()));
        self
    }

    fn put(mut self, body: impl Into<String>) -> Row {
        self.method = Method::PUT;
        self.body = body.into();
        self
    }

    fn method(mut self, method: Method) -> Row {
        self.method = method;
        self
    }
}

fn b64(text: &str) -> String {
    base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(text)
}

fn access_token(hub: &TestHub, seed: u8, expires_at_ms: i64, revoked: bool) -> String {
    let doc = hub.doc();
    let id = format!("{seed:08x}-0000-4000-8000-000000000000");
    let token = hub.access_token(
        &id,
        &doc.member_user_id,
        &doc.project_id,
        seed,
        "bad-input",
        expires_at_ms,
    );
    if revoked {
        hub.with_db(|db| revoke_user_access_token(db, &id, 1))
            .unwrap();
    }
    token
}

/// What the rows of every group share: the seeded credentials and the
/// project's agents listing.
struct Ctx {
    member: Cred,
    admin: Cred,
    project: String,
    agents: String,
    owner_token: String,
}

fn table(hub: &TestHub) -> Vec<Row> {
    let doc = hub.doc();
    let c = Ctx {
        member: Cred::Bearer(doc.member_token.clone()),
        admin: Cred::Bearer(doc.admin_token.clone()),
        project: doc.project_id.clone(),
        agents: format!("/api/v1/projects/{}/agents", doc.project_id),
        owner_token: doc.owner_token.clone(),
    };
    [
        id_rows(&c),
        ids_list_rows(&c),
        cursor_rows(&c),
        limit_rows(&c),
        sort_rows(&c),
        subject_rows(&c),
        audit_rows(&c),
        credential_rows(hub, &c),
        trigger_rows(&c),
        oversized_rows(&c),
        non_utf8_path_rows(&c),
        route_rows(&c),
    ]
    .into_iter()
    .flatten()
    .collect()
}

/// Ids in the path and in `projectId`: malformed and unknown.
fn id_rows(c: &Ctx) -> Vec<Row> {
    let Ctx {
        member, project, ..
    } = c;
    vec![
        row(
            "agent id malformed",
            "/api/v1/agents/not-a-uuid",
            member,
            400,
        )
        .echo("not-a-uuid"),
        row(
            "agent id upper case",
            format!("/api/v1/agents/{}", UNKNOWN.to_uppercase()),
            member,
            400,
        ),
        row(
            "agent id unknown",
            format!("/api/v1/agents/{UNKNOWN}"),
            member,
            404,
        ),
        row(
            "agent id with markup",
            "/api/v1/agents/%3Cscript%3E",
            member,
            400,
        )
        .echo("<script>"),
        row(
            "project id malformed",
            "/api/v1/projects/proj-xyz/agents",
            member,
            400,
        )
        .echo("proj-xyz"),
        row(
            "project id unknown",
            format!("/api/v1/projects/{UNKNOWN}/agents"),
            member,
            404,
        ),
        row(
            "projectId malformed",
            "/api/v1/agents?projectId=proj-xyz",
            member,
            400,
        )
        .echo("proj-xyz"),
        row(
            "projectId twice",
            format!("/api/v1/agents?projectId={project}&projectId={project}"),
            member,
            400,
        ),
    ]
}

/// Ids in the `ids` list (malformed, empty, too long, or with a cursor) and
/// in status updates.
fn ids_list_rows(c: &Ctx) -> Vec<Row> {
    let Ctx { member, agents, .. } = c;
    let ids_101: Vec<String> = (0..101)
        .map(|i| format!("00000000-0000-4000-8000-{i:012x}"))
        .collect();
    vec![
        row(
            "ids malformed",
            format!("{agents}?ids=abc,def-ghi"),
            member,
            400,
        )
        .echo("def-ghi"),
        row("ids empty", format!("{agents}?ids="), member, 400),
        row(
            "ids over 100",
            format!("{agents}?ids={}", ids_101.join(",")),
            member,
            400,
        ),
        row(
            "ids with cursor",
            format!("{agents}?ids={UNKNOWN}&cursor=abc"),
            member,
            400,
        ),
        // Status updates of a malformed or unknown id, or with a malformed body.
        row(
            "status of malformed id",
            "/api/v1/agents/not-a-uuid/status",
            member,
            400,
        )
        .put(r#"{"phase":"stopped"}"#),
        row(
            "status of unknown id",
            format!("/api/v1/agents/{UNKNOWN}/status"),
            member,
            404,
        )
        .put(r#"{"phase":"stopped"}"#),
        row(
            "status body malformed",
            format!("/api/v1/agents/{UNKNOWN}/status"),
            member,
            400,
        )
        .put(r#"{"phase":"sleeping-deeply"}"#)
        .echo("sleeping-deeply"),
    ]
}

/// Cursors.
fn cursor_rows(c: &Ctx) -> Vec<Row> {
    let Ctx { member, agents, .. } = c;
    let name_cursor = format!(r#"{{"s":"name","v":"a","i":"{UNKNOWN}"}}"#);
    vec![
        row(
            "cursor garbage",
            format!("{agents}?cursor=garbage!!"),
            member,
            400,
        )
        .echo("garbage!!"),
        row("cursor empty", format!("{agents}?cursor="), member, 400),
        row(
            "cursor not json",
            format!("{agents}?cursor={}", b64("hello cursor")),
            member,
            400,
        ),
        row(
            "cursor of another sort",
            format!("{agents}?sort=-updatedAt&cursor={}", b64(&name_cursor)),
            member,
            400,
        ),
        row(
            "cursor wrong value type",
            format!(
                "{agents}?cursor={}",
                b64(&name_cursor.replace("\"a\"", "7"))
            ),
            member,
            400,
        ),
        row(
            "cursor bad id",
            format!(
                "{agents}?cursor={}",
                b64(r#"{"s":"name","v":"a","i":"evil-id"}"#)
            ),
            member,
            400,
        )
        .echo("evil-id"),
        row(
            "cursor too long",
            format!("{agents}?cursor={}", "A".repeat(4000)),
            member,
            400,
        ),
        row(
            "global cursor garbage",
            "/api/v1/agents?cursor=%00%01",
            member,
            400,
        ),
    ]
}

/// Limits.
fn limit_rows(c: &Ctx) -> Vec<Row> {
    let Ctx { member, agents, .. } = c;
    vec![
        row("limit 0", format!("{agents}?limit=0"), member, 400),
        row("limit negative", format!("{agents}?limit=-5"), member, 400),
        row("limit 501", format!("{agents}?limit=501"), member, 400),
        row(
            "limit huge",
            format!("{agents}?limit=99999999999999999999999"),
            member,
            400,
        )
        .echo("99999999999999999999999"),
        row(
            "limit not a number",
            format!("{agents}?limit=ten"),
            member,
            400,
        ),
        row(
            "limit fractional",
            format!("{agents}?limit=1.5"),
            member,
            400,
        ),
        row("limit empty", format!("{agents}?limit="), member, 400),
        row(
            "limit twice",
            format!("{agents}?limit=1&limit=2"),
            member,
            400,
        ),
        row("global limit 0", "/api/v1/agents?limit=0", member, 400),
    ]
}

/// Sort keys.
fn sort_rows(c: &Ctx) -> Vec<Row> {
    let Ctx { member, agents, .. } = c;
    vec![
        row("sort unknown", format!("{agents}?sort=sizeXL"), member, 400).echo("sizeXL"),
        row(
            "sort double minus",
            format!("{agents}?sort=--name"),
            member,
            400,
        ),
        row("sort empty", format!("{agents}?sort="), member, 400),
        row(
            "sort wrong case",
            format!("{agents}?sort=CreatedAt"),
            member,
            400,
        ),
        row(
            "sort injection",
            format!("{agents}?sort=name%3BDROP%20TABLE%20agents"),
            member,
            400,
        )
        .echo("DROP TABLE"),
        row("view unknown", format!("{agents}?view=tiny"), member, 400),
    ]
}

/// Subject lists.
fn subject_rows(c: &Ctx) -> Vec<Row> {
    let Ctx {
        member, project, ..
    } = c;
    let subs_17 = vec!["sub=users.me.%3E"; 17].join("&");
    let long_subject = format!("projects.{project}.{}", "a".repeat(300));
    vec![
        row("subjects none", "/events", member, 400),
        row(
            "subject unknown root",
            "/events?sub=orders.abc.%3E",
            member,
            400,
        )
        .echo("orders"),
        row(
            "subject malformed id",
            "/events?sub=projects.proj-xyz.%3E",
            member,
            400,
        )
        .echo("proj-xyz"),
        row(
            "subject empty token",
            format!("/events?sub=projects.{project}..x"),
            member,
            400,
        ),
        row(
            "subject rest not last",
            format!("/events?sub=projects.{project}.%3E.x"),
            member,
            400,
        ),
        row(
            "subject too long",
            format!("/events?sub={long_subject}"),
            member,
            400,
        ),
        row(
            "subjects over 16",
            format!("/events?{subs_17}"),
            member,
            400,
        ),
        row(
            "subject not utf-8",
            "/events?sub=projects.%FF%FE.%3E",
            member,
            400,
        ),
        row(
            "subject unknown project",
            format!("/events?sub=projects.{UNKNOWN}.%3E"),
            member,
            403,
        ),
    ]
}

/// The audit window: times past what RFC 3339 can write (year 9999), and
/// parameter names that must not come back.
fn audit_rows(c: &Ctx) -> Vec<Row> {
    let admin = &c.admin;
    let audit = "/api/v1/admin/audit-events";
    vec![
        row(
            "audit from past year 9999",
            format!("{audit}?from=253402300800000&to=253402300800001"),
            admin,
            400,
        ),
        row(
            "audit from near i64::MAX",
            format!("{audit}?from=9223372036854775806"),
            admin,
            400,
        ),
        row(
            "audit to near i64::MAX",
            format!("{audit}?from=1000&to=9223372036854775807"),
            admin,
            400,
        ),
        row(
            "audit hourly histogram past year 9999",
            format!("{audit}?from=253402300800000&to=253402300800001&time_resolution=hour"),
            admin,
            400,
        ),
        row(
            "audit rfc3339 past year 9999",
            format!("{audit}?from=10000-01-01T00:00:00Z"),
            admin,
            400,
        ),
        row(
            "audit unknown parameter with markup",
            format!("{audit}?%3Cscript%3Ealert(1)%3C%2Fscript%3E=1"),
            admin,
            400,
        )
        .echo("<script>"),
        row(
            "audit unknown parameter",
            format!("{audit}?windowz=5m"),
            admin,
            400,
        )
        .echo("windowz"),
    ]
}

/// Credentials: each refused on the agents listing.
fn credential_rows(hub: &TestHub, c: &Ctx) -> Vec<Row> {
    let doc = hub.doc();
    let signer = TokenSigner::from_session_secret(SECRET);
    let forged = TokenSigner::from_session_secret("not-the-secret").issue(
        &TokenSubject::User(doc.admin_user_id.clone()),
        TOKEN_EXPIRY_SECS,
    );
    let expired = signer.issue(&TokenSubject::User(doc.member_user_id.clone()), 1);
    let ghost_user = signer.issue(&TokenSubject::User(UNKNOWN.into()), TOKEN_EXPIRY_SECS);
    let ghost_agent = signer.issue(&TokenSubject::Agent(UNKNOWN.into()), TOKEN_EXPIRY_SECS);
    let revoked = access_token(hub, 1, i64::MAX, true);
    let lapsed = access_token(hub, 2, 1, false);
    let unknown_pat = access_token_from_bytes([3; 32]);
    let refused = |name, cred: Cred| row(name, c.agents.clone(), &cred, 401);
    vec![
        refused("no credential", Cred::None),
        refused("garbage token", Cred::Bearer("garbage-token-123".into())),
        refused("token bad signature", Cred::Bearer(forged)),
        refused("token expired", Cred::Bearer(expired)),
        refused("token of unknown user", Cred::Bearer(ghost_user)),
        refused("token of unknown agent", Cred::Bearer(ghost_agent)),
        refused("access token revoked", Cred::Bearer(revoked)),
        refused("access token expired", Cred::Bearer(lapsed)),
        refused("access token unknown", Cred::Bearer(unknown_pat)),
        refused(
            "basic scheme",
            Cred::Raw(b"Basic dXNlcjpzM2NyZXQ=".to_vec()),
        )
        .echo("dXNlcjpzM2NyZXQ="),
        refused("bearer without token", Cred::Raw(b"Bearer".to_vec())),
        refused(
            "token not utf-8",
            Cred::Raw(b"Bearer \xff\xfe\xfd".to_vec()),
        ),
        refused(
            "token too long",
            Cred::Bearer(format!("scb1.{}", "x".repeat(6000))),
        ),
    ]
}

/// The trigger header: anything but `1` is served without headers.
fn trigger_rows(c: &Ctx) -> Vec<Row> {
    let Ctx { admin, agents, .. } = c;
    vec![
        row("perf trace true", agents.clone(), admin, 200).header("x-scion-perf-trace", "true"),
        row("perf trace 2", agents.clone(), admin, 200).header("x-scion-perf-trace", "2"),
        row("perf trace 01", agents.clone(), admin, 200).header("x-scion-perf-trace", "01"),
        row("perf trace empty", agents.clone(), admin, 200).header("x-scion-perf-trace", ""),
        row("perf trace list", agents.clone(), admin, 200).header("x-scion-perf-trace", "1, 1"),
        row("perf trace not utf-8", agents.clone(), admin, 200)
            .header("x-scion-perf-trace", b"\xff1".to_vec()),
    ]
}

/// Oversized input.
fn oversized_rows(c: &Ctx) -> Vec<Row> {
    let Ctx { member, agents, .. } = c;
    vec![
        row("header too large", agents.clone(), member, 431).header("x-filler", "f".repeat(20_000)),
        row("headers too large together", agents.clone(), member, 431)
            .header("x-filler-a", "a".repeat(9_000))
            .header("x-filler-b", "b".repeat(9_000)),
        row(
            "credential too large",
            agents.clone(),
            &Cred::Bearer("t".repeat(20_000)),
            431,
        ),
        row(
            "query too long",
            format!("{agents}?view=full&pad={}", "q".repeat(9_000)),
            member,
            414,
        ),
        row(
            "query far too long",
            format!("/api/v1/agents?pad={}", "q".repeat(60_000)),
            member,
            414,
        ),
        row(
            "path too long",
            format!("/api/v1/agents/{}", "p".repeat(3_000)),
            member,
            414,
        ),
    ]
}

/// Paths that are not UTF-8 once decoded.
fn non_utf8_path_rows(c: &Ctx) -> Vec<Row> {
    let member = &c.member;
    vec![
        row(
            "agent id not utf-8",
            "/api/v1/agents/%FF%FE%FD",
            member,
            400,
        ),
        row(
            "project id not utf-8",
            "/api/v1/projects/%C3%28/agents",
            member,
            400,
        ),
        row(
            "status id not utf-8",
            "/api/v1/agents/%80/status",
            member,
            400,
        )
        .put(r#"{"phase":"stopped"}"#),
        row("route not utf-8", "/api/v1/%FF", member, 404),
        row("agent id nul", "/api/v1/agents/%00", member, 400),
    ]
}

/// Routes and methods.
fn route_rows(c: &Ctx) -> Vec<Row> {
    let Ctx {
        member,
        admin,
        agents,
        owner_token,
        ..
    } = c;
    vec![
        row("unknown route", "/api/v2/agents", member, 404),
        row("wrong method", "/api/v1/agents", member, 405).method(Method::DELETE),
        row(
            "server config as member",
            "/api/v1/admin/server-config",
            member,
            403,
        )
        .put(r#"{"a":1}"#),
        row(
            "server config malformed",
            "/api/v1/admin/server-config",
            admin,
            400,
        )
        .put("{not yaml: [}"),
        row(
            "server config nested too deep",
            "/api/v1/admin/server-config",
            admin,
            400,
        )
        .put(
            (0..200)
                .map(|i| format!("{}k{i}:\n", "  ".repeat(i)))
                .collect::<String>(),
        ),
        row(
            "server config aliases",
            "/api/v1/admin/server-config",
            admin,
            400,
        )
        .put(format!(
            "a: &x \"{}\"\nb: [{}*x]\n",
            "x".repeat(8_000),
            "*x, ".repeat(5_999)
        )),
        row(
            "server config not finite",
            "/api/v1/admin/server-config",
            admin,
            400,
        )
        .put("ui:\n  zoom: -.inf\n"),
        row(
            "server config creator role",
            "/api/v1/admin/server-config",
            admin,
            400,
        )
        .put(r#"{"authz":{"creator_role":{"nested":"object"}}}"#),
        row(
            "server config too large",
            "/api/v1/admin/server-config",
            admin,
            413,
        )
        .put(format!("{{\"a\":\"{}\"}}", "x".repeat(70_000))),
        // Two credentials: a proxy reading the other one would disagree.
        row("two authorization headers", agents.clone(), member, 400)
            .header("authorization", format!("Bearer {owner_token}"))
            .echo(owner_token.clone()),
        row(
            "server config layer 0",
            "/api/v1/admin/server-config",
            admin,
            422,
        )
        .put(r#"{"server":{"hub":{"perf_trace":true}}}"#),
    ]
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_bad_input_is_a_json_4xx_that_echoes_nothing_secret() {
    let hub = TestHub::traced(5);
    let rows = table(&hub);
    let served = Served::hub(&hub.hub).await;
    let client = reqwest::Client::new();
    let mut failures = Vec::new();

    for row in &rows {
        let url = format!("{}{}", served.url(), row.target);
        let mut request = client.request(row.method.clone(), &url);
        let mut sent_secrets = vec![SECRET.to_owned()];
        match &row.cred {
            Cred::None => {}
            Cred::Bearer(token) => {
                request = request.header("authorization", format!("Bearer {token}"));
                sent_secrets.push(token.clone());
            }
            Cred::Raw(value) => {
                request = request.header("authorization", HeaderValue::from_bytes(value).unwrap());
            }
        }
        for (name, value) in &row.headers {
            request = request.header(
                HeaderName::from_static(name),
                HeaderValue::from_bytes(value).unwrap(),
            );
        }
        if !row.body.is_empty() {
            request = request
                .header("content-type", "application/json")
                .body(row.body.clone());
        }
        let response = match request.send().await {
            Ok(r) => r,
            Err(e) => {
                let e = e.to_string();
                failures.push(format!(
                    "{}: no response: {}",
                    row.name,
                    &e[..e.len().min(200)]
                ));
                continue;
            }
        };
        let status = response.status().as_u16();
        let perf_headers: Vec<String> = response
            .headers()
            .keys()
            .filter(|k| k.as_str().starts_with("x-scion-perf-"))
            .map(|k| k.to_string())
            .collect();
        let body = response.bytes().await.unwrap();
        let text = String::from_utf8_lossy(&body);
        if status != row.status {
            failures.push(format!(
                "{}: status {status}, expected {}: {}",
                row.name,
                row.status,
                text.chars().take(200).collect::<String>()
            ));
            continue;
        }
        if !perf_headers.is_empty() {
            failures.push(format!("{}: perf headers {perf_headers:?}", row.name));
        }
        if status < 400 {
            continue;
        }
        match serde_json::from_slice::<serde_json::Value>(&body) {
            Ok(v) if v["error"].is_string() && v.as_object().is_some() => {}
            _ => failures.push(format!("{}: not a JSON error: {:.200}", row.name, text)),
        }
        for secret in sent_secrets.iter().chain(&row.echo) {
            if text.contains(secret.as_str()) {
                failures.push(format!(
                    "{}: body echoes {:.40}: {:.200}",
                    row.name, secret, text
                ));
            }
        }
    }

    // Nothing above broke the Hub.
    let health = client
        .get(format!("{}/healthz", served.url()))
        .send()
        .await
        .unwrap();
    assert_eq!(health.status().as_u16(), 200);
    served.stop().await;
    assert!(
        failures.is_empty(),
        "{} of {} rows failed:\n{}",
        failures.len(),
        rows.len(),
        failures.join("\n")
    );
    // And no log line holds a credential or the secret.
    let log = hub.log.contents();
    for row in &rows {
        if let Cred::Bearer(token) = &row.cred {
            assert!(!log.contains(token.as_str()), "{}", row.name);
        }
    }
    assert!(!log.contains(SECRET));
}

/// Reads a raw response to the end and returns its status and JSON body.
async fn raw_exchange(addr: std::net::SocketAddr, request: &[u8]) -> (u16, serde_json::Value) {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let mut stream = tokio::net::TcpStream::connect(addr).await.unwrap();
    stream.write_all(request).await.unwrap();
    let mut response = Vec::new();
    tokio::time::timeout(
        std::time::Duration::from_secs(10),
        stream.read_to_end(&mut response),
    )
    .await
    .expect("the Hub answers and closes")
    .unwrap();
    let text = String::from_utf8_lossy(&response);
    let (head, body) = text.split_once("\r\n\r\n").unwrap_or((&text, ""));
    let status = head.split(' ').nth(1).unwrap_or("0").parse().unwrap();
    assert!(
        head.to_ascii_lowercase()
            .contains("content-type: application/json"),
        "{head}"
    );
    let json = serde_json::from_str(body)
        .unwrap_or_else(|e| panic!("not JSON ({e}): {body:?} after {head}"));
    (status, json)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn requests_the_http_parser_refuses_are_json_errors_too() {
    let hub = TestHub::traced(3);
    let served = Served::hub(&hub.hub).await;
    let many_headers: String = (0..150).map(|i| format!("X-H{i}: v\r\n")).collect();
    let cases = [
        (
            "too many headers",
            format!("GET /healthz HTTP/1.1\r\nHost: x\r\n{many_headers}\r\n"),
            431,
            "request headers too large",
        ),
        (
            "path over 64 KiB",
            format!("GET /{} HTTP/1.1\r\nHost: x\r\n\r\n", "p".repeat(70_000)),
            414,
            "request path too long",
        ),
        (
            "not HTTP",
            "GARBAGE\r\n\r\n".to_owned(),
            400,
            "malformed request",
        ),
    ];
    for (name, request, status, message) in cases {
        let (got, json) = raw_exchange(served.addr, request.as_bytes()).await;
        assert_eq!(got, status, "{name}");
        assert_eq!(json, serde_json::json!({ "error": message }), "{name}");
    }
    // The Hub serves on.
    let (status, _) = raw_exchange(
        served.addr,
        b"GET /nope HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n",
    )
    .await;
    assert_eq!(status, 401);
    served.stop().await;
}

#[tokio::test]
async fn a_body_over_the_limit_is_a_json_413() {
    let hub = TestHub::traced(3);
    let reply = hub
        .put_status(
            UNKNOWN,
            &hub.doc().member_token,
            &[("content-type", "application/json")],
            &"x".repeat(3 * 1024 * 1024),
        )
        .await;
    assert_eq!(reply.status.as_u16(), 413);
    assert_eq!(
        reply.json(),
        serde_json::json!({"error": "request body too large"})
    );
}
