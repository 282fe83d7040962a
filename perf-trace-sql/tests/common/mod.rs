//! The schema the tests record into: SQL needs no key set of its own.

use perf_trace_core::{KeySet, Schema};

#[derive(KeySet, Clone, Copy, PartialEq, Eq, Debug)]
#[key_set(phases)]
pub enum Phase {
    Load,
}

#[derive(KeySet, Clone, Copy, PartialEq, Eq, Debug)]
#[key_set(store_methods)]
pub enum Method {
    Unused,
}

#[derive(KeySet, Clone, Copy, PartialEq, Eq, Debug)]
#[key_set(endpoints)]
pub enum Endpoint {
    #[key(default)]
    Other,
}

/// A service that runs SQL through the wrappers.
pub struct App;

impl Schema for App {
    type Phase = Phase;
    type StoreMethod = Method;
    type Endpoint = Endpoint;
}
