//! The Hub's API and authorization, in-process with tracing off: who sees
//! what, paging, errors, status changes, and the server-config guard.

mod hub_support;

use axum::http::{Method, StatusCode};
use hub_example::settings::Settings;
use hub_support::TestHub;
use serde_json::json;

fn hub(agents: u32) -> TestHub {
    TestHub::new(agents, Settings::default())
}

fn names(list: &serde_json::Value) -> Vec<String> {
    list["agents"]
        .as_array()
        .unwrap()
        .iter()
        .map(|a| a["name"].as_str().unwrap().to_owned())
        .collect()
}

/// The strings of a JSON array.
fn strings(array: &serde_json::Value) -> Vec<&str> {
    array
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s.as_str().unwrap())
        .collect()
}

/// The main project's agents as its member lists them (a 200).
async fn member_listing(hub: &TestHub) -> serde_json::Value {
    let list = hub
        .get(&hub.project_agents_uri(), Some(&hub.doc().member_token))
        .await;
    assert_eq!(list.status, StatusCode::OK);
    list.json()
}

#[tokio::test]
async fn members_see_their_project_and_not_the_other() {
    let hub = hub(12);
    let doc = hub.doc().clone();
    let body = member_listing(&hub).await;
    let agents = body["agents"].as_array().unwrap();
    assert_eq!(agents.len(), 12);
    let mut sorted = names(&body);
    sorted.sort();
    assert_eq!(names(&body), sorted, "legacy lists are by name");
    assert!(body.get("nextCursor").is_none());
    assert_eq!(body["scope"]["kind"], "project");
    assert_eq!(body["scope"]["membership"], "member");
    assert_eq!(
        body["scope"]["capabilities"],
        json!(["agent.create", "events.subscribe"])
    );
    for agent in agents {
        let caps = strings(&agent["capabilities"]);
        assert!(caps.contains(&"read"));
        // Delegated by the owner: start and stop on every agent, unless a
        // constraint says otherwise.
        assert!(caps.contains(&"stop"), "{agent}");
        let mine = agent["createdBy"]["id"] == doc.member_user_id.as_str();
        assert_eq!(caps.contains(&"update"), mine, "{agent}");
        let messageable = agent["messageable"].as_bool().unwrap();
        assert_eq!(messageable, agent["phase"] == "running", "{agent}");
        assert!(agent["createdBy"]["displayName"].is_string());
        assert!(agent["config"].is_object());
    }

    let other = format!("/api/v1/projects/{}/agents", doc.other_project_id);
    let denied = hub.get(&other, Some(&doc.member_token)).await;
    assert_eq!(denied.status, StatusCode::FORBIDDEN);
    assert_eq!(denied.json(), json!({"error": "forbidden"}));
    let owner = hub.get(&other, Some(&doc.owner_token)).await;
    assert_eq!(owner.json()["agents"].as_array().unwrap().len(), 10);

    let global = hub
        .get("/api/v1/agents", Some(&doc.member_token))
        .await
        .json();
    assert_eq!(global["agents"].as_array().unwrap().len(), 12);
    assert_eq!(global["scope"]["kind"], "hub");
    let admin = hub
        .get("/api/v1/agents", Some(&doc.admin_token))
        .await
        .json();
    assert_eq!(admin["agents"].as_array().unwrap().len(), 22);
    assert_eq!(
        admin["scope"]["capabilities"],
        json!(["events.subscribe", "hub.admin"])
    );
    let scoped = hub
        .get(
            &format!(
                "/api/v1/agents?projectId={}&view=compact",
                doc.other_project_id
            ),
            Some(&doc.owner_token),
        )
        .await
        .json();
    let first = &scoped["agents"][0];
    assert_eq!(first.as_object().unwrap().len(), 6, "{first}");
    assert!(first.get("capabilities").is_none());
}

