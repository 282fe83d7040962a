//! The quick start's service as a library: what its tests, and the README
//! blocks that show them, import (`use quickstart_example::{app, ..}`).
//! `main.rs` is the whole service, shown verbatim in the READMEs.

// `main` is the binary's; here only the service's items are used.
#[allow(dead_code)]
#[path = "main.rs"]
mod service;

pub use service::{
    app, CountedItemStore, Endpoint, Inventory, ItemStore, ItemStoreMethod, Phase, Shelf, Stock,
};
