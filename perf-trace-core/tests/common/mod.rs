//! Key sets and helpers shared by the integration tests and the benchmarks.
#![allow(dead_code)]

use std::io::{self, Write};
use std::sync::Arc;

use parking_lot::Mutex;
use perf_trace_core::keys::{CounterSet, Groups, TimerSet};
use perf_trace_core::{counted_store, layer::TracePolicy, KeySet, Schema};

#[derive(KeySet, Clone, Copy, PartialEq, Eq, Debug)]
#[key_set(phases)]
pub enum Phase {
    Load,
    Check,
    Render,
    Serialize,
}

/// A store whose calls are counted: its methods are the keys of `Method`.
#[counted_store(methods = Method, rename_all = "PascalCase")]
pub trait ThingStore {
    fn get_user(&self, id: u64) -> u64;
    fn list_things(&self) -> u64;
}

#[derive(KeySet, Clone, Copy, PartialEq, Eq, Debug)]
#[key_set(endpoints)]
pub enum Endpoint {
    #[key(default)]
    Other,
    #[key(rename = "things.list")]
    ThingsList,
    #[key(rename = "things.stream")]
    ThingsStream,
}

/// Cache outcomes, counted per endpoint class: `cache_<endpoint>_<outcome>`.
#[derive(KeySet, Clone, Copy, PartialEq, Eq, Debug)]
#[key_set(counters, prefix = "cache", by = Endpoint)]
pub enum Cache {
    Hit,
    Miss,
    Shared,
}

/// Authorization batches: how many, and the largest.
#[derive(KeySet, Clone, Copy, PartialEq, Eq, Debug)]
#[key_set(counters, prefix = "authz_batch")]
pub enum Batch {
    Count,
    #[key(max)]
    Largest,
}

/// Blocks timed by hand.
#[derive(KeySet, Clone, Copy, PartialEq, Eq, Debug)]
#[key_set(timers, prefix = "render")]
pub enum Render {
    Page,
    Footer,
}

/// A schema of the sets above.
pub struct TestSchema;

impl Schema for TestSchema {
    type Phase = Phase;
    type StoreMethod = Method;
    type Endpoint = Endpoint;
    const SERIALIZE: Option<Phase> = Some(Phase::Serialize);
    const COUNTERS: &'static [CounterSet] = &[CounterSet::of::<Cache>(), CounterSet::of::<Batch>()];
    const TIMERS: &'static [TimerSet] = &[TimerSet::of::<Render>()];
    const GROUPS: Groups = Groups::SCION;
}

/// A second, unrelated schema: its keys must never land in a TestSchema recorder.
#[derive(KeySet, Clone, Copy, PartialEq, Eq, Debug)]
#[key_set(phases)]
pub enum OtherPhase {
    Load,
}

/// A writer whose lines tests read back.
#[derive(Clone, Default)]
pub struct Captured(pub Arc<Mutex<Vec<u8>>>);

impl Captured {
    pub fn lines(&self) -> Vec<String> {
        String::from_utf8(self.0.lock().clone())
            .expect("utf-8")
            .lines()
            .map(str::to_owned)
            .collect()
    }

    pub fn json_lines(&self) -> Vec<serde_json::Value> {
        self.lines()
            .iter()
            .map(|l| serde_json::from_str(l).expect("each line is JSON"))
            .collect()
    }
}

impl Write for Captured {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        self.0.lock().extend_from_slice(buf);
        Ok(buf.len())
    }

    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}

/// A policy that classifies every request as `things.list` and never sends
/// the perf headers.
#[derive(Clone)]
pub struct ListPolicy;

impl TracePolicy<TestSchema> for ListPolicy {
    fn classify<B>(&self, _: &http::Request<B>) -> Endpoint {
        Endpoint::ThingsList
    }

    fn headers_allowed<B>(&self, _: &http::Request<B>) -> bool {
        false
    }
}