#[tokio::test]
async fn sorted_pages_walk_the_whole_list_with_cursors() {
    let hub = hub(23);
    let token = hub.doc().member_token.clone();
    for sort in ["name", "-name", "createdAt", "-updatedAt"] {
        let mut seen = Vec::new();
        let mut uri = format!("{}?limit=5&sort={sort}", hub.project_agents_uri());
        let mut pages = 0;
        loop {
            let page = hub.get(&uri, Some(&token)).await;
            assert_eq!(page.status, StatusCode::OK);
            let page = page.json();
            pages += 1;
            seen.extend(
                page["agents"]
                    .as_array()
                    .unwrap()
                    .iter()
                    .map(|a| a["id"].as_str().unwrap().to_owned()),
            );
            match page["nextCursor"].as_str() {
                Some(cursor) => {
                    uri = format!(
                        "{}?limit=5&sort={sort}&cursor={cursor}",
                        hub.project_agents_uri()
                    )
                }
                None => break,
            }
        }
        assert_eq!(pages, 5, "{sort}");
        let mut unique = seen.clone();
        unique.sort();
        unique.dedup();
        assert_eq!(unique.len(), 23, "{sort}");
    }
    let full = hub
        .get(&hub.project_agents_uri(), Some(&token))
        .await
        .json();
    let ids: Vec<&str> = full["agents"].as_array().unwrap()[..2]
        .iter()
        .map(|a| a["id"].as_str().unwrap())
        .collect();
    let picked = hub
        .get(
            &format!("{}?ids={},{}", hub.project_agents_uri(), ids[1], ids[0]),
            Some(&token),
        )
        .await
        .json();
    assert_eq!(picked["agents"].as_array().unwrap().len(), 2);
}

#[tokio::test]
async fn bad_input_is_a_json_400_that_echoes_nothing() {
    let hub = hub(3);
    let token = hub.doc().member_token.clone();
    let p = hub.project_agents_uri();
    for (uri, message) in [
        (
            "/api/v1/projects/not-an-id/agents".to_owned(),
            "invalid project id",
        ),
        (
            format!("{p}?limit=0"),
            "limit must be an integer from 1 to 500",
        ),
        (
            format!("{p}?limit=-1"),
            "limit must be an integer from 1 to 500",
        ),
        (
            format!("{p}?limit=100000"),
            "limit must be an integer from 1 to 500",
        ),
        (
            format!("{p}?limit=2&limit=3"),
            "limit may be given only once",
        ),
        (
            format!("{p}?sort=secret-column"),
            "sort must be one of name, createdAt, updatedAt (prefix - for descending)",
        ),
        (format!("{p}?cursor=zzzz-secret"), "invalid cursor"),
        (format!("{p}?ids=1,2"), "invalid agent id"),
        (
            format!("{p}?view=everything"),
            "view must be full or compact",
        ),
        (
            "/api/v1/agents?projectId=x".to_owned(),
            "invalid project id",
        ),
        ("/api/v1/agents/nope".to_owned(), "invalid agent id"),
    ] {
        let reply = hub.get(&uri, Some(&token)).await;
        assert_eq!(reply.status, StatusCode::BAD_REQUEST, "{uri}");
        assert_eq!(reply.json(), json!({ "error": message }), "{uri}");
    }
    let name_cursor = {
        let page = hub.get(&format!("{p}?limit=1"), Some(&token)).await.json();
        page["nextCursor"].as_str().unwrap().to_owned()
    };
    let mismatch = hub
        .get(
            &format!("{p}?limit=1&sort=-name&cursor={name_cursor}"),
            Some(&token),
        )
        .await;
    assert_eq!(
        mismatch.json(),
        json!({"error": "cursor does not match sort"})
    );

    let missing = hub
        .get(
            "/api/v1/agents/00000000-0000-4000-8000-00000000dead",
            Some(&token),
        )
        .await;
    assert_eq!(missing.status, StatusCode::NOT_FOUND);
    assert_eq!(missing.json(), json!({"error": "agent not found"}));
    let missing = hub
        .get(
            "/api/v1/projects/00000000-0000-4000-8000-00000000dead/agents",
            Some(&token),
        )
        .await;
    assert_eq!(missing.json(), json!({"error": "project not found"}));
    let route = hub.get("/api/v1/nothing", Some(&token)).await;
    assert_eq!(route.status, StatusCode::NOT_FOUND);
    assert_eq!(route.json(), json!({"error": "route not found"}));
    let method = hub
        .call(Method::DELETE, "/api/v1/agents", Some(&token), &[], "")
        .await;
    assert_eq!(method.status, StatusCode::METHOD_NOT_ALLOWED);
    assert!(method.json()["error"].is_string());
}

