//! Recording into the current recorder: phases, store calls, decisions,
//! scopes and hand-offs.

mod common;

use std::time::Duration;

use common::{Endpoint, Method, OtherPhase, Phase, TestSchema};
use perf_trace_core::scope::current;
use perf_trace_core::{
    __private01::TimedGuard, record::Outcome, scope::FutureExt, traced_phase, Recorder,
};

#[traced_phase(Phase::Load)]
fn load(n: u32) -> u32 {
    n + 1
}

#[traced_phase(Phase::Check)]
fn check(fail: bool) -> Result<u32, String> {
    if fail {
        return Err("refused".into());
    }
    Ok(1)
}

#[traced_phase(OtherPhase::Load)]
fn other_load() {}

#[traced_phase(Phase::Render)]
async fn render(pause: Duration) -> usize {
    tokio::time::sleep(pause).await;
    3
}

#[test]
fn phases_count_each_entry_and_ignore_other_schemas() {
    let recorder = Recorder::new::<TestSchema>();
    recorder.in_scope(|| {
        assert_eq!(load(1), 2);
        load(2);
        assert!(check(true).is_err());
        assert!(check(false).is_ok());
        other_load();
    });
    let snapshot = recorder.snapshot();
    assert_eq!(snapshot.phase(Phase::Load).count, 2);
    assert_eq!(snapshot.phase(Phase::Check).count, 2);
    assert_eq!(snapshot.phase(Phase::Render).count, 0);
    let names: Vec<_> = snapshot.phases.iter().map(|p| p.name).collect();
    assert_eq!(
        names,
        ["check", "load"],
        "sorted by name, only entered phases"
    );
}

#[test]
fn nothing_is_recorded_outside_a_scope() {
    let recorder = Recorder::new::<TestSchema>();
    load(1);
    assert!(current().is_none());
    recorder.in_scope(|| assert!(current().is_some()));
    assert!(current().is_none());
    assert_eq!(recorder.snapshot().phase(Phase::Load).count, 0);
}

#[test]
fn nested_scopes_restore_the_outer_recorder() {
    let outer = Recorder::new::<TestSchema>();
    let inner = Recorder::new::<TestSchema>();
    outer.in_scope(|| {
        load(0);
        inner.in_scope(|| {
            load(0);
            load(0);
        });
        load(0);
    });
    assert_eq!(outer.snapshot().phase(Phase::Load).count, 2);
    assert_eq!(inner.snapshot().phase(Phase::Load).count, 2);
}

#[test]
fn a_panicking_phase_still_counts_and_the_scope_is_restored() {
    #[traced_phase(Phase::Check)]
    fn explode() {
        panic!("boom");
    }
    let recorder = Recorder::new::<TestSchema>();
    let result = std::panic::catch_unwind(|| recorder.in_scope(explode));
    assert!(result.is_err());
    assert!(current().is_none());
    assert_eq!(recorder.snapshot().phase(Phase::Check).count, 1);
}

#[test]
fn store_calls_sum_into_the_totals() {
    let recorder = Recorder::new::<TestSchema>();
    recorder.in_scope(|| {
        for _ in 0..3 {
            let _g = TimedGuard::store_call(Method::GetUser);
        }
        let _g = TimedGuard::store_call(Method::ListThings);
    });
    let s = recorder.snapshot();
    assert_eq!(s.store(Method::GetUser).count, 3);
    assert_eq!(s.store(Method::ListThings).count, 1);
    assert_eq!(s.authz_store_calls, 4);
    assert!(s.authz_store_time >= s.store(Method::GetUser).duration);
}

#[test]
fn decisions_split_by_outcome() {
    let recorder = Recorder::new::<TestSchema>();
    recorder.in_scope(|| {
        for outcome in [
            Outcome::Allow,
            Outcome::Allow,
            Outcome::Deny,
            Outcome::Other,
        ] {
            let emitted = perf_trace_core::record::time_decision(outcome, || 5);
            assert_eq!(emitted, 5);
        }
        perf_trace_core::record::record_decision(Outcome::Deny);
        perf_trace_core::record::add_sse_events(2);
        perf_trace_core::record::set_endpoint(Endpoint::ThingsList);
    });
    let s = recorder.snapshot();
    assert_eq!(
        (
            s.decisions.records,
            s.decisions.allow,
            s.decisions.deny,
            s.decisions.other
        ),
        (5, 2, 2, 1)
    );
    assert_eq!(s.sse_events, 2);
    assert_eq!(s.endpoint, "things.list");
}

#[test]
fn the_default_endpoint_is_the_marked_variant() {
    let recorder = Recorder::new::<TestSchema>();
    assert_eq!(recorder.snapshot().endpoint, "other");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn async_phases_cover_awaits_and_spawned_work_carries_the_recorder() {
    let recorder = Recorder::new::<TestSchema>();
    let work = async {
        assert_eq!(render(Duration::from_millis(20)).await, 3);
        let blocking = perf_trace_core::scope::spawn_blocking(|| load(1));
        assert_eq!(blocking.await.unwrap(), 2);
        let task = tokio::spawn(async { check(false) }.in_current_trace());
        task.await.unwrap().unwrap();
        // A task spawned without the recorder records nothing.
        tokio::spawn(async { load(9) }).await.unwrap();
    };
    recorder.instrument(work).await;
    let s = recorder.snapshot();
    assert_eq!(s.phase(Phase::Render).count, 1);
    assert!(s.phase(Phase::Render).duration >= Duration::from_millis(20));
    assert_eq!(s.phase(Phase::Load).count, 1);
    assert_eq!(s.phase(Phase::Check).count, 1);
}

#[tokio::test]
async fn a_cancelled_async_phase_counts_once() {
    let recorder = Recorder::new::<TestSchema>();
    let slow = recorder.instrument(async { render(Duration::from_secs(60)).await });
    let outcome = tokio::time::timeout(Duration::from_millis(10), slow).await;
    assert!(outcome.is_err(), "timed out and dropped");
    let s = recorder.snapshot();
    assert_eq!(s.phase(Phase::Render).count, 1);
    assert!(s.phase(Phase::Render).duration >= Duration::from_millis(10));
}

#[test]
fn microseconds_of_a_snapshot_are_monotonic_in_elapsed() {
    let recorder = Recorder::new::<TestSchema>();
    let first = recorder.snapshot().elapsed;
    std::thread::sleep(Duration::from_millis(2));
    assert!(recorder.snapshot().elapsed >= first + Duration::from_millis(2));
}
