#![deny(missing_docs, dead_code)]
//! A repository with no trait: its `impl` block counted in place.

use perf_trace_core::keys::StoreMethodKey;
use perf_trace_core::{counted_store, KeySet};

/// Rows of stock, generic over where they come from.
pub struct StockRepo<T> {
    rows: Vec<T>,
}

#[counted_store(rename_all = "PascalCase")]
impl<T: Clone + Send + Sync> StockRepo<T> {
    /// A repository over `rows`; not counted.
    #[counted(skip)]
    pub const fn new(rows: Vec<T>) -> Self {
        StockRepo { rows }
    }

    /// A row by index.
    pub fn get_stock(&self, i: usize) -> Option<T> {
        self.rows.get(i).cloned()
    }

    /// Rows by ids, keyed as the contract spells them.
    #[counted(rename = "GetStockByIDs")]
    pub async fn get_stock_by_ids(&self, ids: &[usize]) -> Vec<T> {
        ids.iter().filter_map(|&i| self.rows.get(i).cloned()).collect()
    }

    /// An associated function: counted as well.
    pub fn empty() -> Vec<T> {
        Vec::new()
    }

    /// The rows, moved out.
    pub fn into_rows(self) -> Vec<T> {
        self.rows
    }
}

fn is_store_key<K: StoreMethodKey>(_: K) {}

fn assert_send<F: Send>(_: &F) {}

fn main() {
    let repo = StockRepo::new(vec![1u32, 2]);
    assert_eq!(repo.get_stock(1), Some(2));
    let future = repo.get_stock_by_ids(&[0]);
    assert_send(&future);
    drop(future);
    assert!(StockRepo::<u32>::empty().is_empty());
    assert_eq!(
        StockRepoMethod::NAMES,
        ["GetStock", "GetStockByIDs", "Empty", "IntoRows"]
    );
    is_store_key(StockRepoMethod::GetStockByIDs);
    assert_eq!(repo.into_rows(), [1, 2]);
}
