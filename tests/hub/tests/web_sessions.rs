//! Browser sessions over HTTP, in-process: what the cookie is, where it is
//! accepted, how it ends (its event streams with it), and which requests it
//! cannot make. The browser tests (`web_browser.rs`) drive the same routes
//! from the real page.

mod hub_support;
mod served;

use axum::body::Body;
use axum::http::{header, Request, StatusCode};
use axum::Router;
use http_body_util::BodyExt;
use hub_example::auth::tokens::{TokenSigner, TokenSubject};
use hub_example::settings::Settings;
use hub_example::web::{self, WebOptions};
use hub_support::web::{
    assert_session_stored_as_hash, cookie_pair, page_sign_in, request, send, sign_in_request,
    sign_in_with, web_request, with_cookie, Answer,
};
use hub_support::{TestHub, SECRET};
use serde_json::{json, Value};
use tower::ServiceExt;

/// Signs in with `token` and returns the `name=value` part of the cookie.
async fn sign_in(router: &Router, token: &str) -> String {
    let answer = send(router, sign_in_request(token)).await;
    assert_eq!(answer.status, StatusCode::OK, "{}", answer.body);
    let cookie = answer.cookie.expect("a session cookie");
    assert!(
        cookie.contains("; HttpOnly; SameSite=Strict") && !cookie.contains("Secure"),
        "{cookie}"
    );
    cookie_pair(&cookie)
}

/// Signs the session of `cookie` out.
async fn sign_out(router: &Router, cookie: &str) -> Answer {
    send(
        router,
        with_cookie(web_request("DELETE", "/api/v1/auth/session"), cookie),
    )
    .await
}

fn web_router(hub: &TestHub) -> Router {
    web::router(&hub.hub, WebOptions::default())
}

#[tokio::test]
async fn the_cookie_authenticates_only_on_the_web_listener_and_ends_at_sign_out() {
    let hub = TestHub::new(4, Settings::default());
    let web = web_router(&hub);
    let cookie = sign_in(&web, &hub.doc().member_token).await;
    let profiling = |cookie: &str| with_cookie(request("GET", "/api/v1/profiling"), cookie);
    let read = send(&web, profiling(&cookie)).await;
    assert_eq!(
        (read.status, read.body),
        (StatusCode::OK, json!({"readiness_marks": false}))
    );
    // The API listener's router never reads the cookie.
    assert_eq!(
        send(&hub.router, profiling(&cookie)).await.status,
        StatusCode::UNAUTHORIZED
    );
    assert_session_stored_as_hash(hub.hub.db(), &cookie, &hub.doc().member_user_id);

    let out = sign_out(&web, &cookie).await;
    assert_eq!(out.status, StatusCode::OK);
    assert!(out.cookie.unwrap().contains("Max-Age=0"));
    let after = send(&web, profiling(&cookie)).await;
    assert_eq!(
        (after.status, after.body),
        (
            StatusCode::UNAUTHORIZED,
            json!({"error": "session expired or signed out"})
        )
    );
}

#[tokio::test]
async fn only_a_users_session_token_starts_a_session() {
    let hub = TestHub::new(4, Settings::default());
    let web = web_router(&hub);
    let doc = hub.doc().clone();
    let access = hub.access_token(
        "44444444-4444-4444-8444-444444444444",
        &doc.member_user_id,
        &doc.project_id,
        9,
        "ci",
        i64::MAX,
    );
    let agent_id = hub.query_row("SELECT id FROM agents LIMIT 1", &[])[0]
        .text()
        .to_owned();
    let agent_token = TokenSigner::from_session_secret(SECRET)
        .issue(&TokenSubject::Agent(agent_id), i64::MAX / 4);
    for (token, status) in [
        (access.as_str(), StatusCode::FORBIDDEN),
        (agent_token.as_str(), StatusCode::FORBIDDEN),
        ("scb1.bad.token", StatusCode::UNAUTHORIZED),
    ] {
        let answer = send(&web, sign_in_request(token)).await;
        assert_eq!(answer.status, status, "{}", answer.body);
        assert!(answer.cookie.is_none());
    }
    // The refused token is logged like any refused credential, never itself.
    let refusals: Vec<String> = hub
        .lines()
        .into_iter()
        .filter(|l| l.contains(hub_example::auth::refused::FAILED_LOGIN_MESSAGE))
        .collect();
    assert_eq!(refusals.len(), 1, "{refusals:?}");
    assert!(refusals[0].contains("credential_sha256_prefix"));
    assert!(!refusals[0].contains("scb1.bad.token"));
    // Without the client header, sign-in is refused as cross-site.
    let forged = send(
        &web,
        sign_in_with(&doc.member_token).body(Body::empty()).unwrap(),
    )
    .await;
    assert_eq!(forged.status, StatusCode::FORBIDDEN);
    // Behind a TLS proxy the cookie is Secure.
    let secure = send(
        &web,
        page_sign_in(&doc.member_token)
            .header("x-forwarded-proto", "https")
            .body(Body::empty())
            .unwrap(),
    )
    .await;
    assert!(secure.cookie.unwrap().ends_with("; Secure"));
}

