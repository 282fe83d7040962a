//! `phase!(Set::Variant, body)`: records one phase around a block or an
//! `async` block inside a function, with the attribute's guard and future.

use proc_macro2::{Span, TokenStream};
use quote::quote;
use syn::parse::{Parse, ParseStream};
use syn::{Expr, Ident, Token};

use crate::errors::Errors;
use crate::key_path::{key_expr, key_of, KeyKind};

const PHASE_KEY: KeyKind = KeyKind {
    noun: "phase key",
    example: "e.g. `phase!(Phase::Load, { .. })`",
};

/// The macro's input: the key, a comma, the body.
struct Input {
    key: Expr,
    body: Expr,
}

impl Parse for Input {
    fn parse(input: ParseStream<'_>) -> syn::Result<Self> {
        let key = input.parse()?;
        input.parse::<Token![,]>()?;
        let body = input.parse()?;
        // A trailing comma is fine.
        let _ = input.parse::<Option<Token![,]>>()?;
        Ok(Input { key, body })
    }
}

/// Expands `phase!(key, body)`: an `async` block becomes its future timed
/// as the phase (from its first poll until it completes or is dropped);
/// any other body is evaluated under a guard that records on every way out
/// (its value, an early `return`, `?`, a panic).
pub(crate) fn expand(input: TokenStream) -> TokenStream {
    let Input { key, body } = match syn::parse2::<Input>(input) {
        Ok(input) => input,
        Err(error) => {
            let message = format!(
                "expected a phase key and a body, e.g. `phase!(Phase::Load, {{ .. }})` or \
                 `phase!(Phase::Load, async {{ .. }})`: {error}"
            );
            return syn::Error::new(error.span(), message).to_compile_error();
        }
    };
    let mut errors = Errors::default();
    let Some(key) = key_of(key, &PHASE_KEY, &mut errors) else {
        let errors = errors.to_compile_error();
        let out = Ident::new("__perf_trace_out", Span::mixed_site());
        return quote!({
            #errors
            #[allow(unused_braces)]
            let #out = #body;
            #out
        });
    };
    let key = key_expr(&key);
    if let Expr::Async(_) = body {
        return quote!(::perf_trace_core::__private01::TimedFuture::phase(#key, #body));
    }
    let body = crate::timed::sync_body(
        quote!(::perf_trace_core::__private01::TimedGuard::phase(#key)),
        quote!(#body),
    );
    quote!({ #body })
}
