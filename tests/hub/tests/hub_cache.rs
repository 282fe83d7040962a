//! The response cache through the API: a cached answer is what the caller
//! would get fresh, for every kind of caller; a hit's line and headers are
//! its own figures; writes invalidate and events still flow; the admin
//! report counts every outcome.

mod hub_support;

use axum::http::{Method, StatusCode};
use hub_example::auth::tokens::{TokenSigner, TokenSubject};
use hub_example::log::CaptureBuffer;
use hub_example::perf::keys::{CacheOutcome, CacheRoute};
use hub_example::seed::TOKEN_EXPIRY_SECS;
use hub_example::settings::CacheSettings;
use hub_example::settings::Settings;
use hub_example::Hub;
use hub_support::{hub_options, Reply, Seeded, TestHub, SECRET};
use serde_json::Value;

fn cached_hub(agents: u32) -> TestHub {
    TestHub::cached(agents, CacheSettings::default())
}

/// A second Hub over the same database with the cache off: what a caller
/// gets fresh.
fn fresh_twin(seeded: &Seeded) -> TestHub {
    let log = CaptureBuffer::new();
    let hub = Hub::new(
        seeded.db(),
        hub_options(
            Settings {
                cache: CacheSettings::disabled(),
                ..Settings::default()
            },
            &log,
        ),
    );
    let router = hub.router();
    TestHub {
        seeded: Seeded {
            doc: seeded.doc.clone(),
            dir: tempfile::tempdir().unwrap(),
            pg: None,
        },
        hub,
        router,
        log,
    }
}

fn agent_ids(reply: &Reply) -> Vec<String> {
    reply.json()["agents"]
        .as_array()
        .unwrap()
        .iter()
        .map(|a| a["id"].as_str().unwrap().to_owned())
        .collect()
}

fn counts(hub: &TestHub, route: CacheRoute) -> (u64, u64, u64) {
    let stats = hub.hub.cache().stats();
    (
        stats.count(route, CacheOutcome::Hit),
        stats.count(route, CacheOutcome::Miss),
        stats.count(route, CacheOutcome::Shared),
    )
}

