//! Lines written in batches: an emitter buffering each thread's lines
//! writes the same lines as one writing each at once, loses
//! none when flushed or dropped (nor the lines of threads that are gone),
//! keeps each thread's lines in order, and hands them to the exits.

mod common;

use std::convert::Infallible;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use bytes::Bytes;
use common::{Batch, Cache, Captured, Endpoint, ListPolicy, Method, Phase, Render, TestSchema};
use http::{Request, Response};
use http_body_util::{BodyExt, Full};
use perf_trace_core::__private01::TimedGuard;
use perf_trace_core::exits::{FinishedRequest, RequestSink};
use perf_trace_core::record::{PoolFigures, PoolStats};
use perf_trace_core::{
    record::count_by, record::count_n, time, traced_phase, Emitter, LineFormat, LineSink,
    PerfTraceLayer,
};
use tower::{service_fn, Layer, Service, ServiceExt};

#[traced_phase(Phase::Load)]
fn load() {}

async fn handler(_: Request<()>) -> Result<Response<Full<Bytes>>, Infallible> {
    load();
    load();
    Ok(Response::new(Full::new(Bytes::from_static(b"[]"))))
}

/// An emitter of Scion lines into `writer` from the emitter's own thread,
/// whose interval is an hour: only a full chunk or a flush wakes it in a test.
fn hourly_background(writer: impl std::io::Write + Send + 'static) -> Emitter {
    Emitter::new(LineFormat::scion("svc"), LineSink::new(writer))
        .in_background(Duration::from_secs(3600))
}

/// Sends `n` requests through a layer writing with `emitter`, reading each
/// body to its end.
async fn requests(emitter: &Emitter, n: usize) {
    let service = PerfTraceLayer::<TestSchema, _>::new(ListPolicy, emitter.clone())
        .layer(service_fn(handler));
    for _ in 0..n {
        send(&service).await;
    }
}

/// Sends one request to `service` and reads its body to the end (the line
/// is finished as the body ends).
async fn send<S, B>(service: &S)
where
    S: Service<Request<()>, Response = Response<B>, Error = Infallible> + Clone,
    B: http_body::Body,
    B::Error: std::fmt::Debug,
{
    let response = service
        .clone()
        .oneshot(Request::get("/things").body(()).unwrap())
        .await
        .unwrap();
    response.into_body().collect().await.unwrap();
}

/// Waits up to `limit` for `captured` to hold `n` lines.
fn wait_for_lines(captured: &Captured, n: usize, limit: Duration) -> usize {
    let start = Instant::now();
    while captured.lines().len() < n && start.elapsed() < limit {
        std::thread::sleep(Duration::from_millis(5));
    }
    captured.lines().len()
}

/// Every line's fields but the ones that differ from request to request.
fn stable_fields(line: &serde_json::Value) -> Vec<(String, serde_json::Value)> {
    line.as_object()
        .unwrap()
        .iter()
        .filter(|(k, _)| !matches!(k.as_str(), "time" | "request_id") && !k.ends_with("_us"))
        .map(|(k, v)| (k.clone(), v.clone()))
        .collect()
}

#[tokio::test]
async fn background_lines_match_inline_lines_and_none_is_lost() {
    let inline = Captured::default();
    let emitter = Emitter::new(LineFormat::scion("svc"), LineSink::new(inline.clone()));
    requests(&emitter, 3).await;

    let background = Captured::default();
    let emitter = hourly_background(background.clone());
    requests(&emitter, 3).await;
    // Buffered for a thread that would wait an hour: flush writes them now.
    emitter.flush();
    let (inline, background) = (inline.json_lines(), background.json_lines());
    assert_eq!(background.len(), 3);
    for (a, b) in inline.iter().zip(&background) {
        assert_eq!(stable_fields(a), stable_fields(b));
        assert_eq!(b["phase_load_n"], 2);
        assert_eq!(b["request_id"].as_str().map(str::len), Some(36));
    }
}

#[tokio::test]
async fn the_background_thread_writes_on_its_interval_and_the_last_emitter_writes_the_rest() {
    let captured = Captured::default();
    let emitter = Emitter::new(LineFormat::scion("svc"), LineSink::new(captured.clone()))
        .in_background(Duration::from_millis(20));
    requests(&emitter, 2).await;
    assert_eq!(wait_for_lines(&captured, 2, Duration::from_secs(5)), 2);

    let captured = Captured::default();
    let emitter = hourly_background(captured.clone());
    requests(&emitter, 4).await;
    drop(emitter);
    assert_eq!(captured.lines().len(), 4);
}

