//! Tracing's cost on the Hub's own router, with no network: the demo's three
//! agent-list requests at 25, 100 and 500 agents, against a traced and an
//! untraced Hub over the same seeded database, interleaved.
//!
//! ```text
//! cargo bench -p hub-bench --bench router_on_off
//! ```
//!
//! Each criterion benchmark times one side, and sends the other side's
//! request between its own (alternating which goes first), so both sides
//! see the same machine at the same moments. Every pair is also kept, and
//! the run ends with one table: per scenario and size, the median traced
//! and untraced request and their ratio (the figure the README quotes).
//! `ROUTER_BENCH_SIZES=25,100` limits the sizes. `ROUTER_BENCH_CACHED=1`
//! serves both Hubs with the response cache on (its default settings):
//! after criterion's warm-up every timed request is a cache hit, where the
//! fixed cost of a traced request shows whole, in time where
//! `on_off_instructions --cached` counts it in instructions.

use std::time::{Duration, Instant};

use criterion::Criterion;
use parking_lot::Mutex;

#[path = "support/in_process.rs"]
mod in_process;

/// Per scenario and size, every timed request of each side, in nanoseconds.
struct Samples {
    rows: Vec<(String, u32, Vec<u64>, Vec<u64>)>,
}

fn median(values: &mut [u64]) -> f64 {
    values.sort_unstable();
    let n = values.len();
    if n == 0 {
        return f64::NAN;
    }
    if n % 2 == 1 {
        values[n / 2] as f64
    } else {
        (values[n / 2 - 1] + values[n / 2]) as f64 / 2.0
    }
}

fn sizes() -> Vec<u32> {
    match std::env::var("ROUTER_BENCH_SIZES") {
        Ok(list) => list
            .split(',')
            .map(|s| {
                s.trim()
                    .parse()
                    .unwrap_or_else(|_| panic!("ROUTER_BENCH_SIZES: {s:?} is not a size"))
            })
            .collect(),
        Err(_) => vec![25, 100, 500],
    }
}

/// Whether both Hubs serve with the response cache on.
fn cached() -> bool {
    match std::env::var("ROUTER_BENCH_CACHED").as_deref() {
        Ok("1") => true,
        Ok("0") | Err(_) => false,
        Ok(other) => panic!("ROUTER_BENCH_CACHED: {other:?} is not 0 or 1"),
    }
}

fn main() {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("a tokio runtime");
    let dir = tempfile::tempdir().expect("a temporary folder");
    let mut criterion = Criterion::default()
        .sample_size(20)
        .warm_up_time(Duration::from_secs(1))
        .measurement_time(Duration::from_secs(3))
        .configure_from_args();
    let samples = Mutex::new(Samples { rows: Vec::new() });
    let cached = cached();
    let interval = hub_example::perf::LINE_FLUSH_INTERVAL;

    for agents in sizes() {
        let seed = in_process::seed(dir.path(), agents).expect("seed a Hub");
        let db = dir.path().join(format!("hub{agents}.db"));
        let hub = |traced: bool, log: &str| {
            let log = dir.path().join(format!("{log}-{agents}.log"));
            in_process::hub_writing_every(&db, traced, &log, interval, cached)
        };
        let on = hub(true, "on").expect("the traced Hub").router();
        let off = hub(false, "off").expect("the untraced Hub").router();
        let token = seed.member_token.clone();
        for scenario in in_process::scenarios(&seed) {
            let row = {
                let mut s = samples.lock();
                s.rows
                    .push((scenario.name.to_owned(), agents, Vec::new(), Vec::new()));
                s.rows.len() - 1
            };
            // One request of each side, timed; `first_on` says which goes first.
            let pair = |first_on: bool| {
                runtime.block_on(async {
                    let mut times = [0u64; 2];
                    for traced in [first_on, !first_on] {
                        let router = if traced { &on } else { &off };
                        let start = Instant::now();
                        in_process::get(router, &scenario, &token)
                            .await
                            .expect("a 200 answer");
                        times[usize::from(!traced)] = start.elapsed().as_nanos() as u64;
                    }
                    let mut s = samples.lock();
                    s.rows[row].2.push(times[0]);
                    s.rows[row].3.push(times[1]);
                    times
                })
            };
            let mut group = criterion.benchmark_group(format!("{}/{agents}", scenario.name));
            for (side, index) in [("on", 0), ("off", 1)] {
                group.bench_function(side, |b| {
                    b.iter_custom(|iters| {
                        (0..iters)
                            .map(|i| Duration::from_nanos(pair(i % 2 == 0)[index]))
                            .sum()
                    })
                });
            }
            group.finish();
        }
    }
    criterion.final_summary();

    let mut samples = samples.into_inner();
    println!();
    if cached {
        println!("(response cache on: cache hits)");
    }
    println!("scenario                     agents  on ms     off ms    on/off  pairs");
    println!("---------------------------  ------  --------  --------  ------  -----");
    for (name, agents, on, off) in &mut samples.rows {
        let pairs = on.len();
        let (on, off) = (median(on), median(off));
        println!(
            "{name:<27}  {agents:>6}  {:>8.3}  {:>8.3}  {:>6.3}  {pairs:>5}",
            on / 1e6,
            off / 1e6,
            on / off
        );
    }
}
