//! Security: what each kind of caller may do with agents inside and outside
//! its project (read, status update, event subscription), perf headers only
//! for the unscoped platform admin, whatever the endpoint and outcome,
//! access tokens kept only as hashes, and a flood of idle connections under
//! the common descriptor limit.
//! (Constant-time comparison: the unit test in hub-example's auth/tokens.rs.
//! Secrets in logs and reports: the load test scans a whole run.)

mod hub_support;

use axum::body::Body;
use axum::http::{Method, Request, StatusCode};
use hub_example::auth::tokens::{token_hash, TokenSigner, TokenSubject};
use hub_example::seed::TOKEN_EXPIRY_SECS;
use hub_support::process::{request, round_trip, Replica};
use hub_support::sql::{stored_bytes, Cell};
use hub_support::store::skip_on_postgres;
use hub_support::{TestHub, SECRET};
use tower::ServiceExt;

/// Every kind of caller the Hub knows.
struct Principal {
    kind: &'static str,
    token: Option<String>,
    gets_headers: bool,
}

fn access_token(hub: &TestHub, id: &str, user: &str, seed: u8) -> String {
    access_token_in(hub, id, user, &hub.doc().project_id, seed)
}

fn access_token_in(hub: &TestHub, id: &str, user: &str, project: &str, seed: u8) -> String {
    hub.access_token(
        id,
        user,
        project,
        seed,
        "security",
        TOKEN_EXPIRY_SECS * 1000,
    )
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
    let cells: Vec<Vec<u8>> = hub
        .query_row(
            "SELECT * FROM user_access_tokens WHERE id = 'bbbbbbbb-0000-4000-8000-000000000001'",
            &[],
        )
        .iter()
        .map(Cell::as_bytes)
        .collect();
    let hash = token_hash(&token);
    assert!(
        cells.iter().any(|c| c[..] == hash[..]),
        "the hash is stored"
    );
    for cell in &cells {
        let text = String::from_utf8_lossy(cell);
        assert!(!text.contains(&secret_part), "raw token in a column");
    }

    // Nor anywhere in the database (its files, or every PostgreSQL table):
    // no raw access token, no bearer token, no secret.
    let places = stored_bytes(hub.hub.db(), hub.seeded.dir.path());
    assert!(!places.is_empty());
    for (place, bytes) in &places {
        let text = String::from_utf8_lossy(bytes);
        for needle in [
            secret_part.as_str(),
            SECRET,
            &doc.owner_token,
            &doc.member_token,
            &doc.admin_token,
        ] {
            assert!(!text.contains(needle), "{place} holds a credential");
        }
    }

    // And the stored hash still authenticates the token.
    let reply = hub.get("/api/v1/agents", Some(&token)).await;
    assert_eq!(reply.status, StatusCode::OK);
}

/// A project the matrix creates beside the seeded two: each user is given a
/// role there, creates an agent, and then loses the role again.
const LEFT_PROJECT: &str = "cccccccc-0000-4000-8000-000000000001";
/// A user who is none of the callers, creator of the agents nobody else made.
const STRANGER: &str = "cccccccc-0000-4000-8000-000000000002";
const MEMBER_ROLE: &str = "00000000-0000-4000-8000-000000000003";

/// Who may do what, as the matrix expects it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Rights {
    read: bool,
    update: bool,
    subscribe: bool,
}

const ALL: Rights = Rights {
    read: true,
    update: true,
    subscribe: true,
};
const NONE: Rights = Rights {
    read: false,
    update: false,
    subscribe: false,
};
const READ_ONLY: Rights = Rights {
    read: true,
    update: false,
    subscribe: true,
};

/// The agents of the matrix, by where they live and who created them.
struct MatrixAgents {
    /// In the seeded main project, created by the stranger.
    own_project: String,
    /// In the seeded other project (owned by the owner), created by the stranger.
    other_project: String,
    /// Per caller user id: an agent it created in the other project.
    mine_in_other: Vec<(String, String)>,
    /// Per caller user id: an agent it created in the project it then left.
    mine_in_left: Vec<(String, String)>,
}

