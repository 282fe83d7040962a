//! The timed body both attributes generate: a phase (`#[traced_phase]`) and
//! a counted store method (`#[counted_store]` on an `impl` block), sync or
//! async.

use proc_macro2::{Span, TokenStream};
use quote::quote;
use syn::{parse_quote, Block, Expr, Ident, ReturnType, Stmt, Type};

/// What a timed body records.
#[derive(Clone, Copy)]
pub(crate) enum Timed {
    /// A phase: `TimedGuard::phase`, `TimedFuture::phase`.
    Phase,
    /// A store call: `TimedGuard::store_call`, `TimedFuture::store_call`.
    StoreCall,
}

impl Timed {
    fn constructor(self) -> Ident {
        let name = match self {
            Timed::Phase => "phase",
            Timed::StoreCall => "store_call",
        };
        Ident::new(name, Span::call_site())
    }
}

/// Rewrites `block`, the body of a fn (`async` when `asyncness`) returning
/// `output`, so that it is timed as `what` under `key`: an `async fn` from
/// its first poll until it completes or is dropped, a fn whose tail is an
/// `async` block (or `Box::pin(async ..)`) that future, any other fn the
/// call itself.
pub(crate) fn time_block(
    asyncness: bool,
    output: &ReturnType,
    block: &mut Block,
    what: Timed,
    key: TokenStream,
) {
    let ctor = what.constructor();
    match body_kind(asyncness, block) {
        Body::AsyncFn => {
            let pin_return = pin_return_type(output);
            let new: Block = parse_quote!({
                ::perf_trace_core::__private01::TimedFuture::#ctor(#key, async move {
                    #pin_return
                    #block
                })
                .await
            });
            *block = new;
        }
        Body::TailAsync(future) | Body::BoxPinAsync(future) => {
            *future = parse_quote!(
                ::perf_trace_core::__private01::TimedFuture::#ctor(#key, #future)
            );
        }
        Body::Sync => {
            let body = sync_body(
                quote!(::perf_trace_core::__private01::TimedGuard::#ctor(#key)),
                quote!(#block),
            );
            *block = parse_quote!({ #body });
        }
    }
}

/// Statements that time `body` with the guard `start` makes, ending with
/// `body`'s value. The guard is ended by hand on the normal path
/// (`TimedGuard::finish`): with a call in `body` that may unwind, its drop
/// would otherwise be called out of line on every path. An early return,
/// a `?` or a panic leaves it to the drop, which records the same.
pub(crate) fn sync_body(start: TokenStream, body: TokenStream) -> TokenStream {
    let guard = Ident::new("__perf_trace_guard", Span::mixed_site());
    let out = Ident::new("__perf_trace_out", Span::mixed_site());
    quote! {
        let #guard = #start;
        #[allow(unreachable_code, unused_braces, clippy::diverging_sub_expression)]
        let #out = #body;
        #[allow(unreachable_code)]
        ::perf_trace_core::__private01::TimedGuard::finish(#guard);
        #[allow(unreachable_code)]
        #out
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

/// Where the future of a function that returns one is built.
enum Body<'a> {
    /// `async fn`: the whole body.
    AsyncFn,
    /// A fn whose tail expression is an `async` block (`-> impl Future`).
    TailAsync(&'a mut Expr),
    /// A fn whose tail expression is `Box::pin(async move { .. })`, as
    /// `#[async_trait]` writes them: the async block inside.
    BoxPinAsync(&'a mut Expr),
    /// A plain function.
    Sync,
}

/// Classifies a fn's body, `block` (of an `async fn` when `asyncness`).
fn body_kind(asyncness: bool, block: &mut Block) -> Body<'_> {
    if asyncness {
        return Body::AsyncFn;
    }
    let Some(Stmt::Expr(tail, None)) = block.stmts.last_mut() else {
        return Body::Sync;
    };
    if matches!(tail, Expr::Async(_)) {
        return Body::TailAsync(tail);
    }
    if let Expr::Call(call) = tail {
        let is_box_pin = matches!(&*call.func, Expr::Path(p) if {
            let segs: Vec<_> = p.path.segments.iter().map(|s| s.ident.to_string()).collect();
            segs.len() >= 2 && segs[segs.len() - 1] == "pin" && segs[segs.len() - 2] == "Box"
        });
        if is_box_pin && call.args.len() == 1 && matches!(call.args[0], Expr::Async(_)) {
            return Body::BoxPinAsync(&mut call.args[0]);
        }
    }
    Body::Sync
}
