//! The store trait, read item by item into what the decorator forwards, and
//! a repository's `impl` block, read into the methods it counts in place.

use proc_macro2::Span;
use quote::format_ident;
use syn::visit::Visit;
use syn::{
    Attribute, FnArg, Ident, ImplItem, ItemImpl, ItemTrait, Pat, PatIdent, ReturnType, Signature,
    TraitItem, TraitItemConst, TraitItemFn, TraitItemType, Type, TypeParamBound,
};

use super::attr::{self, Options};
use crate::case::RenameRule;
use crate::errors::Errors;

/// A store trait.
pub(crate) struct Store {
    /// The method enum's name.
    pub(crate) methods: Ident,
    /// The decorator's name.
    pub(crate) decorator: Ident,
    /// `rename_all = "..."` for the method enum, when given.
    pub(crate) rename_all: Option<syn::LitStr>,
    /// What the decorator's impl holds, in declaration order.
    pub(crate) entries: Vec<Entry>,
}

/// One item of the trait.
pub(crate) enum Entry {
    /// A method the decorator forwards.
    Method(Box<Method>),
    /// An associated type, forwarded.
    Type(TraitItemType),
    /// An associated const, forwarded.
    Const(TraitItemConst),
}

/// How a method is forwarded.
pub(crate) struct Method {
    /// The signature in the impl: argument patterns replaced by names.
    pub(crate) sig: Signature,
    /// The method's `#[cfg]` attributes.
    pub(crate) cfgs: Vec<Attribute>,
    /// How `self` is passed on to the inner store.
    pub(crate) receiver: Receiver,
    /// The `self` token (its span).
    pub(crate) self_token: syn::token::SelfValue,
    /// The arguments after `self`, in order.
    pub(crate) args: Vec<Ident>,
    /// Where the call's time is spent.
    pub(crate) kind: Kind,
    /// The enum variant; `None` for a `#[counted(skip)]` method.
    pub(crate) variant: Option<Variant>,
}

/// The receiver of a forwarded method.
#[derive(Clone, Copy)]
pub(crate) enum Receiver {
    /// `&self`
    Ref,
    /// `&mut self`
    RefMut,
    /// `self`
    Value,
}

/// Where a method's time is spent.
#[derive(Clone, Copy, PartialEq, Eq)]
pub(crate) enum Kind {
    /// In the call.
    Sync,
    /// `async fn`: in the future.
    AsyncFn,
    /// `-> impl Future<..>`: in the returned future.
    ImplFuture,
    /// `-> Pin<Box<dyn Future<..>>>` (as `#[async_trait]` writes them): in the
    /// returned future.
    BoxedFuture,
}

/// The enum variant of a counted method.
pub(crate) struct Variant {
    /// The variant's name.
    pub(crate) ident: Ident,
    /// The `rename` string it came from, if any (the variant's name, rendered by the store's rule).
    pub(crate) rename: Option<syn::LitStr>,
    /// The method's name.
    pub(crate) method: Ident,
}

impl Store {
    /// Reads `item`, removing our helper attributes from it.
    pub(crate) fn from_trait(item: &mut ItemTrait, options: Options, errors: &mut Errors) -> Store {
        let methods = options
            .methods
            .unwrap_or_else(|| format_ident!("{}Method", item.ident));
        let decorator = options
            .decorator
            .unwrap_or_else(|| format_ident!("Counted{}", item.ident));
        let rename_all = options.rename_all;
        let mut entries = Vec::new();
        for trait_item in &mut item.items {
            match trait_item {
                TraitItem::Fn(f) => {
                    let counted = attr::take_counted(&mut f.attrs, errors);
                    if let Some(method) = method(f, counted, errors) {
                        entries.push(Entry::Method(Box::new(method)));
                    }
                }
                TraitItem::Type(t) => {
                    no_counted(&mut t.attrs, errors);
                    entries.push(Entry::Type(t.clone()));
                }
                TraitItem::Const(c) => {
                    no_counted(&mut c.attrs, errors);
                    entries.push(Entry::Const(c.clone()));
                }
                TraitItem::Macro(m) => errors.spanned(
                    &*m,
                    "a macro invocation in a store trait cannot be forwarded through the \
                     decorator: write out the items it expands to",
                ),
                other => errors.spanned(
                    &*other,
                    "this trait item cannot be forwarded through the decorator",
                ),
            }
        }
        Store {
            methods,
            decorator,
            rename_all,
            entries,
        }
    }

    /// The counted methods' variants, in declaration order.
    pub(crate) fn variants(&self) -> impl Iterator<Item = (&Method, &Variant)> {
        self.entries.iter().filter_map(|e| match e {
            Entry::Method(m) => m.variant.as_ref().map(|v| (&**m, v)),
            _ => None,
        })
    }
}

fn no_counted(attrs: &mut Vec<Attribute>, errors: &mut Errors) {
    for attr in attrs.iter().filter(|a| attr::is_counted(a)) {
        errors.spanned(attr, "#[counted] goes on the methods of the store");
    }
    attrs.retain(|a| !attr::is_counted(a));
}

