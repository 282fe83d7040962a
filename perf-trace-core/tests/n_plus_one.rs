//! The baseline-free N+1 checks of `testing`: flat counts pass, counts that
//! grow with the rows fail naming each key and its counts, and repeated
//! statements fail naming the statement and its runs.

use std::convert::Infallible;

use http::{Request, Response, StatusCode};
use perf_trace_core::record::note_statement;
use perf_trace_core::testing::{
    assert_flat, assert_no_repeated_statements, check_flat, perf_traced_request,
    repeated_statements, NotFlat,
};
use perf_trace_core::{count, counted_store, KeySet, Schema};

#[derive(KeySet, Clone, Copy, PartialEq, Eq, Debug)]
#[key_set(phases)]
enum Phase {
    Load,
}

#[derive(KeySet, Clone, Copy, PartialEq, Eq, Debug)]
#[key_set(endpoints)]
enum Endpoint {
    #[key(default)]
    Other,
}

#[derive(KeySet, Clone, Copy, PartialEq, Eq, Debug)]
#[key_set(counters, prefix = "cache")]
enum Cache {
    Miss,
}

struct Stock {
    rows: Vec<u32>,
    batched: bool,
}

#[counted_store]
impl Stock {
    fn list_skus(&self) -> Vec<usize> {
        note_statement("SELECT sku FROM stock");
        (0..self.rows.len()).collect()
    }

    fn get_stock(&self, sku: usize) -> u32 {
        note_statement("SELECT qty FROM stock WHERE sku = ?");
        self.rows[sku]
    }

    fn get_stock_many(&self, skus: &[usize]) -> Vec<u32> {
        note_statement("SELECT qty FROM stock WHERE sku IN (SELECT value FROM json_each(?))");
        skus.iter().map(|&s| self.rows[s]).collect()
    }
}

struct App;

impl Schema for App {
    type Phase = Phase;
    type StoreMethod = StockMethod;
    type Endpoint = Endpoint;
}

fn total(stock: &Stock) -> u32 {
    let skus = stock.list_skus();
    count(Cache::Miss);
    if stock.batched {
        stock.get_stock_many(&skus).into_iter().sum()
    } else {
        skus.into_iter().map(|sku| stock.get_stock(sku)).sum()
    }
}

type Served = (
    tower::util::ServiceFn<
        Box<dyn FnMut(Request<String>) -> std::future::Ready<Result<Response<String>, Infallible>>>,
    >,
    Request<String>,
);

fn serve(rows: usize, batched: bool, fail_at: Option<usize>) -> Served {
    let stock = Stock {
        rows: vec![2; rows],
        batched,
    };
    let handler: Box<dyn FnMut(Request<String>) -> _> = Box::new(move |_| {
        let mut response = Response::new(total(&stock).to_string());
        if Some(rows) == fail_at {
            *response.status_mut() = StatusCode::INTERNAL_SERVER_ERROR;
        }
        std::future::ready(Ok(response))
    });
    (tower::service_fn(handler), Request::new(String::new()))
}

#[tokio::test]
async fn a_per_row_call_fails_naming_the_key_and_its_counts_at_each_size() {
    let error =
        check_flat::<App, _, _, _, _, _>(&[2, 5, 10], |n| async move { serve(n, false, None) })
            .await
            .unwrap_err();
    assert_eq!(
        error.to_string(),
        "counts grow with the number of rows (an N+1?): store_get_stock_n: 2 at 2 rows, \
         5 at 5 rows, 10 at 10 rows"
    );
}

#[tokio::test]
async fn flat_counts_pass_and_give_the_responses() {
    let responses =
        assert_flat::<App, _, _, _, _, _>(&[2, 10], |n| async move { serve(n, true, None) }).await;
    assert_eq!(responses.len(), 2);
    assert_eq!(responses[1].body, "20");
    assert_eq!(
        responses[1].snapshot.store(StockMethod::GetStockMany).count,
        1
    );
    assert_eq!(responses[1].snapshot.counter(Cache::Miss), 1);
}

#[tokio::test]
#[should_panic(expected = "store_get_stock_n: 1 at 1 rows, 3 at 3 rows")]
async fn assert_flat_panics_with_the_message() {
    assert_flat::<App, _, _, _, _, _>(&[1, 3], |n| async move { serve(n, false, None) }).await;
}

#[tokio::test]
async fn bad_sizes_and_differing_statuses_are_refused() {
    let error = check_flat::<App, _, _, _, _, _>(&[4, 4], |n| async move { serve(n, true, None) })
        .await
        .unwrap_err();
    assert_eq!(error, NotFlat::TooFewSizes(vec![4, 4]));
    let error =
        check_flat::<App, _, _, _, _, _>(&[2, 3], |n| async move { serve(n, true, Some(3)) })
            .await
            .unwrap_err();
    assert_eq!(
        error.to_string(),
        "the responses' statuses differ between sizes, so their counts do not compare: \
         200 at 2 rows, 500 at 3 rows"
    );
}

#[tokio::test]
async fn a_repeated_statement_is_named_with_its_runs() {
    let (service, request) = serve(3, false, None);
    let response = perf_traced_request::<App, _, _, _>(service, request)
        .await
        .unwrap();
    let repeated = repeated_statements(&response, 1);
    assert_eq!(repeated.len(), 1);
    assert_eq!(repeated[0].runs, 3);
    let panic = std::panic::catch_unwind(|| assert_no_repeated_statements(&response, 2))
        .expect_err("a statement ran 3 times");
    let message = panic.downcast_ref::<String>().unwrap();
    assert_eq!(
        message,
        "1 statement(s) ran more than 2 time(s) in the request:\n  \
         3 runs: SELECT qty FROM stock WHERE sku = ?"
    );
    assert_no_repeated_statements(&response, 3);

    let (service, request) = serve(3, true, None);
    let fixed = perf_traced_request::<App, _, _, _>(service, request)
        .await
        .unwrap();
    assert_no_repeated_statements(&fixed, 1);
    assert_eq!(fixed.statements.len(), 2);
}
