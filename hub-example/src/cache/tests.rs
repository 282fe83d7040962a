//! The cache's single-flight, expiry and invalidation, on a clock the tests
//! move and computations the tests release.

use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};

use tokio::sync::watch;

use super::*;
use crate::perf::keys::HubSchema;
use perf_trace_core::Recorder;

const ROUTE: CacheRoute = CacheRoute::AgentsProject;

fn key(cache: &ResponseCache, project: &str) -> CacheKey {
    CacheKey {
        route: ROUTE,
        path_id: Some(project.to_owned()),
        query: String::new(),
        caller: CallerKey::Anyone,
        stamp: cache.generations().of_scope(project),
    }
}

/// A cache on a clock the test sets, in milliseconds.
fn cache_at(ttl_ms: u64) -> (ResponseCache, Arc<AtomicU64>) {
    let now = Arc::new(AtomicU64::new(1_000));
    let clock = now.clone();
    let settings = CacheSettings::default().with_ttl(ROUTE, Duration::from_millis(ttl_ms));
    let cache = ResponseCache::with_clock(settings, Arc::new(move || clock.load(Ordering::SeqCst)));
    (cache, now)
}

fn counts(cache: &ResponseCache) -> (u64, u64, u64) {
    let stats = cache.stats();
    (
        stats.count(ROUTE, CacheOutcome::Hit),
        stats.count(ROUTE, CacheOutcome::Miss),
        stats.count(ROUTE, CacheOutcome::Shared),
    )
}

/// Lets every spawned task run until it waits (current-thread runtime).
async fn settle() {
    for _ in 0..50 {
        tokio::task::yield_now().await;
    }
}

type Outcome = Result<Bytes, String>;

/// Spawns `n` requests for the same key; each computation counts itself
/// and then waits for `release` and answers with what it holds.
fn spawn_requests(
    cache: &ResponseCache,
    n: usize,
    computations: &Arc<AtomicUsize>,
    release: &watch::Receiver<Option<Outcome>>,
) -> Vec<tokio::task::JoinHandle<Outcome>> {
    (0..n)
        .map(|_| {
            let (cache, computations, mut release) =
                (cache.clone(), computations.clone(), release.clone());
            tokio::spawn(async move {
                let key = key(&cache, "p1");
                cache
                    .get_or_compute(key, || async move {
                        computations.fetch_add(1, Ordering::SeqCst);
                        let answer = release.wait_for(Option::is_some).await.unwrap();
                        answer.clone().unwrap()
                    })
                    .await
            })
        })
        .collect()
}

/// Sends `n` concurrent first requests for one key and releases their
/// computation with `outcome`; checks that it ran once, as one miss the
/// others shared. The cache and each request's answer.
async fn one_flight(n: usize, outcome: Outcome) -> (ResponseCache, Vec<Outcome>) {
    let (cache, _now) = cache_at(5_000);
    let computations = Arc::new(AtomicUsize::new(0));
    let (release, released) = watch::channel(None);
    let requests = spawn_requests(&cache, n, &computations, &released);
    settle().await;
    release.send(Some(outcome)).unwrap();
    let mut answers = Vec::new();
    for request in requests {
        answers.push(request.await.unwrap());
    }
    assert_eq!(computations.load(Ordering::SeqCst), 1);
    assert_eq!(counts(&cache), (0, 1, n as u64 - 1));
    (cache, answers)
}

#[tokio::test(flavor = "current_thread")]
async fn concurrent_first_requests_make_one_miss_and_share_it() {
    const N: usize = 16;
    let (cache, answers) = one_flight(N, Ok(Bytes::from_static(b"[1]"))).await;
    for answer in answers {
        assert_eq!(answer.unwrap(), Bytes::from_static(b"[1]"));
    }
    // Stored now: the next request is a hit and computes nothing.
    let again = cache
        .get_or_compute(key(&cache, "p1"), || async {
            Err::<Bytes, _>("recomputed".to_owned())
        })
        .await;
    assert_eq!(again.unwrap(), Bytes::from_static(b"[1]"));
    assert_eq!(counts(&cache), (1, 1, N as u64 - 1));
}

#[tokio::test(flavor = "current_thread")]
async fn an_error_reaches_the_waiters_and_is_not_stored() {
    const N: usize = 5;
    let (cache, answers) = one_flight(N, Err("database busy".to_owned())).await;
    for answer in answers {
        assert_eq!(answer.unwrap_err(), "database busy");
    }
    // Nothing was stored: the next request computes again.
    let next = cache
        .get_or_compute(key(&cache, "p1"), || async {
            Ok::<_, String>(Bytes::from_static(b"ok"))
        })
        .await;
    assert_eq!(next.unwrap(), Bytes::from_static(b"ok"));
    assert_eq!(counts(&cache), (0, 2, N as u64 - 1));
}

