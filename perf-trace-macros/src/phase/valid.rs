//! The rules the function `#[traced_phase]` goes on must follow.

use syn::ItemFn;

use crate::errors::Errors;

/// Checks `item`, reporting every broken rule.
pub(crate) fn check(item: &ItemFn, errors: &mut Errors) {
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
