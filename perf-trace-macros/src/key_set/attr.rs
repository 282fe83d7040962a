//! The `#[key_set(...)]` container attribute and the `#[key(...)]` variant
//! attribute.

use proc_macro2::Span;
use syn::{Attribute, LitStr};

use crate::case::RenameRule;
use crate::errors::{has_value, option_name, skip_value, Errors};

/// What a key set is for; each role has its own marker trait.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Role {
    /// `#[key_set(phases)]`: `PhaseKey`.
    Phases,
    /// `#[key_set(store_methods)]`: `StoreMethodKey`.
    StoreMethods,
    /// `#[key_set(endpoints)]`: `EndpointKey`, with one default variant.
    Endpoints,
}

impl Role {
    fn from_name(name: &str) -> Option<Self> {
        match name {
            "phases" => Some(Role::Phases),
            "store_methods" => Some(Role::StoreMethods),
            "endpoints" => Some(Role::Endpoints),
            _ => None,
        }
    }

    /// The flag as written in `#[key_set(...)]`.
    pub(crate) fn flag(self) -> &'static str {
        match self {
            Role::Phases => "phases",
            Role::StoreMethods => "store_methods",
            Role::Endpoints => "endpoints",
        }
    }

    /// The convention names are rendered in unless `rename_all` says otherwise.
    pub(crate) fn default_rule(self) -> RenameRule {
        match self {
            Role::Phases | Role::Endpoints => RenameRule::Snake,
            Role::StoreMethods => RenameRule::Pascal,
        }
    }
}

/// What `#[key_set(...)]` said.
#[derive(Default)]
pub(crate) struct ContainerAttrs {
    /// Every role flag given, in order (valid when exactly one).
    pub(crate) roles: Vec<(Role, Span)>,
    /// The `rename_all` rule, when given and valid.
    pub(crate) rename_all: Option<RenameRule>,
}

const CONTAINER_OPTIONS: &str =
    "expected `phases`, `store_methods`, `endpoints` or `rename_all = \"...\"`";

/// Reads every `#[key_set(...)]` attribute of the enum.
pub(crate) fn container(attrs: &[Attribute], errors: &mut Errors) -> ContainerAttrs {
    let mut out = ContainerAttrs::default();
    let mut seen: Vec<String> = Vec::new();
    for attr in attrs.iter().filter(|a| a.path().is_ident("key_set")) {
        let result = attr.parse_nested_meta(|meta| {
            let name = option_name(&meta);
            let known = Role::from_name(&name).is_some() || name == "rename_all";
            if !known {
                errors.spanned(
                    &meta.path,
                    format!("unknown key_set option `{name}`; {CONTAINER_OPTIONS}"),
                );
                return skip_value(&meta);
            }
            if seen.contains(&name) {
                errors.spanned(&meta.path, format!("duplicate key_set option `{name}`"));
                return skip_value(&meta);
            }
            seen.push(name.clone());
            if let Some(role) = Role::from_name(&name) {
                if has_value(&meta) {
                    errors.spanned(&meta.path, format!("`{name}` takes no value"));
                    return skip_value(&meta);
                }
                out.roles.push((
                    role,
                    meta.path
                        .get_ident()
                        .map_or_else(Span::call_site, |i| i.span()),
                ));
                return Ok(());
            }
            let lit: LitStr = meta.value()?.parse()?;
            match RenameRule::from_name(&lit.value()) {
                Some(rule) => out.rename_all = Some(rule),
                None => errors.spanned(
                    &lit,
                    format!(
                        "unknown rename_all value {:?}; expected one of {}",
                        lit.value(),
                        RenameRule::expected()
                    ),
                ),
            }
            Ok(())
        });
        if let Err(error) = result {
            errors.push(error);
        }
    }
    out
}

/// What `#[key(...)]` said on one variant.
#[derive(Default)]
pub(crate) struct VariantAttrs {
    /// `rename = "..."`.
    pub(crate) rename: Option<LitStr>,
    /// The span of `default`, when given.
    pub(crate) default: Option<Span>,
}

/// Reads every `#[key(...)]` attribute of one variant.
pub(crate) fn variant(attrs: &[Attribute], errors: &mut Errors) -> VariantAttrs {
    let mut out = VariantAttrs::default();
    for attr in attrs.iter().filter(|a| a.path().is_ident("key")) {
        let result = attr.parse_nested_meta(|meta| {
            let name = option_name(&meta);
            match name.as_str() {
                "rename" => {
                    let lit: LitStr = meta.value()?.parse()?;
                    if out.rename.is_some() {
                        errors.spanned(&meta.path, "duplicate key option `rename`");
                    } else {
                        out.rename = Some(lit);
                    }
                }
                "default" => {
                    if has_value(&meta) {
                        errors.spanned(&meta.path, "`default` takes no value");
                        return skip_value(&meta);
                    }
                    if out.default.is_some() {
                        errors.spanned(&meta.path, "duplicate key option `default`");
                    } else {
                        out.default = meta.path.get_ident().map(|i| i.span());
                    }
                }
                _ => {
                    errors.spanned(
                        &meta.path,
                        format!(
                            "unknown key option `{name}`; expected `rename = \"...\"` or `default`"
                        ),
                    );
                    return skip_value(&meta);
                }
            }
            Ok(())
        });
        if let Err(error) = result {
            errors.push(error);
        }
    }
    out
}
