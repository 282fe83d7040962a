//! Counts as regression budgets: the agent endpoints' authorization store
//! calls, decisions, agent-row reads and response bytes, on a fixed fixture,
//! against baselines written below.
//!
//! The fixture is a fresh database seeded with rand seed 42: 100 agents in
//! the main project and 10 in the second one (the seeder's fixed
//! `OTHER_PROJECT_AGENTS`), read by the seeded non-admin member, on a Hub
//! built with tracing on. Every request is served in-process with
//! `perf_traced_request`, so no server is started and nothing depends on
//! the host: the counts repeat exactly on every attempt after the first
//! request.
//!
//! Updating a baseline for an intended change: run
//!
//! ```text
//! cargo test -p hub-tests --test perf_budget -- --nocapture
//! ```
//!
//! read the `measured:` line of each request, set its row in
//! [`PERF_BUDGETS`] to the new values and [`PERF_BUDGET_BASELINE`] to where
//! they were measured (`main <sha>`, or a short description of the change),
//! and give the reason in the commit message. A value below its baseline by
//! more than the margin prints a note (never a failure): lower the baseline
//! in the same change so the improvement is held.

mod budget_requests;
mod hub_support;
mod web_schema;

use axum::Router;
use budget_requests::{
    first_request, rereading_router, shapes, traced_shape, Caller, Shape, AGENTS, SMALL_AGENTS,
};
use hub_example::perf::keys::Phase;
use hub_example::seed::{SeedDocument, OTHER_PROJECT_AGENTS};
use hub_support::{Seeded, TestHub};
use perf_trace_core::budget::BudgetCheck;
use perf_trace_core::Snapshot;

/// Where the baselines below were measured.
const PERF_BUDGET_BASELINE: &str = "main adfea9d";

/// One request's baseline.
#[derive(Debug, Clone, Copy)]
struct PerfBudget {
    request: &'static str,
    /// `authz_store_calls`: authorization store round trips.
    authz_store_calls: u64,
    /// `audit_records`: decisions.
    audit_records: u64,
    /// `audit_allow`: decisions that allowed.
    audit_allow: u64,
    /// `audit_deny`: decisions that denied.
    audit_deny: u64,
    /// `list_db_read`: agent-row reads (the phase's count).
    list_db_read: u64,
    /// `response_bytes`: the body's length.
    response_bytes: u64,
}

/// The baselines, measured at [`PERF_BUDGET_BASELINE`] on the 100-agent fixture.
const PERF_BUDGETS: &[PerfBudget] = &[
    PerfBudget {
        request: "project-first-page",
        authz_store_calls: 13,
        audit_records: 355,
        audit_allow: 196,
        audit_deny: 159,
        list_db_read: 1,
        response_bytes: 26018,
    },
    PerfBudget {
        request: "project-page-by-ids",
        authz_store_calls: 12,
        audit_records: 26,
        audit_allow: 16,
        audit_deny: 10,
        list_db_read: 1,
        response_bytes: 1703,
    },
    PerfBudget {
        request: "project-graph",
        authz_store_calls: 13,
        audit_records: 705,
        audit_allow: 398,
        audit_deny: 307,
        list_db_read: 1,
        response_bytes: 51772,
    },
    PerfBudget {
        request: "global-first-page",
        authz_store_calls: 11,
        audit_records: 354,
        audit_allow: 194,
        audit_deny: 160,
        list_db_read: 1,
        response_bytes: 25915,
    },
    PerfBudget {
        request: "global-legacy-full",
        authz_store_calls: 11,
        audit_records: 704,
        audit_allow: 396,
        audit_deny: 308,
        list_db_read: 1,
        response_bytes: 51669,
    },
    PerfBudget {
        request: "global-compact",
        authz_store_calls: 7,
        audit_records: 104,
        audit_allow: 101,
        audit_deny: 3,
        list_db_read: 1,
        response_bytes: 20432,
    },
    PerfBudget {
        request: "agent-by-id",
        authz_store_calls: 9,
        audit_records: 7,
        audit_allow: 6,
        audit_deny: 1,
        list_db_read: 0,
        response_bytes: 523,
    },
];