/// Counts the requests handed to it.
#[derive(Default)]
struct Counting(AtomicUsize);

impl RequestSink for Counting {
    fn record(&self, request: &FinishedRequest<'_>) {
        assert!(request.line.is_some());
        self.0.fetch_add(1, Ordering::Relaxed);
    }
}

#[tokio::test]
async fn exits_added_after_the_background_thread_started_see_every_request() {
    let counting = Arc::new(Counting::default());
    let emitter = Emitter::new(LineFormat::scion("svc"), LineSink::new(std::io::sink()))
        .in_background(Duration::from_secs(3600))
        .with_sink(Arc::clone(&counting));
    requests(&emitter, 5).await;
    emitter.flush();
    assert_eq!(counting.0.load(Ordering::Relaxed), 5);
}

/// A pool whose waits grow by `step` each time its figures are read.
struct SteppingPool {
    waits: AtomicU64,
    step: u64,
}

impl PoolStats for SteppingPool {
    fn pool_figures(&self) -> PoolFigures {
        let waits = self.waits.fetch_add(self.step, Ordering::Relaxed);
        PoolFigures {
            wait_count: waits,
            wait_time: Duration::from_micros(waits * 10),
            in_use: 1,
            open: self.step,
        }
    }
}

#[tokio::test]
async fn reused_recorders_start_clean_whichever_layer_and_pool_reuses_them() {
    let captured = Captured::default();
    let emitter = hourly_background(captured.clone());
    // Two layers over one emitter, each with a pool of its own: a recorder
    // written for one is reused by either.
    let layer = |step| {
        PerfTraceLayer::<TestSchema, _>::new(ListPolicy, emitter.clone())
            .with_pool(Arc::new(SteppingPool {
                waits: AtomicU64::new(0),
                step,
            }))
            .layer(service_fn(handler))
    };
    let (five, seven) = (layer(5), layer(7));
    let mut order = [(&five, 5), (&seven, 7), (&five, 5)];
    let mut steps = Vec::new();
    for round in 0..4 {
        // Turned each round, so that a recorder goes from one pool's
        // request to the other's.
        order.rotate_left(1);
        for (service, step) in order {
            steps.push(step);
            send(service).await;
        }
        // Written, their recorders go back for the next round.
        emitter.flush();
        assert_eq!(captured.lines().len(), 3 * (round + 1));
    }
    let lines = captured.json_lines();
    let mut ids: Vec<_> = lines.iter().map(|l| l["request_id"].clone()).collect();
    ids.sort_by_key(|id| id.to_string());
    ids.dedup();
    assert_eq!(ids.len(), 12, "every request has an id of its own");
    for (i, (line, step)) in lines.iter().zip(steps).enumerate() {
        assert_eq!(line["phase_load_n"], 2, "line {i}");
        assert_eq!(line["db_wait_count"], step, "line {i}");
        assert_eq!(line["db_wait_us"], step * 10, "line {i}");
        assert_eq!(line["db_open"], step, "line {i}");
    }
}

/// Records what the request's query names: `load` (a phase, a store call,
/// a timer, a paired counter and a max counter) or `check` (another phase
/// and another paired counter).
async fn by_query(request: Request<()>) -> Result<Response<Full<Bytes>>, Infallible> {
    match request.uri().query() {
        Some("load") => {
            load();
            drop(TimedGuard::store_call(Method::GetUser));
            time(Render::Footer, || ());
            count_by(Endpoint::ThingsList, Cache::Miss);
            count_n(Batch::Largest, 4);
        }
        _ => {
            check();
            count_by(Endpoint::Other, Cache::Hit);
        }
    }
    Ok(Response::new(Full::new(Bytes::from_static(b"[]"))))
}

#[traced_phase(Phase::Check)]
fn check() {}

