//! The rules a key set must follow.

use super::ast::Container;
use super::attr::Role;
use crate::errors::Errors;

/// Most keys a set may have (the recorder's table size).
const MAX_KEYS: usize = 64;

/// Checks `cont`, reporting every broken rule.
pub(crate) fn check(cont: &Container, errors: &mut Errors) {
    check_role(cont, errors);
    check_variants(cont, errors);
    check_names(cont, errors);
    check_default(cont, errors);
    check_prefix(cont, errors);
    check_counter_options(cont, errors);
}

fn check_role(cont: &Container, errors: &mut Errors) {
    let ident = cont.ident;
    match cont.attrs.roles.as_slice() {
        [] => errors.spanned(
            ident,
            format!(
                "`{ident}` needs a role: add `#[key_set(phases)]`, `#[key_set(store_methods)]`, \
                 `#[key_set(endpoints)]`, `#[key_set(counters, prefix = \"...\")]` or \
                 `#[key_set(timers, prefix = \"...\")]`"
            ),
        ),
        [(first, _), rest @ ..] => {
            for (role, span) in rest {
                errors.at(
                    *span,
                    format!(
                        "a key set has exactly one role: `{ident}` is already marked `{}`, \
                         so it cannot also be `{}`",
                        first.flag(),
                        role.flag()
                    ),
                );
            }
        }
    }
}

fn check_variants(cont: &Container, errors: &mut Errors) {
    let ident = cont.ident;
    if cont.variants.is_empty() {
        errors.spanned(
            ident,
            format!("`{ident}` has no variant: a key set needs at least one key"),
        );
    }
    for v in &cont.variants {
        if !v.fields.is_empty() {
            errors.spanned(
                v.fields,
                format!(
                    "a key is a unit variant: `{ident}::{}` has fields; #[derive(KeySet)] goes on a fieldless enum",
                    v.ident
                ),
            );
        }
    }
    if let Some(v) = cont.variants.get(MAX_KEYS) {
        errors.spanned(
            v.ident,
            format!(
                "a key set has at most {MAX_KEYS} keys, and `{ident}` has {}",
                cont.variants.len()
            ),
        );
    }
}

/// Why `name` cannot be rendered into a log key and a `name=value` header.
fn name_problem(name: &str) -> Option<String> {
    if name.is_empty() {
        return Some("a key name cannot be empty".to_owned());
    }
    let bad = name.chars().find(|&c| {
        matches!(c, '=' | ',' | '"' | '\\') || c.is_whitespace() || c.is_control() || !c.is_ascii()
    })?;
    let what = match bad {
        '=' | ',' | '"' | '\\' => format!("`{bad}`"),
        c if c.is_whitespace() => "whitespace".to_owned(),
        c if c.is_control() => "a control character".to_owned(),
        c => format!("the non-ASCII character `{c}`"),
    };
    Some(format!(
        "key name {name:?} contains {what}; key names go into log keys and `name=value` headers, \
         so they are ASCII without whitespace, control characters, `=`, `,`, `\"` or `\\`"
    ))
}

fn check_names(cont: &Container, errors: &mut Errors) {
    for (i, v) in cont.variants.iter().enumerate() {
        if let Some(problem) = name_problem(&v.name) {
            errors.at(v.name_span(), problem);
        }
        if let Some(first) = cont.variants[..i].iter().find(|w| w.name == v.name) {
            errors.at(
                v.name_span(),
                format!(
                    "`{set}::{}` and `{set}::{}` both render as {:?}; rendered key names must be distinct",
                    first.ident,
                    v.ident,
                    v.name,
                    set = cont.ident
                ),
            );
        }
    }
}