impl MatrixAgents {
    fn of(list: &[(String, String)], user: &str) -> String {
        list.iter()
            .find(|(u, _)| u == user)
            .map(|(_, a)| a.clone())
            .unwrap()
    }
}

fn insert_agent(hub: &TestHub, id: &str, project: &str, creator: &str) {
    hub.execute(
        "INSERT INTO agents (id, project_id, name, phase, activity, created_by, created_at, updated_at, config)
         VALUES (?1, ?2, ?1, 'running', 'idle', ?3, 0, 0, '{}')",
        &[id, project, creator],
    );
}

/// Builds the matrix's data: the stranger, the agents, and the left project
/// where each user held the member role while it created its agent.
fn matrix_agents(hub: &TestHub) -> MatrixAgents {
    let doc = hub.doc().clone();
    hub.execute(
        "INSERT INTO users (id, email, display_name, created_at) VALUES (?1, 'stranger@example.com', 'Stranger', 0)",
        &[STRANGER],
    );
    hub.execute(
        "INSERT INTO projects (id, slug, name, created_by, created_at) VALUES (?1, 'left', 'Left', ?2, 0)",
        &[LEFT_PROJECT, STRANGER],
    );
    insert_agent(
        hub,
        "dddddddd-0000-4000-8000-000000000001",
        &doc.project_id,
        STRANGER,
    );
    insert_agent(
        hub,
        "dddddddd-0000-4000-8000-000000000002",
        &doc.other_project_id,
        STRANGER,
    );
    let users = [&doc.owner_user_id, &doc.member_user_id, &doc.admin_user_id];
    let mut mine_in_other = Vec::new();
    let mut mine_in_left = Vec::new();
    for (i, user) in users.into_iter().enumerate() {
        let in_other = format!("eeeeeeee-0000-4000-8000-00000000000{i}");
        insert_agent(hub, &in_other, &doc.other_project_id, user);
        mine_in_other.push((user.clone(), in_other));
        let in_left = format!("ffffffff-0000-4000-8000-00000000000{i}");
        let binding = format!("bbbbbbbb-1111-4000-8000-00000000000{i}");
        hub.execute(
            "INSERT INTO role_bindings (id, principal_kind, principal_id, role_id, scope_kind, scope_id, created_at)
             VALUES (?1, 'user', ?2, ?3, 'project', ?4, 0)",
            &[&binding, user, MEMBER_ROLE, LEFT_PROJECT],
        );
        insert_agent(hub, &in_left, LEFT_PROJECT, user);
        mine_in_left.push((user.clone(), in_left));
    }
    MatrixAgents {
        own_project: "dddddddd-0000-4000-8000-000000000001".into(),
        other_project: "dddddddd-0000-4000-8000-000000000002".into(),
        mine_in_other,
        mine_in_left,
    }
}

/// Takes every role in the left project away again.
fn leave_left_project(hub: &TestHub) {
    hub.execute(
        "DELETE FROM role_bindings WHERE scope_id = ?1",
        &[LEFT_PROJECT],
    );
}

fn phase_of(hub: &TestHub, agent: &str) -> String {
    hub.query_row("SELECT phase FROM agents WHERE id = ?1", &[agent])[0]
        .text()
        .to_owned()
}

