//! Count snapshots (feature `insta`): see [`CountsView`].

use std::collections::BTreeMap;

use serde::Serialize;

use crate::snapshot::Snapshot;

/// The host-independent counts of one request, sorted by key: a count
/// snapshot, a value that [insta](https://insta.rs) writes to a file,
/// compares and diffs.
///
/// A budget (`BudgetCheck`) fails a test only when a count passes its margin,
/// so a change inside the margin passes unseen. A count snapshot holds every
/// count exactly: any change fails the test with a diff naming the key that
/// moved, and the new counts are accepted by reviewing the snapshot
/// (`cargo insta review`), in the same pull request as the change. Use
/// budgets for what must never regress, snapshots to see every change.
///
/// It keeps only what repeats exactly for a fixed data set,
/// caller, endpoint and code version: no duration, no request id, no pool
/// figure. Its maps are sorted by key, so its text is stable.
///
/// ```
/// use perf_trace_core::snapshot::CountsView;
/// use perf_trace_core::{traced_phase, KeySet, Recorder, Schema};
///
/// #[derive(KeySet, Clone, Copy, PartialEq, Eq, Debug)]
/// #[key_set(phases)]
/// enum Phase { Read, Render }
///
/// #[derive(KeySet, Clone, Copy, PartialEq, Eq, Debug)]
/// #[key_set(store_methods)]
/// enum Method { GetUser }
///
/// #[derive(KeySet, Clone, Copy, PartialEq, Eq, Debug)]
/// #[key_set(endpoints)]
/// enum Endpoint { #[key(default)] Other }
///
/// struct App;
/// impl Schema for App {
///     type Phase = Phase;
///     type StoreMethod = Method;
///     type Endpoint = Endpoint;
/// }
///
/// #[traced_phase(Phase::Read)]
/// fn read() {}
///
/// let recorder = Recorder::new::<App>();
/// recorder.in_scope(|| { read(); read(); });
/// let counts = CountsView::from(&recorder.snapshot());
/// assert_eq!(counts.phases.get("read"), Some(&2));
/// assert_eq!(counts.store_calls.total, 0);
/// ```
///
/// In a test, [`assert_counts_snapshot!`](crate::assert_counts_snapshot)
/// hands the view to insta under a name.
///
/// Made from a [`Snapshot`] (`CountsView::from(&snapshot)`) or, with the
/// `tower` feature, from a traced response, which adds its status. Serialized
/// to YAML by [`assert_counts_snapshot!`](crate::assert_counts_snapshot),
/// the counts of the repository's example Hub serving three agents by id
/// are (some lines left out):
///
/// ```yaml
/// endpoint: agents.project.sorted_agent
/// status: 200
/// store_calls:
///   total: 12
///   methods:
///     GetEffectiveGroups: 1
///     GetUser: 3
///     ListAccessConstraints: 1
///     # ... one line per method called
/// decisions:
///   records: 26
///   allow: 16
///   deny: 10
///   other: 0
/// phases:
///   list_db_read: 1
///   serialize: 1
///   # ... one line per phase entered
/// ```
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[non_exhaustive]
pub struct CountsView {
    /// The endpoint class's rendered name.
    pub endpoint: &'static str,
    /// The response status, when the view was made from a response.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub status: Option<u16>,
    /// Store calls, per method and in total.
    pub store_calls: StoreCallCounts,
    /// Authorization decisions and their outcomes; left out of the text for
    /// a schema without the decisions group.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub decisions: Option<DecisionCounts>,
    /// How many times each phase was entered, for phases entered at least
    /// once.
    pub phases: BTreeMap<&'static str, u64>,
    /// Stream events written; left out of the text when none were.
    #[serde(skip_serializing_if = "is_zero")]
    pub sse_events: u64,
    /// The stage of a streaming request's line (`connect` / `close`); left
    /// out of the text for other requests.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub sse_stage: Option<&'static str>,
    /// Counter values by line field (`<prefix>_<key>`, `<prefix>_<by>_<key>`),
    /// for counters above zero; left out of the text when there are none.
    #[serde(skip_serializing_if = "BTreeMap::is_empty")]
    pub counters: BTreeMap<String, u64>,
    /// Timer entry counts by line field stem (`<prefix>_<key>`), for timers
    /// entered at least once; left out of the text when there are none.
    #[serde(skip_serializing_if = "BTreeMap::is_empty")]
    pub timers: BTreeMap<String, u64>,
}