/// The `#[cfg]` attributes among `attrs`, which the method's key keeps.
fn cfgs_of(attrs: &[Attribute]) -> Vec<Attribute> {
    attrs
        .iter()
        .filter(|a| a.path().is_ident("cfg"))
        .cloned()
        .collect()
}

fn method(f: &TraitItemFn, counted: attr::Counted, errors: &mut Errors) -> Option<Method> {
    let name = &f.sig.ident;
    let mut sig = f.sig.clone();
    let cfgs = cfgs_of(&f.attrs);

    // A method the decorator cannot forward may keep the trait's default
    // body, which then runs on the decorator itself.
    let inherit = counted.skip.is_some() && f.default.is_some();
    let hint = "give it a default body and mark it `#[counted(skip)]` to keep that body for \
                the decorator, or move it out of the store trait";
    let Some(receiver) = f.sig.receiver() else {
        if !inherit {
            errors.spanned(
                &f.sig,
                format!(
                    "an associated function without `self` cannot be forwarded through the \
                     decorator (there is no store to call): {hint}"
                ),
            );
        }
        return None;
    };
    let self_token = receiver.self_token;
    let kind_of_receiver = match &*receiver.ty {
        Type::Reference(r) if is_self(&r.elem) => {
            if r.mutability.is_some() {
                Receiver::RefMut
            } else {
                Receiver::Ref
            }
        }
        ty if is_self(ty) => Receiver::Value,
        ty => {
            if !inherit {
                errors.spanned(
                    receiver,
                    format!(
                        "the receiver `self: {}` cannot be forwarded through the decorator, \
                         which holds its store by value; supported receivers are `&self`, \
                         `&mut self` and `self`: {hint}",
                        quote::quote!(#ty)
                            .to_string()
                            .replace(" < ", "<")
                            .replace(" >", ">")
                    ),
                );
            }
            return None;
        }
    };

    let mut args = Vec::new();
    let mut ok = true;
    for (i, input) in sig.inputs.iter_mut().enumerate() {
        let FnArg::Typed(arg) = input else { continue };
        if mentions_self_type(&arg.ty) {
            errors.spanned(
                &arg.ty,
                format!(
                    "`{name}` takes `Self`, which cannot be forwarded: the decorator is not the \
                     store it wraps"
                ),
            );
            ok = false;
        }
        let ident = match &*arg.pat {
            Pat::Ident(PatIdent {
                by_ref: None,
                subpat: None,
                ident,
                ..
            }) if ident != "self" => ident.clone(),
            _ => Ident::new(&format!("__perf_trace_arg{i}"), Span::mixed_site()),
        };
        *arg.pat = Pat::Ident(PatIdent {
            attrs: Vec::new(),
            by_ref: None,
            mutability: None,
            ident: ident.clone(),
            subpat: None,
        });
        arg.attrs.clear();
        args.push(ident);
    }
    if let ReturnType::Type(_, ty) = &f.sig.output {
        if mentions_self_type(ty) {
            errors.spanned(
                ty,
                format!(
                    "`{name}` returns `Self`, which cannot be forwarded: the decorator is not \
                     the store it wraps"
                ),
            );
            ok = false;
        }
    }

    let kind = if f.sig.asyncness.is_some() {
        Kind::AsyncFn
    } else {
        match &f.sig.output {
            ReturnType::Type(_, ty) if is_impl_future(ty) => Kind::ImplFuture,
            ReturnType::Type(_, ty) if is_pinned_boxed_future(ty) => Kind::BoxedFuture,
            _ => Kind::Sync,
        }
    };

    let variant = variant(name, counted, errors);

    sig.inputs.iter_mut().for_each(|input| {
        if let FnArg::Receiver(r) = input {
            r.attrs.clear();
        }
    });
    ok.then_some(Method {
        sig,
        cfgs,
        receiver: kind_of_receiver,
        self_token,
        args,
        kind,
        variant,
    })
}

/// The variant of a method named `name` under its `#[counted]` options;
/// `None` when it is skipped (or its rename is refused).
fn variant(name: &Ident, counted: attr::Counted, errors: &mut Errors) -> Option<Variant> {
    match (counted.skip, counted.rename) {
        (Some(_), Some(rename)) => {
            errors.spanned(&rename, "a skipped method has no variant to rename");
            None
        }
        (Some(_), None) => None,
        (None, Some(rename)) => match syn::parse_str::<Ident>(&rename.value()) {
            Ok(ident) => Some(Variant {
                ident: Ident::new(&ident.to_string(), rename.span()),
                rename: Some(rename),
                method: name.clone(),
            }),
            Err(_) => {
                errors.spanned(
                    &rename,
                    format!(
                        "{:?} cannot be the name of an enum variant: `rename` takes an \
                         identifier, e.g. \"GetRoleDefinitionsByIDs\"",
                        rename.value()
                    ),
                );
                None
            }
        },
        (None, None) => Some(Variant {
            ident: Ident::new(&RenameRule::Pascal.apply(&name.to_string()), name.span()),
            rename: None,
            method: name.clone(),
        }),
    }
}

/// Whether `ty` is `Self`.
fn is_self(ty: &Type) -> bool {
    matches!(ty, Type::Path(p) if p.qself.is_none() && p.path.is_ident("Self"))
}

/// Whether `ty` uses the type `Self` itself (`Self::Error` is fine).
fn mentions_self_type(ty: &Type) -> bool {
    struct Finder(bool);
    impl<'ast> Visit<'ast> for Finder {
        fn visit_type_path(&mut self, p: &'ast syn::TypePath) {
            if p.qself.is_none() && p.path.is_ident("Self") {
                self.0 = true;
            }
            // `Self::Assoc` is fine, but `Vec<Self>` inside arguments is not.
            for seg in &p.path.segments {
                if let syn::PathArguments::AngleBracketed(args) = &seg.arguments {
                    for arg in &args.args {
                        self.visit_generic_argument(arg);
                    }
                }
            }
            if let Some(q) = &p.qself {
                self.visit_type(&q.ty);
            }
        }
    }
    let mut finder = Finder(false);
    finder.visit_type(ty);
    finder.0
}

fn future_bound(bounds: &syn::punctuated::Punctuated<TypeParamBound, syn::Token![+]>) -> bool {
    bounds.iter().any(|b| match b {
        TypeParamBound::Trait(t) => t.path.segments.last().is_some_and(|s| s.ident == "Future"),
        _ => false,
    })
}

/// `impl Future<Output = T> (+ ...)`.
fn is_impl_future(ty: &Type) -> bool {
    matches!(ty, Type::ImplTrait(t) if future_bound(&t.bounds))
}

/// `Pin<Box<dyn Future<Output = T> + ...>>`.
fn is_pinned_boxed_future(ty: &Type) -> bool {
    fn single_arg<'a>(ty: &'a Type, name: &str) -> Option<&'a Type> {
        let Type::Path(p) = ty else { return None };
        let seg = p.path.segments.last()?;
        if seg.ident != name {
            return None;
        }
        let syn::PathArguments::AngleBracketed(args) = &seg.arguments else {
            return None;
        };
        match args.args.first()? {
            syn::GenericArgument::Type(t) if args.args.len() == 1 => Some(t),
            _ => None,
        }
    }
    single_arg(ty, "Pin")
        .and_then(|b| single_arg(b, "Box"))
        .is_some_and(|d| matches!(d, Type::TraitObject(o) if future_bound(&o.bounds)))
}

