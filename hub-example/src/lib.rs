//! The example hub: a service traced with perf-trace, and its harness.

pub mod harness;
