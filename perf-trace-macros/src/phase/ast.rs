//! The function `#[traced_phase]` goes on, and the shape of its body.

use proc_macro2::TokenStream;
use syn::{Block, Expr, ItemFn, Stmt, TraitItemFn};

use crate::errors::Errors;
use crate::item;

/// Reads the item as a function with a body; reports anything else.
pub(crate) fn parse_fn(input: TokenStream, errors: &mut Errors) -> Option<ItemFn> {
    if let Ok(item) = syn::parse2::<ItemFn>(input.clone()) {
        check(&item, errors);
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

fn check(item: &ItemFn, errors: &mut Errors) {
    if let Some(constness) = &item.sig.constness {
        errors.spanned(
            constness,
            "#[traced_phase] cannot go on a `const fn`: a phase reads the clock at run time",
        );
    }
    for attr in &item.attrs {
        let path = attr.path();
        if path
            .segments
            .last()
            .is_some_and(|s| s.ident == "traced_phase")
        {
            errors.spanned(
                attr,
                "a function records one phase: #[traced_phase] is already on this function",
            );
        }
    }
}

/// Where the future of a function that returns one is built.
pub(crate) enum Body<'a> {
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

/// Classifies the body of `item`.
pub(crate) fn body_kind(asyncness: bool, block: &mut Block) -> Body<'_> {
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
