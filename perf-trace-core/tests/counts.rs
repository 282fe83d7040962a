//! The count view of a snapshot (`insta` feature): every host-independent
//! count, sorted by key, and nothing else.

use std::convert::Infallible;
use std::time::Duration;

use http::{Request, Response, StatusCode};
use perf_trace_core::keys::Groups;
use perf_trace_core::snapshot::CountsView;
use perf_trace_core::testing::perf_traced_request;
use perf_trace_core::{
    assert_counts_snapshot, counted_store, record::record_decision, record::set_endpoint,
    record::Outcome, traced_phase, KeySet, Recorder, Schema, Snapshot,
};

#[derive(KeySet, Clone, Copy, PartialEq, Eq, Debug)]
#[key_set(phases)]
enum Phase {
    Render,
    Load,
    Check,
    Idle,
}

#[derive(KeySet, Clone, Copy, PartialEq, Eq, Debug)]
#[key_set(endpoints)]
enum Endpoint {
    #[key(default)]
    Other,
    #[key(rename = "things.list")]
    ThingsList,
}

#[counted_store(rename_all = "PascalCase")]
trait ThingStore {
    fn get_user(&self, id: u64) -> Option<u64>;
    fn list_things(&self, owner: u64) -> Vec<u64>;
}

struct Things;

impl ThingStore for Things {
    fn get_user(&self, id: u64) -> Option<u64> {
        Some(id)
    }
    fn list_things(&self, owner: u64) -> Vec<u64> {
        (0..owner).collect()
    }
}

struct App;

impl Schema for App {
    type Phase = Phase;
    type StoreMethod = ThingStoreMethod;
    type Endpoint = Endpoint;
    const GROUPS: Groups = Groups::SCION;
}

#[traced_phase(Phase::Load)]
fn load(store: &impl ThingStore, owner: u64) -> Vec<u64> {
    store.get_user(owner);
    store.list_things(owner)
}

#[traced_phase(Phase::Check)]
fn check(things: &[u64]) -> usize {
    for thing in things {
        record_decision(if thing % 3 == 0 {
            Outcome::Deny
        } else {
            Outcome::Allow
        });
    }
    things.len()
}

/// A request that loads `owner` things (one extra user read per thing when
/// `reread` is set), checks each, and renders twice.
fn request(owner: u64, reread: bool) -> Snapshot {
    let store = CountedThingStore::new(Things);
    let recorder = Recorder::builder()
        .method("GET")
        .request_id("00000000-0000-4000-8000-000000000001")
        .build::<App>();
    recorder.in_scope(|| {
        set_endpoint(Endpoint::ThingsList);
        let things = load(&store, owner);
        if reread {
            for &thing in &things {
                store.get_user(thing);
            }
        }
        check(&things);
        render();
        render();
    });
    recorder.snapshot()
}

#[traced_phase(Phase::Render)]
fn render() {}

#[test]
fn the_view_holds_every_count_sorted_by_key() {
    let counts = CountsView::from(&request(5, false));
    assert_eq!(counts.endpoint, "things.list");
    assert_eq!(counts.status, None);
    assert_eq!(counts.store_calls.total, 2);
    assert_eq!(
        counts.store_calls.methods.into_iter().collect::<Vec<_>>(),
        [("GetUser", 1), ("ListThings", 1)]
    );
    let decisions = counts
        .decisions
        .expect("the schema has the decisions group");
    assert_eq!(
        (
            decisions.records,
            decisions.allow,
            decisions.deny,
            decisions.other
        ),
        (5, 3, 2, 0)
    );
    // Sorted by name, not by declaration order; `idle` was never entered.
    assert_eq!(
        counts.phases.into_iter().collect::<Vec<_>>(),
        [("check", 1), ("load", 1), ("render", 2)]
    );
}

#[test]
fn the_snapshot_names_each_count() {
    assert_counts_snapshot!("things-list", &request(5, false));
}

#[test]
fn durations_request_id_and_pool_figures_never_enter_the_view() {
    let measured = request(5, false);
    let mut slower = measured.clone();
    slower.elapsed += Duration::from_millis(987_654);
    slower.authz_store_time += Duration::from_millis(876_543);
    slower.decisions.emit_time += Duration::from_millis(765_432);
    for stat in slower.phases.iter_mut().chain(&mut slower.store_calls) {
        stat.duration += Duration::from_millis(654_321);
    }
    slower.request_id = "ffffffff-ffff-4fff-bfff-ffffffffffff".into();
    slower.method = "POST";
    assert_ne!(slower, measured);

    let view = CountsView::from(&measured);
    assert_eq!(CountsView::from(&slower), view);

    let text = serde_json::to_string(&CountsView::from(&slower)).unwrap();
    for absent in [
        "987", "876", "765", "654", "ffffffff", "POST", "GET", "_us", "time",
    ] {
        assert!(!text.contains(absent), "{absent:?} in {text}");
    }
}

#[test]
fn one_extra_read_per_thing_changes_the_view_at_its_key() {
    let base = CountsView::from(&request(5, false));
    let regressed = CountsView::from(&request(5, true));
    assert_ne!(regressed, base);
    assert_eq!(regressed.store_calls.methods["GetUser"], 1 + 5);
    assert_eq!(regressed.store_calls.total, base.store_calls.total + 5);
    // Only the store calls moved.
    assert_eq!(regressed.phases, base.phases);
    assert_eq!(regressed.decisions, base.decisions);
    assert_eq!(
        regressed.store_calls.methods["ListThings"],
        base.store_calls.methods["ListThings"]
    );
}

#[tokio::test]
async fn a_traced_response_adds_its_status() {
    let service = tower::service_fn(|_: Request<()>| async {
        load(&CountedThingStore::new(Things), 2);
        Ok::<_, Infallible>(
            Response::builder()
                .status(StatusCode::NOT_FOUND)
                .body(http_body_util::Empty::<bytes::Bytes>::new())
                .unwrap(),
        )
    });
    let response = perf_traced_request::<App, _, _, _>(service, Request::new(()))
        .await
        .unwrap();
    let counts = CountsView::from(&response);
    assert_eq!(counts.status, Some(404));
    assert_eq!(counts.store_calls.total, 2);
    assert_eq!(
        counts,
        CountsView::from(&response.snapshot).with_status(404)
    );
    assert_counts_snapshot!("not-found", &response);
}
