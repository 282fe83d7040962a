//! Refusing an item an attribute does not go on.

use proc_macro2::TokenStream;
use quote::{quote, ToTokens};

use crate::errors::Errors;

/// Reports that the attribute does not go on `item`: `goes_on` says where it
/// does (`#[traced_phase] goes on a fn or an async fn`), the error adds what
/// `item` is and points at its keyword and name.
pub(crate) fn refuse(item: &syn::Item, goes_on: &str, errors: &mut Errors) {
    errors.spanned(head(item), format!("{goes_on}, not on {}", kind(item)));
}

/// The tokens an error about a whole item points at: its keyword and name.
fn head(item: &syn::Item) -> TokenStream {
    let (keyword, name): (&dyn ToTokens, Option<&syn::Ident>) = match item {
        syn::Item::Struct(i) => (&i.struct_token, Some(&i.ident)),
        syn::Item::Enum(i) => (&i.enum_token, Some(&i.ident)),
        syn::Item::Const(i) => (&i.const_token, Some(&i.ident)),
        syn::Item::Static(i) => (&i.static_token, Some(&i.ident)),
        syn::Item::Trait(i) => (&i.trait_token, Some(&i.ident)),
        syn::Item::Fn(i) => (&i.sig.fn_token, Some(&i.sig.ident)),
        syn::Item::Impl(i) => (&i.impl_token, None),
        syn::Item::Mod(i) => (&i.mod_token, Some(&i.ident)),
        other => return other.to_token_stream(),
    };
    quote!(#keyword #name)
}

/// What the item is, with its article (`a struct`).
fn kind(item: &syn::Item) -> &'static str {
    match item {
        syn::Item::Fn(_) => "a fn",
        syn::Item::Struct(_) => "a struct",
        syn::Item::Enum(_) => "an enum",
        syn::Item::Union(_) => "a union",
        syn::Item::Const(_) => "a const",
        syn::Item::Static(_) => "a static",
        syn::Item::Trait(_) => "a trait",
        syn::Item::Impl(_) => "an impl block",
        syn::Item::Mod(_) => "a module",
        syn::Item::Type(_) => "a type alias",
        syn::Item::Use(_) => "a use declaration",
        _ => "this item",
    }
}
