//! `#[traced_phase(Set::Variant)]`: records one phase around a fn's body.

mod ast;
mod attr;
pub(crate) mod block;
mod expand;
mod valid;

use proc_macro2::TokenStream;
use quote::quote;

use crate::errors::Errors;

/// Expands `#[traced_phase(args)]` on `input`. On any error the item is
/// emitted unchanged next to the errors.
pub(crate) fn expand(args: TokenStream, input: TokenStream) -> TokenStream {
    let mut errors = Errors::default();
    let key = attr::parse_key(args, &mut errors);
    let item = match ast::parse_fn(input.clone(), &mut errors) {
        Some(item) => {
            valid::check(&item, &mut errors);
            item
        }
        None => {
            let errors = errors.to_compile_error();
            return quote!(#input #errors);
        }
    };
    match key {
        Some(key) if errors.is_empty() => expand::traced(item, &key),
        _ => {
            let errors = errors.to_compile_error();
            quote!(#item #errors)
        }
    }
}
