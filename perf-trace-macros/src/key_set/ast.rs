//! The enum a key set is derived from, with its attributes read.

use proc_macro2::Span;
use quote::{quote, ToTokens};
use syn::{Data, DeriveInput, Fields, Ident};

use super::attr::{self, ContainerAttrs, Role, VariantAttrs};
use crate::case::RenameRule;
use crate::errors::Errors;

/// A key-set enum.
pub(crate) struct Container<'a> {
    /// The enum's name.
    pub(crate) ident: &'a Ident,
    /// Its `#[key_set(...)]` attribute.
    pub(crate) attrs: ContainerAttrs,
    /// Its variants, in declaration order.
    pub(crate) variants: Vec<Variant<'a>>,
}

/// One variant: one key.
pub(crate) struct Variant<'a> {
    /// The variant's name.
    pub(crate) ident: &'a Ident,
    /// Its fields (a key has none).
    pub(crate) fields: &'a Fields,
    /// Its `#[key(...)]` attribute.
    pub(crate) attrs: VariantAttrs,
    /// The rendered name (log keys, headers).
    pub(crate) name: String,
}

impl Variant<'_> {
    /// Where an error about the rendered name points: the `rename` string, or
    /// the variant's name.
    pub(crate) fn name_span(&self) -> Span {
        match &self.attrs.rename {
            Some(lit) => lit.span(),
            None => self.ident.span(),
        }
    }
}

impl<'a> Container<'a> {
    /// Reads `input`; `None` (with an error) when it cannot be a key set at
    /// all: not an enum, or generic.
    pub(crate) fn from_ast(input: &'a DeriveInput, errors: &mut Errors) -> Option<Self> {
        let ident = &input.ident;
        let data = match &input.data {
            Data::Enum(data) => data,
            Data::Struct(data) => return not_an_enum(data.struct_token, ident, errors),
            Data::Union(data) => return not_an_enum(data.union_token, ident, errors),
        };
        if !input.generics.params.is_empty() || input.generics.where_clause.is_some() {
            errors.spanned(
                &input.generics,
                format!("a key set cannot be generic: its keys are fixed; remove the generics of `{ident}`"),
            );
            return None;
        }
        let attrs = attr::container(&input.attrs, errors);
        let rule = attrs
            .rename_all
            .or_else(|| attrs.roles.first().map(|(role, _)| role.default_rule()))
            .unwrap_or(RenameRule::Snake);
        let variants = data
            .variants
            .iter()
            .map(|v| {
                let attrs = attr::variant(&v.attrs, errors);
                let name = match &attrs.rename {
                    Some(lit) => lit.value(),
                    None => rule.apply(&v.ident.to_string()),
                };
                Variant {
                    ident: &v.ident,
                    fields: &v.fields,
                    attrs,
                    name,
                }
            })
            .collect();
        Some(Container {
            ident,
            attrs,
            variants,
        })
    }

    /// The role, when at least one was given (the first).
    pub(crate) fn role(&self) -> Option<Role> {
        self.attrs.roles.first().map(|&(role, _)| role)
    }

    /// Whether some variant has fields (then no key table can be built).
    pub(crate) fn has_fields(&self) -> bool {
        self.variants.iter().any(|v| !v.fields.is_empty())
    }
}

/// Refuses a struct or a union (its keyword given): a key set is an enum.
fn not_an_enum<T>(keyword: impl ToTokens, ident: &Ident, errors: &mut Errors) -> Option<T> {
    let what = keyword.to_token_stream();
    errors.spanned(
        quote!(#keyword #ident),
        format!("#[derive(KeySet)] goes on a fieldless enum; `{ident}` is a {what}"),
    );
    None
}
