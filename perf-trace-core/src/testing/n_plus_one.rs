//! N+1 checks that need no baseline: counts that must stay flat as the data
//! grows, and statements that must not repeat within a request.

use std::collections::BTreeMap;
use std::fmt;
use std::future::Future;

use http::{Request, Response, StatusCode};
use http_body::Body;
use tower_service::Service;

use super::{perf_traced_request, TracedResponse};
use crate::keys::Schema;
use crate::recorder::statements::StatementRuns;
use crate::snapshot::Snapshot;

/// Every host-independent count of `snapshot`, by its field on the line
/// (`phase_<p>_n`, `store_<m>_n`, `<prefix>_<key>`, `<prefix>_<key>_n`,
/// `audit_records`, `sse_events`), for counts above zero.
pub fn counts_by_field(snapshot: &Snapshot) -> BTreeMap<String, u64> {
    let mut counts = BTreeMap::new();
    for p in &snapshot.phases {
        counts.insert(format!("phase_{}_n", p.name), p.count);
    }
    for s in &snapshot.store_calls {
        counts.insert(format!("store_{}_n", s.name), s.count);
    }
    for set in &snapshot.counters {
        for v in &set.values {
            let field = format!("{}_{}", set.set.prefix, v.rendered_name());
            counts.insert(field, v.value);
        }
    }
    for set in &snapshot.timers {
        for t in &set.stats {
            counts.insert(format!("{}_{}_n", set.set.prefix, t.name), t.count);
        }
    }
    let records = snapshot.decisions.records;
    if records > 0 {
        counts.insert("audit_records".to_owned(), records);
    }
    if snapshot.sse_events > 0 {
        counts.insert("sse_events".to_owned(), snapshot.sse_events);
    }
    counts
}

/// The counts of one request served at each size, from [`check_flat`].
#[derive(Debug, Clone)]
pub struct FlatnessRun {
    /// The sizes served, in the order given.
    pub sizes: Vec<usize>,
    /// Each size's response, in the same order.
    pub responses: Vec<TracedResponse>,
}

impl FlatnessRun {
    /// The keys whose count is larger at a larger size than at the
    /// smallest one, each with its count at every size (in the order of
    /// [`sizes`](Self::sizes)).
    pub fn growing(&self) -> Vec<(String, Vec<u64>)> {
        let counts: Vec<_> = self
            .responses
            .iter()
            .map(|r| counts_by_field(&r.snapshot))
            .collect();
        let smallest = (0..self.sizes.len())
            .min_by_key(|&i| self.sizes[i])
            .unwrap_or(0);
        let mut keys: Vec<&String> = counts.iter().flat_map(BTreeMap::keys).collect();
        keys.sort();
        keys.dedup();
        keys.into_iter()
            .map(|key| {
                let at: Vec<u64> = counts
                    .iter()
                    .map(|c| c.get(key).copied().unwrap_or(0))
                    .collect();
                (key.clone(), at)
            })
            .filter(|(_, at)| {
                (0..at.len()).any(|i| self.sizes[i] > self.sizes[smallest] && at[i] > at[smallest])
            })
            .collect()
    }
}

/// Why a request's counts are not flat (see [`check_flat`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum NotFlat {
    /// Fewer than two distinct sizes were given: nothing can grow.
    TooFewSizes(Vec<usize>),
    /// Serving the request failed at a size.
    Failed {
        /// The size.
        size: usize,
        /// The error.
        error: String,
    },
    /// The responses' statuses differ between sizes: the request did not
    /// do the same thing at each, so its counts do not compare.
    Status(Vec<(usize, StatusCode)>),
    /// These counts grow with the size: each key with its count per size.
    Growing {
        /// The sizes, in the order given.
        sizes: Vec<usize>,
        /// Each growing key with its count at each size.
        keys: Vec<(String, Vec<u64>)>,
    },
}

