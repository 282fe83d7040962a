//! Procedural macros of perf-trace. Use them through `perf_trace_core`,
//! which re-exports them: generated code names `::perf_trace_core` paths only,
//! so a crate that depends on this one alone cannot compile their expansions.
//!
//! - [`KeySet`](derive@KeySet): a fixed set of keys from a fieldless enum.
//! - [`key!`](macro@key): a key of any set, checked like `#[traced_phase]`'s.
//! - [`traced_phase`](macro@traced_phase): records one phase around a fn's body.
//! - [`phase!`](macro@phase): records one phase around a block or an `async`
//!   block inside a function.
//! - [`counted_store`](macro@counted_store): a store trait's method enum and a
//!   decorator that counts and times each call, or a repository's `impl`
//!   block counted in place.
//!
//! Keys are enum variants named in code: an unknown key is a compile error
//! that points at it and lists the valid ones.
//!
//! The examples below name `perf_trace_core` paths, so they are not compiled
//! as this crate's doctests (this crate cannot depend on `perf-trace-core`,
//! which depends on it). The same examples compile and run as tests of the
//! perf-trace workspace (`tests/tests/macro_doc_examples.rs`), and
//! `perf-trace-core`'s crate documentation has a runnable example using all
//! three macros.

mod case;
mod errors;
mod item;
mod key_path;
mod key_set;
mod phase;
mod store;
mod timed;

use proc_macro::TokenStream;
use syn::{parse_macro_input, DeriveInput};

/// Derives `perf_trace_core::KeySet` for a fieldless enum: its rendered names,
/// variant names, keys, sorted order and the message of an unknown key, all
/// computed at compile time, plus the marker trait of its role.
///
/// The enum needs one role and must also derive `Clone, Copy, PartialEq, Eq`:
///
/// - `#[key_set(phases)]`, `#[key_set(store_methods)]`, `#[key_set(endpoints)]`;
/// - `#[key_set(counters, prefix = "cache")]`: a count per key, rendered
///   `cache_<key>` (header `Cache`); with `by = Route`, a count per key of
///   `Route` and key of this set, rendered `cache_<route>_<key>` (at most
///   1024 pairs); `#[key(max)]` on a variant keeps the largest value counted
///   instead of the sum;
/// - `#[key_set(timers, prefix = "render")]`: a count and a time per key,
///   rendered `render_<key>_us`, `render_<key>_n` (headers `Render-Us`,
///   `Render-Counts`).
///
/// A prefix is lowercase ASCII letters, digits and `_`, and not one of the
/// contract's own (`phase`, `store`, `audit`, `db`, `sse`, `authz_store`).
///
/// - `#[key_set(rename_all = "...")]` picks how variant names are rendered:
///   `"snake_case"` (the default, as every other field of the line),
///   `"PascalCase"` (the Scion contract's store methods), `"camelCase"`, `"kebab-case"` or
///   `"SCREAMING_SNAKE_CASE"`. Words split at case changes, and a PascalCase
///   name renders unchanged in PascalCase (`GetRoleDefinitionsByIDs`).
/// - `#[key(rename = "agents.project.sorted")]` on a variant sets its name.
/// - `#[key(default)]` marks the default class of an endpoint set (exactly one).
/// - `#[key(max)]` marks a counter that keeps the largest value (a largest batch).
///
/// A set has 1 to 64 keys. Rendered names are distinct, non-empty ASCII
/// without whitespace, control characters, `=`, `,`, `"` or `\`: they go into
/// log keys and `name=value` headers.
///
/// ```rust,ignore
/// use perf_trace_core::KeySet;
/// use perf_trace_core::keys::EndpointKey;
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