#[tokio::test]
async fn a_reused_recorder_keeps_nothing_of_the_keys_its_last_request_touched() {
    let captured = Captured::default();
    let emitter = hourly_background(captured.clone());
    let service = PerfTraceLayer::<TestSchema, _>::new(ListPolicy, emitter.clone())
        .layer(service_fn(by_query));
    for query in ["load", "check", "load", "load", "check"] {
        let uri = format!("/things?{query}");
        let response = service
            .clone()
            .oneshot(Request::get(uri).body(()).unwrap())
            .await
            .unwrap();
        response.into_body().collect().await.unwrap();
        // Written, the recorder goes back to this thread for the next one.
        emitter.flush();
    }
    let lines = captured.json_lines();
    assert_eq!(lines.len(), 5);
    for (i, line) in lines.iter().enumerate() {
        // Every count field of the line: phases, store methods, timers.
        let counts: Vec<(&str, u64)> = line
            .as_object()
            .unwrap()
            .iter()
            .filter(|(k, _)| k.ends_with("_n"))
            .map(|(k, v)| (k.as_str(), v.as_u64().unwrap()))
            .collect();
        // And every counter (the object's keys are sorted).
        let counters: Vec<(&str, u64)> = line
            .as_object()
            .unwrap()
            .iter()
            .filter(|(k, _)| k.starts_with("cache_") || k.starts_with("authz_batch_"))
            .map(|(k, v)| (k.as_str(), v.as_u64().unwrap()))
            .collect();
        let expected_counters = match i {
            1 | 4 => vec![("cache_other_hit", 1)],
            _ => vec![("authz_batch_largest", 4), ("cache_things.list_miss", 1)],
        };
        assert_eq!(counters, expected_counters, "line {i}: {line}");
        let (expected, store_calls) = match i {
            1 | 4 => (vec![("phase_check_n", 1), ("phase_serialize_n", 1)], 0),
            _ => (
                vec![
                    ("phase_load_n", 1),
                    ("phase_serialize_n", 1),
                    ("render_footer_n", 1),
                    ("store_GetUser_n", 1),
                ],
                1,
            ),
        };
        assert_eq!(counts, expected, "line {i}: {line}");
        assert_eq!(line["authz_store_calls"], store_calls, "line {i}: {line}");
    }
}

/// Records `Phase::Load` as many times as the request's query says.
async fn counted(request: Request<()>) -> Result<Response<Full<Bytes>>, Infallible> {
    let n: u32 = request.uri().query().unwrap().parse().unwrap();
    for _ in 0..n {
        load();
    }
    Ok(Response::new(Full::new(Bytes::from_static(b"[]"))))
}

/// Serves one `counted` request per number, one after the other, on a
/// runtime of this thread's own, traced into `emitter`; `after` is given
/// each number once its response's body is read.
fn serve_counted(
    emitter: Emitter,
    numbers: impl IntoIterator<Item = u32>,
    mut after: impl FnMut(u32),
) {
    let service =
        PerfTraceLayer::<TestSchema, _>::new(ListPolicy, emitter).layer(service_fn(counted));
    let runtime = tokio::runtime::Builder::new_current_thread()
        .build()
        .unwrap();
    runtime.block_on(async {
        for n in numbers {
            let request = Request::get(format!("/things?{n}")).body(()).unwrap();
            let response = service.clone().oneshot(request).await.unwrap();
            response.into_body().collect().await.unwrap();
            after(n);
        }
    });
}

#[test]
fn every_thread_s_lines_are_written_once_in_order_also_after_the_thread_is_gone() {
    const THREADS: u32 = 4;
    // Past four times the 64 KiB (100 to 140 of these lines) a thread's
    // buffer holds before it is handed to the emitter's thread as a chunk.
    const PER_THREAD: u32 = 700;
    let captured = Captured::default();
    let emitter = hourly_background(captured.clone());
    let threads: Vec<_> = (0..THREADS)
        .map(|thread| {
            let emitter = emitter.clone();
            std::thread::spawn(move || {
                // At least one: a phase never entered has no field.
                let numbers = (0..PER_THREAD).map(|i| thread * 1000 + i + 1);
                serve_counted(emitter, numbers, |_| ());
            })
        })
        .collect();
    for thread in threads {
        thread.join().unwrap();
    }
    // A thread with four chunks waiting wakes the emitter's thread, which
    // writes them before its interval (an hour here). Woken, it writes
    // every thread's chunks, so a thread whose three were written with
    // another's four may not gather four again: only the first four
    // chunks of one thread are sure to be written early.
    let deadline = Instant::now() + Duration::from_secs(30);
    let mut written_early = captured.lines().len();
    while written_early < 4 * 100 && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(10));
        written_early = captured.lines().len();
    }
    assert!(
        written_early >= 4 * 100,
        "a thread's four full buffers were written: {written_early}"
    );
    assert!(written_early < (THREADS * PER_THREAD) as usize);
    // The threads are gone; their buffers still hold the rest.
    emitter.flush();
    let lines = captured.json_lines();
    assert_eq!(lines.len(), (THREADS * PER_THREAD) as usize);
    let mut next = vec![0; THREADS as usize];
    for line in &lines {
        let n = line["phase_load_n"].as_u64().unwrap() as u32;
        let (thread, i) = ((n / 1000) as usize, n % 1000 - 1);
        assert_eq!(i, next[thread], "thread {thread}'s lines in order");
        next[thread] += 1;
    }
    assert_eq!(next, vec![PER_THREAD; THREADS as usize]);
    // Nothing is left to write twice.
    emitter.flush();
    drop(emitter);
    assert_eq!(captured.lines().len(), (THREADS * PER_THREAD) as usize);
}

