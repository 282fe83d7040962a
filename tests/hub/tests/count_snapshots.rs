//! Counts as reviewed snapshots: every count of every request of the budget
//! set, exactly, for the member and the admin caller.
//!
//! The budgets (`perf_budget.rs`) fail only past a margin; these snapshots
//! fail on any change of a count, with a diff naming the key that moved.
//! They are taken on the budget fixture (100 agents in the main project);
//! the same requests at 25 agents must make the same store calls and enter
//! the same phases, so one snapshot per request shape covers both sizes
//! (decisions are taken per returned agent and grow with the page).
//!
//! After an intended change of counts, review the new values:
//!
//! ```text
//! cargo insta test -p hub-tests --test count_snapshots --review
//! ```
//!
//! or, without cargo-insta, overwrite them and read the diff in git:
//!
//! ```text
//! INSTA_UPDATE=always cargo test -p hub-tests --test count_snapshots
//! ```

mod budget_requests;
mod hub_support;

use std::collections::BTreeMap;
use std::time::Duration;

use axum::Router;
use budget_requests::{
    first_request, get_as, rereading_router, shapes, traced_shape, Caller, Shape, AGENTS,
    SMALL_AGENTS,
};
use hub_example::perf::keys::HubSchema;
use hub_example::seed::SeedDocument;
use hub_support::{Seeded, TestHub};
use perf_trace_core::assert_counts_snapshot;
use perf_trace_core::snapshot::CountsView;
use perf_trace_core::testing::perf_traced_request;
use serde_json::Value;

/// The counts of one request as `caller`, checked to be a 200 and to repeat
/// exactly on a second attempt (whose durations differ).
async fn counts_of(
    router: &Router,
    doc: &SeedDocument,
    caller: Caller,
    shape: &Shape,
) -> CountsView {
    let mut attempts = Vec::new();
    for _ in 0..2 {
        let response = traced_shape(router, doc, caller, shape).await;
        attempts.push(CountsView::from(&response));
    }
    assert_eq!(
        attempts[0], attempts[1],
        "{caller} {}: the second attempt's counts differ",
        shape.name
    );
    attempts.remove(0)
}

/// The counts of every request of the budget set on `router`, after the
/// first request.
async fn measure(router: &Router, doc: &SeedDocument, caller: Caller) -> Vec<(Shape, CountsView)> {
    let picks = first_request(router, doc).await;
    let mut out = Vec::new();
    for shape in shapes(doc, &picks) {
        let counts = counts_of(router, doc, caller, &shape).await;
        out.push((shape, counts));
    }
    out
}

/// Every request's counts match its snapshot at 100 agents, and at 25
/// agents make the same store calls and enter the same phases.
async fn check_snapshots_at_both_sizes(caller: Caller) {
    let small = TestHub::traced(SMALL_AGENTS);
    let large = TestHub::traced(AGENTS);
    let at_small = measure(&small.router, small.doc(), caller).await;
    let at_large = measure(&large.router, large.doc(), caller).await;
    assert_eq!(at_small.len(), at_large.len());
    for ((shape, counts_at_25), (_, counts_at_100)) in at_small.iter().zip(&at_large) {
        assert_counts_snapshot!(format!("{caller}-{}", shape.name), counts_at_100);
        let (small, large) = (counts_at_25, counts_at_100);
        assert_eq!(
            (small.endpoint, small.status),
            (large.endpoint, large.status),
            "{caller} {}",
            shape.name
        );
        assert_eq!(
            small.store_calls, large.store_calls,
            "{caller} {}: store calls differ between {SMALL_AGENTS} and {AGENTS} agents",
            shape.name
        );
        assert_eq!(
            small.phases, large.phases,
            "{caller} {}: phase counts differ between {SMALL_AGENTS} and {AGENTS} agents",
            shape.name
        );
    }
}

#[tokio::test]
async fn member_counts_match_their_snapshots_at_both_sizes() {
    check_snapshots_at_both_sizes(Caller::Member).await;
}

#[tokio::test]
async fn admin_counts_match_their_snapshots_at_both_sizes() {
    check_snapshots_at_both_sizes(Caller::Admin).await;
}

/// The view as its snapshot text holds it, flattened to `dotted.key = value`.
fn flatten(counts: &CountsView) -> BTreeMap<String, Value> {
    fn walk(prefix: String, value: Value, out: &mut BTreeMap<String, Value>) {
        match value {
            Value::Object(map) => {
                for (key, value) in map {
                    let key = if prefix.is_empty() {
                        key
                    } else {
                        format!("{prefix}.{key}")
                    };
                    walk(key, value, out);
                }
            }
            leaf => {
                out.insert(prefix, leaf);
            }
        }
    }
    let mut out = BTreeMap::new();
    walk(
        String::new(),
        serde_json::to_value(counts).unwrap(),
        &mut out,
    );
    out
}

