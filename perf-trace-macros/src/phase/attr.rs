//! The key argument of `#[traced_phase(...)]`.

use proc_macro2::{Span, TokenStream};
use syn::parse::Parser;
use syn::punctuated::Punctuated;
use syn::{Expr, Ident, Lit, Path, Token};

use crate::errors::Errors;

const EXAMPLE: &str = "e.g. `#[traced_phase(Phase::ListDbRead)]`";

/// A phase key: `Set::Variant`, the set a path of at least one segment.
pub(crate) struct Key {
    /// The whole path as written (for spans).
    pub(crate) path: Path,
    /// The set: the path without its last segment.
    pub(crate) set: Path,
    /// The variant: the last segment.
    pub(crate) variant: Ident,
}

impl Key {
    /// The span of the first and of the last token of the key.
    pub(crate) fn spans(&self) -> (Span, Span) {
        let first = match &self.path.leading_colon {
            Some(colon) => colon.spans[0],
            None => self.path.segments[0].ident.span(),
        };
        (first, self.variant.span())
    }
}

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
    let key = exprs.next().and_then(|expr| key_of(expr, errors));
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

fn key_of(expr: Expr, errors: &mut Errors) -> Option<Key> {
    match expr {
        Expr::Group(group) => key_of(*group.expr, errors),
        Expr::Path(expr) if expr.qself.is_none() && expr.attrs.is_empty() => {
            let path = expr.path;
            if path.segments.len() < 2 {
                let name = &path.segments[0].ident;
                errors.spanned(
                    &path,
                    format!("`{name}` is not a phase key: name the set and the variant, {EXAMPLE}"),
                );
                return None;
            }
            if let Some(seg) = path.segments.iter().find(|s| !s.arguments.is_none()) {
                errors.spanned(
                    seg,
                    format!(
                        "a phase key is a plain variant path without generic arguments, {EXAMPLE}"
                    ),
                );
                return None;
            }
            let mut set = path.clone();
            let variant = set.segments.pop().map(|pair| pair.into_value().ident)?;
            set.segments.pop_punct();
            Some(Key { path, set, variant })
        }
        Expr::Lit(lit) if matches!(lit.lit, Lit::Str(_)) => {
            errors.spanned(
                &lit,
                "phase keys are fixed at compile time: write the variant path, \
                 e.g. `Phase::ListDbRead`, not a string",
            );
            None
        }
        Expr::Assign(assign) => {
            unknown_option(&assign.left, errors);
            None
        }
        other => {
            errors.spanned(
                &other,
                "phase keys are fixed at compile time: write the variant path, \
                 e.g. `Phase::ListDbRead`, not a runtime expression",
            );
            None
        }
    }
}