#[tokio::test]
async fn status_changes_need_update_rights_and_are_published() {
    let hub = hub(8);
    let doc = hub.doc().clone();
    let list = member_listing(&hub).await;
    let others: Vec<String> = list["agents"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|a| a["createdBy"]["id"] != doc.member_user_id.as_str())
        .map(|a| a["id"].as_str().unwrap().to_owned())
        .collect();
    let uri = format!("/api/v1/agents/{}/status", others[0]);
    let body = r#"{"phase":"stopped"}"#;
    let denied = hub
        .call(Method::PUT, &uri, Some(&doc.member_token), &[], body)
        .await;
    assert_eq!(denied.status, StatusCode::FORBIDDEN);

    let mut events = hub.hub.bus().subscribe();
    let ok = hub
        .call(Method::PUT, &uri, Some(&doc.owner_token), &[], body)
        .await;
    assert_eq!(ok.status, StatusCode::OK);
    assert_eq!(ok.json()["phase"], "stopped");
    let event = events.try_recv().unwrap();
    assert_eq!(event.kind, "agent.status");
    assert!(event.subjects[0].ends_with(&format!("{}.status", others[0])));

    let agent = hub
        .get(
            &format!("/api/v1/agents/{}", others[0]),
            Some(&doc.member_token),
        )
        .await
        .json();
    assert_eq!(agent["phase"], "stopped");
    assert_eq!(agent["messageable"], false);

    for bad in [
        "",
        "{}",
        r#"{"phase":"sleeping"}"#,
        r#"{"phase":"running","x":1}"#,
    ] {
        let reply = hub
            .call(Method::PUT, &uri, Some(&doc.owner_token), &[], bad)
            .await;
        assert_eq!(reply.status, StatusCode::BAD_REQUEST, "{bad}");
    }
}

/// Puts `body`, typed `content_type`, to the server config as `token`.
#[tokio::test]
async fn server_config_refuses_perf_trace_and_stores_the_rest() {
    let hub = hub(2);
    let doc = hub.doc().clone();
    let json_type = "application/json";
    for body in [
        r#"{"server":{"hub":{"perf_trace":true}}}"#,
        r#"{"server.hub.perf_trace":true}"#,
        r#"{"server.hub":{"perf_trace":false},"ui":{"theme":"dark"}}"#,
    ] {
        let reply = hub
            .put_server_config(&doc.admin_token, json_type, body)
            .await;
        assert_eq!(reply.status, StatusCode::UNPROCESSABLE_ENTITY, "{body}");
        assert_eq!(
            reply.json(),
            json!({"error": "layer0_rejected", "keys": ["server.hub.perf_trace"]})
        );
    }
    let yaml = "server:\n  hub:\n    perf_trace: true\n";
    let reply = hub
        .put_server_config(&doc.admin_token, "application/yaml", yaml)
        .await;
    assert_eq!(reply.status, StatusCode::UNPROCESSABLE_ENTITY);

    let theme = r#"{"ui":{"theme":"dark"}}"#;
    let member = hub
        .put_server_config(&doc.member_token, json_type, theme)
        .await;
    assert_eq!(member.status, StatusCode::FORBIDDEN);

    let ok = hub
        .put_server_config(&doc.admin_token, json_type, theme)
        .await;
    assert_eq!(ok.status, StatusCode::OK);
    assert_eq!(ok.json(), json!({"updated": ["ui.theme"]}));
    let stored = hub.query_row("SELECT value FROM hub_settings WHERE key = 'ui.theme'", &[]);
    assert_eq!(stored[0].text(), "\"dark\"");
    let perf = hub.query_row(
        "SELECT COUNT(*) FROM hub_settings WHERE key LIKE 'server%'",
        &[],
    );
    assert_eq!(perf[0].int(), 0);
}

