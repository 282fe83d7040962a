//! Security: perf headers reach only the unscoped platform admin, whatever
//! the endpoint and outcome; access tokens are kept only as hashes.
//! (Constant-time comparison: the unit test in hub-example's tokens.rs.
//! Secrets in logs and reports: the load test scans a whole run.)

mod hub_support;

use axum::body::Body;
use axum::http::{Method, Request, StatusCode};
use hub_example::seed::TOKEN_EXPIRY_SECS;
use hub_example::store::writes::{insert_user_access_token, NewAccessToken};
use hub_example::tokens::{access_token_from_bytes, token_hash, TokenSigner, TokenSubject};
use hub_support::{TestHub, SECRET};
use rusqlite::types::ValueRef;
use tower::ServiceExt;

/// Every kind of caller the Hub knows.
struct Principal {
    kind: &'static str,
    token: Option<String>,
    gets_headers: bool,
}

fn access_token(hub: &TestHub, id: &str, user: &str, seed: u8) -> String {
    let token = access_token_from_bytes([seed; 32]);
    insert_user_access_token(
        hub.hub.db(),
        &NewAccessToken {
            id,
            user_id: user,
            project_id: &hub.doc().project_id,
            name: "security",
            token: &token,
            expires_at_ms: TOKEN_EXPIRY_SECS * 1000,
        },
        0,
    )
    .unwrap();
    token
}

fn principals(hub: &TestHub, agent_id: &str) -> Vec<Principal> {
    let doc = hub.doc();
    let p = |kind, token: Option<String>, gets_headers| Principal {
        kind,
        token,
        gets_headers,
    };
    vec![
        p(
            "admin, unscoped session",
            Some(doc.admin_token.clone()),
            true,
        ),
        p(
            "admin, scoped access token",
            Some(access_token(
                hub,
                "aaaaaaaa-0000-4000-8000-000000000001",
                &doc.admin_user_id,
                11,
            )),
            false,
        ),
        p("owner", Some(doc.owner_token.clone()), false),
        p("member", Some(doc.member_token.clone()), false),
        p(
            "member, scoped access token",
            Some(access_token(
                hub,
                "aaaaaaaa-0000-4000-8000-000000000002",
                &doc.member_user_id,
                12,
            )),
            false,
        ),
        p(
            "agent",
            Some(
                TokenSigner::from_session_secret(SECRET)
                    .issue(&TokenSubject::Agent(agent_id.into()), TOKEN_EXPIRY_SECS),
            ),
            false,
        ),
        p("unauthenticated", None, false),
    ]
}

/// Sends a request with the trigger header and returns its status and perf
/// header names; the body is not read (an accepted event stream never ends).
async fn perf_headers_of(
    hub: &TestHub,
    method: Method,
    uri: &str,
    token: Option<&str>,
) -> (StatusCode, Vec<String>) {
    let mut builder = Request::builder()
        .method(method)
        .uri(uri)
        .header("x-scion-perf-trace", "1");
    if let Some(token) = token {
        builder = builder.header("authorization", format!("Bearer {token}"));
    }
    let response = hub
        .router
        .clone()
        .oneshot(builder.body(Body::from("{}")).unwrap())
        .await
        .unwrap();
    let names = response
        .headers()
        .keys()
        .filter(|k| k.as_str().starts_with("x-scion-perf-"))
        .map(|k| k.to_string())
        .collect();
    (response.status(), names)
}