/// Store calls of one request.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[non_exhaustive]
pub struct StoreCallCounts {
    /// Calls over all methods (`authz_store_calls` in the line).
    pub total: u64,
    /// Calls per method, for methods called at least once.
    pub methods: BTreeMap<&'static str, u64>,
}

/// Authorization decisions of one request, as the line counts them.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[non_exhaustive]
pub struct DecisionCounts {
    /// Audit records emitted (one per decision by default).
    pub records: u64,
    /// Decisions that allowed.
    pub allow: u64,
    /// Decisions that denied.
    pub deny: u64,
    /// Any other outcome.
    pub other: u64,
}

fn is_zero(n: &u64) -> bool {
    *n == 0
}

impl CountsView {
    /// The same counts with a response status.
    pub fn with_status(mut self, status: u16) -> Self {
        self.status = Some(status);
        self
    }
}

impl From<&Snapshot> for CountsView {
    fn from(snapshot: &Snapshot) -> Self {
        let decisions = &snapshot.decisions;
        CountsView {
            endpoint: snapshot.endpoint,
            status: None,
            store_calls: StoreCallCounts {
                total: snapshot.authz_store_calls,
                methods: snapshot
                    .store_calls
                    .iter()
                    .map(|stat| (stat.name, stat.count))
                    .collect(),
            },
            decisions: snapshot.groups.decisions.then_some(DecisionCounts {
                records: decisions.records,
                allow: decisions.allow,
                deny: decisions.deny,
                other: decisions.other,
            }),
            phases: snapshot
                .phases
                .iter()
                .map(|stat| (stat.name, stat.count))
                .collect(),
            sse_events: snapshot.sse_events,
            sse_stage: snapshot.sse_stage.map(|stage| stage.as_str()),
            counters: snapshot
                .counters
                .iter()
                .flat_map(|set| {
                    set.values.iter().map(|counter| {
                        (
                            format!("{}_{}", set.set.prefix, counter.rendered_name()),
                            counter.value,
                        )
                    })
                })
                .collect(),
            timers: snapshot
                .timers
                .iter()
                .flat_map(|set| {
                    set.stats
                        .iter()
                        .map(|stat| (format!("{}_{}", set.set.prefix, stat.name), stat.count))
                })
                .collect(),
        }
    }
}

impl From<&CountsView> for CountsView {
    fn from(counts: &CountsView) -> Self {
        counts.clone()
    }
}

#[cfg(feature = "tower")]
impl From<&crate::testing::TracedResponse> for CountsView {
    fn from(response: &crate::testing::TracedResponse) -> Self {
        CountsView::from(&response.snapshot).with_status(response.status.as_u16())
    }
}

/// Asserts the counts of one request against the insta snapshot `name`.
///
/// The second argument is anything a [`CountsView`] is made from: a
/// `&Snapshot`, a `&TracedResponse` (with the `tower` feature; its status is
/// kept) or a `CountsView` (or a reference to one). The view is written as YAML to
/// `snapshots/<test file>__<name>.snap` beside the test; a mismatch fails
/// the test with a diff of the keys that moved.
///
/// insta's usual settings apply: `INSTA_UPDATE=no` (the default when `CI` is
/// set) fails on a mismatch and writes nothing, `INSTA_UPDATE=always` writes
/// the new counts straight over the old, and otherwise a `.snap.new` file is
/// left for `cargo insta review`.
///
/// ```no_run
/// use perf_trace_core::assert_counts_snapshot;
/// # use perf_trace_core::{KeySet, Recorder, Schema};
/// # #[derive(KeySet, Clone, Copy, PartialEq, Eq, Debug)]
/// # #[key_set(phases)]
/// # enum Phase { Read }
/// # #[derive(KeySet, Clone, Copy, PartialEq, Eq, Debug)]
/// # #[key_set(store_methods)]
/// # enum Method { GetUser }
/// # #[derive(KeySet, Clone, Copy, PartialEq, Eq, Debug)]
/// # #[key_set(endpoints)]
/// # enum Endpoint { #[key(default)] Other }
/// # struct App;
/// # impl Schema for App { type Phase = Phase; type StoreMethod = Method; type Endpoint = Endpoint; }
///
/// let recorder = Recorder::new::<App>();
/// // ... serve a request with `recorder` in scope ...
/// assert_counts_snapshot!("member-project-list", &recorder.snapshot());
/// ```
#[macro_export]
macro_rules! assert_counts_snapshot {
    ($name:expr, $counts:expr $(,)?) => {
        $crate::snapshot::__insta::assert_yaml_snapshot!(
            $name,
            $crate::snapshot::CountsView::from($counts),
            ::core::stringify!($counts)
        )
    };
}
