//! Tracing's cost on the Hub's own router, with no network: the demo's three
//! agent-list requests at 25, 100 and 500 agents, against Hubs over the same
//! seeded database, interleaved: untraced (`off`), traced by perf-trace
//! (`on`), perf-trace tail-sampled keeping 1 in 100 (`sampled`) and, with
//! the feature `peers`, the peers: tower-http's `TraceLayer` with
//! tracing-subscriber's JSON lines (`tower-http`), and that with a
//! `tracing` span at every phase and store call (`spans`).
//!
//! ```text
//! cargo bench -p hub-bench --bench router_on_off
//! cargo bench -p hub-bench --features peers --bench router_on_off
//! ```
//!
//! Each criterion benchmark times one side, and sends every other side's
//! request between its own (rotating which goes first), so all sides see
//! the same machine at the same moments. Every round is also kept, and the
//! run ends with one table: per scenario and size, each side's median
//! request and its ratio over the untraced one (the figure the README
//! quotes). `ROUTER_BENCH_SIZES=25,100` limits the sizes.
//! `ROUTER_BENCH_CACHED=1` serves every Hub with the response cache on (its
//! default settings): after criterion's warm-up every timed request is a
//! cache hit, where the fixed cost of a traced request shows whole, in time
//! where `on_off_instructions --cached` counts it in instructions. The
//! peers' subscriber is the process's, switched to the side whose request
//! is sent (all callsites off for the others), and writes to a file.

use std::time::{Duration, Instant};

use criterion::Criterion;
use parking_lot::Mutex;

#[path = "support/in_process.rs"]
mod in_process;
use in_process::Side;

/// Per scenario and size, every timed request of each side (in the order
/// of [`Side::all`]), in nanoseconds.
struct Samples {
    rows: Vec<(String, u32, Vec<Vec<u64>>)>,
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
    let sides = Side::all();
    #[cfg(feature = "peers")]
    let switch = {
        let out = std::fs::File::create(dir.path().join("peers.log")).expect("the peers' log");
        Mutex::new(
            hub_example::perf::peers::PeerSwitch::install(out).expect("the peers' subscriber"),
        )
    };

    for agents in sizes() {
        let seed = in_process::seed(dir.path(), agents).expect("seed a Hub");
        let db = dir.path().join(format!("hub{agents}.db"));
        let routers: Vec<_> = sides
            .iter()
            .map(|&side| {
                let log = dir.path().join(format!("{}-{agents}.log", side.name()));
                in_process::side_hub(side, &db, &log, interval, cached)
                    .unwrap_or_else(|e| panic!("the Hub of side {}: {e}", side.name()))
                    .1
            })
            .collect();
        let token = seed.member_token.clone();
        for scenario in in_process::scenarios(&seed) {
            let row = {
                let mut s = samples.lock();
                s.rows.push((
                    scenario.name.to_owned(),
                    agents,
                    vec![Vec::new(); sides.len()],
                ));
                s.rows.len() - 1
            };
            // One request of each side, timed, the order rotated by `turn`.
            let round = |turn: usize| {
                runtime.block_on(async {
                    let mut times = vec![0u64; sides.len()];
                    for k in 0..sides.len() {
                        let index = (k + turn) % sides.len();
                        #[cfg(feature = "peers")]
                        switch.lock().set(sides[index].peer());
                        let start = Instant::now();
                        in_process::get(&routers[index], &scenario, &token)
                            .await
                            .expect("a 200 answer");
                        times[index] = start.elapsed().as_nanos() as u64;
                    }
                    let mut s = samples.lock();
                    for (all, time) in s.rows[row].2.iter_mut().zip(&times) {
                        all.push(*time);
                    }
                    times
                })
            };
            let mut group = criterion.benchmark_group(format!("{}/{agents}", scenario.name));
            for (index, side) in sides.iter().enumerate() {
                group.bench_function(side.name(), |b| {
                    b.iter_custom(|iters| {
                        (0..iters as usize)
                            .map(|i| Duration::from_nanos(round(i)[index]))
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
    println!("scenario                     agents  side        ms        over off  rounds");
    println!("---------------------------  ------  ----------  --------  --------  ------");
    for (name, agents, times) in &mut samples.rows {
        let rounds = times[0].len();
        let medians: Vec<f64> = times.iter_mut().map(|t| median(t)).collect();
        for (side, ms) in sides.iter().zip(&medians) {
            println!(
                "{name:<27}  {agents:>6}  {:<10}  {:>8.3}  {:>8.3}  {rounds:>6}",
                side.name(),
                ms / 1e6,
                ms / medians[0]
            );
        }
    }
}
