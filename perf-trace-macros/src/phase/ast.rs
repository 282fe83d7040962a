//! The function `#[traced_phase]` goes on.

use proc_macro2::TokenStream;
use syn::{ItemFn, TraitItemFn};

use crate::errors::Errors;
use crate::item;

/// Reads the item as a function with a body; reports anything else.
pub(crate) fn parse_fn(input: TokenStream, errors: &mut Errors) -> Option<ItemFn> {
    if let Ok(item) = syn::parse2::<ItemFn>(input.clone()) {
        return Some(item);
    }
    if let Ok(item) = syn::parse2::<TraitItemFn>(input.clone()) {
        errors.spanned(
            &item.sig,
            "#[traced_phase] needs a function body: put it on the implementation of this method",
        );
        return None;
    }
    match syn::parse2::<syn::Item>(input) {
        Ok(item) => item::refuse(&item, "#[traced_phase] goes on a fn or an async fn", errors),
        Err(error) => errors.push(error),
    }
    None
}
