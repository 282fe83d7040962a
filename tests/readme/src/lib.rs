//! Every Rust block of the workspace's READMEs, compiled (and, unless
//! marked `no_run`, run) as a doctest by `cargo test -p perf-trace-readme`:
//! a README is included here whole, so a block added to it is compiled
//! with no more wiring. `tests/blocks.rs` fails when a README with a Rust
//! block is included nowhere, or marks a block `ignore`.
//!
//! The dev-dependencies are what the blocks use: a service's crates, and
//! the quick start's service as a library (`quickstart_example`).

/// The repository's README.
#[cfg(doctest)]
#[doc = include_str!("../../../README.md")]
pub struct Readme;

/// `perf-trace-core`'s README.
#[cfg(doctest)]
#[doc = include_str!("../../../perf-trace-core/README.md")]
pub struct CoreReadme;

/// `perf-trace-macros`' README: the macros crate cannot compile it, having
/// no dependency on `perf-trace-core` (which depends on it).
#[cfg(doctest)]
#[doc = include_str!("../../../perf-trace-macros/README.md")]
pub struct MacrosReadme;

/// The guide (`docs/guide.md`): what the README only names, in full.
#[cfg(doctest)]
#[doc = include_str!("../../../docs/guide.md")]
pub struct Guide;
