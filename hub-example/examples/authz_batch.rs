//! Batched against one-call-per-agent authorization of the agent list, in
//! the same process on the same data: the full project list as the seeded
//! member (the view built, not encoded), at 100 and 500 agents, interleaved,
//! medians printed.
//!
//! ```sh
//! cargo run --release -p hub-example --example authz_batch -- 100,500 300
//! ```
//!
//! Audit records are counted and dropped on both sides. The one-by-one side
//! is what the list did before batching: one
//! `allow_agent` per agent for the read, `agent_permissions` per agent for
//! the capabilities, one `allow_agent` per agent for messageability.

use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Instant;

use hub_example::authz::{
    Action, AuditEmitter, AuditRecord, Authorizer, Credential, Principal, UserPrincipal,
};
use hub_example::listing::{self, ListRequest, ListShape, ListTarget, View, AGENT_CAPABILITIES};
use hub_example::model::{AgentPhase, Id};
use hub_example::seed::{seed, SeedOptions};
use hub_example::store::db::{Db, OpenMode, PoolOptions};
use hub_example::store::SqliteStore;
use hub_example::views::{AgentListView, AgentView};

/// Counts the records and drops them: the figures are the authorization
/// work, not the audit channel's (whose drain thread competes for the CPU).
#[derive(Default)]
struct CountingAudit(AtomicU64);

impl AuditEmitter for CountingAudit {
    fn emit(&self, _record: AuditRecord) {
        self.0.fetch_add(1, Ordering::Relaxed);
    }
}

fn one_by_one(
    authz: &Authorizer<'_, SqliteStore, CountingAudit>,
    db: &Db,
    project: &Id,
) -> AgentListView {
    let scope = listing::list_scope_authz(authz, &ListTarget::Project(project.clone())).unwrap();
    let page = listing::list_db_read(db, &scope, &ListShape::Legacy).unwrap();
    authz
        .memo()
        .constraints(std::slice::from_ref(project))
        .unwrap();
    let readable: Vec<_> = page
        .agents
        .into_iter()
        .filter(|a| authz.allow_agent(Action::AgentRead, a).unwrap())
        .collect();
    let creators = listing::enrich(authz, &readable).unwrap();
    let caps: Vec<_> = readable
        .iter()
        .map(|a| {
            let mut caps = authz.agent_permissions(a, &AGENT_CAPABILITIES).unwrap();
            caps.insert(Action::AgentRead);
            caps
        })
        .collect();
    let messageable: Vec<_> = readable
        .iter()
        .map(|a| {
            authz.allow_agent(Action::AgentMessage, a).unwrap() && a.phase == AgentPhase::Running
        })
        .collect();
    let agents = readable
        .into_iter()
        .zip(caps)
        .zip(messageable)
        .map(|((a, c), m)| AgentView::Full(listing::full_view(a, &creators, c, m)))
        .collect();
    AgentListView {
        agents,
        next_cursor: None,
        scope: listing::scope_capabilities(authz, Some(project)).unwrap(),
    }
}

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
}

fn main() {
    let mut args = std::env::args().skip(1);
    let sizes: Vec<u32> = args
        .next()
        .unwrap_or_else(|| "100,500".into())
        .split(',')
        .map(|s| {
            s.trim()
                .parse()
                .expect("sizes: numbers separated by commas")
        })
        .collect();
    let rounds: usize = args
        .next()
        .map(|s| s.parse().expect("rounds: a number"))
        .unwrap_or(300);
    let dir = tempfile_dir();
    println!("| agents | one call per agent, median ms | batched, median ms | change |");
    println!("| ---: | ---: | ---: | ---: |");
    for agents in sizes {
        let path = dir.join(format!("hub{agents}.db"));
        let doc = seed(&SeedOptions {
            db_path: path.clone(),
            session_secret: "bench".into(),
            agents,
            project_slug: format!("bench-{agents}"),
            rand_seed: 42,
        })
        .expect("seed");
        let db = Db::open(&path, OpenMode::MustExist, PoolOptions::default()).expect("open");
        let store = SqliteStore::new(db.clone());
        let sink = CountingAudit::default();
        let member = Principal::User(UserPrincipal {
            id: Id::from(doc.member_user_id.as_str()),
            is_platform_admin: false,
            credential: Credential::Session,
        });
        let project = Id::from(doc.project_id.as_str());
        let request = ListRequest {
            target: ListTarget::Project(project.clone()),
            shape: ListShape::Legacy,
            view: View::Full,
        };
        let (mut before, mut after) = (Vec::new(), Vec::new());
        let one_by_one_ms = || {
            let start = Instant::now();
            let view = one_by_one(&Authorizer::new(&store, &sink, &member), &db, &project);
            (start.elapsed().as_secs_f64() * 1e3, view)
        };
        let batched_ms = || {
            let start = Instant::now();
            let authz = Authorizer::new(&store, &sink, &member);
            let view = listing::list_agents(&authz, &db, &request).unwrap();
            (start.elapsed().as_secs_f64() * 1e3, view)
        };
        for round in 0..rounds + 10 {
            // Alternate which side goes first, so neither always runs warm.
            let ((old_ms, old), (new_ms, new)) = if round % 2 == 0 {
                let old = one_by_one_ms();
                (old, batched_ms())
            } else {
                let new = batched_ms();
                (one_by_one_ms(), new)
            };
            assert_eq!(
                serde_json::to_vec(&old).unwrap(),
                serde_json::to_vec(&new).unwrap(),
                "both sides answer the same"
            );
            if round >= 10 {
                before.push(old_ms);
                after.push(new_ms);
            }
        }
        let (b, a) = (median(before), median(after));
        println!(
            "| {agents} | {b:.3} | {a:.3} | {:+.1}% |",
            (a - b) / b * 100.0
        );
    }
    let _ = std::fs::remove_dir_all(&dir);
}

fn tempfile_dir() -> std::path::PathBuf {
    let dir = std::env::temp_dir().join(format!("authz-batch-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("temporary folder");
    dir
}
