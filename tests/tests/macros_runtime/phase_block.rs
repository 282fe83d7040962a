//! `phase!` inside a function: a block under the attribute's guard, an
//! `async` block as the attribute's future, with the same ways out.

use std::future::Future;
use std::panic::{self, AssertUnwindSafe};
use std::pin::pin;
use std::task::{Context, Waker};
use std::time::Duration;

use perf_trace_core::{phase, Recorder};

use super::{App, Phase};

/// Reads, then serializes, each in a phase of its own.
fn handle(input: &str) -> Result<String, std::num::ParseIntError> {
    let n: u32 = phase!(Phase::ListDbRead, {
        if input.is_empty() {
            return Ok(String::new());
        }
        if input == "13" {
            panic!("unlucky");
        }
        input.parse()?
    });
    Ok(phase!(Phase::Serialize, format!("<{n}>")))
}

#[test]
fn a_block_phase_counts_every_way_out() {
    let recorder = Recorder::new::<App>();
    let results = recorder.in_scope(|| {
        let ok = handle("4");
        let early = handle("");
        let err = handle("x");
        let panicked = panic::catch_unwind(AssertUnwindSafe(|| handle("13")));
        (ok, early, err.is_err(), panicked.is_err())
    });
    assert_eq!(results.0, Ok("<4>".to_owned()));
    assert_eq!(results.1, Ok(String::new()));
    assert!(results.2);
    assert!(results.3);
    let snapshot = recorder.snapshot();
    // Value, early return, `?` and panic: four entries of the read phase;
    // the serialize phase only where the read went through.
    assert_eq!(snapshot.phase(Phase::ListDbRead).count, 4);
    assert_eq!(snapshot.phase(Phase::Serialize).count, 1);
}

#[test]
fn a_block_phase_without_a_recorder_records_nothing() {
    let recorder = Recorder::new::<App>();
    assert_eq!(handle("2"), Ok("<2>".to_owned()));
    assert!(recorder.snapshot().phases.is_empty());
}

#[tokio::test]
async fn an_async_block_phase_covers_its_awaits() {
    let recorder = Recorder::new::<App>();
    let out = recorder
        .instrument(async {
            let rows = phase!(Phase::ListDbRead, async {
                tokio::time::sleep(Duration::from_millis(20)).await;
                vec![1, 2]
            })
            .await;
            phase!(Phase::Serialize, { rows.len() })
        })
        .await;
    assert_eq!(out, 2);
    let load = recorder.snapshot().phase(Phase::ListDbRead);
    assert_eq!(load.count, 1);
    assert!(load.duration >= Duration::from_millis(20), "{load:?}");
}

#[tokio::test]
async fn a_cancelled_async_block_phase_counts_once_and_an_unpolled_one_never() {
    let recorder = Recorder::new::<App>();
    {
        let slow = phase!(Phase::ListDbRead, async {
            tokio::time::sleep(Duration::from_secs(10)).await;
        });
        let mut future = pin!(recorder.instrument(slow));
        let mut cx = Context::from_waker(Waker::noop());
        assert!(future.as_mut().poll(&mut cx).is_pending());
        assert_eq!(recorder.snapshot().phase(Phase::ListDbRead).count, 0);
    }
    assert_eq!(recorder.snapshot().phase(Phase::ListDbRead).count, 1);
    drop(recorder.instrument(phase!(Phase::ListDbRead, async {})));
    assert_eq!(recorder.snapshot().phase(Phase::ListDbRead).count, 1);
}