/// The host-independent figures of one traced request.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Counts {
    endpoint: &'static str,
    store_calls: Vec<(&'static str, u64)>,
    authz_store_calls: u64,
    decisions: [u64; 4],
    phases: Vec<(&'static str, u64)>,
    list_db_read: u64,
    response_bytes: u64,
}

impl Counts {
    fn of(snapshot: &Snapshot, body_len: usize) -> Counts {
        let d = &snapshot.decisions;
        Counts {
            endpoint: snapshot.endpoint,
            store_calls: snapshot
                .store_calls
                .iter()
                .map(|s| (s.name, s.count))
                .collect(),
            authz_store_calls: snapshot.authz_store_calls,
            decisions: [d.records, d.allow, d.deny, d.other],
            phases: snapshot.phases.iter().map(|s| (s.name, s.count)).collect(),
            list_db_read: snapshot.phase(Phase::ListDbRead).count,
            response_bytes: body_len as u64,
        }
    }

    /// The budget check of these figures against `budget`.
    fn check(&self, budget: &PerfBudget) -> BudgetCheck {
        let [records, allow, deny, _] = self.decisions;
        BudgetCheck::new(budget.request, PERF_BUDGET_BASELINE)
            .count(
                "authz_store_calls",
                self.authz_store_calls,
                budget.authz_store_calls,
            )
            .count("audit_records", records, budget.audit_records)
            .count("audit_allow", allow, budget.audit_allow)
            .count("audit_deny", deny, budget.audit_deny)
            .count("list_db_read", self.list_db_read, budget.list_db_read)
            .bytes("response_bytes", self.response_bytes, budget.response_bytes)
    }
}

/// Serves one request in-process with a fresh recorder; checks it is a 200.
async fn traced(router: &Router, doc: &SeedDocument, shape: &Shape) -> Counts {
    let response = traced_shape(router, doc, Caller::Member, shape).await;
    Counts::of(&response.snapshot, response.body.len())
}

/// Every request's counts on `router`, each checked to repeat exactly on
/// three attempts after the first request.
async fn measure(router: &Router, doc: &SeedDocument) -> Vec<(Shape, Counts)> {
    let picks = first_request(router, doc).await;
    let mut out = Vec::new();
    for shape in shapes(doc, &picks) {
        let first = traced(router, doc, &shape).await;
        for attempt in 2..=3 {
            let again = traced(router, doc, &shape).await;
            assert_eq!(
                again, first,
                "{}: attempt {attempt} differs from the first attempt",
                shape.name
            );
        }
        out.push((shape, first));
    }
    out
}

fn budget_of(request: &str) -> Option<&'static PerfBudget> {
    PERF_BUDGETS.iter().find(|b| b.request == request)
}

/// Checks every request against its budget: prints the measured lines and
/// the stale notes, and returns every over-budget message.
fn check_all(measured: &[(Shape, Counts)]) -> Vec<String> {
    let mut failures = Vec::new();
    for (shape, counts) in measured {
        let Some(budget) = budget_of(shape.name) else {
            failures.push(format!(
                "{}: no baseline in PERF_BUDGETS; add one from its measured line",
                shape.name
            ));
            continue;
        };
        if let Err(over) = counts.check(budget).check() {
            failures.extend(over.failures);
        }
    }
    failures
}

#[tokio::test]
async fn agent_endpoints_stay_within_their_budgets() {
    let hub = TestHub::traced(AGENTS);
    let doc = hub.doc().clone();
    assert_eq!(doc.agent_count, AGENTS);
    assert_eq!(doc.other_agent_count, OTHER_PROJECT_AGENTS);
    assert_eq!(OTHER_PROJECT_AGENTS, 10);
    assert_eq!(doc.rand_seed, 42);

    let measured = measure(&hub.router, &doc).await;
    for (shape, counts) in &measured {
        assert_ne!(counts.endpoint, "", "{}", shape.name);
        assert_eq!(
            counts.list_db_read,
            u64::from(shape.list),
            "{}: one agent-row read per list",
            shape.name
        );
    }
    assert_eq!(
        PERF_BUDGETS.len(),
        measured.len(),
        "every row of PERF_BUDGETS is a request this test makes"
    );
    let failures = check_all(&measured);
    assert!(
        failures.is_empty(),
        "over budget (baselines from {PERF_BUDGET_BASELINE}):\n{}",
        failures.join("\n")
    );
}

