//! `#[counted_store]`: a store trait's method enum and counting decorator.

mod ast;
mod attr;
mod expand;
mod valid;

use proc_macro2::TokenStream;
use quote::quote;
use syn::ItemTrait;

use crate::errors::Errors;
use crate::item;

/// Expands `#[counted_store(args)]` on `input`. On errors the trait is still
/// emitted (without the helper attributes), with the decorator type, so that
/// its uses do not add errors of their own.
pub(crate) fn expand(args: TokenStream, input: TokenStream) -> TokenStream {
    let mut errors = Errors::default();
    let options = attr::parse_args(args, &mut errors);
    let mut item: ItemTrait = match syn::parse2(input.clone()) {
        Ok(item) => item,
        Err(error) => {
            match syn::parse2::<syn::Item>(input.clone()) {
                Ok(other) => item::refuse(
                    &other,
                    "#[counted_store] goes on a store trait",
                    &mut errors,
                ),
                Err(_) => errors.push(error),
            }
            let errors = errors.to_compile_error();
            return quote!(#input #errors);
        }
    };
    let store = ast::Store::from_trait(&mut item, options, &mut errors);
    valid::check(&item, &store, &mut errors);
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
