//! The timed body both attributes generate for a synchronous call: a phase
//! (`#[traced_phase]`) and a counted store method (`#[counted_store]`).

use proc_macro2::{Span, TokenStream};
use quote::quote;
use syn::Ident;

/// Statements that time `body` with the guard `start` makes, ending with
/// `body`'s value. The guard is ended by hand on the normal path
/// (`TimedGuard::finish`): with a call in `body` that may unwind, its drop
/// would otherwise be called out of line on every path. An early return,
/// a `?` or a panic leaves it to the drop, which records the same.
pub(crate) fn sync_body(start: TokenStream, body: TokenStream) -> TokenStream {
    let guard = Ident::new("__perf_trace_guard", Span::mixed_site());
    let out = Ident::new("__perf_trace_out", Span::mixed_site());
    quote! {
        let #guard = #start;
        #[allow(unreachable_code, unused_braces, clippy::diverging_sub_expression)]
        let #out = #body;
        #[allow(unreachable_code)]
        ::perf_trace_core::__private01::TimedGuard::finish(#guard);
        #[allow(unreachable_code)]
        #out
    }
}
