//! The Hub traced end to end, in-process: the line of each request, the
//! admin-only headers, the switches, SSE stages, privacy and count stability.

mod hub_support;

use axum::http::{Method, StatusCode};
use hub_example::settings::Settings;
use hub_example::store::AuthzStoreMethod;
use hub_support::{counts, keys_in_order, store_counts, TestHub};
use perf_trace_core::KeySet;

const PHASES_IN_ORDER: [&str; 8] = [
    "capabilities",
    "enrich",
    "list_db_read",
    "list_read_authz",
    "list_scope_authz",
    "messageability",
    "scope_capabilities",
    "serialize",
];

fn request_id(reply: &hub_support::Reply) -> String {
    reply.headers["x-request-id"].to_str().unwrap().to_owned()
}

#[tokio::test]
async fn the_members_project_list_line_holds_the_spec_keys_in_order() {
    let hub = TestHub::traced(25);
    let reply = hub
        .get(&hub.project_agents_uri(), Some(&hub.doc().member_token))
        .await;
    assert_eq!(reply.status, StatusCode::OK);
    assert_eq!(reply.json()["agents"].as_array().unwrap().len(), 25);
    let id = request_id(&reply);
    let lines = hub.perf_lines();
    assert_eq!(lines.len(), 1, "{lines:?}");
    let keys = keys_in_order(&lines[0]);

    let mut expected: Vec<String> = [
        "time",
        "level",
        "msg",
        "component",
        "subsystem",
        "endpoint",
        "elapsed_us",
    ]
    .map(String::from)
    .to_vec();
    for p in PHASES_IN_ORDER {
        expected.push(format!("phase_{p}_us"));
        expected.push(format!("phase_{p}_n"));
    }
    let mut stores: Vec<&str> = keys
        .iter()
        .filter_map(|k| k.strip_prefix("store_").and_then(|k| k.strip_suffix("_n")))
        .collect();
    assert!(!stores.is_empty());
    assert!(
        stores.iter().all(|s| AuthzStoreMethod::NAMES.contains(s)),
        "{stores:?}"
    );
    let listed = stores.clone();
    stores.sort();
    assert_eq!(listed, stores, "store methods sorted by name");
    for s in &stores {
        expected.push(format!("store_{s}_n"));
        expected.push(format!("store_{s}_us"));
    }
    expected.extend(
        [
            "authz_store_calls",
            "authz_store_us",
            "audit_records",
            "audit_allow",
            "audit_deny",
            "audit_other",
            "audit_emit_us",
            "db_wait_count",
            "db_wait_us",
            "db_in_use",
            "db_open",
            "authz_batch_count",
            "authz_batch_largest",
            "method",
            "request_id",
        ]
        .map(String::from),
    );
    assert_eq!(keys, expected);

    let line = hub.line_of(&id);
    assert_eq!(line["msg"], "perf_trace");
    assert_eq!(line["component"], "scion-hub");
    assert_eq!(line["subsystem"], "hub.perf-trace");
    assert_eq!(line["endpoint"], "agents.project.legacy");
    assert_eq!(line["method"], "GET");
    for p in PHASES_IN_ORDER {
        assert_eq!(line[format!("phase_{p}_n")], 1, "{p}");
    }
    // One user read per distinct creator, not per agent.
    assert_eq!(line["store_GetUser_n"], 4);
    // The page decided in three batches (read, capabilities,
    // messageability), the largest the capabilities': five per agent.
    assert_eq!(line["authz_batch_count"], 3);
    assert_eq!(line["authz_batch_largest"], 25 * 5);
    assert!(line["audit_records"].as_i64().unwrap() > 25 * 6);
}

