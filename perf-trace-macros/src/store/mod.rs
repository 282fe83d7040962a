//! `#[counted_store]`: a store trait's method enum and counting decorator,
//! or a repository's `impl` block counted in place.

mod ast;
mod attr;
mod expand;
mod valid;

use proc_macro2::TokenStream;
use quote::quote;
use syn::{ItemImpl, ItemTrait};

use crate::errors::Errors;
use crate::item;

/// Expands `#[counted_store(args)]` on `input`. On errors the trait is still
/// emitted (without the helper attributes), with the decorator type, so that
/// its uses do not add errors of their own; an `impl` block is emitted
/// without its timing.
pub(crate) fn expand(args: TokenStream, input: TokenStream) -> TokenStream {
    let mut errors = Errors::default();
    let options = attr::parse_args(args, &mut errors);
    let mut item: ItemTrait = match syn::parse2(input.clone()) {
        Ok(item) => item,
        Err(error) => {
            match syn::parse2::<syn::Item>(input.clone()) {
                Ok(syn::Item::Impl(block)) => return expand_impl(block, options, errors),
                Ok(other) => item::refuse(
                    &other,
                    "#[counted_store] goes on a store trait or on an inherent `impl` block",
                    &mut errors,
                ),
                Err(_) => errors.push(error),
            }
            let errors = errors.to_compile_error();
            return quote!(#input #errors);
        }
    };
    let store = ast::Store::from_trait(&mut item, options, &mut errors);
    valid::check_trait(&item, &store, &mut errors);
    let generated = if errors.is_empty() {
        expand::all(&item, &store)
    } else {
        expand::fallback(&item, &store)
    };
    let errors = errors.to_compile_error();
    quote! {
        #item
        #generated
        #errors
    }
}

/// Expands `#[counted_store]` on a repository's inherent `impl` block: the
/// method enum next to it, each counted method's body timed in place.
fn expand_impl(mut item: ItemImpl, options: attr::Options, mut errors: Errors) -> TokenStream {
    let store = ast::Inherent::from_impl(&mut item, options, &mut errors);
    valid::check_impl(&item, &store, &mut errors);
    let generated = match &store.methods {
        Some(methods) if errors.is_empty() => {
            expand::time_methods(&mut item, &store, methods);
            expand::inherent_enum(&store, methods)
        }
        _ => TokenStream::new(),
    };
    let errors = errors.to_compile_error();
    quote! {
        #item
        #generated
        #errors
    }
}