#[tokio::test]
async fn store_calls_do_not_grow_with_the_number_of_agents() {
    let small = TestHub::traced(SMALL_AGENTS);
    let large = TestHub::traced(AGENTS);
    let at_small = measure(&small.router, small.doc()).await;
    let at_large = measure(&large.router, large.doc()).await;
    assert_eq!(at_small.len(), at_large.len());
    for ((shape, s), (_, l)) in at_small.iter().zip(&at_large) {
        println!(
            "store calls of {} at {SMALL_AGENTS} and {AGENTS} agents: {} / {}",
            shape.name, s.authz_store_calls, l.authz_store_calls
        );
        assert_eq!(
            (s.authz_store_calls, &s.store_calls),
            (l.authz_store_calls, &l.store_calls),
            "{}: store calls differ between {SMALL_AGENTS} and {AGENTS} agents",
            shape.name
        );
        assert_eq!(
            s.list_db_read, l.list_db_read,
            "{}: agent-row reads differ between sizes",
            shape.name
        );
    }
}

#[tokio::test]
async fn one_extra_read_per_agent_is_over_budget() {
    let seeded = Seeded::new(AGENTS);
    let doc = seeded.doc.clone();
    let router = rereading_router(&seeded);
    let measured = measure(&router, &doc).await;

    let failures = check_all(&measured);
    println!("over budget, as expected:\n{}", failures.join("\n"));
    for (shape, counts) in &measured {
        let budget = budget_of(shape.name).unwrap();
        let check = counts.check(budget);
        let bound = check
            .bounds()
            .iter()
            .find(|b| b.name == "authz_store_calls")
            .unwrap();
        let expected = format!(
            "{}: authz_store_calls = {} is over its budget {} (baseline {}",
            shape.name,
            counts.authz_store_calls,
            bound.budget(),
            budget.authz_store_calls
        );
        assert!(
            failures.iter().any(|f| f.starts_with(&expected)),
            "{}: no failure naming the store calls and their budget ({expected}...) in:\n{}",
            shape.name,
            failures.join("\n")
        );
        assert!(failures.iter().any(|f| f.contains(PERF_BUDGET_BASELINE)));
    }
    // Where the request returns every agent of the project, the regression is
    // exactly one extra store call per returned agent.
    let graph = &measured
        .iter()
        .find(|(s, _)| s.name == "project-graph")
        .unwrap()
        .1;
    assert_eq!(
        graph.authz_store_calls,
        budget_of("project-graph").unwrap().authz_store_calls + u64::from(AGENTS)
    );
}

#[tokio::test]
async fn web_fixture_schema_matches_the_hubs_responses() {
    let hub = TestHub::traced(AGENTS);
    let actual = web_schema::hub_schema(&hub).await;
    let path = web_schema::schema_path();
    if let Err(message) = web_schema::check_or_write(&actual, &path, web_schema::write_requested())
    {
        panic!("{message}");
    }
}

#[tokio::test]
async fn a_changed_response_field_fails_the_web_fixture_schema() {
    let hub = TestHub::traced(AGENTS);
    let actual = web_schema::hub_schema(&hub).await;
    // A file of the hub's schema as it is now (not the committed one, which
    // the test above may be rewriting).
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("schema.json").display().to_string();
    web_schema::check_or_write(&actual, &path, true).unwrap();
    web_schema::check_or_write(&actual, &path, false).unwrap();

    let mut drifted = actual.clone();
    let graph = drifted.get_mut("project-graph").unwrap();
    graph.insert("$.agents[].createdBy.id".into(), "number".into());
    graph.insert("$.agents[].labels".into(), "array".into());
    let message = web_schema::check_or_write(&drifted, &path, false)
        .expect_err("a changed field type and a new field are drift");
    assert!(
        message.contains("does not match the field names and types of the hub's current responses"),
        "{message}"
    );
    assert!(
        message.contains(
            "project-graph: $.agents[].createdBy.id: string in the schema file, number in the hub's responses"
        ),
        "{message}"
    );
    assert!(
        message.contains("project-graph: $.agents[].labels (array) is in the hub's responses"),
        "{message}"
    );
    assert!(
        message.contains("SCION_PERF_BUDGET_WRITE_WEB_SCHEMA=1"),
        "{message}"
    );
}