#[tokio::test]
async fn only_the_unscoped_admin_asking_with_exactly_1_gets_the_headers() {
    let hub = TestHub::traced(25);
    let doc = hub.doc().clone();
    let uri = hub.project_agents_uri();
    let trigger = [("x-scion-perf-trace", "1")];

    let admin = hub
        .call(Method::GET, &uri, Some(&doc.admin_token), &trigger, "")
        .await;
    assert_eq!(admin.status, StatusCode::OK);
    let names: Vec<String> = admin.perf_headers().into_iter().map(|(k, _)| k).collect();
    assert_eq!(
        names,
        [
            "x-scion-perf-authz-batch",
            "x-scion-perf-db",
            "x-scion-perf-decisions",
            "x-scion-perf-endpoint",
            "x-scion-perf-phase-counts",
            "x-scion-perf-phases",
            "x-scion-perf-store-calls",
            "x-scion-perf-store-us",
        ]
    );
    assert_eq!(
        admin.headers["x-scion-perf-endpoint"],
        "agents.project.legacy"
    );
    assert!(!admin.headers["x-scion-perf-phases"]
        .to_str()
        .unwrap()
        .contains("serialize"));
    assert!(admin.headers["x-scion-perf-decisions"]
        .to_str()
        .unwrap()
        .starts_with("count="));

    let member = hub
        .call(Method::GET, &uri, Some(&doc.member_token), &trigger, "")
        .await;
    assert_eq!(member.status, StatusCode::OK);
    assert!(member.perf_headers().is_empty());

    let scoped = hub_support_tokens::scoped_admin_token(&hub);
    let scoped_reply = hub
        .call(Method::GET, &uri, Some(&scoped), &trigger, "")
        .await;
    assert_eq!(scoped_reply.status, StatusCode::OK);
    assert!(scoped_reply.perf_headers().is_empty());

    let agent_token = hub_support_tokens::agent_token(&hub).await;
    let agent_reply = hub
        .call(Method::GET, &uri, Some(&agent_token), &trigger, "")
        .await;
    assert!(agent_reply.perf_headers().is_empty());

    for value in ["true", "01", "1 ", "yes"] {
        let reply = hub
            .call(
                Method::GET,
                &uri,
                Some(&doc.admin_token),
                &[("x-scion-perf-trace", value)],
                "",
            )
            .await;
        assert_eq!(reply.status, StatusCode::OK);
        assert!(reply.perf_headers().is_empty(), "{value}");
    }
    // Every request was still traced (the agent-token helper made one more).
    assert_eq!(hub.perf_lines().len(), 9);
}

mod hub_support_tokens {
    use super::TestHub;
    use hub_example::auth::tokens::{TokenSigner, TokenSubject};
    use hub_example::seed::TOKEN_EXPIRY_SECS;

    /// A user access token of the admin, limited to the main project.
    pub fn scoped_admin_token(hub: &TestHub) -> String {
        let doc = hub.doc();
        hub.access_token(
            "11111111-1111-4111-8111-111111111111",
            &doc.admin_user_id,
            &doc.project_id,
            7,
            "ci",
            TOKEN_EXPIRY_SECS * 1000,
        )
    }

    /// A bearer token of the first agent of the main project.
    pub async fn agent_token(hub: &TestHub) -> String {
        let list = hub
            .get(&hub.project_agents_uri(), Some(&hub.doc().owner_token))
            .await
            .json();
        let id = list["agents"][0]["id"].as_str().unwrap().to_owned();
        TokenSigner::from_session_secret(super::hub_support::SECRET)
            .issue(&TokenSubject::Agent(id), TOKEN_EXPIRY_SECS)
    }
}

#[tokio::test]
async fn a_401_writes_no_line_and_healthz_is_other_without_headers() {
    let hub = TestHub::traced(5);
    let uri = hub.project_agents_uri();
    for token in [
        None,
        Some("garbage"),
        Some("scb1.AAAA.BBBB"),
        Some("scpat_nope"),
    ] {
        let reply = hub.get(&uri, token).await;
        assert_eq!(reply.status, StatusCode::UNAUTHORIZED);
        assert!(reply.json()["error"].is_string());
        assert!(reply.headers.get("x-request-id").is_none());
    }
    assert!(hub.perf_lines().is_empty());

    let admin = hub.doc().admin_token.clone();
    for path in ["/healthz", "/api/v1/settings/public"] {
        let reply = hub
            .call(
                Method::GET,
                path,
                Some(&admin),
                &[("x-scion-perf-trace", "1")],
                "",
            )
            .await;
        assert_eq!(reply.status, StatusCode::OK);
        assert!(reply.perf_headers().is_empty());
        let line = hub.line_of(&request_id(&reply));
        assert_eq!(line["endpoint"], "other");
        assert_eq!(line["authz_store_calls"], 0);
    }
}

#[tokio::test]
async fn the_gcp_switch_renames_the_message_key_everywhere() {
    let hub = TestHub::new(
        5,
        Settings {
            perf_trace: true,
            gcp_logs: true,
            ..Settings::default()
        },
    );
    hub.get("/healthz", None).await;
    let lines = hub.lines();
    assert!(lines.len() >= 2);
    for line in &lines {
        let v: serde_json::Value = serde_json::from_str(line).unwrap();
        assert!(v.get("msg").is_none(), "{line}");
        assert!(v["message"].is_string(), "{line}");
    }
    assert_eq!(hub.perf_values()[0]["message"], "perf_trace");
}

