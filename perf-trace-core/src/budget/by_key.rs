//! Budgets written against a snapshot's keys: [`Budget`].

use crate::keys::{CounterKey, KeySet, PairedCounterKey, PhaseKey, StoreMethodKey, TimerKey};
use crate::snapshot::Snapshot;

use super::{BudgetCheck, BudgetExceeded, BudgetOutcome, Margin};

/// The budgets of one traced request, each named by its key and measured
/// from the request's snapshot: the count a key's line field holds is
/// compared with the baseline given, with [`BudgetCheck`]'s margins and
/// messages.
///
/// ```
/// use perf_trace_core::budget::Budget;
/// use perf_trace_core::{KeySet, Recorder, Schema};
/// # #[derive(KeySet, Clone, Copy, PartialEq, Eq, Debug)]
/// # #[key_set(phases)]
/// # enum Phase { Load }
/// # #[derive(KeySet, Clone, Copy, PartialEq, Eq, Debug)]
/// # #[key_set(endpoints)]
/// # enum Endpoint { #[key(default)] Other }
/// #[perf_trace_core::counted_store]
/// trait ItemStore {
///     fn get_stock(&self, sku: u32) -> u32;
/// }
/// # struct App;
/// # impl Schema for App {
/// #     type Phase = Phase;
/// #     type StoreMethod = ItemStoreMethod;
/// #     type Endpoint = Endpoint;
/// # }
/// # struct Mem;
/// # impl ItemStore for Mem { fn get_stock(&self, _: u32) -> u32 { 1 } }
///
/// let store = CountedItemStore::new(Mem);
/// let recorder = Recorder::new::<App>();
/// recorder.in_scope(|| (1..=12).for_each(|sku| { store.get_stock(sku); }));
/// let snapshot = recorder.snapshot();
///
/// let budget = Budget::for_snapshot("items-list", &snapshot)
///     .store(ItemStoreMethod::GetStock, 10)
///     .baselines_from("main 1a2b3c4");
/// assert_eq!(budget.measured_line(), "measured: items-list store_get_stock_n=12");
/// assert!(budget.check().is_ok());
///
/// // An N+1: one read per item where there was one per page.
/// let failure = Budget::for_snapshot("items-list", &snapshot)
///     .store(ItemStoreMethod::GetStock, 1)
///     .check()
///     .unwrap_err();
/// assert!(failure.to_string().contains("items-list: store_get_stock_n = 12 is over its budget 3"));
/// ```
///
/// The default margin, `max(2, 2%)`, lets a count pass its baseline by two:
/// a per-row N+1 over one or two rows fits in it. Bound such counts
/// exactly, and one extra call fails:
///
/// ```
/// # use perf_trace_core::budget::Budget;
/// # use perf_trace_core::{KeySet, Recorder, Schema};
/// # #[derive(KeySet, Clone, Copy, PartialEq, Eq, Debug)]
/// # #[key_set(phases)]
/// # enum Phase { Load }
/// # #[derive(KeySet, Clone, Copy, PartialEq, Eq, Debug)]
/// # #[key_set(endpoints)]
/// # enum Endpoint { #[key(default)] Other }
/// # #[perf_trace_core::counted_store]
/// # trait ItemStore { fn get_stock(&self, sku: u32) -> u32; }
/// # struct App;
/// # impl Schema for App { type Phase = Phase; type StoreMethod = ItemStoreMethod; type Endpoint = Endpoint; }
/// # struct Mem;
/// # impl ItemStore for Mem { fn get_stock(&self, _: u32) -> u32 { 1 } }
/// # let store = CountedItemStore::new(Mem);
/// let recorder = Recorder::new::<App>();
/// // Two rows, each read twice: one read too many per row.
/// recorder.in_scope(|| (1..=4).for_each(|sku| { store.get_stock(sku); }));
/// let snapshot = recorder.snapshot();
///
/// let loose = Budget::for_snapshot("two-rows", &snapshot).store(ItemStoreMethod::GetStock, 2);
/// assert!(loose.check().is_ok());
/// let exact = Budget::for_snapshot("two-rows", &snapshot)
///     .exact()
///     .store(ItemStoreMethod::GetStock, 2);
/// assert_eq!(
///     exact.check().unwrap_err().to_string(),
///     "two-rows: store_get_stock_n = 4 is over its budget 2 (baseline 2 + margin 0)"
/// );
/// ```
#[derive(Debug, Clone)]
pub struct Budget<'a> {
    snapshot: &'a Snapshot,
    check: BudgetCheck,
    /// The margin of the counts bounded from here on.
    margin: Margin,
}

