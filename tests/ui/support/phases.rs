//! The phase set the `#[traced_phase]` cases record against: each case brings
//! it in and keeps only the use it tests.

use perf_trace_core::KeySet;

#[derive(KeySet, Clone, Copy, PartialEq, Eq, Debug)]
#[key_set(phases)]
pub enum Phase {
    ListScopeAuthz,
    ListDbRead,
    Enrich,
}