#[test]
fn a_thread_s_first_chunks_wait_for_the_interval_with_no_wake_up() {
    // Three chunks of about 140 lines: fewer than wake the emitter's thread.
    const REQUESTS: u32 = 450;
    let captured = Captured::default();
    let emitter = hourly_background(captured.clone());
    serve_counted(emitter.clone(), 1..=REQUESTS, |_| ());
    // Nothing wakes the emitter's thread, whose interval is an hour.
    std::thread::sleep(Duration::from_millis(300));
    assert_eq!(captured.lines().len(), 0);
    emitter.flush();
    assert_eq!(captured.lines().len(), REQUESTS as usize);
}

/// A sink whose writes from the emitter's thread wait until it is opened.
#[derive(Clone, Default)]
struct GatedSink {
    captured: Captured,
    open: Arc<(std::sync::Mutex<bool>, std::sync::Condvar)>,
}

impl GatedSink {
    fn open(&self) {
        *self.open.0.lock().unwrap() = true;
        self.open.1.notify_all();
    }
}

impl std::io::Write for GatedSink {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        if std::thread::current().name() == Some("perf-trace-lines") {
            let (open, opened) = &*self.open;
            let _open = opened.wait_while(open.lock().unwrap(), |open| !*open);
        }
        self.captured.write(buf)
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

#[test]
fn a_thread_whose_chunks_pile_up_behind_a_stuck_sink_waits_and_loses_nothing() {
    const REQUESTS: u32 = 3_000;
    let sink = GatedSink::default();
    let emitter = hourly_background(sink.clone());
    let done = Arc::new(AtomicU64::new(0));
    let requests = std::thread::spawn({
        let (done, emitter) = (Arc::clone(&done), emitter.clone());
        move || {
            serve_counted(emitter, 1..=REQUESTS, |n| {
                done.store(u64::from(n), Ordering::Relaxed)
            })
        }
    });
    // The emitter's thread, woken by the fourth chunk (each about 140
    // lines), takes the four and is stuck on the first; past eight more
    // waiting, the request thread waits to write its own. It is taken as
    // stopped once a window passes with no request done: on a loaded
    // machine it may still be short of where it stops when the first
    // requests are counted.
    let deadline = Instant::now() + Duration::from_secs(60);
    let mut held = done.load(Ordering::Relaxed);
    while Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(300));
        let now = done.load(Ordering::Relaxed);
        if now == held && now >= 1_700 {
            break;
        }
        held = now;
    }
    std::thread::sleep(Duration::from_millis(300));
    assert_eq!(done.load(Ordering::Relaxed), held, "the requests wait");
    assert!(
        (1_700..2_200).contains(&held),
        "at most thirteen chunks and a buffer wait: {held}"
    );
    sink.open();
    requests.join().unwrap();
    emitter.flush();
    let counts: Vec<u64> = sink
        .captured
        .json_lines()
        .iter()
        .map(|l| l["phase_load_n"].as_u64().unwrap())
        .collect();
    assert_eq!(counts, (1..=u64::from(REQUESTS)).collect::<Vec<_>>());
    drop(emitter);
    assert_eq!(sink.captured.lines().len(), REQUESTS as usize);
}
