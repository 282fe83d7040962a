//! Tracing's cost on the Hub's router as instructions, a figure that repeats
//! from run to run where wall-clock time does not: each of the demo's three
//! agent-list requests, at 25, 100 and 500 agents, sent in-process to Hubs
//! over the same seeded database, under valgrind's callgrind: untraced
//! (`off`), traced by perf-trace (`on`), perf-trace tail-sampled keeping 1
//! in 100 (`sampled`) and, built with the feature `peers`, the peers
//! (`tower-http`: tower-http's `TraceLayer` writing a JSON line per request
//! through tracing-subscriber; `spans`: that and a `tracing` span at every
//! phase and store call, each closed span a JSON line).
//!
//! ```text
//! cargo build --release -p hub-bench --example on_off_instructions
//! target/release/examples/on_off_instructions            # needs valgrind
//! target/release/examples/on_off_instructions --sizes 25 --requests 20
//! target/release/examples/on_off_instructions --sides off,on --sizes 100
//! cargo build --release -p hub-bench --features peers --example on_off_instructions
//! target/release/examples/on_off_instructions --cached --sizes 100   # cache hits
//! target/release/examples/on_off_instructions --mix --cached --sizes 100
//! ```
//!
//! `--mix` counts the requests of the 300-user load's mix instead (`hub-bench
//! load`: the two lists, an agent by id, a missing agent, `/healthz`, the
//! public settings, the forbidden server-config PUT), one scenario per
//! entry, and adds the mix's row: the entries weighted as the load weights
//! them.
//!
//! The program seeds the databases, then runs itself `--repeats` times per
//! scenario, size and side (the sides alternating, each run on a fresh copy
//! of the seeded database) under `valgrind --tool=callgrind`: the Hub is built and warmed
//! up with a few requests, then callgrind's counts are zeroed as
//! [`measure_start`] is entered and dumped as [`measure_end`] is, so the
//! figure holds exactly the measured requests and the writing of their
//! lines (a peer's subscriber is the process's, its background writer
//! given time to write the warm-up's lines before, and ended, its lines
//! written, before the end). It prints instructions per request of each
//! side (the median of its runs), and its ratio over the untraced side.
//!
//! After every request (warm-up and measured) the program waits for the
//! audit writer to have written the request's records: each commit empties
//! the other connections' page caches, and left to the scheduler a request
//! met from none to several commits, which moved one side's count by up to
//! 2.6 % between runs at 25 agents. The reads run on one blocking thread,
//! kept for the whole run: left to tokio's pool, a run that started a new
//! thread inside the window counted its start, its connection's first
//! reads and its arena's first chunks, and one side's runs spread over up
//! to 1.1 % at 25 agents; on one thread, over 0.1 to 0.3 %.
//!
//! Every thread counts (the request's task, the blocking pool's reads, the
//! connection pool's own threads) but the audit writer's: callgrind stops
//! counting it inside its loop (`--toggle-collect`). It writes the same
//! records on both sides, but how many it writes inside the window, and in
//! how many transactions, depends on when the scheduler wakes it, which
//! moved the whole figure by several percent from run to run.

use std::ffi::OsString;
use std::path::{Path, PathBuf};

use anyhow::Context as _;
use clap::Parser;

#[path = "../../perf-trace-core/benches/support/callgrind.rs"]
mod callgrind;
use callgrind::{measure_end, measure_start};
#[path = "../benches/support/in_process.rs"]
mod in_process;
use in_process::Side;
#[path = "../benches/support/load_mix.rs"]
mod load_mix;

