//! The `#[key_set(...)]` container attribute and the `#[key(...)]` variant
//! attribute.

use proc_macro2::Span;
use syn::{Attribute, LitStr, Path};

use crate::case::RenameRule;
use crate::errors::{each_option, has_value, option_name, Errors};

/// What a key set is for; each role has its own marker trait.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Role {
    /// `#[key_set(phases)]`: `PhaseKey`.
    Phases,
    /// `#[key_set(store_methods)]`: `StoreMethodKey`.
    StoreMethods,
    /// `#[key_set(endpoints)]`: `EndpointKey`, with one default variant.
    Endpoints,
    /// `#[key_set(counters, prefix = "...")]`: `CounterKey`, or
    /// `PairedCounterKey` with `by = Set`.
    Counters,
    /// `#[key_set(timers, prefix = "...")]`: `TimerKey`.
    Timers,
}

impl Role {
    fn from_name(name: &str) -> Option<Self> {
        match name {
            "phases" => Some(Role::Phases),
            "store_methods" => Some(Role::StoreMethods),
            "endpoints" => Some(Role::Endpoints),
            "counters" => Some(Role::Counters),
            "timers" => Some(Role::Timers),
            _ => None,
        }
    }

    /// The flag as written in `#[key_set(...)]`.
    pub(crate) fn flag(self) -> &'static str {
        match self {
            Role::Phases => "phases",
            Role::StoreMethods => "store_methods",
            Role::Endpoints => "endpoints",
            Role::Counters => "counters",
            Role::Timers => "timers",
        }
    }

    /// The `Role` variant of `perf_trace_core::keys::Role`.
    pub(crate) fn variant(self) -> &'static str {
        match self {
            Role::Phases => "Phases",
            Role::StoreMethods => "StoreMethods",
            Role::Endpoints => "Endpoints",
            Role::Counters => "Counters",
            Role::Timers => "Timers",
        }
    }

    /// Whether the set's fields carry a prefix of the user's (`prefix = "..."`).
    pub(crate) fn has_prefix(self) -> bool {
        matches!(self, Role::Counters | Role::Timers)
    }

    /// The convention names are rendered in unless `rename_all` says otherwise.
    pub(crate) fn default_rule(self) -> RenameRule {
        match self {
            Role::Phases | Role::Endpoints | Role::Counters | Role::Timers | Role::StoreMethods => {
                RenameRule::Snake
            }
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
    /// `prefix = "..."` of a counter or timer set.
    pub(crate) prefix: Option<LitStr>,
    /// `by = Set` of a paired counter set.
    pub(crate) by: Option<Path>,
}

const CONTAINER_OPTIONS: &str = "expected a role (`phases`, `store_methods`, `endpoints`, \
     `counters`, `timers`), `prefix = \"...\"`, `by = Set` or `rename_all = \"...\"`";

/// Reads every `#[key_set(...)]` attribute of the enum.
pub(crate) fn container(attrs: &[Attribute], errors: &mut Errors) -> ContainerAttrs {
    let mut out = ContainerAttrs::default();
    let mut seen: Vec<String> = Vec::new();
    each_option(attrs, "key_set", errors, |meta, errors| {
        let name = option_name(&meta);
        let known = Role::from_name(&name).is_some()
            || matches!(name.as_str(), "rename_all" | "prefix" | "by");
        if !known {
            return errors.refuse_option(
                &meta,
                format!("unknown key_set option `{name}`; {CONTAINER_OPTIONS}"),
            );
        }
        if seen.contains(&name) {
            return errors.refuse_option(&meta, format!("duplicate key_set option `{name}`"));
        }
        seen.push(name.clone());
        if let Some(role) = Role::from_name(&name) {
            if has_value(&meta) {
                return errors.refuse_option(&meta, format!("`{name}` takes no value"));
            }
            out.roles.push((
                role,
                meta.path
                    .get_ident()
                    .map_or_else(Span::call_site, |i| i.span()),
            ));
            return Ok(());
        }
        if name == "by" {
            out.by = Some(meta.value()?.parse()?);
            return Ok(());
        }
        let lit: LitStr = meta.value()?.parse()?;
        if name == "prefix" {
            out.prefix = Some(lit);
            return Ok(());
        }
        // `seen` refused a second `rename_all`: nothing to overwrite.
        out.rename_all = RenameRule::from_lit(&lit, errors);
        Ok(())
    });
    out
}

/// What `#[key(...)]` said on one variant.
#[derive(Default)]
pub(crate) struct VariantAttrs {
    /// `rename = "..."`.
    pub(crate) rename: Option<LitStr>,
    /// The span of `default`, when given.
    pub(crate) default: Option<Span>,
    /// The span of `max`, when given: the counter keeps the largest value.
    pub(crate) max: Option<Span>,
    /// `route = "GET /items/{sku}"`, any number: the routes an endpoint
    /// class stands for.
    pub(crate) routes: Vec<Route>,
}

/// One `route = "..."` of an endpoint class, parsed once: the expansion
/// takes its parts, the checks report its problem.
pub(crate) struct Route {
    /// The string as written (where an error points).
    pub(crate) lit: LitStr,
    /// Its method (empty for any) and path, or why it is not a route.
    pub(crate) parsed: Result<(String, String), String>,
}

impl Route {
    fn new(lit: LitStr) -> Self {
        let parsed = parse_route(&lit.value()).map(|(m, p)| (m.to_owned(), p.to_owned()));
        Route { lit, parsed }
    }
}

/// Reads every `#[key(...)]` attribute of one variant.
pub(crate) fn variant(attrs: &[Attribute], errors: &mut Errors) -> VariantAttrs {
    let mut out = VariantAttrs::default();
    each_option(attrs, "key", errors, |meta, errors| {
        let name = option_name(&meta);
        match name.as_str() {
            "rename" => {
                let lit: LitStr = meta.value()?.parse()?;
                errors.set_once(&mut out.rename, Some(lit), &meta, "key");
            }
            "route" => out.routes.push(Route::new(meta.value()?.parse()?)),
            "default" | "max" => {
                if has_value(&meta) {
                    return errors.refuse_option(&meta, format!("`{name}` takes no value"));
                }
                let slot = if name == "default" {
                    &mut out.default
                } else {
                    &mut out.max
                };
                let span = meta.path.get_ident().map(|i| i.span());
                errors.set_once(slot, span, &meta, "key");
            }
            _ => {
                return errors.refuse_option(
                    &meta,
                    format!(
                        "unknown key option `{name}`; expected `rename = \"...\"`, `default`, `max` \
                         or `route = \"GET /path/{{param}}\"`"
                    ),
                );
            }
        }
        Ok(())
    });
    out
}

/// The methods a route may name.
const METHODS: [&str; 9] = [
    "GET", "POST", "PUT", "DELETE", "PATCH", "HEAD", "OPTIONS", "CONNECT", "TRACE",
];

/// A route, `"GET /items/{sku}"` or `"/health"` (any method): its method
/// (empty for any) and its path, as axum's `MatchedPath` spells it.
fn parse_route(route: &str) -> Result<(&str, &str), String> {
    let (method, path) = match route.split_once(' ') {
        Some((method, path)) => (method, path),
        None => ("", route),
    };
    if !method.is_empty() && !METHODS.contains(&method) {
        return Err(format!(
            "unknown method `{method}` in route {route:?}; expected one of {} or no method \
             (any), e.g. \"GET /items/{{sku}}\"",
            METHODS.join(", ")
        ));
    }
    if !path.starts_with('/') || path.contains(char::is_whitespace) {
        return Err(format!(
            "route {route:?} needs a path that starts with `/` and has no spaces, as the \
             router spells it, e.g. \"GET /items/{{sku}}\""
        ));
    }
    Ok((method, path))
}
