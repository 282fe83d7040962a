//! The `KeySet` impl and the role marker impl.

use proc_macro2::{Span, TokenStream};
use quote::{quote, quote_spanned};
use syn::Ident;

use super::ast::{Container, Variant};
use super::attr::Role;

/// The impls for `cont`, emitted even for a set with errors as far as they
/// can be, so that uses of the set do not add errors of their own; the key
/// tables are then left empty if a variant has fields.
pub(crate) fn impls(cont: &Container) -> TokenStream {
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
    let arms = cont.variants.iter().enumerate().map(|(i, v)| {
        let variant = v.ident;
        if v.fields.is_empty() {
            quote!(Self::#variant => #i)
        } else {
            quote!(Self::#variant { .. } => #i)
        }
    });

    let role = role_impl(cont, keys);

    let role_variant = Ident::new(
        cont.role().map_or("Phases", Role::variant),
        Span::call_site(),
    );
    let prefix = cont
        .role()
        .filter(|r| r.has_prefix())
        .and(cont.attrs.prefix.as_ref())
        .map(|lit| lit.value())
        .unwrap_or_default();
    let title = title_case(&prefix);
    let (header, header_counts) = match cont.role() {
        Some(Role::Counters) => (title, String::new()),
        Some(Role::Timers) => (format!("{title}-Us"), format!("{title}-Counts")),
        _ => (String::new(), String::new()),
    };
    let max_mask: u64 = cont
        .variants
        .iter()
        .enumerate()
        .filter(|(i, v)| *i < 64 && v.attrs.max.is_some())
        .fold(0, |mask, (i, _)| mask | (1u64 << i));
    let by = match (&cont.attrs.by, cont.role()) {
        (Some(by), Some(Role::Counters)) => quote! {
            ::perf_trace_core::__private01::Option::Some(
                <#by as ::perf_trace_core::__private01::KeySet>::INFO
            )
        },
        _ => quote!(::perf_trace_core::__private01::Option::None),
    };

    quote! {
        #[automatically_derived]
        impl ::perf_trace_core::__private01::KeySet for #ident {
            const SET_NAME: &'static str = #set_name;
            const NAMES: &'static [&'static str] = &[#(#names),*];
            const VARIANTS: &'static [&'static str] = &[#(#variant_names),*];
            const ALL: &'static [Self] = &[#(Self::#all),*];
            const SORTED: &'static [u16] = &[#(#sorted),*];
            const INFO: &'static ::perf_trace_core::__private01::KeySetInfo = {
                // One static per set: its address is the set's identity.
                static INFO: ::perf_trace_core::__private01::KeySetInfo =
                    ::perf_trace_core::__private01::KeySetInfo {
                        set_name: #set_name,
                        role: ::perf_trace_core::__private01::Role::#role_variant,
                        names: <#ident as ::perf_trace_core::__private01::KeySet>::NAMES,
                        sorted: <#ident as ::perf_trace_core::__private01::KeySet>::SORTED,
                        prefix: #prefix,
                        header: #header,
                        header_counts: #header_counts,
                        max_mask: #max_mask,
                        by: #by,
                    };
                &INFO
            };

            #[inline]
            fn index(self) -> usize {
                match self {
                    #(#arms,)*
                }
            }
        }
        #role
    }
}

/// The compile-time checks of a valid set's size (and, for a counter set
/// paired `by` another, of the pair's), after its impls; a set with errors
/// gets none, since its errors already say what is wrong.
pub(crate) fn size_checks(cont: &Container) -> TokenStream {
    let count = cont.variants.len();
    let pair_check = match (&cont.attrs.by, cont.role()) {
        (Some(by), Some(Role::Counters)) => quote! {
            const _: () = ::perf_trace_core::__private01::assert_pair_count(
                <#by as ::perf_trace_core::__private01::KeySet>::NAMES.len(),
                #count,
            );
        },
        _ => TokenStream::new(),
    };
    quote! {
        const _: () = ::perf_trace_core::__private01::assert_key_count(#count);
        #pair_check
    }
}

/// The marker impl of the set's role (`PhaseKey`, `EndpointKey`, ...), over
/// `keys`, the variants when all are fieldless; nothing without a role.
fn role_impl(cont: &Container, keys: &[Variant]) -> TokenStream {
    let fieldless = !cont.has_fields();
    let ident = cont.ident;
    // The role impl is spanned at the enum's name, where a "the trait is
    // implemented for" hint then points.
    let span = ident.span();
    match cont.role() {
        Some(Role::Phases) => quote_spanned! {span=>
            #[automatically_derived]
            impl ::perf_trace_core::__private01::PhaseKey for #ident {}
        },
        Some(Role::StoreMethods) => quote_spanned! {span=>
            #[automatically_derived]
            impl ::perf_trace_core::__private01::StoreMethodKey for #ident {}
        },
        Some(Role::Counters) => match &cont.attrs.by {
            Some(by) => quote_spanned! {span=>
                #[automatically_derived]
                impl ::perf_trace_core::__private01::PairedCounterKey for #ident {
                    type By = #by;
                }
            },
            None => quote_spanned! {span=>
                #[automatically_derived]
                impl ::perf_trace_core::__private01::CounterKey for #ident {}
            },
        },
        Some(Role::Timers) => quote_spanned! {span=>
            #[automatically_derived]
            impl ::perf_trace_core::__private01::TimerKey for #ident {}
        },
        Some(Role::Endpoints) => {
            let default = cont
                .variants
                .iter()
                .find(|v| v.attrs.default.is_some())
                .or(cont.variants.first())
                .filter(|_| fieldless)
                .map(|v| v.ident);
            let routes = keys.iter().flat_map(|v| {
                let variant = v.ident;
                v.attrs.routes.iter().filter_map(move |route| {
                    let (method, path) = route.parsed.as_ref().ok()?;
                    Some(quote!((#method, #path, Self::#variant)))
                })
            });
            match default {
                Some(default) => quote_spanned! {span=>
                    #[automatically_derived]
                    impl ::perf_trace_core::__private01::EndpointKey for #ident {
                        const DEFAULT: Self = Self::#default;
                        const ROUTES: &'static [(&'static str, &'static str, Self)] =
                            &[#(#routes),*];
                    }
                },
                None => TokenStream::new(),
            }
        }
        None => TokenStream::new(),
    }
}

/// A field prefix as a header suffix: `authz_batch` is `Authz-Batch`.
fn title_case(prefix: &str) -> String {
    prefix
        .split('_')
        .filter(|word| !word.is_empty())
        .map(|word| {
            let mut chars = word.chars();
            chars
                .next()
                .map(|first| first.to_ascii_uppercase().to_string() + chars.as_str())
                .unwrap_or_default()
        })
        .collect::<Vec<_>>()
        .join("-")
}
