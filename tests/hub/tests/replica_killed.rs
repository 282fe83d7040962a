//! A replica killed during a load run: two Hub processes on one PostgreSQL
//! schema, `load` spreading its users over both, and one of them killed
//! with SIGKILL halfway. The other keeps serving its users without a
//! failure; the report counts the killed replica's failures as its own (and
//! says its process exited) instead of failing the run; and an event
//! stream that was open on the killed replica opens again on the other and
//! gets events there.
//!
//! The server is `PERF_TRACE_PG_URL`; without it the test is skipped (one
//! line on standard error says so; with `CI=true` it fails). The test seeds
//! a schema of its own and drops it.

mod hub_support;

use std::time::Duration;

use hub_support::pg_url::pg_url;
use hub_support::process::{first_listed_agent, put_status, EventStream, Replica};
use hub_support::Seeded;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_replica_killed_under_load_fails_only_its_own_users_and_its_streams_move() {
    let Some(server) = pg_url() else { return };
    let seeded = Seeded::on_postgres(4, &server);
    let db_url = seeded.pg.as_ref().unwrap().url().to_owned();
    let doc = seeded.doc.clone();
    let survivor = Replica::serve(&db_url);
    let mut doomed = Replica::serve(&db_url);
    let survivor_pid = survivor.child.0.id();
    let mut on_doomed = EventStream::open(&doomed.addr, &doc);

    let seed_path = seeded.dir.path().join("seed.json");
    std::fs::write(&seed_path, serde_json::to_vec(&doc).unwrap()).unwrap();
    let load = tokio::spawn(hub_bench::run_load(hub_bench::LoadArgs {
        hub: format!("{},{}", survivor.url(), doomed.url()),
        seed: seed_path,
        users: 6,
        duration: Duration::from_secs(4),
        spawn_rate: 100,
        max_requests: 1_000_000,
        out: seeded.dir.path().join("load.json"),
        notes: String::new(),
        hub_pid: None,
        csv: None,
        compare: None,
    }));

    tokio::time::sleep(Duration::from_millis(1500)).await;
    doomed.kill();
    // The survivor comes back from the thread: it serves until the run ends.
    let _survivor = tokio::task::spawn_blocking(move || {
        assert!(on_doomed.ended(), "the killed replica's stream did not end");
        // Its client opens the stream again on the other replica, and
        // events written there reach it.
        let mut moved = EventStream::open(&survivor.addr, &doc);
        let agent = first_listed_agent(&survivor.addr, &doc);
        put_status(&survivor.addr, &doc, &agent, "stopped");
        assert!(
            moved.wait_for("\"phase\":\"stopped\""),
            "the moved stream got no event: {}",
            moved.seen
        );
        survivor
    })
    .await
    .unwrap();
    let report = load
        .await
        .unwrap()
        .expect("the run survives a dead replica");

    assert_eq!(report.replicas.len(), 2);
    let (live, dead) = (&report.replicas[0], &report.replicas[1]);
    assert_eq!((live.users_started, dead.users_started), (3, 3));
    assert_eq!(live.unexpected_failures, 0, "{live:?}");
    assert!(live.total_requests > 0);
    assert!(dead.unexpected_failures > 0, "{dead:?}");
    assert!(
        dead.total_requests > dead.unexpected_failures,
        "it served before it was killed: {dead:?}"
    );
    assert_eq!(report.unexpected_failures, dead.unexpected_failures);
    let live_process = live.hub_process.as_ref().expect("sampled by its port");
    assert_eq!(live_process.pid, survivor_pid);
    assert!(!live_process.exited_during_run);
    let dead_process = dead.hub_process.as_ref().expect("sampled until killed");
    assert!(dead_process.exited_during_run, "{dead_process:?}");
    let table = hub_bench::load::replica_table(&report);
    assert!(table.contains("exited during the run"), "{table}");
}