#[tokio::test]
async fn off_means_no_layer_no_decorators_no_lines_no_headers() {
    let hub = TestHub::new(5, Settings::default());
    assert!(!hub.hub.perf_trace());
    assert_eq!(hub.hub.store_type(), hub.store_type_name());
    assert_eq!(
        hub.hub.audit_type(),
        "hub_example::authz::audit::ChannelAuditSink"
    );
    let doc = hub.doc().clone();
    let trigger = [("x-scion-perf-trace", "1")];
    for uri in [
        hub.project_agents_uri(),
        "/api/v1/agents".to_owned(),
        "/healthz".to_owned(),
    ] {
        let reply = hub
            .call(Method::GET, &uri, Some(&doc.admin_token), &trigger, "")
            .await;
        assert_eq!(reply.status, StatusCode::OK);
        assert!(reply.perf_headers().is_empty());
        assert!(reply.headers.get("x-request-id").is_none());
    }
    assert!(hub.perf_lines().is_empty());
    assert!(!hub
        .log
        .contents()
        .contains("Request performance tracing is on"));

    let on = TestHub::traced(5);
    assert!(on
        .hub
        .store_type()
        .contains(&format!("CountedAuthzStore<{}>", on.store_type_name())));
    assert!(on
        .hub
        .audit_type()
        .contains("TracedAuditEmitter<hub_example::authz::audit::ChannelAuditSink>"));
    let warning = on.lines()[0].clone();
    assert!(warning.contains("\"level\":\"WARN\""));
    assert!(warning.contains(
        "\"msg\":\"Request performance tracing is on (server.hub.perf_trace); per-request perf_trace lines are logged\""
    ));
}

#[tokio::test]
async fn no_line_holds_a_path_query_identity_token_or_secret() {
    let hub = TestHub::traced(25);
    let doc = hub.doc().clone();
    let scoped = hub_support_tokens::scoped_admin_token(&hub);
    let page = format!("{}?limit=5&sort=-name", hub.project_agents_uri());
    let first = hub.get(&page, Some(&doc.member_token)).await.json();
    let cursor = first["nextCursor"].as_str().unwrap().to_owned();
    let agent = first["agents"][0]["id"].as_str().unwrap().to_owned();
    for (uri, token) in [
        (hub.project_agents_uri(), doc.member_token.clone()),
        (format!("{page}&cursor={cursor}"), doc.member_token.clone()),
        (
            format!("/api/v1/agents?projectId={}&view=compact", doc.project_id),
            doc.owner_token.clone(),
        ),
        (format!("/api/v1/agents/{agent}"), scoped.clone()),
        (
            format!("/api/v1/projects/{}/agents", doc.other_project_id),
            doc.member_token.clone(),
        ),
    ] {
        hub.get(&uri, Some(&token)).await;
    }
    let lines = hub.perf_lines();
    assert_eq!(lines.len(), 6);
    let secrets = [
        hub_support::SECRET,
        &doc.member_token,
        &doc.owner_token,
        &doc.admin_token,
        &scoped,
        &doc.member_email,
        &doc.owner_email,
        &doc.admin_email,
        &doc.member_user_id,
        &doc.owner_user_id,
        &doc.project_id,
        &doc.other_project_id,
        &agent,
        &cursor,
        "/api/",
        "limit=",
        "projectId",
        "compact",
        "bench-25",
    ];
    for line in &lines {
        for s in secrets {
            assert!(!line.contains(s), "{s:?} in {line}");
        }
    }
    for line in hub.lines() {
        for s in [
            hub_support::SECRET,
            &doc.member_token,
            &doc.admin_token,
            &scoped,
        ] {
            assert!(!line.contains(s), "{s:?} in {line}");
        }
    }
}

async fn list_counts(hub: &TestHub, uri: &str) -> Vec<(String, i64)> {
    let reply = hub.get(uri, Some(&hub.doc().member_token)).await;
    assert_eq!(
        reply.status,
        StatusCode::OK,
        "{uri}: {}",
        String::from_utf8_lossy(&reply.body)
    );
    counts(&hub.line_of(&request_id(&reply)))
}

fn shapes(hub: &TestHub) -> Vec<String> {
    let p = hub.project_agents_uri();
    let id = &hub.doc().project_id;
    vec![
        p.clone(),
        format!("{p}?limit=20"),
        format!("{p}?limit=500"),
        "/api/v1/agents".to_owned(),
        "/api/v1/agents?limit=20&sort=-updatedAt".to_owned(),
        format!("/api/v1/agents?projectId={id}"),
        "/api/v1/agents?view=compact".to_owned(),
    ]
}

