//! What the macros' expansions record at run time: phases around sync and
//! async bodies and blocks (every way out included), and the counting store
//! decorator.

use std::future::Future;
use std::panic::{self, AssertUnwindSafe};
use std::pin::pin;
use std::task::{Context, Waker};
use std::time::Duration;

use perf_trace_core::{counted_store, traced_phase, KeySet, Recorder, Schema, Snapshot};

#[derive(KeySet, Clone, Copy, PartialEq, Eq, Debug)]
#[key_set(phases)]
enum Phase {
    ListDbRead,
    Enrich,
    Serialize,
    Capabilities,
}

#[derive(KeySet, Clone, Copy, PartialEq, Eq, Debug)]
#[key_set(endpoints)]
enum Endpoint {
    #[key(default)]
    Other,
}

/// A store whose decorator is under test.
#[counted_store(methods = StoreMethod, decorator = CountedStore, rename_all = "PascalCase")]
trait Store {
    type Error: std::fmt::Debug + PartialEq;

    fn get_user(&self, id: u64) -> Result<String, Self::Error>;

    #[counted(rename = "GetRoleDefinitionsByIDs")]
    fn get_role_definitions_by_ids(&self, ids: &[u64]) -> Vec<String>;

    fn bump(&mut self, by: u32) -> u32;

    fn sum_pair(&self, (a, b): (u32, u32), _: u8) -> u32 {
        a + b
    }

    fn parse_as<T: std::str::FromStr>(&self, text: &str) -> Option<T>;

    async fn load_project(&self, id: u64) -> Result<u64, Self::Error>;

    fn get_agent(&self, id: u64) -> impl Future<Output = Option<u64>> + Send;

    #[counted(skip)]
    fn name(&self) -> &'static str;

    fn into_total(self) -> u32
    where
        Self: Sized;
}

struct App;

impl Schema for App {
    type Phase = Phase;
    type StoreMethod = StoreMethod;
    type Endpoint = Endpoint;
}

#[derive(Debug, Clone, Default)]
struct Db {
    total: u32,
}

impl Store for Db {
    type Error = String;

    fn get_user(&self, id: u64) -> Result<String, String> {
        if id == 0 {
            Err("no user 0".to_owned())
        } else {
            Ok(format!("user-{id}"))
        }
    }

    fn get_role_definitions_by_ids(&self, ids: &[u64]) -> Vec<String> {
        ids.iter().map(|id| format!("role-{id}")).collect()
    }

    fn bump(&mut self, by: u32) -> u32 {
        self.total += by;
        self.total
    }

    fn sum_pair(&self, (a, b): (u32, u32), c: u8) -> u32 {
        a * b + u32::from(c)
    }

    fn parse_as<T: std::str::FromStr>(&self, text: &str) -> Option<T> {
        text.parse().ok()
    }

    async fn load_project(&self, id: u64) -> Result<u64, String> {
        tokio::time::sleep(Duration::from_millis(2)).await;
        if id == 0 {
            Err("no project 0".to_owned())
        } else {
            Ok(id * 10)
        }
    }

    // Written out on purpose: the decorator must time the returned future.
    #[allow(clippy::manual_async_fn)]
    fn get_agent(&self, id: u64) -> impl Future<Output = Option<u64>> + Send {
        async move { (id != 0).then_some(id + 1) }
    }

    fn name(&self) -> &'static str {
        "db"
    }

    fn into_total(self) -> u32 {
        self.total
    }
}

fn in_recorder<R>(f: impl FnOnce() -> R) -> (R, Snapshot) {
    let recorder = Recorder::new::<App>();
    let out = recorder.in_scope(f);
    (out, recorder.snapshot())
}

#[traced_phase(Phase::ListDbRead)]
fn read(ids: &[u32]) -> Result<u32, String> {
    if ids.is_empty() {
        return Err("empty".to_owned());
    }
    let first: u32 = ids[0].to_string().parse().map_err(|_| "bad".to_owned())?;
    if first == 13 {
        panic!("unlucky");
    }
    Ok(first * 2)
}

#[traced_phase(Phase::Enrich)]
fn parse_twice(text: &str) -> Result<u32, std::num::ParseIntError> {
    let n: u32 = text.parse()?;
    Ok(n * 2)
}

