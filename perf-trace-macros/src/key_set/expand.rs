//! The `KeySet` impl and the role marker impl.

use proc_macro2::TokenStream;
use quote::{quote, quote_spanned};

use super::ast::Container;
use super::attr::Role;

/// The impls for `cont`. When `valid` is false, the impls are still emitted
/// as far as they can be, so that uses of the set do not add errors of their
/// own; the key tables are then left empty if a variant has fields.
pub(crate) fn impls(cont: &Container, valid: bool) -> TokenStream {
    let ident = cont.ident;
    let set_name = ident.to_string();
    let fieldless = !cont.has_fields();
    let keys = if fieldless { &cont.variants[..] } else { &[] };
    let names = keys.iter().map(|v| &v.name);
    let variant_names = keys.iter().map(|v| v.ident.to_string());
    let all = keys.iter().map(|v| v.ident);
    let mut sorted: Vec<u16> = (0..keys.len() as u16).collect();
    sorted.sort_by(|&a, &b| {
        keys[a as usize]
            .name
            .as_bytes()
            .cmp(keys[b as usize].name.as_bytes())
    });
    let listed: Vec<String> = cont
        .variants
        .iter()
        .map(|v| format!("{set_name}::{}", v.ident))
        .collect();
    let unknown_key = format!(
        "`{set_name}` has no such key; its keys are: {}",
        listed.join(", ")
    );
    let arms = cont.variants.iter().enumerate().map(|(i, v)| {
        let variant = v.ident;
        if v.fields.is_empty() {
            quote!(Self::#variant => #i)
        } else {
            quote!(Self::#variant { .. } => #i)
        }
    });

    // The role impl is spanned at the enum's name, where a "the trait is
    // implemented for" hint then points.
    let span = ident.span();
    let role = match cont.role() {
        Some(Role::Phases) => quote_spanned! {span=>
            #[automatically_derived]
            impl ::perf_trace_core::PhaseKey for #ident {}
        },
        Some(Role::StoreMethods) => quote_spanned! {span=>
            #[automatically_derived]
            impl ::perf_trace_core::StoreMethodKey for #ident {}
        },
        Some(Role::Endpoints) => {
            let default = cont
                .variants
                .iter()
                .find(|v| v.attrs.default.is_some())
                .or(cont.variants.first())
                .filter(|_| fieldless)
                .map(|v| v.ident);
            match default {
                Some(default) => quote_spanned! {span=>
                    #[automatically_derived]
                    impl ::perf_trace_core::EndpointKey for #ident {
                        const DEFAULT: Self = Self::#default;
                    }
                },
                None => TokenStream::new(),
            }
        }
        None => TokenStream::new(),
    };

    let count_check = if valid {
        let count = cont.variants.len();
        quote! {
            const _: () = ::perf_trace_core::__private::assert_key_count(#count);
        }
    } else {
        TokenStream::new()
    };

    quote! {
        #[automatically_derived]
        impl ::perf_trace_core::KeySet for #ident {
            const SET_NAME: &'static str = #set_name;
            const NAMES: &'static [&'static str] = &[#(#names),*];
            const VARIANTS: &'static [&'static str] = &[#(#variant_names),*];
            const ALL: &'static [Self] = &[#(Self::#all),*];
            const SORTED: &'static [u16] = &[#(#sorted),*];
            const UNKNOWN_KEY: &'static str = #unknown_key;

            #[inline]
            fn index(self) -> usize {
                match self {
                    #(#arms,)*
                }
            }
        }
        #role
        #count_check
    }
}
