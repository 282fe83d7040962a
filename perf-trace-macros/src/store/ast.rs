//! The store trait, read item by item into what the decorator forwards, and
//! a repository's `impl` block, read into the methods it counts in place.
//! What is read here is checked in `valid.rs`, and generated from in
//! `expand.rs`.

use proc_macro2::Span;
use quote::format_ident;
use syn::visit::Visit;
use syn::{
    Attribute, FnArg, Ident, ImplItem, ItemImpl, ItemTrait, Pat, PatIdent, ReturnType, Signature,
    TraitItem, TraitItemConst, TraitItemFn, TraitItemType, Type, TypeParamBound,
};

use super::attr::{self, Counted, Options};
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
    /// The trait's items, in declaration order.
    pub(crate) entries: Vec<Entry>,
}

/// One item of the trait.
pub(crate) enum Entry {
    /// A method, forwarded by the decorator when it can be.
    Method(Box<Method>),
    /// An associated type, forwarded.
    Type(TraitItemType),
    /// An associated const, forwarded.
    Const(TraitItemConst),
    /// A `#[counted]` attribute on an item other than a method, removed.
    Misplaced(Attribute),
    /// An item the decorator cannot forward (a macro invocation).
    Refused(TraitItem),
}

/// A method of the trait.
pub(crate) struct Method {
    /// The signature as declared, where errors about it point.
    pub(crate) declared: Signature,
    /// The signature in the impl: argument patterns replaced by names.
    pub(crate) sig: Signature,
    /// Whether the trait gives it a default body.
    pub(crate) has_default: bool,
    /// The method's `#[cfg]` attributes.
    pub(crate) cfgs: Vec<Attribute>,
    /// How `self` is passed on to the inner store.
    pub(crate) receiver: Receiver,
    /// The arguments after `self`, in order.
    pub(crate) args: Vec<Ident>,
    /// The argument types that name `Self` (which cannot be forwarded).
    pub(crate) takes_self: Vec<Type>,
    /// The return type, when it names `Self`.
    pub(crate) returns_self: Option<Type>,
    /// Where the call's time is spent.
    pub(crate) kind: Kind,
    /// Its `#[counted(...)]` options.
    pub(crate) counted: Counted,
    /// The enum variant; `None` for a `#[counted(skip)]` method (or one
    /// whose `rename` is refused).
    pub(crate) variant: Option<Variant>,
}

/// The receiver of a method.
#[derive(Clone, Copy, PartialEq, Eq)]
pub(crate) enum Receiver {
    /// `&self`
    Ref,
    /// `&mut self`
    RefMut,
    /// `self`
    Value,
    /// None: an associated function.
    Missing,
    /// Any other, such as `self: Arc<Self>`.
    Unsupported,
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

impl Variant {
    /// The variant of a method named `name` under its `#[counted]` options;
    /// `None` when it is skipped, or its rename is not an identifier.
    fn of(name: &Ident, counted: &Counted) -> Option<Variant> {
        if counted.skip.is_some() {
            return None;
        }
        let (ident, rename) = match &counted.rename {
            Some(rename) => (rename.ident.clone()?, Some(rename.lit.clone())),
            None => (
                Ident::new(&RenameRule::Pascal.apply(&name.to_string()), name.span()),
                None,
            ),
        };
        Some(Variant {
            ident,
            rename,
            method: name.clone(),
        })
    }
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
                    entries.push(Entry::Method(Box::new(Method::new(f, counted))));
                }
                TraitItem::Type(t) => {
                    entries.extend(take_misplaced(&mut t.attrs, Entry::Misplaced));
                    entries.push(Entry::Type(t.clone()));
                }
                TraitItem::Const(c) => {
                    entries.extend(take_misplaced(&mut c.attrs, Entry::Misplaced));
                    entries.push(Entry::Const(c.clone()));
                }
                other => entries.push(Entry::Refused(other.clone())),
            }
        }
        Store {
            methods,
            decorator,
            rename_all,
            entries,
        }
    }

    /// The methods the decorator forwards, in declaration order.
    pub(crate) fn forwarded(&self) -> impl Iterator<Item = &Method> {
        self.entries.iter().filter_map(|e| match e {
            Entry::Method(m) if m.forwardable() => Some(&**m),
            _ => None,
        })
    }

    /// The counted methods' variants, in declaration order.
    pub(crate) fn variants(&self) -> impl Iterator<Item = (&Method, &Variant)> {
        self.forwarded()
            .filter_map(|m| m.variant.as_ref().map(|v| (m, v)))
    }
}

/// Removes the `#[counted]` attributes of an item that is not a method,
/// returning them as entries made by `entry` (a trait's or an `impl`
/// block's `Misplaced`).
fn take_misplaced<E>(attrs: &mut Vec<Attribute>, entry: fn(Attribute) -> E) -> Vec<E> {
    let (misplaced, kept): (Vec<_>, _) = std::mem::take(attrs)
        .into_iter()
        .partition(attr::is_counted);
    *attrs = kept;
    misplaced.into_iter().map(entry).collect()
}

/// The `#[cfg]` attributes among `attrs`, which the method's key keeps.
fn cfgs_of(attrs: &[Attribute]) -> Vec<Attribute> {
    attrs
        .iter()
        .filter(|a| a.path().is_ident("cfg"))
        .cloned()
        .collect()
}

