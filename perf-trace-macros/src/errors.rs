//! Collecting errors so that one expansion reports all it found.

use std::fmt::Display;

use proc_macro2::{Span, TokenStream, TokenTree};
use quote::ToTokens;
use syn::meta::ParseNestedMeta;
use syn::{Attribute, Token};

/// The errors found in one macro input, combined into one
/// `compile_error!` group.
#[derive(Default)]
pub(crate) struct Errors {
    combined: Option<syn::Error>,
}

impl Errors {
    /// Adds an error.
    pub(crate) fn push(&mut self, error: syn::Error) {
        match &mut self.combined {
            Some(combined) => combined.combine(error),
            None => self.combined = Some(error),
        }
    }

    /// Adds an error spanning `tokens`.
    pub(crate) fn spanned(&mut self, tokens: impl ToTokens, message: impl Display) {
        self.push(syn::Error::new_spanned(tokens, message));
    }

    /// Adds an error at `span`.
    pub(crate) fn at(&mut self, span: Span, message: impl Display) {
        self.push(syn::Error::new(span, message));
    }

    /// Adds an error at a refused option's name and consumes the option's
    /// value, so that parsing goes on to the next option.
    pub(crate) fn refuse_option(
        &mut self,
        meta: &ParseNestedMeta,
        message: impl Display,
    ) -> syn::Result<()> {
        self.spanned(&meta.path, message);
        skip_value(meta)
    }

    /// Puts `value` in `slot`, the place of the option `meta` names, unless
    /// an earlier one is there: then the option is a duplicate of
    /// `attribute`'s (`key`, `#[counted]`).
    pub(crate) fn set_once<T>(
        &mut self,
        slot: &mut Option<T>,
        value: Option<T>,
        meta: &ParseNestedMeta,
        attribute: &str,
    ) {
        if slot.is_some() {
            let name = option_name(meta);
            self.spanned(&meta.path, format!("duplicate {attribute} option `{name}`"));
        } else {
            *slot = value;
        }
    }

    /// Whether nothing was reported.
    pub(crate) fn is_empty(&self) -> bool {
        self.combined.is_none()
    }

    /// The `compile_error!` invocations of every error (nothing when empty).
    pub(crate) fn to_compile_error(&self) -> TokenStream {
        self.combined
            .as_ref()
            .map(syn::Error::to_compile_error)
            .unwrap_or_default()
    }
}

/// Reads every `#[name(...)]` attribute among `attrs`, one option at a
/// time, with `option`; an attribute that does not parse adds its error,
/// and the next one is read.
pub(crate) fn each_option(
    attrs: &[Attribute],
    name: &str,
    errors: &mut Errors,
    mut option: impl FnMut(ParseNestedMeta, &mut Errors) -> syn::Result<()>,
) {
    for attr in attrs.iter().filter(|a| a.path().is_ident(name)) {
        if let Err(error) = attr.parse_nested_meta(|meta| option(meta, errors)) {
            errors.push(error);
        }
    }
}

/// The option's name as written (`rename_all`, `foo::bar`).
pub(crate) fn option_name(meta: &ParseNestedMeta) -> String {
    meta.path.to_token_stream().to_string().replace(' ', "")
}

/// Consumes the value of an option that was refused (`= expr` or `(...)`),
/// so parsing can go on to the next option.
fn skip_value(meta: &ParseNestedMeta) -> syn::Result<()> {
    if meta.input.peek(Token![=]) {
        meta.value()?.parse::<syn::Expr>()?;
    } else if meta.input.peek(syn::token::Paren) {
        meta.input.parse::<TokenTree>()?;
    }
    Ok(())
}

/// Whether the option has a value (`= ...` or `(...)`).
pub(crate) fn has_value(meta: &ParseNestedMeta) -> bool {
    meta.input.peek(Token![=]) || meta.input.peek(syn::token::Paren)
}