#[tokio::test(flavor = "current_thread")]
async fn a_cancelled_leader_lets_a_waiter_compute() {
    let (cache, _now) = cache_at(5_000);
    let leader = {
        let cache = cache.clone();
        tokio::spawn(async move {
            cache
                .get_or_compute(key(&cache, "p1"), || {
                    std::future::pending::<Result<Bytes, String>>()
                })
                .await
        })
    };
    settle().await;
    let waiter = {
        let cache = cache.clone();
        tokio::spawn(async move {
            cache
                .get_or_compute(key(&cache, "p1"), || async {
                    Ok::<_, String>(Bytes::from_static(b"from the waiter"))
                })
                .await
        })
    };
    settle().await;
    assert!(!waiter.is_finished(), "the waiter waits for the leader");
    leader.abort();
    assert!(leader.await.unwrap_err().is_cancelled());
    assert_eq!(
        waiter.await.unwrap().unwrap(),
        Bytes::from_static(b"from the waiter")
    );
    // The cancelled request recorded nothing; the waiter computed.
    assert_eq!(counts(&cache), (0, 1, 0));
}

#[tokio::test(flavor = "current_thread")]
async fn entries_expire_after_the_ttl_on_the_cache_clock() {
    let (cache, now) = cache_at(2_000);
    let computations = AtomicUsize::new(0);
    let get = || {
        cache.get_or_compute(key(&cache, "p1"), || async {
            let n = computations.fetch_add(1, Ordering::SeqCst) + 1;
            Ok::<_, String>(Bytes::from(n.to_string()))
        })
    };
    assert_eq!(get().await.unwrap(), "1");
    now.fetch_add(1_999, Ordering::SeqCst);
    assert_eq!(get().await.unwrap(), "1", "fresh until the TTL");
    now.fetch_add(1, Ordering::SeqCst);
    assert_eq!(
        get().await.unwrap(),
        "2",
        "stale at the TTL: computed again"
    );
    assert_eq!(get().await.unwrap(), "2");
    assert_eq!(counts(&cache), (2, 2, 0));
}

#[tokio::test(flavor = "current_thread")]
async fn a_write_invalidates_what_it_changed_only() {
    let (cache, _now) = cache_at(5_000);
    let computations = AtomicUsize::new(0);
    let shared = &cache;
    let get = |project: &'static str| {
        let cache = shared;
        let key = key(cache, project);
        let computations = &computations;
        async move {
            cache
                .get_or_compute(key, || async move {
                    let n = computations.fetch_add(1, Ordering::SeqCst) + 1;
                    Ok::<_, String>(Bytes::from(format!("{project}-{n}")))
                })
                .await
                .unwrap()
        }
    };
    assert_eq!(get("p1").await, "p1-1");
    assert_eq!(get("p2").await, "p2-2");
    cache
        .generations()
        .agent_changed(&crate::model::Id::from("a1"), &crate::model::Id::from("p1"));
    assert_eq!(
        get("p1").await,
        "p1-3",
        "the written project is computed again"
    );
    assert_eq!(get("p2").await, "p2-2", "another project keeps its entry");
    cache.generations().everything_changed();
    assert_eq!(get("p2").await, "p2-4");
}

#[tokio::test(flavor = "current_thread")]
async fn a_route_off_computes_every_time_and_records_nothing() {
    let cache = ResponseCache::new(CacheSettings::default().with_ttl(ROUTE, Duration::ZERO));
    let off = ResponseCache::new(CacheSettings::disabled());
    for cache in [cache, off] {
        let computations = AtomicUsize::new(0);
        for _ in 0..3 {
            cache
                .get_or_compute(key(&cache, "p1"), || async {
                    computations.fetch_add(1, Ordering::SeqCst);
                    Ok::<_, String>(Bytes::new())
                })
                .await
                .unwrap();
        }
        assert_eq!(computations.load(Ordering::SeqCst), 3);
        assert_eq!(counts(&cache), (0, 0, 0));
    }
}

#[tokio::test(flavor = "current_thread")]
async fn each_request_records_its_own_outcome_in_its_line() {
    let (cache, _now) = cache_at(5_000);
    let first = Recorder::new::<HubSchema>();
    let second = Recorder::new::<HubSchema>();
    for recorder in [&first, &second] {
        recorder
            .instrument(cache.get_or_compute(key(&cache, "p1"), || async {
                Ok::<_, String>(Bytes::from_static(b"{}"))
            }))
            .await
            .unwrap();
    }
    let (first, second) = (first.snapshot(), second.snapshot());
    assert_eq!(first.counter_by(ROUTE, CacheOutcome::Miss), 1);
    assert_eq!(first.counter_by(ROUTE, CacheOutcome::Hit), 0);
    assert_eq!(second.counter_by(ROUTE, CacheOutcome::Hit), 1);
    assert_eq!(second.counter_by(ROUTE, CacheOutcome::Miss), 0);
    assert_eq!(second.authz_store_calls, 0);
}