#[tokio::test]
async fn every_caller_gets_from_the_cache_what_it_would_get_fresh() {
    let hub = cached_hub(6);
    let fresh = fresh_twin(&hub.seeded);
    let doc = hub.doc().clone();
    let admin = doc.admin_token.clone();
    let main_agents = agent_ids(&fresh.get(&hub.project_agents_uri(), Some(&admin)).await);
    let other_agents = agent_ids(
        &fresh
            .get(
                &format!("/api/v1/projects/{}/agents", doc.other_project_id),
                Some(&admin),
            )
            .await,
    );
    let agent_token = |id: &str| {
        TokenSigner::from_session_secret(SECRET)
            .issue(&TokenSubject::Agent(id.into()), TOKEN_EXPIRY_SECS)
    };
    // Access token `n` of `user`, limited to `project`.
    let limited_token = |n: u8, user: &str, project: &str| {
        let id = format!("cccccccc-0000-4000-8000-{n:012}");
        hub.access_token(
            &id,
            user,
            project,
            20 + n,
            "cache",
            TOKEN_EXPIRY_SECS * 1000,
        )
    };
    let callers = [
        ("admin, session", admin.clone()),
        (
            "admin, token limited to the main project",
            limited_token(1, &doc.admin_user_id, &doc.project_id),
        ),
        ("owner", doc.owner_token.clone()),
        ("member", doc.member_token.clone()),
        (
            "member, token limited to the main project",
            limited_token(2, &doc.member_user_id, &doc.project_id),
        ),
        (
            "member, token limited to the other project",
            limited_token(3, &doc.member_user_id, &doc.other_project_id),
        ),
        ("agent of the main project", agent_token(&main_agents[0])),
        ("agent of the other project", agent_token(&other_agents[0])),
    ];
    let uris = [
        "/api/v1/settings/public".to_owned(),
        hub.project_agents_uri(),
        format!("{}?view=compact&limit=3", hub.project_agents_uri()),
        format!("/api/v1/projects/{}/agents", doc.other_project_id),
        "/api/v1/agents".to_owned(),
        format!("/api/v1/agents?projectId={}", doc.other_project_id),
        format!("/api/v1/agents/{}", main_agents[0]),
        format!("/api/v1/agents/{}", main_agents[1]),
        format!("/api/v1/agents/{}", other_agents[0]),
    ];
    // Round after round, callers interleaved on every route: whatever an
    // entry another caller left, each answer is this caller's fresh one.
    let mut statuses = std::collections::BTreeSet::new();
    for round in 0..3 {
        for uri in &uris {
            for (caller, token) in &callers {
                let want = fresh.get(uri, Some(token)).await;
                let got = hub.get(uri, Some(token)).await;
                statuses.insert(want.status.as_u16());
                assert_eq!(got.status, want.status, "{caller} {uri} round {round}");
                assert_eq!(
                    String::from_utf8_lossy(&got.body),
                    String::from_utf8_lossy(&want.body),
                    "{caller} {uri} round {round}"
                );
            }
        }
    }
    assert!(
        statuses.contains(&200) && statuses.contains(&403),
        "the matrix has both allowed and refused answers: {statuses:?}"
    );
    // Only 200s are stored, one entry per caller and answer: the later
    // rounds of a 200 are hits, and a refusal is computed every time.
    let project = counts(&hub, CacheRoute::AgentsProject);
    let settings = counts(&hub, CacheRoute::SettingsPublic);
    assert_eq!(
        settings,
        (3 * callers.len() as u64 - 1, 1, 0),
        "one entry for everyone"
    );
    assert_eq!(project.0 + project.1, 3 * 3 * callers.len() as u64);
    assert!(project.0 > 0 && project.1 > 3 * callers.len() as u64 / 2);
}

#[tokio::test]
async fn a_hit_writes_its_own_line_and_headers() {
    let hub = cached_hub(5);
    let admin = hub.doc().admin_token.clone();
    let uri = hub.project_agents_uri();
    let trigger = [("x-scion-perf-trace", "1")];
    let miss = hub
        .call(Method::GET, &uri, Some(&admin), &trigger, "")
        .await;
    let hit = hub
        .call(Method::GET, &uri, Some(&admin), &trigger, "")
        .await;
    assert_eq!(miss.status, StatusCode::OK);
    assert_eq!(hit.body, miss.body, "the same bytes");
    let line = |reply: &Reply| hub.line_of(reply.headers["x-request-id"].to_str().unwrap());
    let (miss_line, hit_line) = (line(&miss), line(&hit));
    assert_eq!(miss_line["cache_agents.project_miss"], 1);
    assert!(miss_line["authz_store_calls"].as_u64().unwrap() > 0);
    assert!(miss_line["audit_records"].as_u64().unwrap() > 0);
    assert_eq!(hit_line["cache_agents.project_hit"], 1);
    assert_eq!(hit_line["endpoint"], "agents.project.legacy");
    assert_eq!(hit_line["authz_store_calls"], 0);
    assert_eq!(hit_line["audit_records"], 0);
    assert!(hit_line.get("cache_agents.project_miss").is_none());
    let phases: Vec<&String> = hit_line
        .as_object()
        .unwrap()
        .keys()
        .filter(|k| k.starts_with("phase_"))
        .collect();
    assert_eq!(phases, ["phase_serialize_n", "phase_serialize_us"]);
    assert!(
        hit_line.get("authz_batch_count").is_none(),
        "a hit decides nothing"
    );
    assert_eq!(miss_line["authz_batch_count"], 3);
    // Headers are the figures of the request that carries them.
    let header = |reply: &Reply, name: &str| {
        reply
            .headers
            .get(name)
            .map(|v| v.to_str().unwrap().to_owned())
    };
    assert_eq!(
        header(&hit, "x-scion-perf-cache").as_deref(),
        Some("agents.project_hit=1")
    );
    assert_eq!(
        header(&miss, "x-scion-perf-cache").as_deref(),
        Some("agents.project_miss=1")
    );
    assert_eq!(header(&hit, "x-scion-perf-store-calls"), None);
    assert!(header(&hit, "x-scion-perf-decisions")
        .unwrap()
        .starts_with("count=0,"));
    assert!(header(&miss, "x-scion-perf-store-calls").is_some());
    assert_ne!(header(&hit, "x-request-id"), header(&miss, "x-request-id"));
    // Requests the cache does not hold write no cache field.
    let health = hub.get("/healthz", None).await;
    let health_line = line(&health);
    assert!(!health_line
        .as_object()
        .unwrap()
        .keys()
        .any(|k| k.starts_with("cache_")));
}

