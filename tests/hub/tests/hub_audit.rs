//! The audit pipeline through the Hub: records persisted in `audit_events`
//! and read back by `GET /api/v1/admin/audit-events` (hub admins only), the
//! figures `/healthz` shows, and the faults: a writer that stalls (the queue
//! fills, records are rejected and counted, requests are unaffected) and a
//! database locked during flushes (failed flushes counted and retried,
//! nothing lost while the queue has room). A list's decisions are stored
//! as one row per question, so the rows a request writes do not grow with
//! the agents it lists, and one principal's uncached lists are bounded.

mod hub_support;

use std::sync::{Arc, Condvar, Mutex};
use std::time::{Duration, Instant};

use axum::http::StatusCode;
use hub_example::authz::audit::{AuditBackend, AuditEntry, AuditWriteError, STALL_AFTER};
use hub_example::settings::AuditSettings;
use hub_example::settings::Settings;
use hub_support::store::skip_on_postgres;
use hub_support::TestHub;
use serde_json::Value;

fn untraced() -> Settings {
    Settings {
        perf_trace: false,
        gcp_logs: false,
        // Every request decides afresh: a cache hit makes no decision.
        cache: hub_example::settings::CacheSettings::disabled(),
    }
}

async fn wait_for(what: impl Fn() -> bool) {
    let until = Instant::now() + Duration::from_secs(20);
    while !what() && Instant::now() < until {
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
}

/// The decisions the stored rows stand for (a list's row counts each).
fn audit_decisions(hub: &TestHub) -> i64 {
    hub_support::sql::query_row(
        &hub.seeded.db(),
        "SELECT CAST(COALESCE(SUM(allowed + denied + errors), 0) AS BIGINT) FROM audit_events",
        &[],
    )[0]
    .int()
}

fn audit_rows(hub: &TestHub) -> i64 {
    hub_support::sql::query_row(&hub.seeded.db(), "SELECT COUNT(*) FROM audit_events", &[])[0].int()
}

/// The decisions of an event of the audit-events API.
fn decisions_of(event: &Value) -> u64 {
    ["allow", "deny", "error"]
        .iter()
        .map(|k| event["decisions"][k].as_u64().unwrap())
        .sum()
}

#[tokio::test]
async fn decisions_are_persisted_and_read_back_newest_first_by_an_admin_only() {
    let hub = TestHub::new(12, untraced());
    let health = hub.get("/healthz", None).await;
    assert_eq!(health.status, StatusCode::OK);
    let audit = &health.json()["audit"];
    assert_eq!(health.json()["status"], "ok");
    let backend = if hub.on_postgres() {
        "postgres"
    } else {
        "sqlite"
    };
    assert_eq!(audit["backend"], backend);
    for key in [
        "accepted",
        "flushed",
        "rejected",
        "failedFlushes",
        "queueSize",
    ] {
        assert!(audit[key].is_u64(), "{key} in {audit}");
    }

    let list = hub
        .get(&hub.project_agents_uri(), Some(&hub.doc().member_token))
        .await;
    assert_eq!(list.status, StatusCode::OK);
    let accepted = hub.hub.audit_log().sent();
    assert!(
        accepted >= 12,
        "one decision per agent at least: {accepted}"
    );
    wait_for(|| hub.hub.audit_log().flushed() == accepted).await;
    assert_eq!(audit_decisions(&hub), accepted as i64);

    let member = hub
        .get(
            "/api/v1/admin/audit-events?window=5m",
            Some(&hub.doc().member_token),
        )
        .await;
    assert_eq!(member.status, StatusCode::FORBIDDEN);

    let admin = &hub.doc().admin_token;
    let mut cursor: Option<String> = None;
    let mut seen: Vec<(String, i64)> = Vec::new();
    let mut seen_decisions = 0;
    loop {
        let uri = match &cursor {
            Some(c) => format!(
                "/api/v1/admin/audit-events?window=5m&time_resolution=minute&limit=5&cursor={c}"
            ),
            None => "/api/v1/admin/audit-events?window=5m&time_resolution=minute&limit=5".into(),
        };
        let page = hub.get(&uri, Some(admin)).await;
        assert_eq!(page.status, StatusCode::OK, "{}", page.json());
        let body = page.json();
        assert_eq!(body["countApproximate"], false);
        assert_eq!(body["timeResolution"], "minute");
        let buckets: u64 = body["histogram"]
            .as_array()
            .unwrap()
            .iter()
            .map(|b| b["count"].as_u64().unwrap())
            .sum();
        assert_eq!(buckets, body["count"].as_u64().unwrap());
        for event in body["events"].as_array().unwrap() {
            seen_decisions += decisions_of(event);
            seen.push((
                event["at"].as_str().unwrap().to_owned(),
                event["id"].as_i64().unwrap(),
            ));
        }
        match body["nextCursor"].as_str() {
            Some(next) => cursor = Some(next.to_owned()),
            None => break,
        }
    }
    // Every persisted record at least (the admin's own checks add some).
    assert!(seen_decisions >= accepted, "{seen_decisions} < {accepted}");
    let mut sorted = seen.clone();
    sorted.sort_by(|a, b| b.cmp(a));
    sorted.dedup();
    assert_eq!(seen, sorted, "newest first, no record twice");

    let one = hub
        .get(
            "/api/v1/admin/audit-events?window=5m&limit=500",
            Some(admin),
        )
        .await
        .json();
    let reads: u64 = one["events"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|e| e["principal"]["id"] == hub.doc().member_user_id.as_str())
        .map(decisions_of)
        .sum();
    assert!(reads >= 12, "the member's decisions are listed: {reads}");

    let wide = hub
        .get("/api/v1/admin/audit-events?window=7d", Some(admin))
        .await
        .json();
    assert_eq!(wide["countApproximate"], true);
    assert!(wide["count"].as_u64().unwrap() >= seen.len() as u64);
}

#[tokio::test]
async fn bad_parameters_are_a_json_400_naming_the_parameter() {
    let hub = TestHub::new(2, untraced());
    let admin = hub.doc().admin_token.clone();
    for (query, name) in [
        ("window=2h", "window"),
        ("cursor=nope!", "cursor"),
        ("limit=9999", "limit"),
        ("from=tomorrow", "from"),
        ("time_resolution=week", "time_resolution"),
    ] {
        let reply = hub
            .get(&format!("/api/v1/admin/audit-events?{query}"), Some(&admin))
            .await;
        assert_eq!(reply.status, StatusCode::BAD_REQUEST, "{query}");
        let message = reply.json()["error"].as_str().unwrap().to_owned();
        assert!(message.contains(name), "{query}: {message}");
    }
}

/// A backend whose writes wait until the test opens its gate.
struct StalledBackend {
    gate: Arc<(Mutex<bool>, Condvar)>,
}

impl AuditBackend for StalledBackend {
    fn name(&self) -> &'static str {
        "stalled"
    }
    fn write_batch(&mut self, _batch: &[AuditEntry]) -> Result<(), AuditWriteError> {
        let (open, cv) = &*self.gate;
        let mut open = open.lock().unwrap();
        while !*open {
            open = cv.wait(open).unwrap();
        }
        Ok(())
    }
}