/// The keys whose values differ between two views.
fn moved_keys(before: &CountsView, after: &CountsView) -> Vec<String> {
    let (before, after) = (flatten(before), flatten(after));
    let mut keys: Vec<String> = before.keys().chain(after.keys()).cloned().collect();
    keys.sort();
    keys.dedup();
    keys.retain(|key| before.get(key) != after.get(key));
    keys
}

/// The text of a committed snapshot of this file.
fn committed_snapshot(name: &str) -> String {
    let path = format!(
        "{}/tests/snapshots/count_snapshots__{name}.snap",
        env!("CARGO_MANIFEST_DIR")
    );
    std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{path}: {e}"))
}

#[tokio::test]
async fn one_extra_read_per_agent_changes_the_snapshot_at_the_store_calls() {
    let hub = TestHub::traced(AGENTS);
    let expected = measure(&hub.router, hub.doc(), Caller::Member).await;

    let seeded = Seeded::new(AGENTS);
    let regressed = measure(&rereading_router(&seeded), &seeded.doc, Caller::Member).await;

    for ((shape, expected), (_, regressed)) in expected.iter().zip(&regressed) {
        let moved = moved_keys(expected, regressed);
        let extra_reads = regressed.store_calls.total - expected.store_calls.total;
        println!(
            "{}: {extra_reads} extra store calls; keys that moved: {moved:?}",
            shape.name
        );
        // Every request of the set authorizes against the project's
        // constraints, so every snapshot moves, and only at the store
        // calls: their total and the method that made the extra reads.
        assert!(extra_reads > 0, "{}: no extra read", shape.name);
        assert_eq!(
            moved,
            ["store_calls.methods.GetAgent", "store_calls.total"],
            "{}",
            shape.name
        );
        // The committed snapshot holds the expected total, so the regressed
        // counts fail it.
        let total =
            |counts: &CountsView| format!("store_calls:\n  total: {}\n", counts.store_calls.total);
        let committed = committed_snapshot(&format!("member-{}", shape.name));
        assert!(
            committed.contains(&total(expected)),
            "{}: {committed}",
            shape.name
        );
        assert!(
            !committed.contains(&total(regressed)),
            "{}: {committed}",
            shape.name
        );
    }
    // Where the request returns every agent of the project, the regression
    // is exactly one extra store call per returned agent.
    let graph = |measured: &[(Shape, CountsView)]| {
        let (_, counts) = measured
            .iter()
            .find(|(shape, _)| shape.name == "project-graph")
            .unwrap();
        counts.store_calls.total
    };
    assert_eq!(graph(&regressed), graph(&expected) + u64::from(AGENTS));
}

#[tokio::test]
async fn durations_and_request_ids_never_enter_the_snapshot() {
    let hub = TestHub::traced(SMALL_AGENTS);
    let doc = hub.doc();
    let picks = first_request(&hub.router, doc).await;
    let shape = &shapes(doc, &picks)[0];
    let response = perf_traced_request::<HubSchema, _, _, _>(
        hub.router.clone(),
        get_as(doc, Caller::Member, &shape.uri),
    )
    .await
    .unwrap();
    let measured = &response.snapshot;
    assert!(measured.authz_store_calls > 0 && !measured.phases.is_empty());

    // The same counts, with every duration and the request id changed.
    let mut other = measured.clone();
    other.elapsed += Duration::from_secs(3_600);
    other.authz_store_time += Duration::from_secs(3_600);
    other.decisions.emit_time += Duration::from_secs(3_600);
    for stat in other.phases.iter_mut().chain(&mut other.store_calls) {
        stat.duration = stat.duration * 7 + Duration::from_millis(1);
    }
    other.request_id = "00000000-0000-4000-8000-00000000beef".into();
    assert_ne!(&other, measured);
    assert_eq!(CountsView::from(&other), CountsView::from(measured));

    let view = CountsView::from(&other);
    let keys: Vec<String> = flatten(&view).into_keys().collect();
    for key in &keys {
        let top = key.split('.').next().unwrap();
        assert!(
            ["endpoint", "store_calls", "decisions", "phases", "counters"].contains(&top),
            "unexpected key {key} in {keys:?}"
        );
    }
    let text = serde_json::to_string(&view).unwrap();
    assert!(!text.contains("beef") && !text.contains("_us"), "{text}");
}