#[tokio::test]
async fn counts_repeat_exactly_and_store_calls_do_not_grow_with_agents() {
    let small = TestHub::traced(25);
    let large = TestHub::traced(100);
    for (a, b) in shapes(&small).into_iter().zip(shapes(&large)) {
        let first = list_counts(&small, &a).await;
        for _ in 0..3 {
            assert_eq!(list_counts(&small, &a).await, first, "{a}");
        }
        let small_line = small.perf_values().pop().unwrap();
        list_counts(&large, &b).await;
        let large_line = large.perf_values().pop().unwrap();
        assert_eq!(store_counts(&small_line), store_counts(&large_line), "{a}");
    }
}

#[tokio::test]
async fn sse_lines_connect_close_refused_and_malformed() {
    use http_body_util::BodyExt;
    use tower::ServiceExt;

    let hub = TestHub::traced(5);
    let doc = hub.doc().clone();

    // Malformed: 400 and no line.
    let reply = hub
        .get("/events?sub=orders.x.%3E", Some(&doc.member_token))
        .await;
    assert_eq!(reply.status, StatusCode::BAD_REQUEST);
    assert!(reply.json()["error"].is_string());
    let reply = hub.get("/events", Some(&doc.member_token)).await;
    assert_eq!(reply.status, StatusCode::BAD_REQUEST);
    assert!(hub.perf_lines().is_empty());

    // Refused: 403 and only the close line.
    let refused = hub
        .get(
            &format!("/events?sub=projects.{}.agents.%3E", doc.other_project_id),
            Some(&doc.member_token),
        )
        .await;
    assert_eq!(refused.status, StatusCode::FORBIDDEN);
    let lines = hub.perf_values();
    assert_eq!(lines.len(), 1);
    assert_eq!(lines[0]["endpoint"], "sse.events");
    assert_eq!(lines[0]["sse_stage"], "close");
    assert_eq!(lines[0]["audit_deny"], 1);

    // Accepted: connect line once the body is polled, then events, then close.
    let request = axum::http::Request::get(format!(
        "/events?sub=projects.{}.agents.%3E&sub=users.me.%3E",
        doc.project_id
    ))
    .header("authorization", format!("Bearer {}", doc.member_token))
    .body(axum::body::Body::empty())
    .unwrap();
    let response = hub.router.clone().oneshot(request).await.unwrap();
    assert_eq!(response.status(), StatusCode::OK);
    let id = response.headers()["x-request-id"]
        .to_str()
        .unwrap()
        .to_owned();
    let mut body = response.into_body();
    let reader = tokio::spawn(async move {
        let mut text = String::new();
        while !text.contains("agent.status") {
            let frame = body.frame().await.unwrap().unwrap();
            if let Ok(data) = frame.into_data() {
                text.push_str(&String::from_utf8_lossy(&data));
            }
        }
        (body, text)
    });
    let mut connect = None;
    for _ in 0..200 {
        connect = hub
            .perf_values()
            .into_iter()
            .find(|v| v["request_id"] == id.as_str() && v["sse_stage"] == "connect");
        if connect.is_some() {
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(5)).await;
    }
    let connect = connect.expect("connect line");
    assert_eq!(connect["endpoint"], "sse.events");
    assert_eq!(connect["phase_sse_expand_n"], 1);
    assert_eq!(connect["phase_sse_authorize_n"], 1);
    assert!(connect.get("sse_events").is_none());

    let agents = hub
        .get(&hub.project_agents_uri(), Some(&doc.owner_token))
        .await
        .json();
    let agent = agents["agents"][0]["id"].as_str().unwrap().to_owned();
    let put = hub
        .put_status(
            &agent,
            &doc.owner_token,
            &[("content-type", "application/json")],
            r#"{"phase":"running","activity":"working"}"#,
        )
        .await;
    assert_eq!(
        put.status,
        StatusCode::OK,
        "{}",
        String::from_utf8_lossy(&put.body)
    );
    let (body, text) = tokio::time::timeout(std::time::Duration::from_secs(5), reader)
        .await
        .unwrap()
        .unwrap();
    assert!(text.contains(&agent));
    drop(body);

    let close: Vec<_> = hub
        .perf_values()
        .into_iter()
        .filter(|v| v["request_id"] == id.as_str() && v["sse_stage"] == "close")
        .collect();
    assert_eq!(close.len(), 1);
    assert_eq!(close[0]["sse_events"], 1);
    assert_eq!(close[0]["phase_sse_write_n"], 1);
    let keys = keys_in_order(&serde_json::to_string(&close[0]).unwrap());
    assert!(keys.contains(&"sse_stage".to_owned()));
}