#[derive(Debug, Parser)]
#[command(about = "Instructions per Hub request, tracing on and off, under callgrind")]
struct Args {
    /// Agent counts to seed, one database each.
    #[arg(long, value_delimiter = ',', default_values_t = [25u32, 100, 500])]
    sizes: Vec<u32>,
    /// Measured requests per scenario and side.
    #[arg(long, default_value_t = 10, value_parser = clap::value_parser!(u32).range(1..=10_000))]
    requests: u32,
    /// The sides to count (`off` first: the others are set against it).
    #[arg(long, value_delimiter = ',', value_parser = parse_side, default_values_t = Side::all())]
    sides: Vec<Side>,
    /// Runs per scenario and side, the sides rotating; the table shows
    /// each side's median.
    #[arg(long, default_value_t = 3, value_parser = clap::value_parser!(u32).range(1..=100))]
    repeats: u32,
    /// Unmeasured requests first (caches, the memo's first reads, the clock).
    #[arg(long, default_value_t = 3, value_parser = clap::value_parser!(u32).range(0..=10_000))]
    warmup: u32,
    /// Keep the databases and callgrind's files in this folder (default: a
    /// temporary folder, removed at the end).
    #[arg(long, value_name = "DIR")]
    out_dir: Option<PathBuf>,
    /// With the Hub's response cache on (its default settings): after the
    /// warm-up every measured request is a cache hit, the request most of
    /// a loaded Hub's are (`hub-bench load` with 300 users).
    #[arg(long)]
    cached: bool,
    /// Count the load's mix (`hub-bench load`) entry by entry, and the
    /// mix weighted as the load sends it, instead of the demo's lists.
    #[arg(long)]
    mix: bool,
    /// The valgrind to run.
    #[arg(long, default_value = "valgrind")]
    valgrind: PathBuf,
    /// Runs one side in this process instead (what the program runs under
    /// callgrind): the seeded database, its seed document, the scenario and
    /// the side.
    #[arg(long, num_args = 4, value_names = ["DB", "SEED", "SCENARIO", "SIDE"])]
    serve: Option<Vec<String>>,
}

/// Longer than any run: the lines are written out by the explicit flushes.
const LINES_INTERVAL: std::time::Duration = std::time::Duration::from_secs(3600);

fn parse_side(name: &str) -> Result<Side, String> {
    let names: Vec<_> = Side::all().into_iter().map(Side::name).collect();
    Side::all()
        .into_iter()
        .find(|side| side.name() == name)
        .ok_or_else(|| format!("{name:?} is not one of {}", names.join(", ")))
}