#[test]
fn sync_phase_counts_every_way_out() {
    let (results, snap) = in_recorder(|| {
        let ok = read(&[4]);
        let early = read(&[]);
        let err = parse_twice("x");
        let ok2 = parse_twice("21");
        let panicked = panic::catch_unwind(AssertUnwindSafe(|| read(&[13])));
        (ok, early, err.is_err(), ok2, panicked.is_err())
    });
    assert_eq!(results.0, Ok(8));
    assert_eq!(results.1, Err("empty".to_owned()));
    assert!(results.2);
    assert_eq!(results.3, Ok(42));
    assert!(results.4);
    assert_eq!(snap.phase(Phase::ListDbRead).count, 3);
    assert_eq!(snap.phase(Phase::Enrich).count, 2);
    assert_eq!(snap.phase(Phase::Serialize).count, 0);
    let names: Vec<_> = snap.phases.iter().map(|p| p.name).collect();
    assert_eq!(names, ["enrich", "list_db_read"]);
}

#[test]
fn no_recorder_records_nothing() {
    let recorder = Recorder::new::<App>();
    assert_eq!(read(&[1]), Ok(2));
    let mut db = CountedStore::new(Db::default());
    assert_eq!(db.get_user(1), Ok("user-1".to_owned()));
    assert_eq!(db.bump(2), 2);
    let snap = recorder.snapshot();
    assert!(snap.phases.is_empty());
    assert!(snap.store_calls.is_empty());
    assert_eq!(snap.authz_store_calls, 0);
}

struct Service {
    base: u32,
}

impl Service {
    #[traced_phase(Phase::Capabilities)]
    fn capabilities(&self, extra: u32) -> u32 {
        self.base + extra
    }

    #[traced_phase(Phase::Serialize)]
    async fn serialize(&self, rows: &[u32]) -> usize {
        tokio::task::yield_now().await;
        rows.len() + self.base as usize
    }
}

trait Render {
    fn render(&self) -> String;

    #[traced_phase(Phase::Serialize)]
    fn render_twice(&self) -> String {
        self.render().repeat(2)
    }
}

impl Render for Service {
    #[traced_phase(Phase::Enrich)]
    fn render(&self) -> String {
        self.base.to_string()
    }
}

#[test]
fn methods_record_their_phase() {
    let service = Service { base: 5 };
    let (out, snap) = in_recorder(|| (service.capabilities(2), service.render_twice()));
    assert_eq!(out, (7, "55".to_owned()));
    assert_eq!(snap.phase(Phase::Capabilities).count, 1);
    assert_eq!(snap.phase(Phase::Serialize).count, 1);
    assert_eq!(snap.phase(Phase::Enrich).count, 1);
}

#[traced_phase(Phase::ListDbRead)]
async fn slow_read(ms: u64) -> Result<u64, String> {
    tokio::time::sleep(Duration::from_millis(ms)).await;
    let n: u64 = ms.to_string().parse().map_err(|_| "bad".to_owned())?;
    if n == 0 {
        return Err("zero".to_owned());
    }
    Ok(n)
}

#[traced_phase(Phase::Enrich)]
fn enrich_later(n: u32) -> impl Future<Output = u32> {
    let doubled = n * 2;
    async move {
        tokio::time::sleep(Duration::from_millis(20)).await;
        doubled
    }
}

#[tokio::test]
async fn async_phase_covers_awaits() {
    let recorder = Recorder::new::<App>();
    let out = recorder
        .instrument(async {
            let a = slow_read(30).await;
            let b = slow_read(0).await;
            let c = enrich_later(4).await;
            (a, b, c)
        })
        .await;
    assert_eq!(out, (Ok(30), Err("zero".to_owned()), 8));
    let snap = recorder.snapshot();
    let read = snap.phase(Phase::ListDbRead);
    assert_eq!(read.count, 2);
    assert!(read.duration >= Duration::from_millis(30), "{read:?}");
    let enrich = snap.phase(Phase::Enrich);
    assert_eq!(enrich.count, 1);
    assert!(enrich.duration >= Duration::from_millis(20), "{enrich:?}");

    let service = Service { base: 1 };
    let n = recorder.instrument(service.serialize(&[1, 2])).await;
    assert_eq!(n, 3);
    assert_eq!(recorder.snapshot().phase(Phase::Serialize).count, 1);
}

#[tokio::test]
async fn cancelled_async_phase_counts_once() {
    let recorder = Recorder::new::<App>();
    {
        let mut future = pin!(recorder.instrument(slow_read(10_000)));
        let mut cx = Context::from_waker(Waker::noop());
        assert!(future.as_mut().poll(&mut cx).is_pending());
        assert_eq!(recorder.snapshot().phase(Phase::ListDbRead).count, 0);
    }
    assert_eq!(recorder.snapshot().phase(Phase::ListDbRead).count, 1);

    // A future dropped before its first poll never entered the phase.
    drop(recorder.instrument(slow_read(10_000)));
    assert_eq!(recorder.snapshot().phase(Phase::ListDbRead).count, 1);
}

