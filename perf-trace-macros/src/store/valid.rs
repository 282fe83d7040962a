//! The rules a store trait and a repository's `impl` block must follow,
//! checked on what [`ast`](super::ast) read; every broken rule is reported.

use syn::{Ident, ItemImpl, ItemTrait, Type};

use super::ast::{Entry, ImplEntry, Inherent, Method, Receiver, Store, Variant};
use super::attr::Counted;
use crate::errors::Errors;

/// What to do with a method the decorator cannot forward.
const CANNOT_FORWARD: &str = "give it a default body and mark it `#[counted(skip)]` to keep \
                              that body for the decorator, or move it out of the store trait";

/// Checks the store trait `item`, read as `store`.
pub(crate) fn check_trait(item: &ItemTrait, store: &Store, errors: &mut Errors) {
    for entry in &store.entries {
        match entry {
            Entry::Method(method) => check_method(method, errors),
            Entry::Misplaced(attr) => misplaced(attr, errors),
            Entry::Refused(syn::TraitItem::Macro(m)) => errors.spanned(
                m,
                "a macro invocation in a store trait cannot be forwarded through the \
                 decorator: write out the items it expands to",
            ),
            Entry::Refused(other) => errors.spanned(
                other,
                "this trait item cannot be forwarded through the decorator",
            ),
            Entry::Type(_) | Entry::Const(_) => {}
        }
    }
    check_variants(
        &item.ident,
        &store.methods,
        store.variants().map(|(_, v)| v),
        errors,
    );
}

/// Checks the repository's `impl` block `item`, read as `store`.
pub(crate) fn check_impl(item: &ItemImpl, store: &Inherent, errors: &mut Errors) {
    if let Some(decorator) = &store.decorator {
        errors.spanned(
            decorator,
            "`decorator` names the wrapper of a store trait: on an `impl` block the methods \
             are counted in place, with no wrapper to name",
        );
    }
    if let Some((_, path, _)) = &item.trait_ {
        errors.spanned(
            path,
            "#[counted_store] goes on a store trait or on an inherent `impl` block \
             (`impl Repo { .. }`), not on a trait's impl: put it on the trait, whose \
             decorator then counts every implementation",
        );
    }
    if store.methods.is_none() {
        errors.spanned(
            &item.self_ty,
            "#[counted_store] names its method enum after the type, and this type has \
             no name: give one with `methods = EnumName`",
        );
    }
    for entry in &store.entries {
        match entry {
            ImplEntry::Method {
                counted,
                variant,
                constness,
                ..
            } => {
                check_counted(counted, errors);
                if let (Some(_), Some(constness)) = (variant, constness) {
                    errors.spanned(
                        constness,
                        "a counted method cannot be a `const fn`: its calls are timed at \
                         run time; mark it `#[counted(skip)]`",
                    );
                }
            }
            ImplEntry::Misplaced(attr) => misplaced(attr, errors),
        }
    }
    if let Some(methods) = &store.methods {
        check_variants(
            &store.owner,
            methods,
            store.counted().map(|(_, v)| v),
            errors,
        );
    }
}

fn misplaced(attr: &syn::Attribute, errors: &mut Errors) {
    errors.spanned(attr, "#[counted] goes on the methods of the store");
}

/// A trait's method: one the decorator cannot forward is refused, unless
/// it keeps the trait's default body; then its `#[counted]` options.
fn check_method(m: &Method, errors: &mut Errors) {
    let name = &m.declared.ident;
    match m.receiver {
        Receiver::Missing => {
            if !m.inherits() {
                errors.spanned(
                    &m.declared,
                    format!(
                        "an associated function without `self` cannot be forwarded through the \
                         decorator (there is no store to call): {CANNOT_FORWARD}"
                    ),
                );
            }
            return;
        }
        Receiver::Unsupported => {
            if let Some(receiver) = m.declared.receiver().filter(|_| !m.inherits()) {
                errors.spanned(
                    receiver,
                    format!(
                        "the receiver `self: {}` cannot be forwarded through the decorator, \
                         which holds its store by value; supported receivers are `&self`, \
                         `&mut self` and `self`: {CANNOT_FORWARD}",
                        type_name(&receiver.ty)
                    ),
                );
            }
            return;
        }
        Receiver::Ref | Receiver::RefMut | Receiver::Value => {}
    }
    for ty in &m.takes_self {
        errors.spanned(
            ty,
            format!(
                "`{name}` takes `Self`, which cannot be forwarded: the decorator is not the \
                 store it wraps"
            ),
        );
    }
    if let Some(ty) = &m.returns_self {
        errors.spanned(
            ty,
            format!(
                "`{name}` returns `Self`, which cannot be forwarded: the decorator is not \
                 the store it wraps"
            ),
        );
    }
    check_counted(&m.counted, errors);
}

/// A type as a message shows it: `Arc<Self>`.
fn type_name(ty: &Type) -> String {
    quote::quote!(#ty)
        .to_string()
        .replace(" < ", "<")
        .replace(" >", ">")
}

/// A method's `#[counted(...)]` options: a rename names a variant, so it
/// is an identifier and not on a skipped method.
fn check_counted(counted: &Counted, errors: &mut Errors) {
    let Some(rename) = &counted.rename else {
        return;
    };
    if counted.skip.is_some() {
        errors.spanned(&rename.lit, "a skipped method has no variant to rename");
    } else if rename.ident.is_none() {
        errors.spanned(
            &rename.lit,
            format!(
                "{:?} cannot be the name of an enum variant: `rename` takes an \
                 identifier, e.g. \"GetRoleDefinitionsByIDs\"",
                rename.lit.value()
            ),
        );
    }
}

/// Checks the counted methods of `name` (a trait or an `impl` block's type),
/// whose method enum is `methods`: at least one, each its own variant.
fn check_variants<'a>(
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