impl fmt::Display for NotFlat {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            NotFlat::TooFewSizes(sizes) => write!(
                f,
                "a flatness check needs at least two distinct sizes, and was given {sizes:?}"
            ),
            NotFlat::Failed { size, error } => {
                write!(f, "the request failed at {size} rows: {error}")
            }
            NotFlat::Status(statuses) => {
                f.write_str("the responses' statuses differ between sizes, so their counts do not compare: ")?;
                let list: Vec<String> = statuses
                    .iter()
                    .map(|(size, status)| format!("{} at {size} rows", status.as_u16()))
                    .collect();
                f.write_str(&list.join(", "))
            }
            NotFlat::Growing { sizes, keys } => {
                f.write_str("counts grow with the number of rows (an N+1?): ")?;
                for (i, (key, at)) in keys.iter().enumerate() {
                    if i > 0 {
                        f.write_str("; ")?;
                    }
                    write!(f, "{key}: ")?;
                    let per_size: Vec<String> = at
                        .iter()
                        .zip(sizes)
                        .map(|(n, size)| format!("{n} at {size} rows"))
                        .collect();
                    f.write_str(&per_size.join(", "))?;
                }
                Ok(())
            }
        }
    }
}

impl std::error::Error for NotFlat {}

/// Serves one request at each of `sizes` (two or more distinct numbers of
/// rows) and checks that no count grows with the size, in the spirit of
/// n_plus_one_control: `build(n)` makes the service over `n` rows and the
/// request to serve; each is served with a fresh recorder of schema `S`
/// ([`perf_traced_request`]). No baseline is kept: the sizes are compared
/// with each other.
///
/// Every host-independent count takes part ([`counts_by_field`]): store
/// calls, phases, counters, timers' counts (the `sql_*_n` of
/// `perf-trace-sql` among them), decisions. A key whose count at a larger
/// size is above its count at the smallest size fails the check, named with
/// its count at every size: `store_get_stock_n: 2 at 2 rows, 10 at 10 rows`.
pub async fn check_flat<S, F, Fut, Svc, ReqB, ResB>(
    sizes: &[usize],
    mut build: F,
) -> Result<FlatnessRun, NotFlat>
where
    S: Schema,
    F: FnMut(usize) -> Fut,
    Fut: Future<Output = (Svc, Request<ReqB>)>,
    Svc: Service<Request<ReqB>, Response = Response<ResB>>,
    Svc::Error: Into<Box<dyn std::error::Error + Send + Sync>>,
    ResB: Body,
    ResB::Error: Into<Box<dyn std::error::Error + Send + Sync>>,
{
    let mut distinct = sizes.to_vec();
    distinct.sort_unstable();
    distinct.dedup();
    if distinct.len() < 2 {
        return Err(NotFlat::TooFewSizes(sizes.to_vec()));
    }
    let mut responses = Vec::with_capacity(sizes.len());
    for &size in sizes {
        let (service, request) = build(size).await;
        let response = perf_traced_request::<S, _, _, _>(service, request)
            .await
            .map_err(|e| NotFlat::Failed {
                size,
                error: e.to_string(),
            })?;
        responses.push(response);
    }
    if responses.iter().any(|r| r.status != responses[0].status) {
        let statuses = sizes
            .iter()
            .zip(&responses)
            .map(|(&size, r)| (size, r.status))
            .collect();
        return Err(NotFlat::Status(statuses));
    }
    let run = FlatnessRun {
        sizes: sizes.to_vec(),
        responses,
    };
    let keys = run.growing();
    if keys.is_empty() {
        Ok(run)
    } else {
        Err(NotFlat::Growing {
            sizes: run.sizes,
            keys,
        })
    }
}

