//! Phases, store calls and decisions are summed per scope in thread-local
//! memory and reach the request's table when the scope ends: these tests
//! check that every count still lands, exactly once, in the right recorder,
//! whatever the scope does (nest, panic, hand work to another thread, take a
//! snapshot before it ends).

mod common;

use common::{Method, Phase, TestSchema};
use perf_trace_core::scope::bind_current;
use perf_trace_core::{
    __private01::TimedGuard, record::record_decision, record::time_decision,
    record::time_decisions, record::DecisionBatch, record::Outcome, traced_phase, Recorder,
};

#[traced_phase(Phase::Load)]
fn load() {}

fn store_call() {
    let _g = TimedGuard::store_call(Method::GetUser);
}

/// (phase Load count, GetUser store calls, allow, deny, other).
fn counts(recorder: &Recorder) -> (u64, u64, u64, u64, u64) {
    let s = recorder.snapshot();
    (
        s.phase(Phase::Load).count,
        s.store(Method::GetUser).count,
        s.decisions.allow,
        s.decisions.deny,
        s.decisions.other,
    )
}

#[test]
fn a_snapshot_inside_the_scope_sees_what_the_scope_recorded_so_far() {
    let recorder = Recorder::new::<TestSchema>();
    recorder.in_scope(|| {
        load();
        store_call();
        record_decision(Outcome::Deny);
        assert_eq!(counts(&recorder), (1, 1, 0, 1, 0));
        load();
        assert_eq!(counts(&recorder), (2, 1, 0, 1, 0), "nothing counted twice");
    });
    assert_eq!(counts(&recorder), (2, 1, 0, 1, 0));
}

#[test]
fn nested_scopes_of_other_recorders_keep_their_own_counts() {
    let outer = Recorder::new::<TestSchema>();
    let inner = Recorder::new::<TestSchema>();
    outer.in_scope(|| {
        load();
        record_decision(Outcome::Allow);
        inner.in_scope(|| {
            store_call();
            store_call();
            record_decision(Outcome::Other);
            // The same recorder entered again: nothing doubles.
            inner.in_scope(store_call);
        });
        load();
        time_decision(Outcome::Deny, || ());
    });
    assert_eq!(counts(&outer), (2, 0, 1, 1, 0));
    assert_eq!(counts(&inner), (0, 3, 0, 0, 1));
}

#[test]
fn work_on_another_thread_counts_once_it_is_handed_back() {
    let recorder = Recorder::new::<TestSchema>();
    recorder.in_scope(|| {
        load();
        let on_worker = bind_current(|| {
            for _ in 0..100 {
                load();
                store_call();
                record_decision(Outcome::Allow);
            }
        });
        std::thread::spawn(on_worker).join().expect("the worker");
        assert_eq!(counts(&recorder), (101, 100, 100, 0, 0));
    });
    assert_eq!(counts(&recorder), (101, 100, 100, 0, 0));
}

#[test]
fn a_panicking_scope_keeps_what_it_recorded() {
    let recorder = Recorder::new::<TestSchema>();
    let result = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        recorder.in_scope(|| {
            load();
            store_call();
            record_decision(Outcome::Deny);
            panic!("the handler failed");
        })
    }));
    assert!(result.is_err());
    assert_eq!(counts(&recorder), (1, 1, 0, 1, 0));
    // Nothing is left pending for the next recorder on this thread.
    let next = Recorder::new::<TestSchema>();
    next.in_scope(load);
    assert_eq!(counts(&next), (1, 0, 0, 0, 0));
}

#[test]
fn a_batch_of_decisions_counts_like_one_call_per_decision() {
    let batched = Recorder::new::<TestSchema>();
    let one_by_one = Recorder::new::<TestSchema>();
    let outcomes = [
        Outcome::Allow,
        Outcome::Deny,
        Outcome::Allow,
        Outcome::Other,
    ];
    let mut batch = DecisionBatch::default();
    for outcome in outcomes {
        batch.add(outcome);
    }
    assert_eq!(batched.in_scope(|| time_decisions(batch, || 7)), 7);
    one_by_one.in_scope(|| {
        for outcome in outcomes {
            time_decision(outcome, || ());
        }
    });
    assert_eq!(counts(&batched), (0, 0, 2, 1, 1));
    assert_eq!(counts(&batched), counts(&one_by_one));
    assert_eq!(batched.snapshot().decisions.records, 4);
    // Outside a scope a batch records nothing and still runs its emission.
    assert_eq!(time_decisions(batch, || 8), 8);
    assert_eq!(counts(&batched), (0, 0, 2, 1, 1));
}