#[tokio::test]
async fn a_stalled_writer_turns_healthz_degraded_in_the_stall_time_and_ok_once_it_writes() {
    let gate = Arc::new((Mutex::new(false), Condvar::new()));
    let stalled = StalledBackend { gate: gate.clone() };
    let hub = TestHub::built(20, untraced(), |builder| {
        builder.audit_backend(Box::new(stalled), 8)
    });
    let member = hub.doc().member_token.clone();
    let fresh: Value = hub
        .get(&hub.project_agents_uri(), Some(&member))
        .await
        .json();
    for _ in 0..5 {
        let reply = hub.get(&hub.project_agents_uri(), Some(&member)).await;
        assert_eq!(reply.status, StatusCode::OK);
        assert_eq!(
            reply.json(),
            fresh,
            "the answer does not depend on the audit"
        );
    }
    let audit_log = hub.hub.audit_log().clone();
    let body = hub.get("/healthz", None).await.json();
    let audit = &body["audit"];
    assert_eq!(audit["backend"], "stalled");
    assert_eq!(audit["flushed"], 0);
    assert_eq!(audit["rejected"], 0, "past its share, summarized: {audit}");
    assert!(audit["summarized"].as_u64().unwrap() > 0, "{audit}");
    assert_eq!(audit["queueSize"], audit["accepted"]);
    let largest = &audit["pendingSummaries"][0];
    assert_eq!(largest["principalKind"], "user");
    assert!(largest["count"].as_u64().unwrap() > 0, "{audit}");
    assert!(largest.get("principalId").is_none(), "no id to anyone");
    assert_eq!(
        audit_log.health().pending_summaries[0].principal_id,
        hub.doc().member_user_id
    );

    // Held in its write: degraded within the stall time.
    let held = Instant::now();
    wait_for(|| audit_log.health().stalled).await;
    assert!(held.elapsed() <= STALL_AFTER + Duration::from_secs(5));
    let stalled = hub.get("/healthz", None).await.json();
    assert_eq!(stalled["status"], "degraded", "{stalled}");
    assert_eq!(stalled["audit"]["stalled"], true);

    *gate.0.lock().unwrap() = true;
    gate.1.notify_all();
    wait_for(|| {
        let health = audit_log.health();
        health.flushed == health.accepted && health.summaries_pending == 0
    })
    .await;
    let after = hub.get("/healthz", None).await.json();
    assert_eq!(after["audit"]["queueSize"], 0);
    assert_eq!(after["audit"]["summariesPending"], 0);
    assert_eq!(after["audit"]["stalled"], false);
    assert_eq!(after["status"], "ok", "recovered: {after}");
}

