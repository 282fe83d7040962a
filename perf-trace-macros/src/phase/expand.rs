//! The traced function: the key checked at compile time, the body timed.

use proc_macro2::TokenStream;
use quote::ToTokens;
use syn::ItemFn;

use crate::key_path::{key_expr, Key};
use crate::timed::{time_block, Timed};

/// The function with its body timed as phase `key`.
pub(crate) fn traced(mut item: ItemFn, key: &Key) -> TokenStream {
    let asyncness = item.sig.asyncness.is_some();
    time_block(
        asyncness,
        &item.sig.output,
        &mut item.block,
        Timed::Phase,
        key_expr(key),
    );
    item.into_token_stream()
}