/// A key of any set, written `key!(Set::Variant)`, checked at compile time:
/// an unknown variant is an error at the key that suggests the closest key
/// and lists the set's keys, as for `#[traced_phase]`. A plain path
/// (`Set::Variant`) works as well; this form gives the better error.
///
/// ```rust,ignore
/// use perf_trace_core::{key, KeySet};
///
/// #[derive(KeySet, Clone, Copy, PartialEq, Eq, Debug)]
/// #[key_set(counters, prefix = "cache")]
/// enum Cache { Hit, Miss }
///
/// assert_eq!(key!(Cache::Miss), Cache::Miss);
/// ```
///
/// A misspelt key, `key!(Cache::Hitt)`, fails to compile with:
///
/// ```text
/// error: `Cache` has no key `Hitt`; did you mean `Cache::Hit`? the keys of `Cache` are: Cache::Hit, Cache::Miss
/// ```
#[proc_macro]
pub fn key(input: TokenStream) -> TokenStream {
    key_path::expand(input.into()).into()
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
/// ```rust,ignore
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

/// Generates, next to a store trait, the enum of its counted methods and a
/// decorator that implements the trait by forwarding every call unchanged
/// (arguments, results, errors) while counting and timing it.
///
/// For `trait AuthzStore` it generates `enum AuthzStoreMethod` (a
/// `#[key_set(store_methods)]` set with one variant per counted method, in
/// declaration order: `get_user` is `GetUser`, rendered `get_user`) and `struct
/// CountedAuthzStore<S>` with `new`, `inner` and `into_inner`, implementing
/// `AuthzStore` when `S` does. Both have the trait's visibility.
///
/// Options: `#[counted_store(methods = Name, decorator = Name)]` rename the
/// enum and the decorator; `rename_all = "PascalCase"` renders the method
/// keys as the Scion contract does (`store_GetUser_n` rather than
/// `store_get_user_n`; any rule of `#[key_set(rename_all)]`). On methods:
///
/// - `#[counted(skip)]`: forwarded, not counted, no variant.
/// - `#[counted(rename = "GetRoleDefinitionsByIDs")]`: the variant's name,
///   rendered by the store's rule (`get_role_definitions_by_ids`, or as
///   written under `rename_all = "PascalCase"`).
///
/// What is forwarded:
///
/// - methods taking `&self`, `&mut self` or `self`, sync or `async fn`, or
///   returning `impl Future` or `Pin<Box<dyn Future>>` (whose future is timed,
///   not its construction), generic ones included, `unsafe` ones too;
/// - methods with a default body: forwarded to the wrapped store like the
///   others, so its own implementation runs (and the call is counted once);
/// - associated types and consts: the wrapped store's.
///
/// A method that cannot be forwarded (an associated function without `self`,
/// a receiver such as `self: Arc<Self>`, a signature that takes or returns
/// `Self`) is an error, unless it has a default body and is marked
/// `#[counted(skip)]`: the decorator then keeps the trait's default body.
/// Supertraits other than auto traits, `Clone` and `Debug` must be
/// implemented for the decorator by hand. `#[async_trait]` may sit below
/// `#[counted_store]`: it is applied to the decorator's impl too.
///
/// ```rust,ignore
/// use perf_trace_core::counted_store;
///
/// #[counted_store]
/// pub trait AuthzStore {
///     /// The store's error.
///     type Error;
///     /// A user by id.
///     fn get_user(&self, id: u64) -> Result<String, Self::Error>;
///     /// Role definitions by ids.
///     #[counted(rename = "GetRoleDefinitionsByIDs")]
///     fn get_role_definitions_by_ids(&self, ids: &[u64]) -> Vec<String>;
///     /// Not counted.
///     #[counted(skip)]
///     fn name(&self) -> &'static str { "store" }
/// }
///
/// struct Db;
/// impl AuthzStore for Db {
///     type Error = String;
///     fn get_user(&self, id: u64) -> Result<String, String> { Ok(format!("user{id}")) }
///     fn get_role_definitions_by_ids(&self, ids: &[u64]) -> Vec<String> { vec![] }
/// }
///
/// use perf_trace_core::KeySet;
/// let store = CountedAuthzStore::new(Db);
/// assert_eq!(store.get_user(7), Ok("user7".to_owned()));
/// assert_eq!(AuthzStoreMethod::NAMES, ["GetUser", "GetRoleDefinitionsByIDs"]);
/// ```
///
/// # On a repository's `impl` block
///
/// A service with no store trait puts the attribute on the inherent `impl`
/// block of its repository struct instead: each method, sync or `async`
/// (or returning `impl Future` / `Box::pin(async ..)`), is counted and timed
/// in place, under a generated `pub enum <Type>Method` (or `methods =
/// Name`), with the same key checks and the same `rename_all`, `#[counted(skip)]`
/// and `#[counted(rename)]` options; there is no decorator to write or name
/// (`decorator = ..` is an error there). Associated functions are counted
/// too; a `const fn` must be skipped. On `impl Trait for Type` the attribute
/// is refused: put it on the trait.
///
/// ```rust,ignore
/// use perf_trace_core::counted_store;
///
/// struct Repo { pool: Vec<u32> }
///
/// #[counted_store]
/// impl Repo {
///     async fn get_stock(&self, sku: usize) -> Option<u32> { self.pool.get(sku).copied() }
///     #[counted(skip)]
///     fn len(&self) -> usize { self.pool.len() }
/// }
///
/// use perf_trace_core::KeySet;
/// assert_eq!(RepoMethod::NAMES, ["get_stock"]);
/// ```
#[proc_macro_attribute]
pub fn counted_store(args: TokenStream, input: TokenStream) -> TokenStream {
    store::expand(args.into(), input.into()).into()
}

/// Records one phase around a block, or an `async` block, inside a
/// function: `#[traced_phase]`'s guard and future where the attribute would
/// time too much (a handler that loads, then encodes its response).
///
/// - `phase!(Phase::Load, { .. })` evaluates the block under a guard made on
///   entry: its value, an early `return`, `?` or a panic all end the phase.
/// - `phase!(Phase::Load, async { .. })` is the block's future, timed from
///   its first poll until it completes or is dropped (cancelled); `.await`
///   it.
///
/// The key is checked at compile time as the attribute's is. The cost is the
/// attribute's: the same guard and future.
///
/// ```rust,ignore
/// use perf_trace_core::{phase, KeySet};
///
/// #[derive(KeySet, Clone, Copy, PartialEq, Eq, Debug)]
/// #[key_set(phases)]
/// enum Phase { Load, Encode }
///
/// async fn handler(ids: Vec<u32>) -> Result<String, String> {
///     let rows = phase!(Phase::Load, async { fetch(&ids).await }).await?;
///     let body = phase!(Phase::Encode, { format!("{rows:?}") });
///     Ok(body)
/// }
/// # async fn fetch(ids: &[u32]) -> Result<Vec<u32>, String> { Ok(ids.to_vec()) }
/// ```
#[proc_macro]
pub fn phase(input: TokenStream) -> TokenStream {
    phase::block::expand(input.into()).into()
}
