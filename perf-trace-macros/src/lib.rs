//! Placeholder, replaced by the real macros.
use proc_macro::TokenStream;
#[proc_macro_derive(KeySet, attributes(key_set, key))]
pub fn derive_key_set(_input: TokenStream) -> TokenStream {
    TokenStream::new()
}
#[proc_macro_attribute]
pub fn traced_phase(_args: TokenStream, input: TokenStream) -> TokenStream {
    input
}
#[proc_macro_attribute]
pub fn counted_store(_args: TokenStream, input: TokenStream) -> TokenStream {
    input
}