impl std::fmt::Display for Side {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

fn main() -> anyhow::Result<()> {
    let args = Args::parse();
    match &args.serve {
        Some(serve) => run_side(&args, serve),
        None => drive(&args),
    }
}

/// One side: build the Hub, warm it up, then the measured requests.
fn run_side(args: &Args, serve: &[String]) -> anyhow::Result<()> {
    let [db, seed, scenario, side] = serve else {
        anyhow::bail!("--serve takes DB SEED SCENARIO SIDE");
    };
    let side = parse_side(side).map_err(|e| anyhow::anyhow!("--serve: {e}"))?;
    let seed = hub_bench::LoadedSeed::load(Path::new(seed))?.seed;
    let log = std::env::temp_dir().join(format!("on-off-instructions-{}.log", std::process::id()));
    // Lines written out when this program says, not on a timer: under
    // valgrind a request takes some fifty times longer, and a 50 ms timer
    // would write a handful of lines at a time instead of hundreds, as it
    // does at full speed.
    let (hub, router) =
        in_process::side_hub(side, Path::new(db), &log, LINES_INTERVAL, args.cached)?;
    // A peer's subscriber, for this process; dropped, its writer writes
    // out what it holds and stops.
    #[cfg(feature = "peers")]
    let peer_writer = match side.peer() {
        Some(peer) => Some(
            hub_example::perf::peers::install(peer, std::fs::File::create(peer_log(&log))?)
                .map_err(|e| anyhow::anyhow!("the peer's subscriber: {e}"))?,
        ),
        None => None,
    };
    // One blocking thread, kept for the whole run (why: the module's docs):
    // left to itself the pool starts one when a read comes before the last
    // read's thread is back to idle, or after it idled out.
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .max_blocking_threads(1)
        .thread_keep_alive(std::time::Duration::from_secs(3600))
        .build()?;
    let token = &seed.member_token;
    let target = match args.mix {
        false => Target::List(
            in_process::scenarios(&seed)
                .into_iter()
                .find(|s| s.name == scenario.as_str())
                .with_context(|| format!("--serve: no scenario {scenario:?}"))?,
        ),
        true => Target::Mix(
            runtime
                .block_on(load_mix::load_mix(&router, &seed))?
                .into_iter()
                .find(|entry| entry.name == scenario.as_str())
                .with_context(|| format!("--serve: no mix entry {scenario:?}"))?,
        ),
    };
    let (router, target) = (&router, &target);
    let request = |turn: usize| async move {
        match target {
            Target::List(scenario) => in_process::get(router, scenario, token).await,
            Target::Mix(entry) => load_mix::send_mix(router, entry, turn, token).await,
        }
    };
    let result = runtime.block_on(async {
        for turn in 0..args.warmup {
            request(turn as usize).await?;
            audit_written(&hub);
        }
        hub.logger().flush();
        // A peer's writer writes the warm-up's lines meanwhile.
        #[cfg(feature = "peers")]
        if peer_writer.is_some() {
            std::thread::sleep(std::time::Duration::from_millis(300));
        }
        measure_start();
        for turn in 0..args.requests {
            request((args.warmup + turn) as usize).await?;
            audit_written(&hub);
        }
        // The measured requests' lines, written out in one batch.
        hub.logger().flush();
        #[cfg(feature = "peers")]
        drop(peer_writer);
        measure_end();
        anyhow::Ok(())
    });
    let _ = std::fs::remove_file(&log);
    #[cfg(feature = "peers")]
    let _ = std::fs::remove_file(peer_log(&log));
    result
}

/// Waits until the audit writer has written every record the Hub handed
/// it: one commit between every two requests, on every side (why: the
/// module's docs).
fn audit_written(hub: &hub_example::Hub) {
    // A writer in trouble (degraded) or stuck is not waited for.
    let log = hub.audit_log();
    let until = std::time::Instant::now() + std::time::Duration::from_secs(30);
    while log.flushed() < log.sent()
        && !log.health().is_degraded()
        && std::time::Instant::now() < until
    {
        std::thread::sleep(std::time::Duration::from_millis(1));
    }
}

/// Where a peer's subscriber writes: beside the Hub's own log.
#[cfg(feature = "peers")]
fn peer_log(log: &Path) -> PathBuf {
    log.with_extension("peers.log")
}

/// What one side sends: one of the demo's lists, or one entry of the load's mix.
enum Target {
    List(in_process::Scenario),
    Mix(load_mix::MixRequest),
}

/// Seeds, runs every side under callgrind, prints the table.
fn drive(args: &Args) -> anyhow::Result<()> {
    let temporary = tempfile::tempdir()?;
    let dir = match &args.out_dir {
        Some(dir) => {
            std::fs::create_dir_all(dir)?;
            dir.as_path()
        }
        None => temporary.path(),
    };
    let me = std::env::current_exe()?;
    anyhow::ensure!(
        args.sides.first() == Some(&Side::Off),
        "--sides: `off` comes first, the baseline"
    );
    let sides = &args.sides;
    println!("scenario                     agents  side        instr/request  over off");
    println!("---------------------------  ------  ----------  -------------  --------");
    for &agents in &args.sizes {
        let seed = in_process::seed(dir, agents)?;
        let db = dir.join(format!("hub{agents}.db"));
        let seed_path = dir.join(format!("seed-{agents}.json"));
        // Each scenario's name and its weight in the mix's row (none for
        // the demo's lists).
        let scenarios: Vec<(&str, Option<u32>)> = match args.mix {
            false => in_process::scenarios(&seed)
                .into_iter()
                .map(|s| (s.name, None))
                .collect(),
            true => load_mix::load_mix_names()
                .into_iter()
                .map(|(name, weight)| (name, Some(weight)))
                .collect(),
        };
        let mut weighted = vec![0.0; sides.len()];
        for (name, weight) in scenarios {
            let mut runs = vec![Vec::new(); sides.len()];
            for repeat in 0..args.repeats as usize {
                // Rotate which side goes first.
                for k in 0..sides.len() {
                    let index = (k + repeat) % sides.len();
                    let side = sides[index].name();
                    let out = dir.join(format!("callgrind-{agents}-{name}-{side}-{repeat}"));
                    let run_db = fresh_copy(&db, &dir.join("run.db"))?;
                    runs[index].push(instructions(
                        args,
                        &me,
                        &out,
                        [&run_db, &seed_path],
                        name,
                        side,
                    )?);
                }
            }
            let per = f64::from(args.requests);
            let counts: Vec<f64> = runs.iter_mut().map(|counts| median(counts) / per).collect();
            print_rows(name, agents, sides, &counts);
            if let Some(weight) = weight {
                for (sum, count) in weighted.iter_mut().zip(&counts) {
                    *sum += f64::from(weight) * count;
                }
            }
        }
        if args.mix {
            let total: u32 = load_mix::load_mix_names().iter().map(|(_, w)| w).sum();
            let counts: Vec<f64> = weighted.iter().map(|sum| sum / f64::from(total)).collect();
            print_rows("the mix, weighted", agents, sides, &counts);
        }
    }
    Ok(())
}

/// One row per side: its instructions per request and their ratio over
/// the first side's (`off`).
fn print_rows(name: &str, agents: u32, sides: &[Side], counts: &[f64]) {
    for (side, count) in sides.iter().zip(counts) {
        println!(
            "{name:<27}  {agents:>6}  {:<10}  {count:>13.0}  {:>8.4}",
            side.name(),
            count / counts[0]
        );
    }
}

/// The median of `counts` (not empty), as a float.
fn median(counts: &mut [u64]) -> f64 {
    counts.sort_unstable();
    let n = counts.len();
    if n % 2 == 1 {
        counts[n / 2] as f64
    } else {
        (counts[n / 2 - 1] + counts[n / 2]) as f64 / 2.0
    }
}

/// A copy of the seeded database at `to`, replacing any earlier one: every
/// run starts from the same file. (Runs append audit records; reading
/// through a longer write-ahead log costs more, which favoured whichever
/// side ran first.)
fn fresh_copy(seeded: &Path, to: &Path) -> anyhow::Result<PathBuf> {
    for suffix in ["", "-wal", "-shm"] {
        let (from, to) = (with_suffix(seeded, suffix), with_suffix(to, suffix));
        match std::fs::remove_file(&to) {
            Err(e) if e.kind() != std::io::ErrorKind::NotFound => {
                return Err(e).with_context(|| format!("remove {}", to.display()))
            }
            _ => {}
        }
        if from.exists() {
            std::fs::copy(&from, &to)
                .with_context(|| format!("copy {} to {}", from.display(), to.display()))?;
        }
    }
    Ok(to.to_owned())
}

fn with_suffix(path: &Path, suffix: &str) -> PathBuf {
    let mut name = path.as_os_str().to_owned();
    name.push(suffix);
    PathBuf::from(name)
}

/// Runs one side under callgrind; the instructions of its measured requests.
fn instructions(
    args: &Args,
    me: &Path,
    out: &Path,
    [db, seed]: [&Path; 2],
    scenario: &str,
    side: &str,
) -> anyhow::Result<u64> {
    let options = [
        "--toggle-collect=hub_example::authz::audit::write_until_stopped",
        // Counting from the start (a `--toggle-collect` turns that off unless
        // this follows): the writer's loop alone stops it, on its thread.
        "--collect-atstart=yes",
    ];
    let mut program_args: Vec<OsString> = vec![
        "--requests".into(),
        args.requests.to_string().into(),
        "--warmup".into(),
        args.warmup.to_string().into(),
    ];
    program_args.extend(args.cached.then(|| "--cached".into()));
    program_args.extend(args.mix.then(|| "--mix".into()));
    program_args.extend([
        "--serve".into(),
        db.into(),
        seed.into(),
        scenario.into(),
        side.into(),
    ]);
    callgrind::instructions_between_marks(&args.valgrind, &options, out, me, &program_args)
        .map_err(|e| anyhow::anyhow!("{scenario} {side}: {e}"))
}
