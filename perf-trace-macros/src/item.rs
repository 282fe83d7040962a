//! Describing an item an attribute does not go on.

use proc_macro2::TokenStream;
use quote::quote;

/// The tokens an error about a whole item points at: its keyword and name.
pub(crate) fn head(item: &syn::Item) -> TokenStream {
    match item {
        syn::Item::Struct(i) => {
            let (k, n) = (&i.struct_token, &i.ident);
            quote!(#k #n)
        }
        syn::Item::Enum(i) => {
            let (k, n) = (&i.enum_token, &i.ident);
            quote!(#k #n)
        }
        syn::Item::Const(i) => {
            let (k, n) = (&i.const_token, &i.ident);
            quote!(#k #n)
        }
        syn::Item::Static(i) => {
            let (k, n) = (&i.static_token, &i.ident);
            quote!(#k #n)
        }
        syn::Item::Trait(i) => {
            let (k, n) = (&i.trait_token, &i.ident);
            quote!(#k #n)
        }
        syn::Item::Fn(i) => {
            let (k, n) = (&i.sig.fn_token, &i.sig.ident);
            quote!(#k #n)
        }
        syn::Item::Impl(i) => {
            let k = &i.impl_token;
            quote!(#k)
        }
        syn::Item::Mod(i) => {
            let (k, n) = (&i.mod_token, &i.ident);
            quote!(#k #n)
        }
        other => quote!(#other),
    }
}

/// What the item is, with its article (`a struct`).
pub(crate) fn kind(item: &syn::Item) -> &'static str {
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
