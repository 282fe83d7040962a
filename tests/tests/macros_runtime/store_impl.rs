//! `#[counted_store]` on a repository's inherent `impl` block: no trait,
//! no decorator; each method counted and timed in place, sync and async,
//! on every way out.

use std::panic::{self, AssertUnwindSafe};
use std::time::Duration;

use perf_trace_core::{counted_store, KeySet, Recorder, Schema};

use super::{Endpoint, Phase};

/// A repository as a service writes it: a struct and its methods.
struct Repo {
    stock: Vec<u32>,
}

#[counted_store(methods = RepoMethod)]
impl Repo {
    /// A plain constructor: associated functions are counted as well, so
    /// this one is skipped.
    #[counted(skip)]
    fn new(stock: Vec<u32>) -> Self {
        Repo { stock }
    }

    fn get_stock(&self, sku: usize) -> Result<u32, String> {
        if sku == 13 {
            panic!("unlucky");
        }
        self.stock
            .get(sku)
            .copied()
            .ok_or_else(|| format!("no sku {sku}"))
    }

    async fn load_stock(&self, sku: usize) -> Result<u32, String> {
        tokio::time::sleep(Duration::from_millis(2)).await;
        let n = self.get_stock(sku)?;
        Ok(n * 10)
    }

    #[counted(rename = "PutStockRow")]
    fn put_stock(&mut self, n: u32) -> usize {
        self.stock.push(n);
        self.stock.len()
    }

    // Written out on purpose: the returned future is timed, not its making.
    #[allow(clippy::manual_async_fn)]
    fn count_later(&self) -> impl std::future::Future<Output = usize> + '_ {
        async move {
            tokio::task::yield_now().await;
            self.stock.len()
        }
    }
}

struct RepoApp;

impl Schema for RepoApp {
    type Phase = Phase;
    type StoreMethod = RepoMethod;
    type Endpoint = Endpoint;
}

#[test]
fn a_sync_method_of_an_impl_block_counts_every_way_out() {
    let recorder = Recorder::new::<RepoApp>();
    let mut repo = Repo::new(vec![5, 6]);
    recorder.in_scope(|| {
        assert_eq!(repo.get_stock(1), Ok(6));
        assert_eq!(repo.get_stock(9), Err("no sku 9".to_owned()));
        let panicked = panic::catch_unwind(AssertUnwindSafe(|| repo.get_stock(13)));
        assert!(panicked.is_err());
        assert_eq!(repo.put_stock(7), 3);
    });
    let snap = recorder.snapshot();
    assert_eq!(snap.store(RepoMethod::GetStock).count, 3);
    assert_eq!(snap.store(RepoMethod::PutStockRow).count, 1);
    assert_eq!(snap.store(RepoMethod::LoadStock).count, 0);
    assert_eq!(
        RepoMethod::NAMES,
        ["get_stock", "load_stock", "put_stock_row", "count_later"]
    );
}

#[tokio::test]
async fn an_async_method_of_an_impl_block_is_timed_over_its_awaits() {
    let recorder = Recorder::new::<RepoApp>();
    let repo = Repo::new(vec![5]);
    let (ok, err, n) = recorder
        .instrument(async {
            (
                repo.load_stock(0).await,
                repo.load_stock(4).await,
                repo.count_later().await,
            )
        })
        .await;
    assert_eq!((ok, err, n), (Ok(50), Err("no sku 4".to_owned()), 1));
    let snap = recorder.snapshot();
    let load = snap.store(RepoMethod::LoadStock);
    assert_eq!(load.count, 2);
    // Each call slept 2 ms inside its timed future.
    assert!(load.duration >= Duration::from_millis(4), "{load:?}");
    // The nested sync call is a store call of its own.
    assert_eq!(snap.store(RepoMethod::GetStock).count, 2);
    assert_eq!(snap.store(RepoMethod::CountLater).count, 1);
    assert_eq!(snap.authz_store_calls, 5);
}

#[test]
fn an_impl_block_outside_a_request_records_nothing() {
    let recorder = Recorder::new::<RepoApp>();
    let repo = Repo::new(vec![1]);
    assert_eq!(repo.get_stock(0), Ok(1));
    assert!(recorder.snapshot().store_calls.is_empty());
}