#[tokio::test]
async fn decorator_forwards_unchanged_and_counts() {
    let plain = Db::default();
    let mut counted = CountedStore::new(Db::default());
    let recorder = Recorder::new::<App>();

    let sync = recorder.in_scope(|| {
        assert_eq!(counted.get_user(3), plain.get_user(3));
        assert_eq!(counted.get_user(0), plain.get_user(0));
        assert_eq!(counted.get_user(0), Err("no user 0".to_owned()));
        assert_eq!(
            counted.get_role_definitions_by_ids(&[1, 2]),
            plain.get_role_definitions_by_ids(&[1, 2])
        );
        assert_eq!(counted.sum_pair((3, 4), 5), plain.sum_pair((3, 4), 5));
        assert_eq!(counted.sum_pair((3, 4), 5), 17);
        assert_eq!(counted.parse_as::<u16>("12"), Some(12u16));
        assert_eq!(counted.parse_as::<u16>("x"), None);
        assert_eq!(counted.name(), "db");
        assert_eq!(counted.bump(3), 3);
        counted.bump(4)
    });
    assert_eq!(sync, 7);
    assert_eq!(counted.inner().total, 7);

    let async_results = recorder
        .instrument(async {
            (
                counted.load_project(4).await,
                counted.load_project(0).await,
                plain.load_project(0).await,
                counted.get_agent(1).await,
                counted.get_agent(0).await,
            )
        })
        .await;
    assert_eq!(
        async_results,
        (
            Ok(40),
            Err("no project 0".to_owned()),
            Err("no project 0".to_owned()),
            Some(2),
            None
        )
    );
    let total = recorder.in_scope(|| counted.clone().into_total());
    assert_eq!(total, 7);

    let snap = recorder.snapshot();
    let count = |m: StoreMethod| snap.store(m).count;
    assert_eq!(count(StoreMethod::GetUser), 3);
    assert_eq!(count(StoreMethod::GetRoleDefinitionsByIDs), 1);
    assert_eq!(count(StoreMethod::SumPair), 2);
    assert_eq!(count(StoreMethod::ParseAs), 2);
    assert_eq!(count(StoreMethod::Bump), 2);
    assert_eq!(count(StoreMethod::LoadProject), 2);
    assert_eq!(count(StoreMethod::GetAgent), 2);
    assert_eq!(count(StoreMethod::IntoTotal), 1);
    assert_eq!(snap.authz_store_calls, 15);
    assert!(snap.store(StoreMethod::LoadProject).duration >= Duration::from_millis(4));
    let names: Vec<_> = snap.store_calls.iter().map(|s| s.name).collect();
    assert_eq!(
        names,
        [
            "Bump",
            "GetAgent",
            "GetRoleDefinitionsByIDs",
            "GetUser",
            "IntoTotal",
            "LoadProject",
            "ParseAs",
            "SumPair"
        ]
    );
    // The skipped method has no key at all.
    assert_eq!(
        StoreMethod::VARIANTS,
        [
            "GetUser",
            "GetRoleDefinitionsByIDs",
            "Bump",
            "SumPair",
            "ParseAs",
            "LoadProject",
            "GetAgent",
            "IntoTotal"
        ]
    );
    assert_eq!(counted.into_inner().total, 7);
}

#[test]
fn key_set_tables() {
    assert_eq!(Phase::SET_NAME, "Phase");
    assert_eq!(
        Phase::NAMES,
        ["list_db_read", "enrich", "serialize", "capabilities"]
    );
    assert_eq!(
        Phase::VARIANTS,
        ["ListDbRead", "Enrich", "Serialize", "Capabilities"]
    );
    assert_eq!(
        Phase::ALL,
        [
            Phase::ListDbRead,
            Phase::Enrich,
            Phase::Serialize,
            Phase::Capabilities
        ]
    );
    assert_eq!(Phase::SORTED, [3, 1, 0, 2]);
    assert_eq!(Phase::Serialize.index(), 2);
    assert_eq!(Phase::INFO.names, Phase::NAMES);
    assert_eq!(Phase::INFO.sorted, Phase::SORTED);
    assert_eq!(Phase::INFO.prefix, "");
    assert!(std::ptr::eq(Phase::INFO, Phase::INFO));
}

