//! Key sets and schemas shared by the unit tests that record, render and
//! check requests.

use crate::keys::{CounterSet, Groups, TimerSet};
use crate::{KeySet, Schema};

#[derive(KeySet, Clone, Copy, PartialEq, Eq, Debug)]
#[key_set(phases)]
pub(crate) enum Phase {
    Load,
    Check,
    Render,
}

#[derive(KeySet, Clone, Copy, PartialEq, Eq, Debug)]
#[key_set(store_methods, rename_all = "PascalCase")]
pub(crate) enum Method {
    GetUser,
    ListThings,
    Audit,
}

/// Names whose `<by>_<name>` order is not the nested order of the two
/// sets (`a_x` sorts after `a_b_y`), and enough of them that a request
/// can count more than the renderer keeps on its stack.
#[derive(KeySet, Clone, Copy, PartialEq, Eq, Debug)]
#[key_set(endpoints)]
pub(crate) enum Endpoint {
    #[key(default)]
    Other,
    #[key(rename = "a")]
    A,
    #[key(rename = "a_b")]
    AB,
    #[key(rename = "b.list")]
    BList,
    #[key(rename = "c")]
    C,
    #[key(rename = "z")]
    Z,
}

#[derive(KeySet, Clone, Copy, PartialEq, Eq, Debug)]
#[key_set(counters, prefix = "cache", by = Endpoint)]
pub(crate) enum Cache {
    X,
    Hit,
    Miss,
    Y,
}

#[derive(KeySet, Clone, Copy, PartialEq, Eq, Debug)]
#[key_set(counters, prefix = "batch")]
pub(crate) enum Batch {
    Size,
    Count,
    #[key(max)]
    Largest,
}

#[derive(KeySet, Clone, Copy, PartialEq, Eq, Debug)]
#[key_set(timers, prefix = "render")]
pub(crate) enum Render {
    Page,
    Footer,
    Body,
}

/// A schema that lists every set above, with the Scion groups.
pub(crate) struct Full;

impl Schema for Full {
    type Phase = Phase;
    type StoreMethod = Method;
    type Endpoint = Endpoint;
    const COUNTERS: &'static [CounterSet] = &[CounterSet::of::<Cache>(), CounterSet::of::<Batch>()];
    const TIMERS: &'static [TimerSet] = &[TimerSet::of::<Render>()];
    const GROUPS: Groups = Groups::SCION;
}

/// A schema that lists no counter or timer set.
pub(crate) struct Bare;

impl Schema for Bare {
    type Phase = Phase;
    type StoreMethod = Method;
    type Endpoint = Endpoint;
}
