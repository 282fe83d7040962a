//! The traced function: the key checked at compile time, the body timed.

use proc_macro2::{Delimiter, Group, Span, TokenStream};
use quote::{quote, quote_spanned, ToTokens};
use syn::{parse_quote, Block, Ident, ItemFn, ReturnType, Type};

use super::ast::{body_kind, Body};
use super::attr::Key;

/// The function with its body timed as phase `key`.
pub(crate) fn traced(mut item: ItemFn, key: &Key) -> TokenStream {
    let key_expr = key_expr(key);
    let asyncness = item.sig.asyncness.is_some();
    let output = item.sig.output.clone();
    match body_kind(asyncness, &mut item.block) {
        Body::AsyncFn => {
            let block = &item.block;
            let pin_return = pin_return_type(&output);
            let new: Block = parse_quote!({
                ::perf_trace_core::__private::TimedFuture::phase(#key_expr, async move {
                    #pin_return
                    #block
                })
                .await
            });
            *item.block = new;
        }
        Body::TailAsync(future) | Body::BoxPinAsync(future) => {
            *future = parse_quote!(
                ::perf_trace_core::__private::TimedFuture::phase(#key_expr, #future)
            );
        }
        Body::Sync => {
            let guard = Ident::new("__perf_trace_guard", Span::mixed_site());
            let block = &item.block;
            let new: Block = parse_quote!({
                let #guard = ::perf_trace_core::__private::TimedGuard::phase(#key_expr);
                #block
            });
            *item.block = new;
        }
    }
    item.into_token_stream()
}

/// A block evaluating to the key, checked at compile time: an unknown
/// variant fails const evaluation with the set's list of keys, at the key.
fn key_expr(key: &Key) -> TokenStream {
    let (first, last) = key.spans();
    let set = &key.set;
    let variant = key.variant.to_string();
    let konst = Ident::new("__PERF_TRACE_KEY", Span::mixed_site());
    // The `panic!` invocation spans from the key's first token to its last,
    // so const evaluation reports the whole key.
    let panic_path = quote_spanned!(first=> ::perf_trace_core::__private::panic!);
    let mut panic_args = Group::new(
        Delimiter::Parenthesis,
        quote_spanned!(last=> "{}", <#set as ::perf_trace_core::KeySet>::UNKNOWN_KEY),
    );
    panic_args.set_span(last);
    let lookup = quote_spanned!(first=>
        ::perf_trace_core::__private::lookup_variant::<#set>(#variant)
    );
    quote_spanned! {first=>
        {
            const #konst: #set = match #lookup {
                ::perf_trace_core::__private::Option::Some(key) => key,
                ::perf_trace_core::__private::Option::None => #panic_path #panic_args,
            };
            #konst
        }
    }
}

/// A dead early return of the declared type, so that `?` and `return` in an
/// async body infer against the function's return type (as `#[async_trait]`
/// does). Left out when the type cannot be written in an expression.
fn pin_return_type(output: &ReturnType) -> TokenStream {
    let ReturnType::Type(_, ty) = output else {
        return TokenStream::new();
    };
    if mentions_impl_or_infer(ty) {
        return TokenStream::new();
    }
    let ret = Ident::new("__perf_trace_return", Span::mixed_site());
    quote! {
        if let ::perf_trace_core::__private::Option::Some(#ret) =
            ::perf_trace_core::__private::Option::None::<#ty>
        {
            #[allow(unreachable_code)]
            return #ret;
        }
    }
}

fn mentions_impl_or_infer(ty: &Type) -> bool {
    struct Finder(bool);
    impl<'ast> syn::visit::Visit<'ast> for Finder {
        fn visit_type_impl_trait(&mut self, _: &'ast syn::TypeImplTrait) {
            self.0 = true;
        }
        fn visit_type_infer(&mut self, _: &'ast syn::TypeInfer) {
            self.0 = true;
        }
        fn visit_type_macro(&mut self, _: &'ast syn::TypeMacro) {
            self.0 = true;
        }
    }
    let mut finder = Finder(false);
    syn::visit::visit_type(&mut finder, ty);
    finder.0
}