/// A repository's inherent `impl` block, whose methods are counted in place.
pub(crate) struct Inherent {
    /// The method enum's name.
    pub(crate) methods: Ident,
    /// The type the block implements, for the enum's docs.
    pub(crate) owner: Ident,
    /// `rename_all = "..."` for the method enum, when given.
    pub(crate) rename_all: Option<syn::LitStr>,
    /// The counted methods, in declaration order: their `#[cfg]`s and variant.
    pub(crate) counted: Vec<(Vec<Attribute>, Variant)>,
}

impl Inherent {
    /// Reads `item`, removing our helper attributes from it; `None` when
    /// the enum cannot be named. The counted methods' bodies are timed by
    /// [`expand::time_methods`](super::expand::time_methods).
    pub(crate) fn from_impl(
        item: &mut ItemImpl,
        options: Options,
        errors: &mut Errors,
    ) -> Option<Inherent> {
        if let Some(decorator) = &options.decorator {
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
        let owner = match &*item.self_ty {
            Type::Path(p) if p.qself.is_none() => p.path.segments.last().map(|s| s.ident.clone()),
            _ => None,
        };
        let methods = match (options.methods, &owner) {
            (Some(methods), _) => Some(methods),
            (None, Some(owner)) => Some(format_ident!("{owner}Method")),
            (None, None) => {
                errors.spanned(
                    &item.self_ty,
                    "#[counted_store] names its method enum after the type, and this type has \
                     no name: give one with `methods = EnumName`",
                );
                None
            }
        };
        let mut counted = Vec::new();
        for impl_item in &mut item.items {
            match impl_item {
                ImplItem::Fn(f) => {
                    let options = attr::take_counted(&mut f.attrs, errors);
                    let Some(variant) = variant(&f.sig.ident, options, errors) else {
                        continue;
                    };
                    if let Some(constness) = &f.sig.constness {
                        errors.spanned(
                            constness,
                            "a counted method cannot be a `const fn`: its calls are timed at \
                             run time; mark it `#[counted(skip)]`",
                        );
                        continue;
                    }
                    counted.push((cfgs_of(&f.attrs), variant));
                }
                ImplItem::Const(c) => no_counted(&mut c.attrs, errors),
                ImplItem::Type(t) => no_counted(&mut t.attrs, errors),
                _ => {}
            }
        }
        Some(Inherent {
            methods: methods?,
            owner: owner.unwrap_or_else(|| format_ident!("Self")),
            rename_all: options.rename_all,
            counted,
        })
    }
}