#[tokio::test]
async fn a_locked_database_fails_flushes_that_are_retried_until_everything_is_written() {
    if skip_on_postgres(
        "holds SQLite's file write lock; postgres_paths.rs cuts the server off the audit writer instead",
    ) {
        return;
    }
    let hub = TestHub::new(30, untraced());
    let locker = rusqlite::Connection::open(hub.seeded.dir.path().join("hub.db")).unwrap();
    locker.execute_batch("BEGIN EXCLUSIVE").unwrap();
    let member = hub.doc().member_token.clone();
    for _ in 0..3 {
        let reply = hub.get(&hub.project_agents_uri(), Some(&member)).await;
        // WAL readers are not blocked by the writer's lock.
        assert_eq!(reply.status, StatusCode::OK);
    }
    let log = hub.hub.audit_log().clone();
    wait_for(|| log.failed_flushes() >= 1).await;
    let during = hub.get("/healthz", None).await.json();
    assert_eq!(during["status"], "degraded");
    assert!(during["audit"]["failedFlushes"].as_u64().unwrap() >= 1);
    assert_eq!(during["audit"]["flushed"], 0);
    locker.execute_batch("COMMIT").unwrap();
    wait_for(|| log.flushed() == log.sent()).await;
    let health = log.health();
    assert_eq!((health.rejected, health.queue_size), (0, 0));
    assert_eq!(audit_decisions(&hub), health.flushed as i64, "nothing lost");
    assert!(health.flushed >= 90);
}

/// The rows and decisions one uncached list by the member writes into a
/// project of `agents` agents.
async fn one_list(agents: u32) -> (i64, u64, Value) {
    let hub = TestHub::new(agents, untraced());
    let log = hub.hub.audit_log().clone();
    wait_for(|| log.flushed() == log.sent()).await;
    let (rows, decisions) = (audit_rows(&hub), log.sent());
    let list = hub
        .get(&hub.project_agents_uri(), Some(&hub.doc().member_token))
        .await;
    assert_eq!(list.status, StatusCode::OK);
    wait_for(|| log.flushed() == log.sent()).await;
    let health = log.health();
    assert_eq!((health.rejected, health.queue_size), (0, 0));
    assert_eq!(audit_decisions(&hub), health.flushed as i64, "nothing lost");
    // Counted before the admin's read of the page, whose own decision is
    // written whenever the writer gets to it.
    let (rows, decisions) = (audit_rows(&hub) - rows, log.sent() - decisions);
    let admin = hub.doc().admin_token.clone();
    let page = hub
        .get(
            "/api/v1/admin/audit-events?window=5m&limit=500",
            Some(&admin),
        )
        .await
        .json();
    (rows, decisions, page)
}

