//! `#[derive(KeySet)]`: a fixed set of keys from a fieldless enum.

mod ast;
mod attr;
mod expand;
mod valid;

use proc_macro2::TokenStream;
use quote::quote;
use syn::DeriveInput;

use crate::errors::Errors;

/// Expands `#[derive(KeySet)]` on `input`.
pub(crate) fn derive(input: &DeriveInput) -> TokenStream {
    let mut errors = Errors::default();
    let Some(container) = ast::Container::from_ast(input, &mut errors) else {
        return errors.to_compile_error();
    };
    valid::check(&container, &mut errors);
    let impls = expand::impls(&container);
    let checks = match errors.is_empty() {
        true => expand::size_checks(&container),
        false => TokenStream::new(),
    };
    let errors = errors.to_compile_error();
    quote! {
        #impls
        #checks
        #errors
    }
}
