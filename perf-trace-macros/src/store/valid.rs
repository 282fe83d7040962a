//! The rules a store trait must follow.

use syn::ItemTrait;

use super::ast::Store;
use crate::errors::Errors;

/// Checks `store`, reporting every broken rule.
pub(crate) fn check(item: &ItemTrait, store: &Store, errors: &mut Errors) {
    let name = &item.ident;
    let variants: Vec<_> = store.variants().map(|(_, v)| v).collect();
    if variants.is_empty() {
        errors.spanned(
            name,
            format!(
                "`{name}` has no counted method: #[counted_store] counts the calls of a store \
                 trait's methods, and every method of `{name}` is skipped or missing"
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
                    "`{}::{}` would be the variant of both `{}` and `{}`: rename one with \
                     `#[counted(rename = \"...\")]`",
                    store.methods, v.ident, first.method, v.method
                ),
            );
        }
    }
}