#[tokio::test]
async fn the_rows_an_uncached_list_writes_do_not_grow_with_its_agents() {
    let (rows_10, decisions_10, _) = one_list(10).await;
    let (rows_40, decisions_40, page) = one_list(40).await;
    assert!(
        decisions_40 > 3 * decisions_10,
        "decisions grow with agents: {decisions_10} then {decisions_40}"
    );
    assert_eq!(rows_10, rows_40, "rows per request stay the same");
    assert!(rows_40 <= 16, "one row per question: {rows_40}");
    // The denials stay visible: each row of the list's batch names the
    // agents its action was denied on.
    let events = page["events"].as_array().unwrap();
    let denied: Vec<&Value> = events
        .iter()
        .filter(|e| e["outcome"] == "deny" && e["resource"]["id"].is_null())
        .collect();
    assert!(!denied.is_empty(), "{page}");
    for event in denied {
        let ids = event["deniedIds"].as_array().unwrap();
        assert_eq!(
            ids.len() as u64,
            event["decisions"]["deny"].as_u64().unwrap()
        );
    }
}

#[tokio::test]
async fn a_principal_past_its_uncached_list_quota_gets_429_with_retry_after() {
    let hub = TestHub::built(5, untraced(), |builder| {
        builder.audit_settings(AuditSettings {
            list_rate: 1,
            list_burst: 2,
            ..AuditSettings::default()
        })
    });
    let (member, owner) = (
        hub.doc().member_token.clone(),
        hub.doc().owner_token.clone(),
    );
    for _ in 0..2 {
        let reply = hub.get(&hub.project_agents_uri(), Some(&member)).await;
        assert_eq!(reply.status, StatusCode::OK);
    }
    let sent = hub.hub.audit_log().sent();
    let refused = hub.get("/api/v1/agents", Some(&member)).await;
    assert_eq!(refused.status, StatusCode::TOO_MANY_REQUESTS);
    let retry: u64 = refused.headers["retry-after"]
        .to_str()
        .unwrap()
        .parse()
        .unwrap();
    assert!(retry >= 1);
    assert_eq!(refused.json()["retryAfterSeconds"], retry);
    assert!(refused.json()["error"]
        .as_str()
        .unwrap()
        .contains("uncached list"));
    assert_eq!(
        hub.hub.audit_log().sent(),
        sent,
        "refused before deciding anything"
    );
    let other = hub.get(&hub.project_agents_uri(), Some(&owner)).await;
    assert_eq!(
        other.status,
        StatusCode::OK,
        "another principal is unaffected"
    );
}

/// A Hub over `agents` agents whose principals each write `record_rate`
/// audit rows a second (ten seconds' worth at once).
fn hub_with_record_rate(agents: u32, record_rate: u32) -> TestHub {
    TestHub::built(agents, untraced(), |builder| {
        builder.audit_settings(AuditSettings {
            record_rate,
            ..AuditSettings::default()
        })
    })
}

/// The rows of `principal_id` stored: its own, and its summaries.
fn rows_of(hub: &TestHub, principal_id: &str) -> (i64, i64) {
    let count = |sql: &str| hub.query_row(sql, &[principal_id])[0].int();
    (
        count("SELECT COUNT(*) FROM audit_events WHERE principal_id = ?1 AND last_ms IS NULL"),
        count("SELECT COUNT(*) FROM audit_events WHERE principal_id = ?1 AND last_ms IS NOT NULL"),
    )
}