impl Method {
    fn new(f: &TraitItemFn, counted: Counted) -> Method {
        let receiver = match f.sig.receiver().map(|r| &*r.ty) {
            None => Receiver::Missing,
            Some(Type::Reference(r)) if is_self(&r.elem) => {
                if r.mutability.is_some() {
                    Receiver::RefMut
                } else {
                    Receiver::Ref
                }
            }
            Some(ty) if is_self(ty) => Receiver::Value,
            Some(_) => Receiver::Unsupported,
        };
        let mut sig = f.sig.clone();
        let mut args = Vec::new();
        let mut takes_self = Vec::new();
        for (i, input) in sig.inputs.iter_mut().enumerate() {
            let arg = match input {
                FnArg::Typed(arg) => arg,
                FnArg::Receiver(r) => {
                    r.attrs.clear();
                    continue;
                }
            };
            if mentions_self_type(&arg.ty) {
                takes_self.push((*arg.ty).clone());
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
        let returns_self = match &f.sig.output {
            ReturnType::Type(_, ty) if mentions_self_type(ty) => Some((**ty).clone()),
            _ => None,
        };
        let kind = if f.sig.asyncness.is_some() {
            Kind::AsyncFn
        } else {
            match &f.sig.output {
                ReturnType::Type(_, ty) if is_impl_future(ty) => Kind::ImplFuture,
                ReturnType::Type(_, ty) if is_pinned_boxed_future(ty) => Kind::BoxedFuture,
                _ => Kind::Sync,
            }
        };
        Method {
            declared: f.sig.clone(),
            sig,
            has_default: f.default.is_some(),
            cfgs: cfgs_of(&f.attrs),
            receiver,
            args,
            takes_self,
            returns_self,
            kind,
            variant: Variant::of(&f.sig.ident, &counted),
            counted,
        }
    }

    /// Whether the decorator can forward it: a plain receiver, and no
    /// `Self` taken or returned.
    pub(crate) fn forwardable(&self) -> bool {
        matches!(
            self.receiver,
            Receiver::Ref | Receiver::RefMut | Receiver::Value
        ) && self.takes_self.is_empty()
            && self.returns_self.is_none()
    }

    /// Whether the decorator keeps the trait's default body: a skipped
    /// method with one, which need not be forwardable.
    pub(crate) fn inherits(&self) -> bool {
        self.counted.skip.is_some() && self.has_default
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
    /// The method enum's name; `None` when the type has no name to build
    /// it from and `methods = ..` gives none.
    pub(crate) methods: Option<Ident>,
    /// The type the block implements, for the enum's docs and messages.
    pub(crate) owner: Ident,
    /// `decorator = ..`, which has nothing to name here.
    pub(crate) decorator: Option<Ident>,
    /// `rename_all = "..."` for the method enum, when given.
    pub(crate) rename_all: Option<syn::LitStr>,
    /// The block's items that concern us, in declaration order.
    pub(crate) entries: Vec<ImplEntry>,
}

/// One item of an `impl` block.
pub(crate) enum ImplEntry {
    /// A method.
    Method {
        /// Its `#[cfg]` attributes, which its key keeps.
        cfgs: Vec<Attribute>,
        /// Its `#[counted(...)]` options.
        counted: Counted,
        /// Its variant; `None` when skipped (or its rename is refused).
        variant: Option<Variant>,
        /// `const`, for a `const fn` (which cannot be timed).
        constness: Option<syn::token::Const>,
    },
    /// A `#[counted]` attribute on an item other than a method, removed.
    Misplaced(Attribute),
}

impl Inherent {
    /// Reads `item`, removing our helper attributes from it. The counted
    /// methods' bodies are timed by `expand::time_methods`.
    pub(crate) fn from_impl(
        item: &mut ItemImpl,
        options: Options,
        errors: &mut Errors,
    ) -> Inherent {
        let owner = match &*item.self_ty {
            Type::Path(p) if p.qself.is_none() => p.path.segments.last().map(|s| s.ident.clone()),
            _ => None,
        };
        let methods = options
            .methods
            .or_else(|| owner.as_ref().map(|owner| format_ident!("{owner}Method")));
        let mut entries = Vec::new();
        for impl_item in &mut item.items {
            match impl_item {
                ImplItem::Fn(f) => {
                    let counted = attr::take_counted(&mut f.attrs, errors);
                    entries.push(ImplEntry::Method {
                        cfgs: cfgs_of(&f.attrs),
                        variant: Variant::of(&f.sig.ident, &counted),
                        counted,
                        constness: f.sig.constness,
                    });
                }
                ImplItem::Const(c) => {
                    entries.extend(take_misplaced(&mut c.attrs, ImplEntry::Misplaced))
                }
                ImplItem::Type(t) => {
                    entries.extend(take_misplaced(&mut t.attrs, ImplEntry::Misplaced))
                }
                _ => {}
            }
        }
        Inherent {
            methods,
            owner: owner.unwrap_or_else(|| format_ident!("Self")),
            decorator: options.decorator,
            rename_all: options.rename_all,
            entries,
        }
    }

    /// The counted methods, in declaration order: their `#[cfg]`s and
    /// variant (a `const fn` is refused, not counted).
    pub(crate) fn counted(&self) -> impl Iterator<Item = (&[Attribute], &Variant)> + Clone {
        self.entries.iter().filter_map(|e| match e {
            ImplEntry::Method {
                cfgs,
                variant: Some(v),
                constness: None,
                ..
            } => Some((&cfgs[..], v)),
            _ => None,
        })
    }
}