/// What `token` may actually do with `agent`: a read, a status update (the
/// row must change exactly when it is allowed) and an event subscription.
async fn rights_of(hub: &TestHub, token: &str, agent: &str) -> Rights {
    let read = hub
        .get(&format!("/api/v1/agents/{agent}"), Some(token))
        .await;
    let before = phase_of(hub, agent);
    let target = if before == "stopped" {
        "running"
    } else {
        "stopped"
    };
    let update = hub
        .put_status(
            agent,
            token,
            &[("content-type", "application/json")],
            &format!(r#"{{"phase":"{target}"}}"#),
        )
        .await;
    let after = phase_of(hub, agent);
    assert_eq!(
        update.status == StatusCode::OK,
        after == target,
        "the row changes exactly when the update is allowed ({})",
        update.status
    );
    // The body of an accepted stream never ends: only its status is read.
    let (subscribe, _) = perf_headers_of(
        hub,
        Method::GET,
        &format!("/events?sub=agents.{agent}.%3E"),
        Some(token),
    )
    .await;
    for status in [read.status, update.status, subscribe] {
        assert!(
            status == StatusCode::OK || status == StatusCode::FORBIDDEN,
            "allowed or forbidden, never anything else: {status}"
        );
    }
    Rights {
        read: read.status == StatusCode::OK,
        update: update.status == StatusCode::OK,
        subscribe: subscribe == StatusCode::OK,
    }
}

/// Runs rows of (case, token, agent, expected rights) and fails with every
/// row that disagrees.
async fn check_matrix(hub: &TestHub, rows: Vec<(String, String, String, Rights)>) {
    let mut wrong = Vec::new();
    for (case, token, agent, expected) in rows {
        let got = rights_of(hub, &token, &agent).await;
        if got != expected {
            wrong.push(format!("{case}: expected {expected:?}, got {got:?}"));
        }
    }
    assert!(wrong.is_empty(), "{}", wrong.join("\n"));
}

/// The matrix for one user: its session token and access tokens scoped to
/// the main and to the other project, against an agent of the main
/// project, one of the other project, one it created in the other project,
/// and one it created in a project where it then lost its role (checked
/// first while it held it).
async fn user_matrix(
    user_of: fn(&hub_example::seed::SeedDocument) -> (String, String),
    token_seed: u8,
    session: [Rights; 4],
    scoped: [Rights; 4],
    scoped_to_other: [Rights; 4],
) {
    let hub = TestHub::traced(3);
    let agents = matrix_agents(&hub);
    let (user, session_token) = user_of(hub.doc());
    let scoped_token = access_token(
        &hub,
        &format!("aaaaaaaa-1111-4000-8000-0000000000{token_seed:02}"),
        &user,
        token_seed,
    );
    let other = hub.doc().other_project_id.clone();
    let other_token = access_token_in(
        &hub,
        &format!("aaaaaaaa-2222-4000-8000-0000000000{token_seed:02}"),
        &user,
        &other,
        token_seed + 100,
    );
    let in_left = MatrixAgents::of(&agents.mine_in_left, &user);
    let while_held = rights_of(&hub, &session_token, &in_left).await;
    assert!(
        while_held.read && while_held.update,
        "the creator may update its agent while it holds a role: {while_held:?}"
    );
    leave_left_project(&hub);

    let targets = [
        ("main project", agents.own_project.clone()),
        ("other project", agents.other_project.clone()),
        (
            "created by me in the other project",
            MatrixAgents::of(&agents.mine_in_other, &user),
        ),
        ("created by me in a project I left", in_left),
    ];
    let mut rows = Vec::new();
    for (credential, token, expected) in [
        ("session", &session_token, session),
        ("scoped to the main project", &scoped_token, scoped),
        ("scoped to the other project", &other_token, scoped_to_other),
    ] {
        for ((target, agent), rights) in targets.iter().zip(expected) {
            rows.push((
                format!("{credential}, {target}"),
                token.clone(),
                agent.clone(),
                rights,
            ));
        }
    }
    check_matrix(&hub, rows).await;
}

#[tokio::test]
async fn the_owner_keeps_to_its_projects_and_its_token_to_the_token_project() {
    user_matrix(
        |d| (d.owner_user_id.clone(), d.owner_token.clone()),
        1,
        // The owner owns both seeded projects.
        [ALL, ALL, ALL, NONE],
        [ALL, NONE, NONE, NONE],
        [NONE, ALL, ALL, NONE],
    )
    .await;
}

#[tokio::test]
async fn a_member_loses_the_agents_it_created_outside_its_projects() {
    user_matrix(
        |d| (d.member_user_id.clone(), d.member_token.clone()),
        2,
        // A member reads its project's agents and updates only its own;
        // it has no role in the other project.
        [READ_ONLY, NONE, NONE, NONE],
        [READ_ONLY, NONE, NONE, NONE],
        [NONE, NONE, NONE, NONE],
    )
    .await;
}

#[tokio::test]
async fn an_admin_token_scoped_to_a_project_is_held_to_it() {
    user_matrix(
        |d| (d.admin_user_id.clone(), d.admin_token.clone()),
        3,
        // A platform admin's session reaches everything.
        [ALL, ALL, ALL, ALL],
        [ALL, NONE, NONE, NONE],
        [NONE, ALL, ALL, NONE],
    )
    .await;
}

#[tokio::test]
async fn an_agent_sees_itself_and_nothing_else() {
    let hub = TestHub::traced(3);
    let agents = matrix_agents(&hub);
    let doc = hub.doc().clone();
    let signer = TokenSigner::from_session_secret(SECRET);
    let token_of =
        |agent: &str| signer.issue(&TokenSubject::Agent(agent.into()), TOKEN_EXPIRY_SECS);
    let own = token_of(&agents.own_project);
    let in_other = MatrixAgents::of(&agents.mine_in_other, &doc.owner_user_id);
    let rows = vec![
        ("itself", own.clone(), agents.own_project.clone(), READ_ONLY),
        (
            "another agent of its project",
            token_of(&MatrixAgents::of(
                &agents.mine_in_other,
                &doc.member_user_id,
            )),
            agents.other_project.clone(),
            NONE,
        ),
        ("an agent of another project", own.clone(), in_other, NONE),
        (
            "an agent of a project it is not in",
            own,
            MatrixAgents::of(&agents.mine_in_left, &doc.member_user_id),
            NONE,
        ),
    ];
    check_matrix(
        &hub,
        rows.into_iter()
            .map(|(case, token, agent, rights)| (case.to_owned(), token, agent, rights))
            .collect(),
    )
    .await;
}

/// The status of a subscription to `subject` (percent-encoded) by `token`.
async fn subscribe_status(hub: &TestHub, subject: &str, token: &str) -> StatusCode {
    let uri = format!("/events?sub={subject}");
    perf_headers_of(hub, Method::GET, &uri, Some(token)).await.0
}

#[tokio::test]
async fn a_credential_limited_to_a_project_subscribes_to_no_user_or_group() {
    let hub = TestHub::traced(3);
    let doc = hub.doc().clone();
    let agent = hub.first_agent_id().await;
    let member_scoped = access_token(
        &hub,
        "aaaaaaaa-3333-4000-8000-000000000001",
        &doc.member_user_id,
        31,
    );
    let admin_scoped = access_token(
        &hub,
        "aaaaaaaa-3333-4000-8000-000000000002",
        &doc.admin_user_id,
        32,
    );
    let agent_token = TokenSigner::from_session_secret(SECRET)
        .issue(&TokenSubject::Agent(agent.clone()), TOKEN_EXPIRY_SECS);
    // The member belongs to `<slug>-members` (and, through it, to its
    // parent groups).
    let group = format!("groups.{}-members.%3E", doc.project_slug);
    let member = format!("users.{}.%3E", doc.member_user_id);
    let project = format!("projects.{}.agents.%3E", doc.project_id);
    let (ok, no) = (StatusCode::OK, StatusCode::FORBIDDEN);
    let rows = [
        // The session reaches its user and groups; the admin's, anyone's.
        ("member session", &doc.member_token, "users.me.%3E", ok),
        ("member session", &doc.member_token, &group, ok),
        ("member session", &doc.member_token, &member, ok),
        ("admin session", &doc.admin_token, &member, ok),
        ("admin session", &doc.admin_token, &group, ok),
        // A scoped credential keeps its project, and nothing else.
        ("member scoped", &member_scoped, &project, ok),
        ("member scoped", &member_scoped, "users.me.%3E", no),
        ("member scoped", &member_scoped, &group, no),
        ("member scoped", &member_scoped, &member, no),
        ("admin scoped", &admin_scoped, "users.me.%3E", no),
        ("admin scoped", &admin_scoped, &group, no),
        ("admin scoped", &admin_scoped, &member, no),
        ("agent", &agent_token, &group, no),
        ("agent", &agent_token, &member, no),
    ];
    let mut wrong = Vec::new();
    for (caller, token, subject, expected) in rows {
        let got = subscribe_status(&hub, subject, token).await;
        if got != expected {
            wrong.push(format!("{caller} on {subject}: {got}, expected {expected}"));
        }
    }
    assert!(wrong.is_empty(), "{}", wrong.join("\n"));
}

#[tokio::test]
async fn refused_credentials_are_logged_with_a_hash_prefix_only() {
    let hub = TestHub::traced(3);
    let doc = hub.doc().clone();
    let forged = TokenSigner::from_session_secret("not-the-secret").issue(
        &TokenSubject::User(doc.admin_user_id.clone()),
        TOKEN_EXPIRY_SECS,
    );
    let expired = TokenSigner::from_session_secret(SECRET)
        .issue(&TokenSubject::User(doc.member_user_id.clone()), 1);
    for token in [Some(forged.as_str()), Some(expired.as_str()), None] {
        let reply = hub.get("/api/v1/agents", token).await;
        assert_eq!(reply.status, StatusCode::UNAUTHORIZED);
    }
    let refusals: Vec<serde_json::Value> = hub
        .lines()
        .iter()
        .map(|l| serde_json::from_str::<serde_json::Value>(l).unwrap())
        .filter(|l| l["msg"] == "authentication failed")
        .collect();
    let reasons: Vec<&str> = refusals
        .iter()
        .map(|l| l["reason"].as_str().unwrap())
        .collect();
    assert_eq!(
        reasons,
        [
            "invalid token signature",
            "token expired",
            "missing bearer token"
        ]
    );
    let prefix = |token: &str| -> String {
        token_hash(token)[..4]
            .iter()
            .map(|b| format!("{b:02x}"))
            .collect()
    };
    assert_eq!(refusals[0]["credential_sha256_prefix"], prefix(&forged));
    assert_eq!(refusals[1]["credential_sha256_prefix"], prefix(&expired));
    assert!(refusals[2].get("credential_sha256_prefix").is_none());
    let log = hub.log.contents();
    for needle in [
        forged.as_str(),
        expired.as_str(),
        &doc.admin_user_id,
        &doc.member_user_id,
        &doc.member_email,
    ] {
        assert!(!log.contains(needle), "the log names a credential or user");
    }
}

/// An agent of the main project created by the member, who may stop it
/// only through the creator role (its member role does not give it).
fn members_own_agent(hub: &TestHub) -> String {
    let id = "cccccccc-0000-4000-8000-000000000001";
    let doc = hub.doc().clone();
    insert_agent(hub, id, &doc.project_id, &doc.member_user_id);
    id.to_owned()
}

/// Whether the member may change its own agent's status.
async fn creator_may_update(hub: &TestHub, agent: &str) -> bool {
    rights_of(hub, &hub.doc().member_token.clone(), agent)
        .await
        .update
}

/// `PUT /api/v1/admin/server-config` with `body` as the admin.
async fn put_config(hub: &TestHub, body: &str) -> hub_support::Reply {
    let token = hub.doc().admin_token.clone();
    hub.put_server_config(&token, "application/yaml", body)
        .await
}

fn stored_creator_role(hub: &TestHub) -> String {
    hub.query_row(
        "SELECT value FROM hub_settings WHERE key = 'authz.creator_role'",
        &[],
    )[0]
    .text()
    .to_owned()
}

/// The Hub's lines naming a stored setting it does not use.
fn ignored_settings(hub: &TestHub) -> Vec<serde_json::Value> {
    hub.lines()
        .iter()
        .map(|l| serde_json::from_str::<serde_json::Value>(l).unwrap())
        .filter(|l| l["msg"] == hub_example::settings::hub::IGNORED_MESSAGE)
        .collect()
}

#[tokio::test]
async fn the_creator_role_follows_each_stored_change_and_a_bad_one_is_refused() {
    let hub = TestHub::traced(3);
    let agent = members_own_agent(&hub);
    assert!(creator_may_update(&hub, &agent).await);

    let viewer = put_config(&hub, "authz:\n  creator_role: project-viewer\n").await;
    assert_eq!(viewer.status, StatusCode::OK);
    assert!(
        !creator_may_update(&hub, &agent).await,
        "the new role holds from the next request"
    );

    // 54 KiB of aliases that would expand to 48 MB: refused, nothing stored.
    let mut bomb = format!(
        "authz:\n  creator_role: &r \"{}\"\nx: [*r",
        "r".repeat(8_000)
    );
    bomb.push_str(&", *r".repeat(5_999));
    bomb.push_str("]\n");
    let body_refusals = [
        (bomb.as_str(), "body must not use YAML anchors or aliases"),
        (
            "authz:\n  creator_role: 7\n",
            "authz.creator_role must be a role name of 1 to 64 letters, digits, '.', '_' or '-'",
        ),
        (
            "authz.creator_role: \"owner; DROP\"\n",
            "authz.creator_role must be a role name of 1 to 64 letters, digits, '.', '_' or '-'",
        ),
        (
            "ui.zoom: 1e999999\n",
            "ui.zoom must be a finite number within 64 bits",
        ),
        (
            "ui.zoom: .nan\n",
            "ui.zoom must be a finite number within 64 bits",
        ),
    ];
    for (body, message) in body_refusals {
        let reply = put_config(&hub, body).await;
        assert_eq!(reply.status, StatusCode::BAD_REQUEST);
        assert_eq!(reply.json(), serde_json::json!({ "error": message }));
    }
    assert_eq!(stored_creator_role(&hub), "\"project-viewer\"");
    let zoom = hub.query_row(
        "SELECT COUNT(*) FROM hub_settings WHERE key = 'ui.zoom'",
        &[],
    );
    assert_eq!(zoom[0].int(), 0, "nothing of a refused body is stored");

    let back = put_config(&hub, "{\"authz\":{\"creator_role\":\"agent-creator\"}}").await;
    assert_eq!(back.status, StatusCode::OK);
    assert!(creator_may_update(&hub, &agent).await);
    assert!(ignored_settings(&hub).is_empty());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_hand_stored_unusable_setting_starts_the_hub_with_the_default_and_says_so() {
    let marker = "hand-stored-marker";
    let oversized = format!("\"{marker}{}\"", "x".repeat(8 << 20));
    let invalid = format!("[\"{marker}\"]");
    let role_name = "a role name of 1 to 64 letters, digits, '.', '_' or '-'";
    // The oversized row is never read whole: only its size comes back.
    for (value, expected) in [
        (oversized.as_str(), "at most 4 KiB of JSON"),
        (invalid.as_str(), role_name),
    ] {
        let seeded = hub_support::Seeded::new(3);
        // Behind the API's back, as an operator's hand edit would.
        hub_support::sql::execute(
            &seeded.db(),
            "UPDATE hub_settings SET value = ?1 WHERE key = 'authz.creator_role'",
            &[value],
        );
        let hub = TestHub::over(seeded, hub_example::settings::Settings::default());
        let agent = members_own_agent(&hub);
        for _ in 0..2 {
            assert!(
                creator_may_update(&hub, &agent).await,
                "the default creator role applies"
            );
        }
        let lines = ignored_settings(&hub);
        assert_eq!(lines.len(), 1, "said once: {lines:?}");
        assert_eq!(lines[0]["level"], "WARN");
        assert_eq!(lines[0]["setting"], "authz.creator_role");
        assert_eq!(lines[0]["expected"], expected);
        assert!(
            !hub.log.contents().contains(marker),
            "the value is not logged"
        );

        // A second hand edit while running: said once more, at its first use.
        hub.execute(
            "UPDATE hub_settings SET value = '\"no spaces allowed\"' WHERE key = 'authz.creator_role'",
            &[],
        );
        for _ in 0..2 {
            assert!(creator_may_update(&hub, &agent).await);
        }
        assert_eq!(ignored_settings(&hub).len(), 2);
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_known_setting_is_checked_at_start() {
    let seeded = hub_support::Seeded::new(2);
    hub_support::sql::execute(
        &seeded.db(),
        "INSERT INTO hub_settings (key, value, updated_at) VALUES ('profiling.readiness_marks', '\"maybe\"', 0)",
        &[],
    );
    let hub = TestHub::over(seeded, hub_example::settings::Settings::default());
    let lines = ignored_settings(&hub);
    assert_eq!(lines.len(), 1, "{lines:?}");
    assert_eq!(lines[0]["setting"], "profiling.readiness_marks");
    assert_eq!(lines[0]["expected"], "true or false");
    let profiling = hub
        .get("/api/v1/profiling", Some(&hub.doc().member_token.clone()))
        .await;
    assert_eq!(
        profiling.json(),
        serde_json::json!({"readiness_marks": false})
    );
}

/// The flood of idle keep-alive connections with no credential, under the
/// common soft limit of 1,024 descriptors (which the Hub, its hard limit the
/// same, cannot raise): `/healthz` and a caller are still answered, well
/// before the idle connections' timeout.
#[test]
fn idle_connections_under_a_soft_limit_of_1024_leave_healthz_answering() {
    use std::io::{Read, Write};
    if skip_on_postgres("serves an SQLite file from a process of its own") {
        return;
    }
    // This process holds the idle connections.
    let ours = rlimit::increase_nofile_limit(4_096).unwrap();
    assert!(
        ours >= 1_100,
        "the test needs 1,100 descriptors, has {ours}"
    );
    let seeded = hub_support::Seeded::on_sqlite(3);
    let db = seeded.dir.path().join("hub.db");
    let hub = Replica::serve_with_descriptor_limit(db.to_str().unwrap(), 1_024);
    // A liveness bound, a third of the idle timeout the connections would
    // otherwise be kept for.
    let bound = Some(std::time::Duration::from_secs(20));
    let mut statuses = std::collections::BTreeMap::<String, usize>::new();
    let idle: Vec<std::net::TcpStream> = (0..1_004)
        .map(|_| {
            let mut stream = std::net::TcpStream::connect(&hub.addr).unwrap();
            stream.set_read_timeout(bound).unwrap();
            stream
                .write_all(b"GET /api/v1/settings/public HTTP/1.1\r\nHost: x\r\n\r\n")
                .unwrap();
            let mut answer = [0u8; 512];
            let n = stream.read(&mut answer).unwrap();
            let status = String::from_utf8_lossy(&answer[..n.min(12)]).into_owned();
            *statuses.entry(status).or_default() += 1;
            stream
        })
        .collect();
    // The address's first 448 (half the cap) are served and stay open; the
    // others, with no credential, are refused.
    let served = statuses.get("HTTP/1.1 200").copied().unwrap_or(0);
    assert!((440..=448).contains(&served), "{statuses:?}");
    assert_eq!(statuses.get("HTTP/1.1 429"), Some(&(1_004 - served)));

    let health = round_trip(
        &hub.addr,
        "GET /healthz HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n",
    );
    assert!(health.starts_with("HTTP/1.1 200"), "{health}");
    let body: serde_json::Value =
        serde_json::from_str(health.split_once("\r\n\r\n").unwrap().1).unwrap();
    let connections = &body["connections"];
    // 1,024 less the 128 kept for the database, the log and the rest.
    assert_eq!(connections["capacity"], 896, "{body}");
    assert_eq!(connections["headroom"], 112, "{body}");
    assert_eq!(connections["perAddress"], 448, "{body}");
    assert_eq!(connections["refused"], 1_004 - served as u64, "{body}");

    let profiling = request(
        &hub.addr,
        "GET",
        "/api/v1/profiling",
        &seeded.doc.member_token,
        "",
    );
    assert!(profiling.starts_with("HTTP/1.1 200"), "{profiling}");
    drop(idle);
}
