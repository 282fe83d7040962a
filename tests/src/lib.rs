//! Workspace-level tests live in `tests/`.
//!
//! This crate also compiles and runs the example of `perf-trace-macros`'
//! README as a doctest: the macros crate cannot, having no dependency on
//! `perf-trace-core` (which depends on it).

#[cfg(doctest)]
#[doc = include_str!("../../perf-trace-macros/README.md")]
struct MacrosReadme;
