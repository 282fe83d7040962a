//! A key named in a macro (`Set::Variant`): read from the tokens, and checked
//! at compile time by a constant that fails, at the key, with a message
//! naming the closest key and listing the set's keys.

use proc_macro2::{Delimiter, Group, Span, TokenStream};
use quote::quote_spanned;
use syn::{Expr, Ident, Lit, Path};

use crate::case::RenameRule;
use crate::errors::Errors;

/// What the macro calls the key, for messages.
pub(crate) struct KeyKind {
    /// `phase key`, `key`.
    pub(crate) noun: &'static str,
    /// How a key is written, e.g. `` e.g. `#[traced_phase(Phase::Load)]` ``.
    pub(crate) example: &'static str,
}

/// A key: `Set::Variant`, the set a path of at least one segment.
pub(crate) struct Key {
    /// The whole path as written (for spans).
    pub(crate) path: Path,
    /// The set: the path without its last segment.
    pub(crate) set: Path,
    /// The variant: the last segment.
    pub(crate) variant: Ident,
}

impl Key {
    /// The span of the first and of the last token of the key.
    pub(crate) fn spans(&self) -> (Span, Span) {
        let first = match &self.path.leading_colon {
            Some(colon) => colon.spans[0],
            None => self.path.segments[0].ident.span(),
        };
        (first, self.variant.span())
    }
}

/// Reads `expr` as a key; reports anything else.
pub(crate) fn key_of(expr: Expr, kind: &KeyKind, errors: &mut Errors) -> Option<Key> {
    let KeyKind { noun, example } = kind;
    match expr {
        Expr::Group(group) => key_of(*group.expr, kind, errors),
        Expr::Path(expr) if expr.qself.is_none() && expr.attrs.is_empty() => {
            let path = expr.path;
            if path.segments.len() < 2 {
                let name = &path.segments[0].ident;
                errors.spanned(
                    &path,
                    format!("`{name}` is not a {noun}: name the set and the variant, {example}"),
                );
                return None;
            }
            if let Some(seg) = path.segments.iter().find(|s| !s.arguments.is_none()) {
                errors.spanned(
                    seg,
                    format!(
                        "a {noun} is a plain variant path without generic arguments, {example}"
                    ),
                );
                return None;
            }
            let mut set = path.clone();
            let variant = set.segments.pop().map(|pair| pair.into_value().ident)?;
            set.segments.pop_punct();
            Some(Key { path, set, variant })
        }
        Expr::Lit(lit) => {
            let hint = match &lit.lit {
                Lit::Str(s) => {
                    let variant = RenameRule::Pascal.apply(&s.value());
                    let variant = if syn::parse_str::<Ident>(&variant).is_ok() {
                        variant
                    } else {
                        "Variant".to_owned()
                    };
                    format!("the variant path of your set, `YourSet::{variant}`, not a string")
                }
                _ => "the variant path of your set, `YourSet::Variant`, not a literal".to_owned(),
            };
            errors.spanned(
                &lit,
                format!("{noun}s are enum variants fixed at compile time: write {hint}"),
            );
            None
        }
        other => {
            errors.spanned(
                &other,
                format!(
                    "{noun}s are enum variants fixed at compile time: write the variant path \
                     of your set, `YourSet::Variant`, not a runtime expression"
                ),
            );
            None
        }
    }
}

/// A block evaluating to the key, checked at compile time: an unknown
/// variant fails const evaluation at the key, with the closest key and the
/// set's list of keys.
pub(crate) fn key_expr(key: &Key) -> TokenStream {
    let (first, last) = key.spans();
    let set = &key.set;
    let variant = key.variant.to_string();
    let konst = Ident::new("__PERF_TRACE_KEY", Span::mixed_site());
    let message = Ident::new("__perf_trace_unknown_key", Span::mixed_site());
    // The `panic!` invocation spans from the key's first token to its last,
    // so const evaluation reports the whole key.
    let panic_path = quote_spanned!(first=> ::perf_trace_core::__private01::panic!);
    let mut panic_args = Group::new(
        Delimiter::Parenthesis,
        quote_spanned!(last=> "{}", #message.as_str()),
    );
    panic_args.set_span(last);
    let check = quote_spanned!(first=>
        ::perf_trace_core::__private01::check_key::<#set>(#variant)
    );
    quote_spanned! {first=>
        {
            const #konst: #set = match #check {
                ::perf_trace_core::__private01::Result::Ok(key) => key,
                ::perf_trace_core::__private01::Result::Err(#message) => #panic_path #panic_args,
            };
            #konst
        }
    }
}

const ANY_KEY: KeyKind = KeyKind {
    noun: "key",
    example: "e.g. `key!(Cache::Hit)`",
};

/// Expands `key!(Set::Variant)`.
pub(crate) fn expand(input: TokenStream) -> TokenStream {
    let mut errors = Errors::default();
    if input.is_empty() {
        errors.at(
            Span::call_site(),
            format!("key! needs a key, {}", ANY_KEY.example),
        );
        return errors.to_compile_error();
    }
    let key = match syn::parse2::<Expr>(input) {
        Ok(expr) => key_of(expr, &ANY_KEY, &mut errors),
        Err(error) => {
            errors.push(error);
            None
        }
    };
    match key {
        Some(key) => key_expr(&key),
        None => errors.to_compile_error(),
    }
}
