use perf_trace_core::{traced_phase, KeySet, Recorder, Schema};

pub mod perf {
    use perf_trace_core::KeySet;

    #[derive(KeySet, Clone, Copy, PartialEq, Eq, Debug)]
    #[key_set(phases)]
    pub enum Phase {
        ListDbRead,
        Enrich,
    }
}

#[path = "../support/orders.rs"]
mod orders;
use perf::Phase;

struct App;
impl Schema for App {
    type Phase = perf::Phase;
    type StoreMethod = orders::Method;
    type Endpoint = orders::Route;
}

#[traced_phase(Phase::ListDbRead)]
fn read(ids: &[u32]) -> Result<Vec<u32>, String> {
    #![allow(clippy::needless_return)]
    if ids.is_empty() {
        return Err("no ids".into());
    }
    let first: u32 = "7".parse().map_err(|_| String::from("bad"))?;
    Ok(ids.iter().map(|i| i + first).collect())
}

#[traced_phase(crate::perf::Phase::Enrich)]
pub(crate) fn enrich<T: Clone, const N: usize>(rows: [T; N]) -> Vec<T>
where
    T: std::fmt::Debug,
{
    rows.to_vec()
}


// The guard's name cannot clash with the function's own names.
#[allow(non_snake_case)]
#[traced_phase(Phase::Enrich)]
fn shadowing(__perf_trace_guard: u32) -> u32 {
    let __PERF_TRACE_KEY = 2;
    __perf_trace_guard * __PERF_TRACE_KEY
}

fn main() {
    let recorder = Recorder::new::<App>();
    recorder.in_scope(|| {
        assert_eq!(read(&[1, 2]), Ok(vec![8, 9]));
        assert!(read(&[]).is_err());
        assert_eq!(enrich([1u8, 2, 3]), vec![1, 2, 3]);
        assert_eq!(shadowing(21), 42);
    });
    let snapshot = recorder.snapshot();
    assert_eq!(snapshot.phase(Phase::ListDbRead).count, 2);
    assert_eq!(snapshot.phase(Phase::Enrich).count, 2);
    assert_eq!(Phase::NAMES, ["list_db_read", "enrich"]);
}
