//! Procedural macros of perf-trace. Use them through `perf_trace_core`,
//! which re-exports them: generated code names `::perf_trace_core` paths only.
//!
//! - [`KeySet`](derive@KeySet): a fixed set of keys from a fieldless enum.
//! - [`traced_phase`](macro@traced_phase): records one phase around a fn's body.
//! - [`counted_store`](macro@counted_store): a store trait's method enum and a
//!   decorator that counts and times each call.
//!
//! Keys are enum variants named in code: an unknown key is a compile error
//! that points at it and lists the valid ones.

mod case;
mod errors;
mod item;
mod key_set;
mod phase;

use proc_macro::TokenStream;
use syn::{parse_macro_input, DeriveInput};

/// Derives `perf_trace_core::KeySet` for a fieldless enum: its rendered names,
/// variant names, keys, sorted order and the message of an unknown key, all
/// computed at compile time, plus the marker trait of its role.
///
/// The enum needs one role, `#[key_set(phases)]`, `#[key_set(store_methods)]`
/// or `#[key_set(endpoints)]`, and must also derive `Clone, Copy, PartialEq, Eq`.
///
/// - `#[key_set(rename_all = "...")]` picks how variant names are rendered:
///   `"snake_case"` (default for phases and endpoints), `"PascalCase"` (default
///   for store methods), `"camelCase"`, `"kebab-case"` or
///   `"SCREAMING_SNAKE_CASE"`. Words split at case changes, and a PascalCase
///   name renders unchanged in PascalCase (`GetRoleDefinitionsByIDs`).
/// - `#[key(rename = "agents.project.sorted")]` on a variant sets its name.
/// - `#[key(default)]` marks the default class of an endpoint set (exactly one).
///
/// A set has 1 to 64 keys. Rendered names are distinct, non-empty ASCII
/// without whitespace, control characters, `=`, `,`, `"` or `\`: they go into
/// log keys and `name=value` headers.
///
/// ```
/// use perf_trace_core::{KeySet, EndpointKey};
///
/// #[derive(KeySet, Clone, Copy, PartialEq, Eq, Debug)]
/// #[key_set(phases)]
/// enum Phase { ListScopeAuthz, ListDbRead }
///
/// #[derive(KeySet, Clone, Copy, PartialEq, Eq, Debug)]
/// #[key_set(endpoints)]
/// enum Endpoint {
///     #[key(default)]
///     Other,
///     #[key(rename = "agents.project.sorted")]
///     AgentsProjectSorted,
/// }
///
/// assert_eq!(Phase::NAMES, ["list_scope_authz", "list_db_read"]);
/// assert_eq!(Phase::SORTED, [1, 0]);
/// assert_eq!(Endpoint::AgentsProjectSorted.name(), "agents.project.sorted");
/// assert_eq!(Endpoint::DEFAULT, Endpoint::Other);
/// ```
#[proc_macro_derive(KeySet, attributes(key_set, key))]
pub fn derive_key_set(input: TokenStream) -> TokenStream {
    let input = parse_macro_input!(input as DeriveInput);
    key_set::derive(&input).into()
}

/// Records one phase (count + 1, duration) around the body of a fn, an
/// `async fn` or a method, into the request's recorder when one is in scope.
///
/// The argument is the phase key, a variant path such as `Phase::ListDbRead`
/// (the set must be `#[key_set(phases)]`). It is checked at compile time: an
/// unknown variant is an error at the key that lists the set's keys, and a
/// string or any other expression is refused.
///
/// - A plain fn is timed by a guard made on entry, so every way out (return,
///   early return, `?`, panic) ends the phase.
/// - An `async fn` is timed from its first poll until it completes or is
///   dropped (cancelled).
/// - A fn whose last expression is an `async` block (`-> impl Future`), or
///   `Box::pin(async move { .. })` as `#[async_trait]` writes methods, has
///   that future timed rather than its construction.
///
/// ```
/// use perf_trace_core::{traced_phase, KeySet};
///
/// #[derive(KeySet, Clone, Copy, PartialEq, Eq, Debug)]
/// #[key_set(phases)]
/// enum Phase { ListDbRead, Enrich }
///
/// #[traced_phase(Phase::ListDbRead)]
/// fn read(ids: &[u32]) -> Result<Vec<u32>, String> {
///     if ids.is_empty() {
///         return Err("no ids".into());
///     }
///     Ok(ids.to_vec())
/// }
///
/// #[traced_phase(Phase::Enrich)]
/// async fn enrich(rows: Vec<u32>) -> Result<usize, String> {
///     let rows = read(&rows)?;
///     Ok(rows.len())
/// }
/// # assert_eq!(read(&[1]), Ok(vec![1]));
/// ```
#[proc_macro_attribute]
pub fn traced_phase(args: TokenStream, input: TokenStream) -> TokenStream {
    phase::expand(args.into(), input.into()).into()
}

/// Generates a store trait's method enum and decorator (not implemented yet).
#[proc_macro_attribute]
pub fn counted_store(_args: TokenStream, input: TokenStream) -> TokenStream {
    input
}
