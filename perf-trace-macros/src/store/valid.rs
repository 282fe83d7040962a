//! The rules a store's counted methods must follow.

use syn::Ident;

use super::ast::Variant;
use crate::errors::Errors;

/// Checks the counted methods of `name` (a trait or an `impl` block's type),
/// whose method enum is `methods`, reporting every broken rule.
pub(crate) fn check<'a>(
    name: &Ident,
    methods: &Ident,
    variants: impl IntoIterator<Item = &'a Variant>,
    errors: &mut Errors,
) {
    let variants: Vec<&Variant> = variants.into_iter().collect();
    if variants.is_empty() {
        errors.spanned(
            name,
            format!(
                "`{name}` has no counted method: #[counted_store] counts the calls of a store's \
                 methods, and every method of `{name}` is skipped or missing"
            ),
        );
    }
    for (i, v) in variants.iter().enumerate() {
        if let Some(first) = variants[..i].iter().find(|w| w.ident == v.ident) {
            let span = v
                .rename
                .as_ref()
                .map_or_else(|| v.method.span(), |lit| lit.span());
            errors.at(
                span,
                format!(
                    "`{methods}::{}` would be the variant of both `{}` and `{}`: rename one with \
                     `#[counted(rename = \"...\")]`",
                    v.ident, first.method, v.method
                ),
            );
        }
    }
}