impl<'a> Budget<'a> {
    /// Budgets of request `request` (a name for the messages), measured
    /// from `snapshot`.
    pub fn for_snapshot(request: impl Into<String>, snapshot: &'a Snapshot) -> Self {
        Budget {
            snapshot,
            check: BudgetCheck::new(request, ""),
            margin: Margin::Count,
        }
    }

    /// Bounds the counts that follow exactly: each may not pass its
    /// baseline at all (the margin [`Margin::EXACT`]). Call it first to
    /// bound every count of the budget exactly, or between keys to bound
    /// only the keys after it; [`margin`](Self::margin) changes it back.
    pub fn exact(self) -> Self {
        self.margin(Margin::EXACT)
    }

    /// The margin of the counts bounded after this call (by default
    /// [`Margin::Count`], `max(2, ceil(2%))`).
    pub fn margin(mut self, margin: Margin) -> Self {
        self.margin = margin;
        self
    }

    /// Where the baselines were measured (`main <sha>`, a change), for the
    /// messages.
    pub fn baselines_from(mut self, source: impl Into<String>) -> Self {
        self.check.baseline_source = source.into();
        self
    }

    fn count(mut self, name: String, measured: u64, baseline: u64) -> Self {
        self.check = self.check.bounded(name, measured, baseline, self.margin);
        self
    }

    /// Bounds the calls of store method `method` (`store_<m>_n`).
    pub fn store<M: StoreMethodKey>(self, method: M, baseline: u64) -> Self {
        let measured = self.snapshot.store(method).count;
        self.count(format!("store_{}_n", method.name()), measured, baseline)
    }

    /// Bounds the entries of phase `phase` (`phase_<p>_n`).
    pub fn phase<P: PhaseKey>(self, phase: P, baseline: u64) -> Self {
        let measured = self.snapshot.phase(phase).count;
        self.count(format!("phase_{}_n", phase.name()), measured, baseline)
    }

    /// Bounds counter `key` (`<prefix>_<key>`).
    pub fn counter<K: CounterKey>(self, key: K, baseline: u64) -> Self {
        let measured = self.snapshot.counter(key);
        self.count(
            format!("{}_{}", K::INFO.prefix, key.name()),
            measured,
            baseline,
        )
    }

    /// Bounds counter `key` of a paired set for `by` (`<prefix>_<by>_<key>`).
    pub fn counter_by<K: PairedCounterKey>(self, by: K::By, key: K, baseline: u64) -> Self {
        let measured = self.snapshot.counter_by(by, key);
        let name = format!("{}_{}_{}", K::INFO.prefix, by.name(), key.name());
        self.count(name, measured, baseline)
    }

    /// Bounds the entries of timer `key` (`<prefix>_<key>_n`).
    pub fn timer<K: TimerKey>(self, key: K, baseline: u64) -> Self {
        let measured = self.snapshot.timer(key).count;
        self.count(
            format!("{}_{}_n", K::INFO.prefix, key.name()),
            measured,
            baseline,
        )
    }

    /// Bounds the store calls over all methods (`store_calls`).
    pub fn store_calls(self, baseline: u64) -> Self {
        let measured = self.snapshot.store_calls.iter().map(|s| s.count).sum();
        self.count("store_calls".to_owned(), measured, baseline)
    }

    /// Bounds the decisions recorded (`audit_records`).
    pub fn decisions(self, baseline: u64) -> Self {
        let measured = self.snapshot.decisions.records;
        self.count("audit_records".to_owned(), measured, baseline)
    }

    /// Bounds a response's size in bytes (`response_bytes`).
    pub fn response_bytes(mut self, measured: u64, baseline: u64) -> Self {
        self.check = self.check.bytes("response_bytes", measured, baseline);
        self
    }

    /// `measured: <request> name=value ...`, the line to read when updating
    /// baselines.
    pub fn measured_line(&self) -> String {
        self.check.measured_line()
    }

    /// Compares every value with its budget.
    pub fn evaluate(&self) -> BudgetOutcome {
        self.check.evaluate()
    }