#[tokio::test]
async fn cookie_writes_need_the_client_header_and_the_hubs_origin() {
    let hub = TestHub::new(4, Settings::default());
    let web = web_router(&hub);
    let cookie = sign_in(&web, &hub.doc().admin_token).await;
    let put = |headers: &[(&str, &str)]| {
        let mut builder = request("PUT", "/api/v1/admin/profiling").header(header::COOKIE, &cookie);
        for (name, value) in headers {
            builder = builder.header(*name, *value);
        }
        builder
            .body(Body::from(r#"{"readiness_marks": true}"#))
            .unwrap()
    };
    for headers in [
        &[][..],
        &[("x-scion-client", "other")],
        &[
            ("x-scion-client", "web"),
            ("origin", "http://elsewhere.example"),
        ],
    ] {
        assert_eq!(send(&web, put(headers)).await.status, StatusCode::FORBIDDEN);
    }
    assert!(!hub.with_db(|db| hub_example::api::profiling::readiness_marks(db).unwrap()));
    let ok = send(
        &web,
        put(&[
            ("x-scion-client", "web"),
            ("origin", "http://127.0.0.1:18080"),
        ]),
    )
    .await;
    assert_eq!(
        (ok.status, ok.body),
        (StatusCode::OK, json!({"readiness_marks": true}))
    );
    assert!(hub.with_db(|db| hub_example::api::profiling::readiness_marks(db).unwrap()));
}

#[tokio::test]
async fn the_test_login_exists_only_when_enabled() {
    let hub = TestHub::new(4, Settings::default());
    let email = hub.doc().member_email.clone();
    let login = || {
        request("POST", "/api/v1/auth/test-login")
            .header("x-scion-client", "web")
            .body(Body::from(json!({ "email": email }).to_string()))
            .unwrap()
    };
    // Not mounted by default: the request reaches the API, which wants a credential.
    let off = send(&web_router(&hub), login()).await;
    assert_eq!(off.status, StatusCode::UNAUTHORIZED);
    assert!(off.cookie.is_none());
    let on = web::router(&hub.hub, WebOptions { test_login: true });
    let answer = send(&on, login()).await;
    assert_eq!(answer.status, StatusCode::OK);
    assert_eq!(answer.body["user"]["displayName"], "Max Member");
    assert!(answer.cookie.is_some());
    let unknown = send(
        &on,
        request("POST", "/api/v1/auth/test-login")
            .header("x-scion-client", "web")
            .body(Body::from(r#"{"email": "nobody@example.com"}"#))
            .unwrap(),
    )
    .await;
    assert_eq!(unknown.status, StatusCode::NOT_FOUND);
    let malformed = send(
        &on,
        request("POST", "/api/v1/auth/test-login")
            .header("x-scion-client", "web")
            .body(Body::from("email=x"))
            .unwrap(),
    )
    .await;
    assert_eq!(malformed.status, StatusCode::BAD_REQUEST);
}

#[tokio::test]
async fn the_shell_names_the_marks_only_for_a_signed_in_user_while_on() {
    let hub = TestHub::new(4, Settings::default());
    let web = web_router(&hub);
    let cookie = sign_in(&web, &hub.doc().member_token).await;
    let shell = |cookie: Option<&str>| {
        let mut builder = request("GET", "/projects/00000000-0000-4000-8000-000000000001");
        if let Some(cookie) = cookie {
            builder = builder.header(header::COOKIE, cookie);
        }
        builder.body(Body::empty()).unwrap()
    };
    let initial = |router: Router, req: Request<Body>| async move {
        let response = router.oneshot(req).await.unwrap();
        assert_eq!(response.headers()[header::CACHE_CONTROL], "no-store");
        assert_eq!(
            response.headers()[header::CONTENT_TYPE],
            "text/html; charset=utf-8"
        );
        let html = String::from_utf8(
            response
                .into_body()
                .collect()
                .await
                .unwrap()
                .to_bytes()
                .to_vec(),
        )
        .unwrap();
        let start = html.find(r#"id="scion-initial-data">"#).unwrap() + 24;
        let end = start + html[start..].find("</script>").unwrap();
        serde_json::from_str::<Value>(&html[start..end]).unwrap()
    };
    let off = initial(web.clone(), shell(Some(&cookie))).await;
    assert_eq!(off["signedIn"], true);
    assert!(off.get("readinessMarks").is_none());
    hub.with_db(|db| hub_example::api::profiling::set_readiness_marks(db, true, 1).unwrap());
    let on = initial(web.clone(), shell(Some(&cookie))).await;
    assert_eq!(on["readinessMarks"], true);
    let anonymous = initial(web.clone(), shell(None)).await;
    assert_eq!(anonymous, json!({"page": "project", "signedIn": false}));
}

#[tokio::test]
async fn a_projects_delegations_are_listed_to_whoever_may_list_its_agents() {
    let hub = TestHub::new(4, Settings::default());
    let doc = hub.doc().clone();
    let get = |path: String, token: &str| {
        request("GET", &path)
            .header(header::AUTHORIZATION, format!("Bearer {token}"))
            .body(Body::empty())
            .unwrap()
    };
    let listed = send(
        &hub.router,
        get(
            format!("/api/v1/projects/{}/delegations", doc.project_id),
            &doc.member_token,
        ),
    )
    .await;
    assert_eq!(listed.status, StatusCode::OK);
    let delegations = listed.body["delegations"].as_array().unwrap();
    assert_eq!(delegations.len(), 1, "{}", listed.body);
    assert_eq!(delegations[0]["delegator"]["id"], json!(doc.owner_user_id));
    assert_eq!(
        delegations[0]["delegate"],
        json!({"kind": "user", "id": doc.member_user_id, "name": "Max Member"})
    );
    assert_eq!(
        delegations[0]["actions"],
        json!(["agent.start", "agent.stop"])
    );
    for (path, status) in [
        (
            format!("/api/v1/projects/{}/delegations", doc.other_project_id),
            StatusCode::FORBIDDEN,
        ),
        (
            "/api/v1/projects/00000000-0000-4000-8000-00000000abcd/delegations".to_owned(),
            StatusCode::NOT_FOUND,
        ),
        (
            "/api/v1/projects/not-an-id/delegations".to_owned(),
            StatusCode::BAD_REQUEST,
        ),
    ] {
        let answer = send(&hub.router, get(path.clone(), &doc.member_token)).await;
        assert_eq!(answer.status, status, "{path}: {}", answer.body);
    }
}

/// Opens `/events` on the web listener with the session cookie and returns
/// the response's body once the stream is accepted.
async fn open_cookie_stream(web: &Router, cookie: &str, subject: &str) -> Body {
    let response = web
        .clone()
        .oneshot(with_cookie(
            request("GET", &format!("/events?sub={subject}")),
            cookie,
        ))
        .await
        .unwrap();
    assert_eq!(response.status(), StatusCode::OK);
    response.into_body()
}

/// Reads a stream until it ends (within a liveness bound far above the
/// re-check interval) and returns its `end` event's reason.
async fn end_reason(mut body: Body) -> String {
    let mut text = String::new();
    let read = async {
        while let Some(frame) = body.frame().await {
            if let Ok(data) = frame.unwrap().into_data() {
                text.push_str(&String::from_utf8_lossy(&data));
            }
        }
    };
    let ended = tokio::time::timeout(std::time::Duration::from_secs(10), read).await;
    assert!(ended.is_ok(), "the stream did not end: {text}");
    hub_support::end_event_reason(&text)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_cookie_stream_ends_at_sign_out_expiry_and_loss_of_its_role() {
    let limits = hub_example::settings::ServerLimits {
        stream_recheck_interval: std::time::Duration::from_millis(100),
        ..Default::default()
    };
    let hub = TestHub::limited(3, limits);
    let web = web_router(&hub);
    let doc = hub.doc().clone();
    let subject = format!("projects.{}.agents.%3E", doc.project_id);

    // Signed out: the stream opened with the cookie ends.
    let cookie = sign_in(&web, &doc.member_token).await;
    let stream = open_cookie_stream(&web, &cookie, &subject).await;
    let out = sign_out(&web, &cookie).await;
    assert_eq!(out.status, StatusCode::OK);
    assert_eq!(end_reason(stream).await, "access_revoked");

    // A session about to expire: its stream ends when it does.
    let lifetime = hub_example::auth::session::SESSION_LIFETIME.as_millis() as i64;
    let started = hub_example::clock::now_ms() - lifetime + 500;
    let id = hub
        .with_db(|db| hub_example::auth::session::create_session(db, &doc.member_user_id, started))
        .unwrap();
    let expiring = format!("{}={id}", hub_example::auth::session::SESSION_COOKIE);
    let stream = open_cookie_stream(&web, &expiring, &subject).await;
    assert_eq!(end_reason(stream).await, "credential_expired");

    // The member reaches the project through its group's binding: once it
    // is removed, the stream ends and cannot be opened again.
    let cookie = sign_in(&web, &doc.member_token).await;
    let stream = open_cookie_stream(&web, &cookie, &subject).await;
    hub.execute(
        "DELETE FROM role_bindings WHERE principal_kind = 'group' AND scope_id = ?1",
        &[&doc.project_id],
    );
    assert_eq!(end_reason(stream).await, "access_revoked");
    let again = web
        .clone()
        .oneshot(with_cookie(
            request("GET", &format!("/events?sub={subject}")),
            &cookie,
        ))
        .await
        .unwrap();
    assert_eq!(again.status(), StatusCode::FORBIDDEN);
}

/// A Hub whose users keep at most `max_sessions` sessions and may sign in
/// `per_minute` times a minute (from any address `per_address` times).
fn hub_with_sessions(max_sessions: usize, per_minute: usize, per_address: usize) -> TestHub {
    TestHub::limited(
        3,
        hub_example::settings::ServerLimits {
            max_sessions_per_user: max_sessions,
            sign_ins_per_minute: per_minute,
            sign_ins_per_minute_per_address: per_address,
            ..Default::default()
        },
    )
}

/// The rows of `user`'s sessions: all of them, and the live ones.
fn session_rows(hub: &TestHub, user: &str) -> (i64, i64) {
    let all = hub.query_row(
        "SELECT COUNT(*) FROM web_sessions WHERE user_id = ?1",
        &[user],
    )[0]
    .int();
    let live = hub.query_row(
        "SELECT COUNT(*) FROM web_sessions WHERE user_id = ?1 AND revoked_at IS NULL",
        &[user],
    )[0]
    .int();
    (all, live)
}

#[tokio::test]
async fn a_sign_in_past_the_cap_ends_the_users_oldest_session() {
    let hub = hub_with_sessions(3, 1_000, 1_000);
    let web = web_router(&hub);
    let doc = hub.doc().clone();
    let mut cookies = Vec::new();
    for _ in 0..5 {
        cookies.push(sign_in(&web, &doc.member_token).await);
        // Sessions started in the same millisecond are ended in no
        // particular order.
        tokio::time::sleep(std::time::Duration::from_millis(2)).await;
    }
    let owner = sign_in(&web, &doc.owner_token).await;
    let profiling = |cookie: &str| with_cookie(request("GET", "/api/v1/profiling"), cookie);
    let mut statuses = Vec::new();
    for cookie in &cookies {
        statuses.push(send(&web, profiling(cookie)).await.status);
    }
    assert_eq!(
        statuses,
        [
            StatusCode::UNAUTHORIZED,
            StatusCode::UNAUTHORIZED,
            StatusCode::OK,
            StatusCode::OK,
            StatusCode::OK
        ]
    );
    assert_eq!(session_rows(&hub, &doc.member_user_id), (3, 3));
    // Another user's sessions are not counted against the member's.
    assert_eq!(send(&web, profiling(&owner)).await.status, StatusCode::OK);

    // A signed-out session is deleted at its user's next sign-in.
    assert_eq!(sign_out(&web, &cookies[4]).await.status, StatusCode::OK);
    assert_eq!(session_rows(&hub, &doc.member_user_id), (3, 2));
    sign_in(&web, &doc.member_token).await;
    assert_eq!(session_rows(&hub, &doc.member_user_id), (3, 3));
    assert_eq!(
        send(&web, profiling(&cookies[2])).await.status,
        StatusCode::OK
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn twenty_thousand_sign_ins_leave_at_most_the_cap_of_sessions() {
    const SIGN_INS: usize = 20_000;
    const AT_ONCE: usize = 16;
    let hub = hub_with_sessions(5, SIGN_INS, SIGN_INS);
    let web = web_router(&hub);
    let token = hub.doc().member_token.clone();
    let mut tasks = tokio::task::JoinSet::new();
    for worker in 0..AT_ONCE {
        let (web, token) = (web.clone(), token.clone());
        tasks.spawn(async move {
            let mut signed_in = 0;
            for _ in (worker..SIGN_INS).step_by(AT_ONCE) {
                let answer = send(&web, sign_in_request(&token)).await;
                assert_eq!(answer.status, StatusCode::OK, "{}", answer.body);
                signed_in += 1;
            }
            signed_in
        });
    }
    let mut signed_in = 0;
    while let Some(done) = tasks.join_next().await {
        signed_in += done.unwrap();
    }
    assert_eq!(signed_in, SIGN_INS);
    assert_eq!(session_rows(&hub, &hub.doc().member_user_id), (5, 5));
}

#[tokio::test]
async fn a_sign_in_past_the_users_rate_is_a_429_and_makes_no_session() {
    let hub = hub_with_sessions(10, 2, 1_000);
    let web = web_router(&hub);
    let doc = hub.doc().clone();
    sign_in(&web, &doc.member_token).await;
    sign_in(&web, &doc.member_token).await;
    let refused = hub_support::send(&web, sign_in_request(&doc.member_token)).await;
    assert_eq!(refused.status, StatusCode::TOO_MANY_REQUESTS);
    let retry_after: u64 = refused.headers[header::RETRY_AFTER]
        .to_str()
        .unwrap()
        .parse()
        .unwrap();
    assert!((1..=30).contains(&retry_after), "{retry_after}");
    assert!(refused.headers.get(header::SET_COOKIE).is_none());
    let body = refused.json();
    assert_eq!(body["error"], "too many sign-ins; retry later");
    assert!(!String::from_utf8_lossy(&refused.body).contains(&doc.member_token));
    assert_eq!(session_rows(&hub, &doc.member_user_id), (2, 2));
    // The rate is the user's: another signs in.
    sign_in(&web, &doc.owner_token).await;
}

#[tokio::test]
async fn sign_ins_from_one_address_refused_ones_included_are_rate_limited() {
    let hub = hub_with_sessions(10, 1_000, 3);
    let web = web_router(&hub);
    let doc = hub.doc().clone();
    let from = |addr: &str, token: &str| {
        page_sign_in(token)
            .extension(hub_example::connections::ClientAddr(addr.parse().unwrap()))
            .body(Body::empty())
            .unwrap()
    };
    for _ in 0..2 {
        let refused = send(&web, from("10.0.0.1:5000", "scb1.bad.token")).await;
        assert_eq!(refused.status, StatusCode::UNAUTHORIZED);
    }
    assert_eq!(
        send(&web, from("10.0.0.1:5001", &doc.member_token))
            .await
            .status,
        StatusCode::OK
    );
    let limited = send(&web, from("10.0.0.1:5002", &doc.member_token)).await;
    assert_eq!(limited.status, StatusCode::TOO_MANY_REQUESTS);
    assert!(limited.cookie.is_none());
    assert_eq!(session_rows(&hub, &doc.member_user_id), (1, 1));
    // Another address has its own bucket; a header cannot claim one.
    let other = send(&web, from("10.0.0.2:5000", &doc.member_token)).await;
    assert_eq!(other.status, StatusCode::OK);
    let forwarded = send(
        &web,
        page_sign_in(&doc.member_token)
            .header("x-forwarded-for", "10.0.0.3")
            .extension(hub_example::connections::ClientAddr(
                "10.0.0.1:5003".parse().unwrap(),
            ))
            .body(Body::empty())
            .unwrap(),
    )
    .await;
    assert_eq!(forwarded.status, StatusCode::TOO_MANY_REQUESTS);
    // The test login is limited the same way, by the same buckets.
    let on = web::router(&hub.hub, WebOptions { test_login: true });
    let login = request("POST", "/api/v1/auth/test-login")
        .header("x-scion-client", "web")
        .extension(hub_example::connections::ClientAddr(
            "10.0.0.1:5004".parse().unwrap(),
        ))
        .body(Body::from(json!({ "email": doc.member_email }).to_string()))
        .unwrap();
    let login = send(&on, login).await;
    assert_eq!(login.status, StatusCode::TOO_MANY_REQUESTS);
    assert!(login.cookie.is_none());
    assert_eq!(session_rows(&hub, &doc.member_user_id), (2, 2));
}

#[tokio::test]
async fn expired_and_revoked_sessions_are_pruned_and_live_ones_kept() {
    use hub_example::auth::session::{create_session, prune_periodically};
    use hub_example::store::sessions::prune_sessions;
    let hub = TestHub::new(3, Settings::default());
    let web = web_router(&hub);
    let doc = hub.doc().clone();
    let lifetime = hub_example::auth::session::SESSION_LIFETIME.as_millis() as i64;
    let now = hub_example::clock::now_ms();
    for user in [&doc.owner_user_id, &doc.admin_user_id] {
        hub.with_db(|db| create_session(db, user, now - lifetime - 1_000))
            .unwrap();
    }
    let signed_out = sign_in(&web, &doc.owner_token).await;
    assert_eq!(sign_out(&web, &signed_out).await.status, StatusCode::OK);
    let live = sign_in(&web, &doc.member_token).await;
    let total = || hub.query_row("SELECT COUNT(*) FROM web_sessions", &[])[0].int();
    // The owner's sign-out came after its expired row was deleted by the
    // sign-in: one expired row (the admin's) and one revoked are left.
    assert_eq!(total(), 3);
    assert_eq!(hub.with_db(|db| prune_sessions(db, now)).unwrap(), 2);
    assert_eq!(total(), 1);
    assert_session_stored_as_hash(hub.hub.db(), &live, &doc.member_user_id);

    // The periodic prune does the same, and says so.
    hub.with_db(|db| create_session(db, &doc.admin_user_id, now - lifetime - 1_000))
        .unwrap();
    assert_eq!(total(), 2);
    let pruner = tokio::spawn(prune_periodically(
        hub.hub.db().clone(),
        std::time::Duration::from_millis(50),
        hub.hub.logger().clone(),
    ));
    let start = std::time::Instant::now();
    while total() > 1 {
        assert!(
            start.elapsed() < std::time::Duration::from_secs(10),
            "never pruned"
        );
        tokio::time::sleep(std::time::Duration::from_millis(20)).await;
    }
    pruner.abort();
    assert_session_stored_as_hash(hub.hub.db(), &live, &doc.member_user_id);
    assert!(hub.lines().iter().any(|l| l.contains("sessions pruned")));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_served_web_listener_limits_sign_ins_by_the_connections_peer() {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let hub = hub_with_sessions(10, 1_000, 2);
    let served = served::Served::web(&hub.hub, web_router(&hub)).await;
    let addr = served.addr;
    let token = hub.doc().member_token.clone();
    let mut answers = Vec::new();
    for _ in 0..3 {
        let mut stream = tokio::net::TcpStream::connect(addr).await.unwrap();
        let request = format!(
            "POST /api/v1/auth/session HTTP/1.1\r\nHost: {addr}\r\nAuthorization: Bearer {token}\r\n\
             X-Scion-Client: web\r\nContent-Length: 0\r\nConnection: close\r\n\r\n"
        );
        stream.write_all(request.as_bytes()).await.unwrap();
        let mut answer = String::new();
        stream.read_to_string(&mut answer).await.unwrap();
        answers.push(answer);
    }
    assert!(answers[0].starts_with("HTTP/1.1 200"), "{}", answers[0]);
    assert!(answers[1].starts_with("HTTP/1.1 200"), "{}", answers[1]);
    let limited = answers[2].to_ascii_lowercase();
    assert!(limited.starts_with("http/1.1 429"), "{limited}");
    assert!(limited.contains("\r\nretry-after: ") && !limited.contains("set-cookie"));
    assert_eq!(session_rows(&hub, &hub.doc().member_user_id), (2, 2));
    served.stop().await;
}
