//! The key argument of `#[traced_phase(...)]`.

use proc_macro2::{Span, TokenStream};
use syn::parse::Parser;
use syn::punctuated::Punctuated;
use syn::{Expr, Token};

use crate::errors::Errors;
use crate::key_path::{key_of, Key, KeyKind};

const EXAMPLE: &str = "e.g. `#[traced_phase(Phase::Load)]`";

const PHASE_KEY: KeyKind = KeyKind {
    noun: "phase key",
    example: EXAMPLE,
};

/// Reads the attribute's arguments: exactly one key.
pub(crate) fn parse_key(args: TokenStream, errors: &mut Errors) -> Option<Key> {
    if args.is_empty() {
        errors.at(
            Span::call_site(),
            format!("#[traced_phase] needs the phase it records, {EXAMPLE}"),
        );
        return None;
    }
    let exprs = match Punctuated::<Expr, Token![,]>::parse_terminated.parse2(args) {
        Ok(exprs) => exprs,
        Err(error) => {
            errors.push(syn::Error::new(
                error.span(),
                format!("expected one phase key, {EXAMPLE}: {error}"),
            ));
            return None;
        }
    };
    let mut exprs = exprs.into_iter();
    let key = exprs.next().and_then(|expr| match expr {
        Expr::Assign(assign) => {
            unknown_option(&assign.left, errors);
            None
        }
        expr => key_of(expr, &PHASE_KEY, errors),
    });
    for extra in exprs {
        match &extra {
            Expr::Assign(assign) => unknown_option(&assign.left, errors),
            _ => errors.spanned(
                &extra,
                "#[traced_phase] takes exactly one phase key: a function records one phase",
            ),
        }
    }
    key
}

fn unknown_option(left: &Expr, errors: &mut Errors) {
    errors.spanned(
        left,
        format!(
            "unknown #[traced_phase] option `{}`: the attribute takes only the phase key, {EXAMPLE}",
            quote::quote!(#left).to_string().replace(' ', "")
        ),
    );
}