    /// Prints the measured line and any notes (a stale baseline), and fails
    /// when a value is over its budget.
    pub fn check(&self) -> Result<(), BudgetExceeded> {
        self.check.check()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::record::count_by;
    use crate::test_keys::{Bare, Batch, Cache, Endpoint, Method, Phase, Render};
    use crate::{count, time, Recorder};

    #[test]
    fn each_key_is_measured_under_its_line_field_with_the_check_s_messages() {
        let recorder = Recorder::new::<Bare>();
        recorder.in_scope(|| {
            for _ in 0..5 {
                count(Batch::Count);
            }
            count_by(Endpoint::BList, Cache::Hit);
            time(Render::Page, || ());
        });
        let snapshot = recorder.snapshot();
        let budget = Budget::for_snapshot("items", &snapshot)
            .phase(Phase::Load, 0)
            .store(Method::GetUser, 0)
            .counter(Batch::Count, 20)
            .counter_by(Endpoint::BList, Cache::Hit, 1)
            .timer(Render::Page, 1)
            .store_calls(0)
            .decisions(0)
            .response_bytes(1_000, 1_000)
            .baselines_from("main abc");
        assert_eq!(
            budget.measured_line(),
            "measured: items phase_load_n=0 store_GetUser_n=0 batch_count=5 cache_b.list_hit=1 \
             render_page_n=1 store_calls=0 audit_records=0 response_bytes=1000"
        );
        let outcome = budget.evaluate();
        assert!(outcome.failures.is_empty(), "{:?}", outcome.failures);
        assert_eq!(
            outcome.notes,
            [
                "note: items: batch_count = 5 is below its baseline 20 by more than the margin 2: \
              the baseline is stale; lower it to hold the improvement"
            ]
        );
        let over = Budget::for_snapshot("items", &snapshot)
            .counter(Batch::Count, 1)
            .baselines_from("main abc")
            .evaluate();
        assert_eq!(
            over.failures,
            ["items: batch_count = 5 is over its budget 3 (baseline 1 + margin 2; baselines from main abc)"]
        );
    }

    /// A per-row N+1 over one row: two reads where one was the baseline.
    fn one_row_read_twice() -> crate::Snapshot {
        let recorder = Recorder::new::<Bare>();
        recorder.in_scope(|| {
            for _ in 0..2 {
                count(Batch::Count);
            }
        });
        recorder.snapshot()
    }

    /// The one-row snapshot's count held exactly to its old baseline, 1.
    fn exact_one(snapshot: &crate::Snapshot) -> Budget<'_> {
        Budget::for_snapshot("one-row", snapshot)
            .exact()
            .counter(Batch::Count, 1)
    }

    const EXACT_FAILURE: &str =
        "one-row: batch_count = 2 is over its budget 1 (baseline 1 + margin 0)";

    #[test]
    fn an_exact_bound_fails_on_one_extra_count_where_the_default_margin_passes() {
        let snapshot = one_row_read_twice();
        let loose = Budget::for_snapshot("one-row", &snapshot).counter(Batch::Count, 1);
        assert!(loose.check().is_ok());
        assert_eq!(
            exact_one(&snapshot).check().unwrap_err().failures,
            [EXACT_FAILURE]
        );
        // Only the keys after `exact` are exact.
        let mixed = Budget::for_snapshot("one-row", &snapshot)
            .counter(Batch::Count, 1)
            .exact()
            .counter(Batch::Count, 2)
            .margin(Margin::Count)
            .counter(Batch::Count, 0);
        assert!(mixed.check().is_ok());
        // Below an exact baseline is a stale baseline.
        let stale = Budget::for_snapshot("one-row", &snapshot)
            .exact()
            .counter(Batch::Count, 3);
        assert_eq!(stale.evaluate().notes.len(), 1);
    }

    #[test]
    fn an_unwrapped_failure_prints_its_messages() {
        let snapshot = one_row_read_twice();
        let failure = exact_one(&snapshot).check().unwrap_err();
        assert_eq!(
            format!("{failure:?}"),
            format!("over budget:\n{EXACT_FAILURE}")
        );
        let budget = exact_one(&snapshot);
        let panic = std::panic::catch_unwind(|| budget.check().unwrap()).unwrap_err();
        let message = panic.downcast_ref::<String>().expect("a formatted message");
        assert!(
            message.ends_with(&format!("over budget:\n{EXACT_FAILURE}")),
            "{message}"
        );
        assert!(!message.contains("BudgetExceeded {"), "{message}");
    }
}
