//! `#[counted_store(...)]` options and the `#[counted(...)]` method attribute.

use proc_macro2::{Span, TokenStream};
use syn::parse::Parser;
use syn::{Attribute, Ident, LitStr};

use crate::case::RenameRule;
use crate::errors::{each_option, has_value, option_name, Errors};

/// `#[counted_store(methods = ..., decorator = ..., rename_all = "...")]`.
#[derive(Default)]
pub(crate) struct Options {
    /// The name of the method enum (default `<Trait>Method`).
    pub(crate) methods: Option<Ident>,
    /// The name of the decorator (default `Counted<Trait>`).
    pub(crate) decorator: Option<Ident>,
    /// How the method keys are rendered, handed to the method enum's
    /// `#[key_set(rename_all = ...)]` (default `snake_case`).
    pub(crate) rename_all: Option<LitStr>,
}

/// Reads the attribute's arguments.
pub(crate) fn parse_args(args: TokenStream, errors: &mut Errors) -> Options {
    let mut options = Options::default();
    let parser = syn::meta::parser(|meta| {
        let name = option_name(&meta);
        if name == "rename_all" {
            let lit: LitStr = meta.value()?.parse()?;
            if RenameRule::from_lit(&lit, errors).is_some()
                && options.rename_all.replace(lit).is_some()
            {
                errors.spanned(&meta.path, "duplicate #[counted_store] option `rename_all`");
            }
            return Ok(());
        }
        let slot = match name.as_str() {
            "methods" => &mut options.methods,
            "decorator" => &mut options.decorator,
            _ => {
                return errors.refuse_option(
                    &meta,
                    format!(
                        "unknown #[counted_store] option `{name}`; expected `methods = EnumName`, \
                         `decorator = TypeName` or `rename_all = \"...\"`"
                    ),
                );
            }
        };
        let value = meta.value()?;
        let ident: Ident = value.parse().map_err(|e| {
            syn::Error::new(
                e.span(),
                format!(
                    "`{name}` takes the name of the generated type, e.g. `{name} = {}`",
                    if name == "methods" {
                        "AuthzStoreMethod"
                    } else {
                        "CountedAuthzStore"
                    }
                ),
            )
        })?;
        errors.set_once(slot, Some(ident), &meta, "#[counted_store]");
        Ok(())
    });
    if let Err(error) = parser.parse2(args) {
        errors.push(error);
    }
    options
}

/// What `#[counted(...)]` said on one method.
#[derive(Default)]
pub(crate) struct Counted {
    /// `skip`: forwarded, not counted.
    pub(crate) skip: Option<Span>,
    /// `rename = "Variant"`: the variant's name and rendered name.
    pub(crate) rename: Option<Rename>,
}

/// `rename = "..."` of a counted method, read once: the string as written
/// and the variant it names, when it is an identifier.
pub(crate) struct Rename {
    /// The string (where an error about the variant points).
    pub(crate) lit: LitStr,
    /// The variant's name, spanned at the string; `None` when the string is
    /// not an identifier.
    pub(crate) ident: Option<Ident>,
}

impl Rename {
    fn new(lit: LitStr) -> Self {
        let ident = syn::parse_str::<Ident>(&lit.value())
            .ok()
            .map(|ident| Ident::new(&ident.to_string(), lit.span()));
        Rename { lit, ident }
    }
}

/// Whether `attr` is one of ours.
pub(crate) fn is_counted(attr: &Attribute) -> bool {
    attr.path().is_ident("counted")
}

/// Reads and removes the `#[counted(...)]` attributes of one trait item.
pub(crate) fn take_counted(attrs: &mut Vec<Attribute>, errors: &mut Errors) -> Counted {
    let mut out = Counted::default();
    each_option(attrs, "counted", errors, |meta, errors| {
        let name = option_name(&meta);
        match name.as_str() {
            "skip" => {
                if has_value(&meta) {
                    return errors.refuse_option(&meta, "`skip` takes no value");
                }
                if out.skip.is_some() {
                    errors.spanned(&meta.path, "duplicate #[counted] option `skip`");
                }
                out.skip = meta.path.get_ident().map(Ident::span);
            }
            "rename" => {
                let lit: LitStr = meta.value()?.parse()?;
                errors.set_once(&mut out.rename, Some(Rename::new(lit)), &meta, "#[counted]");
            }
            _ => {
                return errors.refuse_option(
                    &meta,
                    format!(
                        "unknown #[counted] option `{name}`; expected `skip` or \
                         `rename = \"VariantName\"`"
                    ),
                );
            }
        }
        Ok(())
    });
    attrs.retain(|a| !is_counted(a));
    out
}