/// [`check_flat`], panicking with its message when a count grows with
/// the size; the responses otherwise.
///
/// ```
/// use std::convert::Infallible;
///
/// use http::{Request, Response};
/// use perf_trace_core::testing::check_flat;
/// use perf_trace_core::{counted_store, KeySet, Schema};
///
/// # #[derive(KeySet, Clone, Copy, PartialEq, Eq, Debug)]
/// # #[key_set(phases)]
/// # enum Phase { Load }
/// # #[derive(KeySet, Clone, Copy, PartialEq, Eq, Debug)]
/// # #[key_set(endpoints)]
/// # enum Endpoint { #[key(default)] Other }
/// struct Stock { rows: Vec<u32> }
///
/// #[counted_store]
/// impl Stock {
///     fn list_skus(&self) -> Vec<usize> { (0..self.rows.len()).collect() }
///     fn get_stock(&self, sku: usize) -> u32 { self.rows[sku] }
/// }
///
/// struct App;
/// impl Schema for App {
///     type Phase = Phase;
///     type StoreMethod = StockMethod;
///     type Endpoint = Endpoint;
/// }
///
/// // One `get_stock` per row: an N+1.
/// fn total(stock: &Stock) -> String {
///     stock.list_skus().into_iter().map(|sku| stock.get_stock(sku)).sum::<u32>().to_string()
/// }
///
/// # tokio::runtime::Builder::new_current_thread().build().unwrap().block_on(async {
/// let result = check_flat::<App, _, _, _, _, _>(&[2, 10], |n| async move {
///     let stock = Stock { rows: vec![1; n] };
///     let service = tower::service_fn(move |_: Request<String>| {
///         let body = total(&stock);
///         async move { Ok::<_, Infallible>(Response::new(body)) }
///     });
///     (service, Request::new(String::new()))
/// })
/// .await;
/// let Err(error) = result else { panic!("an N+1 passed") };
/// assert_eq!(
///     error.to_string(),
///     "counts grow with the number of rows (an N+1?): store_get_stock_n: 2 at 2 rows, 10 at 10 rows"
/// );
/// # });
/// ```
#[track_caller]
pub fn assert_flat<S, F, Fut, Svc, ReqB, ResB>(
    sizes: &[usize],
    build: F,
) -> impl Future<Output = Vec<TracedResponse>>
where
    S: Schema,
    F: FnMut(usize) -> Fut,
    Fut: Future<Output = (Svc, Request<ReqB>)>,
    Svc: Service<Request<ReqB>, Response = Response<ResB>>,
    Svc::Error: Into<Box<dyn std::error::Error + Send + Sync>>,
    ResB: Body,
    ResB::Error: Into<Box<dyn std::error::Error + Send + Sync>>,
{
    let caller = std::panic::Location::caller();
    let sizes = sizes.to_vec();
    async move {
        match check_flat::<S, _, _, _, _, _>(&sizes, build).await {
            Ok(run) => run.responses,
            Err(error) => panic!("{error} (checked at {caller})"),
        }
    }
}

/// The statements of `response`'s request that ran more than `max_runs`
/// times, most runs first, each with its text (a traced request's recorder
/// keeps texts; a service's line never has them).
pub fn repeated_statements(response: &TracedResponse, max_runs: u64) -> Vec<StatementRuns> {
    response
        .statements
        .iter()
        .filter(|s| s.runs > max_runs)
        .cloned()
        .collect()
}

/// Fails when a statement of `response`'s request ran more than `max_runs`
/// times (1: no statement may repeat), with each such statement's text and
/// how often it ran, as Laravel's `assertNoRepeatedQueries` does. The
/// statements are those the SQL wrappers of `perf-trace-sql` noted (or
/// [`note_statement`](crate::record::note_statement)).
#[track_caller]
pub fn assert_no_repeated_statements(response: &TracedResponse, max_runs: u64) {
    let repeated = repeated_statements(response, max_runs);
    if repeated.is_empty() {
        return;
    }
    let mut message = format!(
        "{} statement(s) ran more than {max_runs} time(s) in the request:",
        repeated.len()
    );
    for s in &repeated {
        let text = s.text.as_deref().unwrap_or("<text not kept>");
        message.push_str(&format!("\n  {} runs: {text}", s.runs));
    }
    panic!("{message}");
}