#[tokio::test]
async fn a_status_write_invalidates_and_events_still_flow() {
    let hub = cached_hub(5);
    let doc = hub.doc().clone();
    let member = doc.member_token.clone();
    let owner = doc.owner_token.clone();
    let list_uri = hub.project_agents_uri();
    let agent = agent_ids(&hub.get(&list_uri, Some(&owner)).await)[0].clone();
    let agent_uri = format!("/api/v1/agents/{agent}");
    let global_uri = "/api/v1/agents";
    for uri in [&list_uri, &agent_uri, &global_uri.to_owned()] {
        hub.get(uri, Some(&member)).await;
        hub.get(uri, Some(&member)).await;
    }
    let before = hub.get(&agent_uri, Some(&member)).await.json();
    let new_phase = if before["phase"] == "stopped" {
        "running"
    } else {
        "stopped"
    };
    let mut events = hub.hub.bus().subscribe();
    let put = hub
        .put_status(
            &agent,
            &owner,
            &[("content-type", "application/json")],
            &format!(r#"{{"phase":"{new_phase}"}}"#),
        )
        .await;
    assert_eq!(put.status, StatusCode::OK);
    let event = events.try_recv().expect("the write is published");
    assert_eq!(event.kind, "agent.status");

    let misses_before = [
        counts(&hub, CacheRoute::AgentsProject).1,
        counts(&hub, CacheRoute::AgentsById).1,
        counts(&hub, CacheRoute::AgentsGlobal).1,
    ];
    let after = hub.get(&agent_uri, Some(&member)).await.json();
    assert_eq!(after["phase"], new_phase);
    let list = hub.get(&list_uri, Some(&member)).await.json();
    let listed = list["agents"]
        .as_array()
        .unwrap()
        .iter()
        .find(|a| a["id"] == agent.as_str())
        .cloned()
        .unwrap();
    assert_eq!(listed["phase"], new_phase);
    let global = hub.get(global_uri, Some(&member)).await.json();
    assert!(global["agents"]
        .as_array()
        .unwrap()
        .iter()
        .any(|a| a["id"] == agent.as_str() && a["phase"] == new_phase));
    let misses_after = [
        counts(&hub, CacheRoute::AgentsProject).1,
        counts(&hub, CacheRoute::AgentsById).1,
        counts(&hub, CacheRoute::AgentsGlobal).1,
    ];
    for (before, after) in misses_before.iter().zip(misses_after) {
        assert_eq!(after, before + 1, "each read computed once after the write");
    }
    // The other project's list was not touched by the write.
    let other_uri = format!("/api/v1/projects/{}/agents", doc.other_project_id);
    let admin = doc.admin_token.clone();
    hub.get(&other_uri, Some(&admin)).await;
    let other_misses = counts(&hub, CacheRoute::AgentsProject).1;
    let refused = hub
        .put_status(&agent, &member, &[], r#"{"phase":"running"}"#)
        .await;
    assert_eq!(refused.status, StatusCode::FORBIDDEN);
    hub.get(&other_uri, Some(&admin)).await;
    assert_eq!(counts(&hub, CacheRoute::AgentsProject).1, other_misses);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn concurrent_first_requests_compute_once() {
    const N: usize = 24;
    let hub = std::sync::Arc::new(cached_hub(40));
    let uri = hub.project_agents_uri();
    let member = hub.doc().member_token.clone();
    let requests: Vec<_> = (0..N)
        .map(|_| {
            let (hub, uri, member) = (hub.clone(), uri.clone(), member.clone());
            tokio::spawn(async move { hub.get(&uri, Some(&member)).await })
        })
        .collect();
    let mut bodies = std::collections::BTreeSet::new();
    for request in requests {
        let reply = request.await.unwrap();
        assert_eq!(reply.status, StatusCode::OK);
        bodies.insert(reply.body);
    }
    assert_eq!(bodies.len(), 1);
    let (hits, misses, shared) = counts(&hub, CacheRoute::AgentsProject);
    assert_eq!(misses, 1, "one computation");
    assert_eq!(hits + shared, N as u64 - 1);
    let computed: Vec<Value> = hub
        .perf_values()
        .into_iter()
        .filter(|l| l["authz_store_calls"].as_u64() > Some(0))
        .collect();
    assert_eq!(computed.len(), 1, "one line with store calls");
}

#[tokio::test]
async fn the_admin_report_counts_every_outcome_per_route() {
    let hub = TestHub::cached(
        3,
        CacheSettings::default().with_ttl(CacheRoute::AgentsGlobal, std::time::Duration::ZERO),
    );
    let doc = hub.doc().clone();
    for _ in 0..4 {
        hub.get(&hub.project_agents_uri(), Some(&doc.member_token))
            .await;
        hub.get("/api/v1/agents", Some(&doc.member_token)).await;
    }
    let report = hub.get("/api/v1/admin/cache", Some(&doc.admin_token)).await;
    assert_eq!(report.status, StatusCode::OK);
    let report = report.json();
    assert_eq!(report["enabled"], true);
    let row = |route: &str| {
        report["routes"]
            .as_array()
            .unwrap()
            .iter()
            .find(|r| r["route"] == route)
            .cloned()
            .unwrap()
    };
    assert_eq!(
        row("agents.project"),
        serde_json::json!({"route": "agents.project", "ttlMs": 5000, "hits": 3,
            "misses": 1, "shared": 0, "hitRate": 0.75})
    );
    assert_eq!(
        row("agents.global"),
        serde_json::json!({"route": "agents.global", "ttlMs": 0, "hits": 0,
            "misses": 0, "shared": 0, "hitRate": 0.0}),
        "a route with TTL 0 is not cached"
    );
    for token in [&doc.member_token, &doc.owner_token] {
        let refused = hub.get("/api/v1/admin/cache", Some(token)).await;
        assert_eq!(refused.status, StatusCode::FORBIDDEN);
        assert_eq!(refused.json()["error"], "forbidden");
    }
    assert_eq!(
        hub.get("/api/v1/admin/cache", None).await.status,
        StatusCode::UNAUTHORIZED
    );
}

#[tokio::test]
async fn the_whole_cache_off_computes_every_request() {
    let hub = TestHub::cached(3, CacheSettings::disabled());
    let member = hub.doc().member_token.clone();
    for _ in 0..3 {
        hub.get(&hub.project_agents_uri(), Some(&member)).await;
    }
    assert_eq!(counts(&hub, CacheRoute::AgentsProject), (0, 0, 0));
    for line in hub.perf_values() {
        assert!(line["authz_store_calls"].as_u64().unwrap() > 0, "{line}");
        assert!(!line
            .as_object()
            .unwrap()
            .keys()
            .any(|k| k.starts_with("cache_")));
    }
    let report = hub
        .get("/api/v1/admin/cache", Some(&hub.doc().admin_token))
        .await
        .json();
    assert_eq!(report["enabled"], false);
}