#[tokio::test]
async fn a_member_s_flood_from_every_route_writes_its_rate_and_summaries_and_no_record_is_rejected()
{
    const RATE: u32 = 2;
    let hub = hub_with_record_rate(5, RATE);
    let doc = hub.doc().clone();
    let others: Vec<String> = hub_support::sql::query(
        hub.hub.db(),
        "SELECT id FROM agents WHERE project_id = ?1 ORDER BY id",
        &[&doc.other_project_id],
    )
    .into_iter()
    .map(|row| row[0].text().to_owned())
    .collect();
    let other = others[0].clone();
    // Sixteen subjects of another project's agents, each refused.
    let subjects: Vec<String> = (0..16)
        .map(|i| format!("sub=agents.{}.%3E", others[i % others.len()]))
        .collect();
    let routes = [
        format!("/events?{}", subjects.join("&")),
        format!("/api/v1/agents/{other}"),
        format!("/api/v1/projects/{}/delegations", doc.other_project_id),
        format!("/api/v1/projects/{}/delegations", doc.project_id),
    ];
    let start = Instant::now();
    let member = doc.member_token.clone();
    for _ in 0..60 {
        for uri in &routes {
            let reply = hub.get(uri, Some(&member)).await;
            assert!(
                [StatusCode::OK, StatusCode::FORBIDDEN].contains(&reply.status),
                "{uri}: {}",
                reply.status
            );
        }
        let put = hub
            .put_status(
                &other,
                &member,
                &[("content-type", "application/json")],
                r#"{"phase":"stopped"}"#,
            )
            .await;
        assert_eq!(put.status, StatusCode::FORBIDDEN);
    }
    // Another principal's record during the flood is written as its own.
    let owner = hub
        .get(&hub.project_agents_uri(), Some(&doc.owner_token))
        .await;
    assert_eq!(owner.status, StatusCode::OK);

    let log = hub.hub.audit_log().clone();
    let health = log.health();
    assert_eq!(health.rejected, 0, "{health:?}");
    assert!(
        health.summarized > 0,
        "the flood is past its rate: {health:?}"
    );
    let body = hub.get("/healthz", None).await.json();
    assert_eq!(body["status"], "ok", "{body}");
    let pending = body["audit"]["pendingSummaries"].as_array().unwrap();
    assert!(
        pending.iter().any(|s| s["count"].as_u64() > Some(0)),
        "{body}"
    );
    let folded = log.health().pending_summaries;
    assert!(folded.iter().all(|s| s.principal_id == doc.member_user_id));

    wait_for(|| {
        let health = log.health();
        health.flushed == health.accepted && health.summaries_pending == 0
    })
    .await;
    let elapsed = start.elapsed().as_secs_f64();
    let health = log.health();
    assert_eq!((health.rejected, health.summaries_pending), (0, 0));
    assert_eq!(
        audit_decisions(&hub),
        (health.flushed + log.summaries_flushed()) as i64,
        "every decision stored, in its own row or a summary"
    );
    let (own, summaries) = rows_of(&hub, &doc.member_user_id);
    let bound = f64::from(RATE) * (elapsed + 10.0) + 1.0;
    assert!(
        f64::from(own as u32) <= bound,
        "{own} rows in {elapsed:.1} s"
    );
    assert!(summaries >= 1);
    // Per interval at most one summary per action, resource kind and
    // outcome (a handful), however many requests.
    assert!(summaries <= 8 * (elapsed / 5.0 + 2.0) as i64, "{summaries}");
    let (owner_rows, _) = rows_of(&hub, &doc.owner_user_id);
    assert!(owner_rows >= 1, "the owner's records are rows of their own");

    let page = hub
        .get(
            "/api/v1/admin/audit-events?window=5m&limit=500",
            Some(&doc.admin_token),
        )
        .await
        .json();
    let shown: Vec<&Value> = page["events"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|e| !e["summary"].is_null())
        .collect();
    assert!(!shown.is_empty(), "summaries in the audit API: {page}");
    for summary in shown {
        assert_eq!(summary["principal"]["id"], doc.member_user_id.as_str());
        assert_eq!(summary["summary"]["first"], summary["at"]);
        assert!(summary["summary"]["last"].as_str() >= summary["at"].as_str());
        assert!(decisions_of(summary) >= 1);
    }
}