fn check_default(cont: &Container, errors: &mut Errors) {
    let ident = cont.ident;
    let defaults: Vec<_> = cont
        .variants
        .iter()
        .filter_map(|v| v.attrs.default.map(|span| (v, span)))
        .collect();
    match cont.role() {
        Some(Role::Endpoints) => match defaults.as_slice() {
            [] => errors.spanned(
                ident,
                format!(
                    "an endpoint set has one default class: mark one variant of `{ident}` \
                     `#[key(default)]` (the class of requests nobody classified)"
                ),
            ),
            [_] => {}
            [(first, _), rest @ ..] => {
                for (v, span) in rest {
                    errors.at(
                        *span,
                        format!(
                            "an endpoint set has exactly one default class: `{ident}::{}` is \
                             already `#[key(default)]`, so `{ident}::{}` cannot be",
                            first.ident, v.ident
                        ),
                    );
                }
            }
        },
        Some(role) => {
            for (_, span) in &defaults {
                errors.at(
                    *span,
                    format!(
                        "`#[key(default)]` is for endpoint sets (`#[key_set(endpoints)]`); \
                         `{ident}` is marked `{}`",
                        role.flag()
                    ),
                );
            }
        }
        None => {}
    }
}

/// Why `prefix` cannot start a counter or timer field name.
fn prefix_problem(prefix: &str) -> Option<&'static str> {
    if prefix.is_empty() {
        return Some("a prefix cannot be empty");
    }
    if !prefix
        .bytes()
        .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'_')
    {
        return Some("a prefix is lowercase ASCII letters, digits and `_`");
    }
    if prefix.starts_with('_') || prefix.ends_with('_') {
        return Some("a prefix does not start or end with `_` (the `_` before the key is added)");
    }
    // These would read as the contract's own groups.
    if matches!(
        prefix,
        "phase" | "store" | "audit" | "db" | "sse" | "authz_store"
    ) {
        return Some("this prefix is the contract's own (`phase`, `store`, `audit`, `db`, `sse`, `authz_store`)");
    }
    None
}

fn check_prefix(cont: &Container, errors: &mut Errors) {
    let ident = cont.ident;
    let Some(role) = cont.role() else { return };
    match (&cont.attrs.prefix, role.has_prefix()) {
        (Some(lit), true) => {
            if let Some(problem) = prefix_problem(&lit.value()) {
                errors.spanned(lit, format!("{problem}; got {:?}", lit.value()));
            }
        }
        (None, true) => errors.spanned(
            ident,
            format!(
                "a {} set names the prefix of its fields: add `prefix = \"...\"` to \
                 `#[key_set({})]` of `{ident}`",
                &role.flag()[..role.flag().len() - 1],
                role.flag()
            ),
        ),
        (Some(lit), false) => errors.spanned(
            lit,
            format!(
                "`prefix` is for counter and timer sets; `{ident}` is marked `{}`, whose fields \
                 are named by the contract",
                role.flag()
            ),
        ),
        (None, false) => {}
    }
}

fn check_counter_options(cont: &Container, errors: &mut Errors) {
    let ident = cont.ident;
    let Some(role) = cont.role() else { return };
    if role == Role::Counters {
        return;
    }
    if let Some(by) = &cont.attrs.by {
        errors.spanned(
            by,
            format!(
                "`by = ...` pairs the keys of a counter set with another set; `{ident}` is marked `{}`",
                role.flag()
            ),
        );
    }
    for v in &cont.variants {
        if role != Role::Endpoints {
            if let Some(route) = v.attrs.routes.first() {
                errors.spanned(
                    &route.lit,
                    format!(
                        "`#[key(route = ...)]` is for endpoint sets (the routes a class stands \
                         for); `{ident}` is marked `{}`",
                        role.flag()
                    ),
                );
            }
        }
        for route in &v.attrs.routes {
            if let Err(problem) = &route.parsed {
                errors.spanned(&route.lit, problem);
            }
        }
        if let Some(span) = v.attrs.max {
            errors.at(
                span,
                format!(
                    "`#[key(max)]` is for counter sets (it keeps the largest value counted); \
                     `{ident}` is marked `{}`",
                    role.flag()
                ),
            );
        }
    }
}