#[tokio::test]
async fn server_config_keeps_at_most_max_stored_settings() {
    use hub_example::settings::hub::MAX_STORED;

    let hub = hub(2);
    let admin = hub.doc().admin_token.clone();
    let count = |hub: &TestHub| hub.query_row("SELECT COUNT(*) FROM hub_settings", &[])[0].int();
    let room = MAX_STORED as i64 - count(&hub) - 1;
    hub.execute(
        &format!(
            "WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < {room})
             INSERT INTO hub_settings (key, value, updated_at) SELECT 'filler.k' || i, '1', 0 FROM n"
        ),
        &[],
    );
    let put = |body: &'static str| hub.put_server_config(&admin, "application/json", body);
    let full = put(r#"{"ui":{"theme":"dark","zoom":2}}"#).await;
    assert_eq!(full.status, StatusCode::BAD_REQUEST);
    assert_eq!(
        full.json(),
        json!({"error": "at most 1000 settings may be stored"})
    );
    assert_eq!(
        count(&hub),
        MAX_STORED as i64 - 1,
        "nothing of it is stored"
    );
    let last = put(r#"{"ui":{"theme":"dark"},"filler.k1":2}"#).await;
    assert_eq!(
        last.status,
        StatusCode::OK,
        "one new key and a stored one fit"
    );
    assert_eq!(count(&hub), MAX_STORED as i64);
    let change = put(r#"{"ui.theme":"light"}"#).await;
    assert_eq!(
        change.status,
        StatusCode::OK,
        "a stored key can always change"
    );
}

#[tokio::test]
async fn scoped_tokens_are_limited_to_their_project_and_revocable() {
    use hub_example::store::tokens::revoke_user_access_token;

    let hub = hub(4);
    let doc = hub.doc().clone();
    let id = "22222222-2222-4222-8222-222222222222";
    let token = hub.access_token(id, &doc.admin_user_id, &doc.project_id, 3, "ci", i64::MAX);
    let stored = hub.query_row(
        "SELECT token_hash FROM user_access_tokens WHERE id = ?1",
        &[id],
    )[0]
    .as_bytes();
    assert_eq!(stored.len(), 32);
    assert!(!String::from_utf8_lossy(&stored).contains(&token));

    let global = hub.get("/api/v1/agents", Some(&token)).await.json();
    assert_eq!(global["agents"].as_array().unwrap().len(), 4);
    let other = format!("/api/v1/projects/{}/agents", doc.other_project_id);
    assert_eq!(
        hub.get(&other, Some(&token)).await.status,
        StatusCode::FORBIDDEN
    );
    let admin = hub
        .call(
            Method::PUT,
            "/api/v1/admin/server-config",
            Some(&token),
            &[],
            r#"{"a":1}"#,
        )
        .await;
    assert_eq!(admin.status, StatusCode::FORBIDDEN);

    hub.with_db(|db| revoke_user_access_token(db, id, 1))
        .unwrap();
    let revoked = hub.get("/api/v1/agents", Some(&token)).await;
    assert_eq!(revoked.status, StatusCode::UNAUTHORIZED);
    assert_eq!(revoked.json(), json!({"error": "token revoked"}));
}

#[tokio::test]
async fn every_decision_emits_one_audit_record() {
    let hub = TestHub::traced(6);
    let doc = hub.doc().clone();
    let before = hub.hub.audit_log().sent();
    hub.get(&hub.project_agents_uri(), Some(&doc.member_token))
        .await;
    let line = hub.perf_values().pop().unwrap();
    let records = line["audit_records"].as_u64().unwrap();
    assert_eq!(hub.hub.audit_log().sent() - before, records);
    assert_eq!(
        records,
        line["audit_allow"].as_u64().unwrap() + line["audit_deny"].as_u64().unwrap()
    );
    // Scope (1), read (6), capabilities (6 x 5), messageability (6), scope capabilities (4).
    assert_eq!(records, 1 + 6 + 30 + 6 + 4);
}