#[tokio::test]
async fn perf_headers_reach_only_the_unscoped_admin_for_every_principal_and_endpoint() {
    let hub = TestHub::traced(4);
    let doc = hub.doc().clone();
    let list = hub
        .get(&hub.project_agents_uri(), Some(&doc.owner_token))
        .await
        .json();
    let agent = list["agents"][0]["id"].as_str().unwrap().to_owned();
    let endpoints: Vec<(Method, String)> = vec![
        (Method::GET, hub.project_agents_uri()),
        (Method::GET, format!("{}?limit=2", hub.project_agents_uri())),
        (
            Method::GET,
            format!("{}?ids={agent}", hub.project_agents_uri()),
        ),
        (
            Method::GET,
            format!("/api/v1/projects/{}/agents", doc.other_project_id),
        ),
        (Method::GET, "/api/v1/agents".into()),
        (Method::GET, "/api/v1/agents?limit=1".into()),
        (Method::GET, format!("/api/v1/agents/{agent}")),
        (
            Method::GET,
            "/api/v1/agents/00000000-0000-4000-8000-000000000000".into(),
        ),
        (
            Method::GET,
            format!("/events?sub=projects.{}.agents.%3E", doc.other_project_id),
        ),
        (Method::PUT, "/api/v1/admin/server-config".into()),
        (Method::GET, "/healthz".into()),
        (Method::GET, "/api/v1/settings/public".into()),
    ];

    let mut seen_with_headers = 0;
    for principal in principals(&hub, &agent) {
        for (method, uri) in &endpoints {
            let (status, names) =
                perf_headers_of(&hub, method.clone(), uri, principal.token.as_deref()).await;
            let public = uri == "/healthz" || uri == "/api/v1/settings/public";
            let expected = principal.gets_headers && !public;
            assert_eq!(
                !names.is_empty(),
                expected,
                "{} {method} {uri} ({status}): {names:?}",
                principal.kind
            );
            if expected {
                // Whatever the outcome (200, 403, 404, 422), the whole set.
                assert!(names.contains(&"x-scion-perf-decisions".to_owned()));
                assert!(names.contains(&"x-scion-perf-db".to_owned()));
                seen_with_headers += 1;
            }
        }
    }
    assert_eq!(seen_with_headers, endpoints.len() - 2);
}

#[tokio::test]
async fn access_tokens_are_stored_only_as_hashes_and_no_credential_is_in_the_database() {
    let hub = TestHub::traced(3);
    let doc = hub.doc().clone();
    let token = access_token(
        &hub,
        "bbbbbbbb-0000-4000-8000-000000000001",
        &doc.member_user_id,
        21,
    );
    let secret_part = token.strip_prefix("scpat_").unwrap().to_owned();

    // The row, every column as text or bytes.
    let conn = hub.hub.db().conn().unwrap();
    let mut stmt = conn
        .prepare(
            "SELECT * FROM user_access_tokens WHERE id = 'bbbbbbbb-0000-4000-8000-000000000001'",
        )
        .unwrap();
    let columns = stmt.column_count();
    let cells: Vec<Vec<u8>> = stmt
        .query_row([], |row| {
            (0..columns)
                .map(|i| {
                    Ok(match row.get_ref(i)? {
                        ValueRef::Text(t) | ValueRef::Blob(t) => t.to_vec(),
                        ValueRef::Integer(n) => n.to_string().into_bytes(),
                        _ => Vec::new(),
                    })
                })
                .collect()
        })
        .unwrap();
    let hash = token_hash(&token);
    assert!(
        cells.iter().any(|c| c[..] == hash[..]),
        "the hash is stored"
    );
    for cell in &cells {
        let text = String::from_utf8_lossy(cell);
        assert!(!text.contains(&secret_part), "raw token in a column");
    }
    drop(stmt);
    drop(conn);

    // Nor anywhere in the files: no raw access token, no bearer token, no secret.
    let dir = hub.seeded.dir.path();
    let mut files = Vec::new();
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.to_string_lossy().contains("hub.db") {
            files.push((path.clone(), std::fs::read(&path).unwrap()));
        }
    }
    assert!(!files.is_empty());
    for (path, bytes) in &files {
        let text = String::from_utf8_lossy(bytes);
        for needle in [
            secret_part.as_str(),
            SECRET,
            &doc.owner_token,
            &doc.member_token,
            &doc.admin_token,
        ] {
            assert!(
                !text.contains(needle),
                "{} holds a credential",
                path.display()
            );
        }
    }

    // And the stored hash still authenticates the token.
    let reply = hub.get("/api/v1/agents", Some(&token)).await;
    assert_eq!(reply.status, StatusCode::OK);
}
