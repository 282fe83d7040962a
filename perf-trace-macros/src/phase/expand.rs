//! The traced function: the key checked at compile time, the body timed.

use proc_macro2::{Span, TokenStream};
use quote::{quote, ToTokens};
use syn::{parse_quote, Block, Ident, ItemFn, ReturnType, Type};

use super::ast::{body_kind, Body};
use crate::key_path::{key_expr, Key};

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
                ::perf_trace_core::__private01::TimedFuture::phase(#key_expr, async move {
                    #pin_return
                    #block
                })
                .await
            });
            *item.block = new;
        }
        Body::TailAsync(future) | Body::BoxPinAsync(future) => {
            *future = parse_quote!(
                ::perf_trace_core::__private01::TimedFuture::phase(#key_expr, #future)
            );
        }
        Body::Sync => {
            let block = &item.block;
            let body = crate::timed::sync_body(
                quote!(::perf_trace_core::__private01::TimedGuard::phase(#key_expr)),
                quote!(#block),
            );
            let new: Block = parse_quote!({ #body });
            *item.block = new;
        }
    }
    item.into_token_stream()
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
        if let ::perf_trace_core::__private01::Option::Some(#ret) =
            ::perf_trace_core::__private01::Option::None::<#ty>
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