#[test]
fn an_unknown_key_message_suggests_the_closest_key_and_lists_them_all() {
    use perf_trace_core::__private01::unknown_key;
    const MISSPELT: &str = unknown_key::<Phase>("Serialise").as_str();
    assert_eq!(
        MISSPELT,
        "`Phase` has no key `Serialise`; did you mean `Phase::Serialize`? the keys of `Phase` \
         are: Phase::ListDbRead, Phase::Enrich, Phase::Serialize, Phase::Capabilities"
    );
    // Case is ignored; a key far from every variant gets no suggestion.
    assert!(unknown_key::<Phase>("enrich")
        .as_str()
        .contains("did you mean `Phase::Enrich`?"));
    assert_eq!(
        unknown_key::<Phase>("Nope").as_str(),
        "`Phase` has no key `Nope`; the keys of `Phase` are: Phase::ListDbRead, Phase::Enrich, \
         Phase::Serialize, Phase::Capabilities"
    );
}

#[path = "macros_runtime/phase_block.rs"]
mod phase_block;

#[path = "macros_runtime/store_impl.rs"]
mod store_impl;

mod async_trait_stores {
    //! Stores written with `#[async_trait]`, in either order with
    //! `#[counted_store]`: the boxed futures are timed and counted.

    use std::time::Duration;

    use async_trait::async_trait;
    use perf_trace_core::{counted_store, traced_phase, KeySet, Recorder, Schema};

    use super::{Endpoint, Phase};

    #[counted_store(methods = GroupMethod)]
    #[async_trait]
    pub trait GroupStore: Send + Sync {
        async fn get_parent_groups(&self, id: u64) -> Result<Vec<u64>, String>;
        async fn get_group_by_slug(&self, slug: &str) -> Option<u64>;
    }

    #[async_trait]
    #[counted_store(methods = UserMethod)]
    pub trait UserStore: Send + Sync {
        async fn get_user_groups(&self, id: u64) -> Vec<u64>;
    }

    struct Groups;
    struct Users;
    struct Hub;

    #[async_trait]
    impl GroupStore for Groups {
        async fn get_parent_groups(&self, id: u64) -> Result<Vec<u64>, String> {
            tokio::time::sleep(Duration::from_millis(5)).await;
            if id == 0 {
                return Err("no group 0".to_owned());
            }
            Ok(vec![id, id + 1])
        }

        async fn get_group_by_slug(&self, slug: &str) -> Option<u64> {
            slug.parse().ok()
        }
    }

    #[async_trait]
    impl UserStore for Users {
        async fn get_user_groups(&self, id: u64) -> Vec<u64> {
            tokio::time::sleep(Duration::from_millis(5)).await;
            vec![id * 2]
        }
    }

    trait Handler {
        async fn handle(&self, n: u64) -> Result<u64, String>;
    }

    impl Handler for Hub {
        #[traced_phase(Phase::Serialize)]
        async fn handle(&self, n: u64) -> Result<u64, String> {
            tokio::time::sleep(Duration::from_millis(5)).await;
            let m: u64 = n.to_string().parse().map_err(|_| "bad".to_owned())?;
            Ok(m + 1)
        }
    }

    struct GroupApp;
    impl Schema for GroupApp {
        type Phase = Phase;
        type StoreMethod = GroupMethod;
        type Endpoint = Endpoint;
    }

    struct UserApp;
    impl Schema for UserApp {
        type Phase = Phase;
        type StoreMethod = UserMethod;
        type Endpoint = Endpoint;
    }

    #[tokio::test]
    async fn boxed_futures_are_timed_and_counted() {
        let groups = CountedGroupStore::new(Groups);
        let recorder = Recorder::new::<GroupApp>();
        let out = recorder
            .instrument(async {
                (
                    groups.get_parent_groups(3).await,
                    groups.get_parent_groups(0).await,
                    groups.get_group_by_slug("7").await,
                    Hub.handle(1).await,
                )
            })
            .await;
        assert_eq!(
            out,
            (Ok(vec![3, 4]), Err("no group 0".to_owned()), Some(7), Ok(2))
        );
        let snap = recorder.snapshot();
        let parents = snap.store(GroupMethod::GetParentGroups);
        assert_eq!(parents.count, 2);
        assert!(parents.duration >= Duration::from_millis(10), "{parents:?}");
        assert_eq!(snap.store(GroupMethod::GetGroupBySlug).count, 1);
        let handle = snap.phase(Phase::Serialize);
        assert_eq!(handle.count, 1);
        assert!(handle.duration >= Duration::from_millis(5), "{handle:?}");

        let users = CountedUserStore::new(Users);
        let recorder = Recorder::new::<UserApp>();
        let out = recorder.instrument(users.get_user_groups(4)).await;
        assert_eq!(out, [8]);
        let snap = recorder.snapshot();
        let calls = snap.store(UserMethod::GetUserGroups);
        assert_eq!(calls.count, 1);
        assert!(calls.duration >= Duration::from_millis(5), "{calls:?}");
        assert_eq!(
            GroupMethod::NAMES,
            ["get_parent_groups", "get_group_by_slug"]
        );
    }
}
