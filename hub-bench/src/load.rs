//! `load`: many virtual users looping over a weighted endpoint mix for a fixed
//! time, reported as request counts, failures and exact latency percentiles.
//!
//! Each virtual user is a tokio task. Users start at `--spawn-rate` per
//! second; each walks the mix's schedule (a smooth weighted round robin, so
//! the proportions are exact and the endpoints interleave) from its own
//! offset, one request at a time, until the deadline. A request still in
//! flight at the deadline gets a grace period of [`GRACE`]; one that has not
//! finished by then is abandoned (counted in `abandoned`, not in the
//! latencies). The run also stops when `--max-requests` requests have been
//! started, which bounds the samples held in memory (4 bytes each).
//!
//! The mix (as the seeded member unless noted):
//!
//! | name | request | weight | expected |
//! | --- | --- | --- | --- |
//! | `project-agents-list` | `GET /api/v1/projects/{projectId}/agents` | 5 | 200 |
//! | `global-agents-list` | `GET /api/v1/agents` | 3 | 200 |
//! | `agent-by-id` | `GET /api/v1/agents/{id}` (ids of the seeded project, in turn) | 4 | 200 |
//! | `missing-agent` | `GET /api/v1/agents/{absent id}` | 1 | 404 |
//! | `healthz` | `GET /healthz` (no token) | 1 | 200 |
//! | `settings-public` | `GET /api/v1/settings/public` (no token) | 2 | 200 |
//! | `server-config-forbidden` | `PUT /api/v1/admin/server-config` | 1 | 403 |
//!
//! A completed request whose status is expected and 4xx/5xx is an *expected
//! failure*; a status outside the expected set, or no response at all, is an
//! *unexpected failure*. Latency figures cover every completed request. A
//! user whose request got no response at all (a replica killed, a refused
//! connection) waits [`RETRY_PAUSE`] before its next one, so a Hub that is
//! gone is not hammered in a tight loop and fills neither the request cap
//! nor memory.
//!
//! With several `--hub` URLs (replicas), user `u` goes to replica `u mod n`
//! for the whole run, and each replica's figures are reported on their own
//! too, its failures included: a replica that dies during the run shows as
//! that replica's unexpected failures, not as a failed run.
//!
//! Beside the run's own figures, the report carries the Hub's side: each
//! Hub process's CPU% and RSS sampled during the run
//! ([`crate::hub_process`]), and the cache table and audit health of the
//! first Hub read once every user has finished ([`crate::hub_state`]). `--csv` and `--compare` write and print the same
//! figures in other shapes ([`crate::load_csv`], [`crate::load_compare`]).

use std::collections::BTreeMap;
use std::io::IsTerminal as _;
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use anyhow::{bail, Context as _};
use clap::Args;
use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};
use reqwest::header::{HeaderValue, AUTHORIZATION, CONTENT_TYPE};
use reqwest::{Client, Method, Url};

use crate::apibench::write_json;
use crate::client::{self, endpoint_url, error_chain, path_and_query};
use crate::hub_process::{HubProcessReport, Sampler};
use crate::hub_state::{AuditHealth, CacheTable};
use crate::report::{EndpointLoad, LatencySummary, LoadReport, ReplicaLoad};
use crate::seed_file::LoadedSeed;
use crate::stats::{latency_summary_us, round_ms};
use crate::table::{self, Table};
use crate::{hub_process, hub_state, load_compare, load_csv, machine};

/// How long requests in flight at the deadline may still finish.
pub const GRACE: Duration = Duration::from_secs(2);

/// The longest run accepted.
pub const MAX_DURATION: Duration = Duration::from_secs(3600);

/// The default cap on requests started in one run.
pub const DEFAULT_MAX_REQUESTS: u64 = 10_000_000;

/// Parses `--duration` with humantime (`30s`, `5s`, `1m`, `1m 30s`); refuses 0
/// and anything over an hour.
pub fn parse_duration(text: &str) -> Result<Duration, String> {
    let d = humantime::parse_duration(text.trim()).map_err(|e| e.to_string())?;
    check_duration(d)?;
    Ok(d)
}

fn check_duration(d: Duration) -> Result<(), String> {
    if d.is_zero() {
        return Err("must be more than 0".to_owned());
    }
    if d > MAX_DURATION {
        return Err("must be at most 1h".to_owned());
    }
    Ok(())
}

/// The flags of `load`.
#[derive(Debug, Clone, Args)]
pub struct LoadArgs {
    /// Base URL of the hub, e.g. http://127.0.0.1:19810; several replicas
    /// comma-separated (users are spread over them in turn, and each is
    /// also reported on its own)
    #[arg(long, value_name = "URL[,URL...]")]
    pub hub: String,
    /// The seed JSON written by `seed` (project id and member token)
    #[arg(long, value_name = "SEED.json")]
    pub seed: PathBuf,
    /// Virtual users (1 to 10000)
    #[arg(long, default_value_t = 300, value_parser = clap::value_parser!(u32).range(1..=10_000))]
    pub users: u32,
    /// How long to run: 30s, 5s, 1m (more than 0, at most 1h)
    #[arg(long, default_value = "30s", value_parser = parse_duration)]
    pub duration: Duration,
    /// Users started per second
    #[arg(long, default_value_t = 100, value_parser = clap::value_parser!(u32).range(1..=100_000))]
    pub spawn_rate: u32,
    /// Stop once this many requests have been started (bounds memory)
    #[arg(long, default_value_t = DEFAULT_MAX_REQUESTS, value_parser = clap::value_parser!(u64).range(1..=100_000_000))]
    pub max_requests: u64,
    /// Where to write the JSON report
    #[arg(long, value_name = "REPORT.json")]
    pub out: PathBuf,
    /// Free text for the report: anything it cannot capture
    #[arg(long, value_name = "TEXT", default_value = "")]
    pub notes: String,
    /// The Hub's process id, for its CPU% and RSS in the report (found from
    /// the --hub port when not given; with several replicas, each one's is
    /// found from its port)
    #[arg(long, value_name = "PID", value_parser = clap::value_parser!(u32).range(1..))]
    pub hub_pid: Option<u32>,
    /// Also write the per-endpoint figures as CSV into this folder
    #[arg(long, value_name = "DIR")]
    pub csv: Option<PathBuf>,
    /// Print this run beside an earlier report (before/after, change in %)
    #[arg(long, value_name = "BEFORE.json")]
    pub compare: Option<PathBuf>,
}

/// How often the Hub process is sampled.
pub const SAMPLE_EVERY: Duration = Duration::from_millis(500);

/// How long a user waits after a request that got no response at all.
pub const RETRY_PAUSE: Duration = Duration::from_millis(100);

/// One endpoint of the mix, with its URLs filled in.
#[derive(Debug, Clone)]
pub struct MixEntry {
    /// Endpoint name.
    pub name: &'static str,
    /// HTTP method.
    pub method: Method,
    /// The URLs requested in turn (one, or one per agent id).
    pub urls: Vec<Url>,
    /// Relative weight.
    pub weight: u32,
    /// Statuses that count as expected.
    pub expected: &'static [u16],
    /// Whether the request carries the member's token.
    pub member: bool,
    /// A JSON body, for the PUT.
    pub body: Option<&'static str>,
}

/// An id no agent has, shaped like the real ones: the nil-like UUID when ids
/// are UUIDs, otherwise a plain string.
pub fn missing_agent_id(sample: &str) -> String {
    let b = sample.as_bytes();
    let uuid_like = b.len() == 36
        && [8, 13, 18, 23].iter().all(|&i| b[i] == b'-')
        && b.iter()
            .enumerate()
            .all(|(i, c)| [8, 13, 18, 23].contains(&i) || c.is_ascii_hexdigit());
    if uuid_like {
        "00000000-0000-4000-8000-000000000000".to_owned()
    } else {
        "missing-agent-0".to_owned()
    }
}

/// The weighted mix for a seeded project whose agents have `agent_ids` (at
/// least one).
pub fn mix(base: &Url, project_id: &str, agent_ids: &[String]) -> Vec<MixEntry> {
    let one = |segments: &[&str]| vec![endpoint_url(base, segments, &[])];
    let missing = missing_agent_id(agent_ids.first().map_or("", String::as_str));
    vec![
        MixEntry {
            name: "project-agents-list",
            method: Method::GET,
            urls: one(&["api", "v1", "projects", project_id, "agents"]),
            weight: 5,
            expected: &[200],
            member: true,
            body: None,
        },
        MixEntry {
            name: "global-agents-list",
            method: Method::GET,
            urls: one(&["api", "v1", "agents"]),
            weight: 3,
            expected: &[200],
            member: true,
            body: None,
        },
        MixEntry {
            name: "agent-by-id",
            method: Method::GET,
            urls: agent_ids
                .iter()
                .map(|id| endpoint_url(base, &["api", "v1", "agents", id], &[]))
                .collect(),
            weight: 4,
            expected: &[200],
            member: true,
            body: None,
        },
        MixEntry {
            name: "missing-agent",
            method: Method::GET,
            urls: one(&["api", "v1", "agents", &missing]),
            weight: 1,
            expected: &[404],
            member: true,
            body: None,
        },
        MixEntry {
            name: "healthz",
            method: Method::GET,
            urls: one(&["healthz"]),
            weight: 1,
            expected: &[200],
            member: false,
            body: None,
        },
        MixEntry {
            name: "settings-public",
            method: Method::GET,
            urls: one(&["api", "v1", "settings", "public"]),
            weight: 2,
            expected: &[200],
            member: false,
            body: None,
        },
        MixEntry {
            name: "server-config-forbidden",
            method: Method::PUT,
            urls: one(&["api", "v1", "admin", "server-config"]),
            weight: 1,
            expected: &[403],
            member: true,
            body: Some("{}"),
        },
    ]
}

/// A smooth weighted round robin over `weights`: a sequence of indices of
/// length `sum(weights)` in which index `i` appears `weights[i]` times, spread
/// out rather than bunched.
pub fn schedule(weights: &[u32]) -> Vec<usize> {
    let total: i64 = weights.iter().map(|&w| i64::from(w)).sum();
    let mut current = vec![0i64; weights.len()];
    let mut out = Vec::with_capacity(total as usize);
    for _ in 0..total {
        for (c, &w) in current.iter_mut().zip(weights) {
            *c += i64::from(w);
        }
        let Some((best, _)) = current
            .iter()
            .enumerate()
            .max_by(|a, b| a.1.cmp(b.1).then(b.0.cmp(&a.0)))
        else {
            break;
        };
        current[best] -= total;
        out.push(best);
    }
    out
}

/// Agent ids from a project list response: a JSON array of agents, or an
/// object holding one under `agents`, `items`, `data` or `results`.
pub fn extract_agent_ids(body: &serde_json::Value) -> Vec<String> {
    let list = match body {
        serde_json::Value::Array(items) => Some(items),
        serde_json::Value::Object(map) => ["agents", "items", "data", "results"]
            .iter()
            .find_map(|k| map.get(*k)?.as_array()),
        _ => None,
    };
    list.into_iter()
        .flatten()
        .filter_map(|agent| match agent.get("id")? {
            serde_json::Value::String(s) if !s.is_empty() => Some(s.clone()),
            serde_json::Value::Number(n) => Some(n.to_string()),
            _ => None,
        })
        .collect()
}

async fn discover_agent_ids(
    client: &Client,
    base: &Url,
    project_id: &str,
    token: &str,
) -> anyhow::Result<Vec<String>> {
    let url = endpoint_url(base, &["api", "v1", "projects", project_id, "agents"], &[]);
    let what = || {
        format!(
            "list the seeded project's agents ({})",
            path_and_query(&url)
        )
    };
    let resp = client
        .get(url.clone())
        .bearer_auth(token)
        .send()
        .await
        .map_err(|e| anyhow::anyhow!(error_chain(&e)))
        .with_context(what)?;
    let status = resp.status();
    if !status.is_success() {
        bail!("{}: HTTP {status}", what());
    }
    let body = resp
        .bytes()
        .await
        .map_err(|e| anyhow::anyhow!(error_chain(&e)))
        .with_context(what)?;
    let json: serde_json::Value = serde_json::from_slice(&body).with_context(what)?;
    let ids = extract_agent_ids(&json);
    if ids.is_empty() {
        bail!(
            "{}: no agent ids in the response; seed at least one agent",
            what()
        );
    }
    Ok(ids)
}

/// What one user (and, merged, the whole run) saw for one endpoint.
#[derive(Debug, Clone, Default)]
struct Tally {
    sent: u64,
    abandoned: u64,
    expected_failures: u64,
    unexpected_failures: u64,
    statuses: BTreeMap<u16, u64>,
    first_unexpected: Option<String>,
    latencies_us: Vec<u32>,
}

impl Tally {
    fn merge(&mut self, other: Tally) {
        self.sent += other.sent;
        self.abandoned += other.abandoned;
        self.expected_failures += other.expected_failures;
        self.unexpected_failures += other.unexpected_failures;
        for (s, n) in other.statuses {
            *self.statuses.entry(s).or_default() += n;
        }
        if self.first_unexpected.is_none() {
            self.first_unexpected = other.first_unexpected;
        }
        self.latencies_us.extend(other.latencies_us);
    }
}

struct Shared {
    client: Client,
    /// The mix against each replica (one for a single `--hub`).
    mixes: Vec<Vec<MixEntry>>,
    schedule: Vec<usize>,
    auth: HeaderValue,
    deadline: tokio::time::Instant,
    hard_deadline: tokio::time::Instant,
    max_requests: u64,
    started: AtomicU64,
    completed: AtomicU64,
    cap_reached: AtomicBool,
}

/// Sends one request and reads its body: the status (0 without a response)
/// and an error text when something failed below HTTP.
async fn execute(shared: &Shared, entry: &MixEntry, url: &Url) -> (u16, Option<String>) {
    let mut req = shared.client.request(entry.method.clone(), url.clone());
    if entry.member {
        req = req.header(AUTHORIZATION, shared.auth.clone());
    }
    if let Some(body) = entry.body {
        req = req.header(CONTENT_TYPE, "application/json").body(body);
    }
    match req.send().await {
        Err(e) => (0, Some(error_chain(&e))),
        Ok(resp) => {
            let status = resp.status().as_u16();
            match resp.bytes().await {
                Ok(_) => (status, None),
                Err(e) => (status, Some(format!("reading body: {}", error_chain(&e)))),
            }
        }
    }
}

async fn user(shared: Arc<Shared>, user: u32) -> Vec<Tally> {
    let mix = &shared.mixes[user as usize % shared.mixes.len()];
    let mut tallies = vec![Tally::default(); mix.len()];
    let len = shared.schedule.len();
    let mut step = user as usize % len.max(1);
    let mut turn = user as usize;
    while tokio::time::Instant::now() < shared.deadline
        && !shared.cap_reached.load(Ordering::Relaxed)
    {
        if shared.started.fetch_add(1, Ordering::Relaxed) >= shared.max_requests {
            shared.cap_reached.store(true, Ordering::Relaxed);
            break;
        }
        let index = shared.schedule[step];
        step = (step + 1) % len;
        let entry = &mix[index];
        let url = &entry.urls[turn % entry.urls.len()];
        turn += 1;
        let tally = &mut tallies[index];
        tally.sent += 1;
        let start = Instant::now();
        let outcome =
            tokio::time::timeout_at(shared.hard_deadline, execute(&shared, entry, url)).await;
        let Ok((status, error)) = outcome else {
            tally.abandoned += 1;
            break;
        };
        let us = u32::try_from(start.elapsed().as_micros()).unwrap_or(u32::MAX);
        tally.latencies_us.push(us);
        *tally.statuses.entry(status).or_default() += 1;
        let expected = error.is_none() && entry.expected.contains(&status);
        if expected {
            if status >= 400 {
                tally.expected_failures += 1;
            }
        } else {
            tally.unexpected_failures += 1;
            if tally.first_unexpected.is_none() {
                tally.first_unexpected = Some(match error {
                    Some(e) if status == 0 => e,
                    Some(e) => format!("HTTP {status}: {e}"),
                    None => format!("HTTP {status}, expected {:?}", entry.expected),
                });
            }
        }
        shared.completed.fetch_add(1, Ordering::Relaxed);
        if status == 0 {
            let resume = tokio::time::Instant::now() + RETRY_PAUSE;
            tokio::time::sleep_until(resume.min(shared.deadline)).await;
        }
    }
    tallies
}

fn progress_bar(duration: Duration) -> ProgressBar {
    if !std::io::stderr().is_terminal() {
        return ProgressBar::hidden();
    }
    let len = duration.as_millis() as u64;
    let bar = ProgressBar::with_draw_target(Some(len), ProgressDrawTarget::stderr());
    if let Ok(style) = ProgressStyle::with_template("load [{bar:30}] {elapsed}/{duration} {msg}") {
        bar.set_style(style.progress_chars("=> "));
    }
    bar
}

/// Checks the arguments that clap also checks, for callers that build
/// [`LoadArgs`] by hand.
fn validate(args: &LoadArgs) -> anyhow::Result<()> {
    if !(1..=10_000).contains(&args.users) {
        bail!("--users {}: must be 1 to 10000", args.users);
    }
    check_duration(args.duration).map_err(|e| anyhow::anyhow!("--duration: {e}"))?;
    if args.spawn_rate == 0 {
        bail!("--spawn-rate: must be at least 1");
    }
    if args.max_requests == 0 {
        bail!("--max-requests: must be at least 1");
    }
    Ok(())
}

/// Runs the load: discovers the seeded project's agent ids, runs the users
/// until the deadline (or the request cap), writes the report to `--out`,
/// prints it as a table and returns it. Errors (bad arguments, an unreadable
/// seed, a hub that does not list the project) are one line and come before
/// any request of the run.
pub async fn run_load(args: LoadArgs) -> anyhow::Result<LoadReport> {
    validate(&args)?;
    let bases = args
        .hub
        .split(',')
        .map(client::parse_hub_url)
        .collect::<anyhow::Result<Vec<_>>>()?;
    if args.hub_pid.is_some() && bases.len() > 1 {
        bail!(
            "--hub-pid names one process: with several --hub URLs each replica's process is found from its port"
        );
    }
    let base = bases[0].clone();
    let loaded = LoadedSeed::load(&args.seed)?;
    let seed = &loaded.seed;
    let before = args
        .compare
        .as_deref()
        .map(load_compare::read_report)
        .transpose()?;
    let harness = machine::harness_commit();
    let mut machine_info = machine::machine_at_start(&args.notes);
    let http = client::build_client(None, args.users as usize)?;
    let agent_ids = discover_agent_ids(&http, &base, &seed.project_id, &seed.member_token).await?;
    let auth = HeaderValue::from_str(&format!("Bearer {}", seed.member_token))
        .context("the seed's memberToken is not a valid header value")?;

    let mixes: Vec<Vec<MixEntry>> = bases
        .iter()
        .map(|b| mix(b, &seed.project_id, &agent_ids))
        .collect();
    let weights: Vec<u32> = mixes[0].iter().map(|e| e.weight).collect();
    let start = tokio::time::Instant::now();
    let deadline = start + args.duration;
    let shared = Arc::new(Shared {
        client: http,
        schedule: schedule(&weights),
        mixes,
        auth,
        deadline,
        hard_deadline: deadline + GRACE,
        max_requests: args.max_requests,
        started: AtomicU64::new(0),
        completed: AtomicU64::new(0),
        cap_reached: AtomicBool::new(false),
    });

    let samplers: Vec<Result<Sampler, String>> = bases
        .iter()
        .map(|b| {
            let (pid, found_by) = match args.hub_pid {
                Some(pid) => (pid, "hub-pid"),
                None => (hub_process::find_pid_for_url(b)?, "port"),
            };
            Ok(Sampler::spawn(pid, found_by, SAMPLE_EVERY))
        })
        .collect();
    // The client's own process, sampled alongside.
    let own_sampler = Sampler::spawn(std::process::id(), "self", SAMPLE_EVERY);

    let bar = progress_bar(args.duration);
    let ticker = {
        let bar = bar.clone();
        let shared = shared.clone();
        tokio::spawn(async move {
            let mut tick = tokio::time::interval(Duration::from_millis(250));
            loop {
                tick.tick().await;
                let done = shared.completed.load(Ordering::Relaxed);
                bar.set_position(start.elapsed().as_millis() as u64);
                bar.set_message(format!("{done} requests"));
            }
        })
    };

    let spawn_every = Duration::from_secs_f64(1.0 / f64::from(args.spawn_rate));
    let mut users = Vec::with_capacity(args.users as usize);
    for u in 0..args.users {
        let at = start + spawn_every.mul_f64(f64::from(u));
        if at >= deadline || shared.cap_reached.load(Ordering::Relaxed) {
            break;
        }
        tokio::time::sleep_until(at).await;
        users.push(tokio::spawn(user(shared.clone(), u)));
    }
    let users_started = users.len() as u32;
    let replicas = shared.mixes.len();
    let mut per_replica = vec![vec![Tally::default(); weights.len()]; replicas];
    for (u, handle) in users.into_iter().enumerate() {
        let tallies = handle.await.context("a virtual user failed")?;
        for (total, t) in per_replica[u % replicas].iter_mut().zip(tallies) {
            total.merge(t);
        }
    }
    let elapsed = start.elapsed();
    let mut processes = Vec::with_capacity(replicas);
    for sampler in samplers {
        processes.push(match sampler {
            Ok(sampler) => sampler.finish().await,
            Err(reason) => Err(reason),
        });
    }
    let load_process = own_sampler.finish().await.ok();
    let replica_loads: Vec<ReplicaLoad> = bases
        .iter()
        .zip(&per_replica)
        .zip(processes)
        .enumerate()
        .map(|(i, ((base, tallies), process))| {
            replica_load(
                base,
                (i, replicas),
                users_started,
                tallies,
                elapsed,
                process,
            )
        })
        .collect();
    let mut replica_loads = replica_loads;
    let (cache, audit) = if replica_loads.len() == 1 {
        hub_state::read(&shared.client, &base, &seed.admin_token).await
    } else {
        // Each replica has its own cache and audit writer: read every one,
        // and add them up for the run's own figures.
        for (replica, base) in replica_loads.iter_mut().zip(&bases) {
            let (cache, audit) = hub_state::read(&shared.client, base, &seed.admin_token).await;
            replica.cache = Some(cache);
            replica.audit = audit;
        }
        let tables: Vec<_> = replica_loads
            .iter()
            .filter_map(|r| r.cache.clone())
            .collect();
        let audits: Vec<_> = replica_loads
            .iter()
            .filter_map(|r| r.audit.clone())
            .collect();
        (CacheTable::merged(&tables), AuditHealth::merged(&audits))
    };
    let (hub_process, hub_process_missing, replica_loads) =
        match <[ReplicaLoad; 1]>::try_from(replica_loads) {
            Ok([one]) => (one.hub_process, one.hub_process_missing, Vec::new()),
            Err(several) => (None, None, several),
        };
    let mut totals = vec![Tally::default(); weights.len()];
    for tallies in per_replica {
        for (total, t) in totals.iter_mut().zip(tallies) {
            total.merge(t);
        }
    }
    ticker.abort();
    bar.finish_and_clear();
    machine::finish(&mut machine_info);

    let mut all: Vec<u32> = Vec::with_capacity(totals.iter().map(|t| t.latencies_us.len()).sum());
    let mut endpoints = Vec::with_capacity(totals.len());
    for (entry, t) in shared.mixes[0].iter().zip(totals) {
        all.extend_from_slice(&t.latencies_us);
        endpoints.push(EndpointLoad {
            name: entry.name.to_owned(),
            method: entry.method.to_string(),
            path: path_and_query(&entry.urls[0]),
            weight: entry.weight,
            expected_statuses: entry.expected.to_vec(),
            sent: t.sent,
            abandoned: t.abandoned,
            expected_failures: t.expected_failures,
            unexpected_failures: t.unexpected_failures,
            status_counts: t
                .statuses
                .iter()
                .map(|(s, n)| (s.to_string(), *n))
                .collect(),
            first_unexpected: t.first_unexpected,
            rps: per_second(t.latencies_us.len() as u64, elapsed.as_secs_f64()),
            latency: latency_summary_us(&t.latencies_us),
        });
    }
    let overall = latency_summary_us(&all);
    drop(all);
    let duration_seconds = elapsed.as_secs_f64();
    let total_requests = overall.count;
    let report = LoadReport {
        generated_at: machine::now_rfc3339(),
        harness,
        hub_base_url: args.hub.clone(),
        users: args.users,
        users_started,
        spawn_rate: args.spawn_rate,
        requested_duration_seconds: args.duration.as_secs_f64(),
        duration_seconds: round_ms(duration_seconds),
        total_requests,
        rps: per_second(total_requests, duration_seconds),
        expected_failures: endpoints.iter().map(|e| e.expected_failures).sum(),
        unexpected_failures: endpoints.iter().map(|e| e.unexpected_failures).sum(),
        sent_requests: endpoints.iter().map(|e| e.sent).sum(),
        abandoned_requests: endpoints.iter().map(|e| e.abandoned).sum(),
        request_cap_reached: shared.cap_reached.load(Ordering::Relaxed),
        overall,
        endpoints,
        hub_process,
        hub_process_missing,
        load_process,
        cache: Some(cache),
        audit,
        machine: machine_info,
        replicas: replica_loads,
    };
    write_json(&args.out, &report)?;
    print!("{}", load_table(&report));
    if !report.replicas.is_empty() {
        print!("{}", replica_table(&report));
    }
    println!("wrote {}", args.out.display());
    if let Some(dir) = &args.csv {
        for path in load_csv::write_csv(dir, &args.out, &report)? {
            println!("wrote {}", path.display());
        }
    }
    if let Some(before) = &before {
        print!("\n{}", load_compare::compare(before, &report));
    }
    Ok(report)
}

/// Users of `users_started` sent to replica `index` of `replicas` (users
/// go to the replicas in turn: user `u` to replica `u % replicas`).
fn users_on(index: usize, replicas: usize, users_started: u32) -> u32 {
    let (index, replicas) = (index as u32, replicas as u32);
    (users_started + replicas - 1 - index) / replicas
}

/// The figures of replica `index` of `replicas`, with its process's.
fn replica_load(
    base: &Url,
    (index, replicas): (usize, usize),
    users_started: u32,
    tallies: &[Tally],
    elapsed: Duration,
    process: Result<HubProcessReport, String>,
) -> ReplicaLoad {
    let (hub_process, hub_process_missing) = match process {
        Ok(p) => (Some(p), None),
        Err(reason) => (None, Some(reason)),
    };
    let latencies: Vec<u32> = tallies
        .iter()
        .flat_map(|t| t.latencies_us.iter().copied())
        .collect();
    let latency = latency_summary_us(&latencies);
    ReplicaLoad {
        hub_base_url: base.to_string(),
        users_started: users_on(index, replicas, users_started),
        total_requests: latency.count,
        rps: per_second(latency.count, elapsed.as_secs_f64()),
        expected_failures: tallies.iter().map(|t| t.expected_failures).sum(),
        unexpected_failures: tallies.iter().map(|t| t.unexpected_failures).sum(),
        abandoned_requests: tallies.iter().map(|t| t.abandoned).sum(),
        latency,
        hub_process,
        hub_process_missing,
        cache: None,
        audit: None,
    }
}

/// The per-replica table of a run over several replicas: its users'
/// figures, then its process's CPU (average and peak, 100% = one core) and
/// RSS (peak); below it, why a replica's process has no figures, or that it
/// was gone before the end.
pub fn replica_table(report: &LoadReport) -> String {
    let mut t = Table::new([
        "replica",
        "users",
        "count",
        "rps",
        "exp fail",
        "unexp fail",
        "avg ms",
        "p50 ms",
        "p75 ms",
        "p90 ms",
        "p95 ms",
        "p99 ms",
        "max ms",
        "pid",
        "cpu avg %",
        "cpu max %",
        "rss max MiB",
    ]);
    let mut notes = String::new();
    for r in &report.replicas {
        let mut row = vec![
            r.hub_base_url.clone(),
            r.users_started.to_string(),
            r.latency.count.to_string(),
            format!("{:.1}", r.rps),
            r.expected_failures.to_string(),
            r.unexpected_failures.to_string(),
        ];
        row.extend(latency_cells(&r.latency));
        match &r.hub_process {
            Some(p) => {
                row.extend([
                    p.pid.to_string(),
                    format!("{:.1}", p.cpu_percent_avg),
                    format!("{:.1}", p.cpu_percent_max),
                    format!("{:.1}", p.rss_mib_max),
                ]);
                if p.exited_during_run {
                    notes.push_str(&format!(
                        "{}: process {} exited during the run\n",
                        r.hub_base_url, p.pid
                    ));
                }
            }
            None => row.extend(["-", "-", "-", "-"].map(str::to_owned)),
        }
        if let Some(reason) = &r.hub_process_missing {
            notes.push_str(&format!(
                "{}: process not sampled: {reason}\n",
                r.hub_base_url
            ));
        }
        t.row(row);
    }
    format!("per replica:\n{}{notes}", t.render())
}

/// `count / seconds`, to one decimal; 0 for an empty run.
fn per_second(count: u64, seconds: f64) -> f64 {
    if seconds > 0.0 {
        (count as f64 / seconds * 10.0).round() / 10.0
    } else {
        0.0
    }
}

fn latency_cells(l: &LatencySummary) -> [String; 7] {
    [
        table::ms(l.avg_ms),
        table::ms(l.p50_ms),
        table::ms(l.p75_ms),
        table::ms(l.p90_ms),
        table::ms(l.p95_ms),
        table::ms(l.p99_ms),
        table::ms(l.max_ms),
    ]
}

/// The report as a table: a headline, then one row per endpoint and a total row.
pub fn load_table(report: &LoadReport) -> String {
    let mut t = Table::new([
        "endpoint",
        "count",
        "rps",
        "exp fail",
        "unexp fail",
        "avg ms",
        "p50 ms",
        "p75 ms",
        "p90 ms",
        "p95 ms",
        "p99 ms",
        "max ms",
    ]);
    for e in &report.endpoints {
        let mut row = vec![
            e.name.clone(),
            e.latency.count.to_string(),
            format!("{:.1}", e.rps),
            e.expected_failures.to_string(),
            e.unexpected_failures.to_string(),
        ];
        row.extend(latency_cells(&e.latency));
        t.row(row);
    }
    let mut row = vec![
        "all".to_owned(),
        report.overall.count.to_string(),
        format!("{:.1}", report.rps),
        report.expected_failures.to_string(),
        report.unexpected_failures.to_string(),
    ];
    row.extend(latency_cells(&report.overall));
    t.row(row);
    format!(
        "{} users ({} started), {:.1}s: {} requests, {:.1} rps, {} expected failures, {} unexpected failures, {} abandoned\n{}{}",
        report.users,
        report.users_started,
        report.duration_seconds,
        report.total_requests,
        report.rps,
        report.expected_failures,
        report.unexpected_failures,
        report.abandoned_requests,
        t.render(),
        hub_tables(report)
    )
}

/// The Hub's side of the run: its process (and the load client's own, to
/// set it against), its cache per route, its audit health; each line only
/// when the report has it.
pub fn hub_tables(report: &LoadReport) -> String {
    let mut out = String::new();
    if let Some(p) = &report.hub_process {
        out.push_str(&format!(
            "hub process {} (found by {}): CPU {:.1}% avg ({:.1}% in the kernel), {:.1}% max (100% = one core); RSS {:.1} MiB at start, {:.1} MiB max, {:.1} MiB at end{}\n",
            p.pid, p.found_by, p.cpu_percent_avg, p.system_percent_avg, p.cpu_percent_max, p.rss_mib_start, p.rss_mib_max, p.rss_mib_end,
            if p.exited_during_run { "; exited during the run" } else { "" }
        ));
        let threads: Vec<String> = p
            .threads
            .iter()
            .filter(|t| t.cpu_percent_avg > 0.0)
            .map(|t| {
                format!(
                    "{} x{} {:.1}% ({:.1}% kernel)",
                    t.name, t.threads, t.cpu_percent_avg, t.system_percent_avg
                )
            })
            .collect();
        if !threads.is_empty() {
            out.push_str(&format!("hub threads by name: {}\n", threads.join(", ")));
        }
    }
    if let Some(reason) = &report.hub_process_missing {
        out.push_str(&format!("hub process not sampled: {reason}\n"));
    }
    if let Some(p) = &report.load_process {
        out.push_str(&format!(
            "load client process {}: CPU {:.1}% avg, {:.1}% max; RSS {:.1} MiB max\n",
            p.pid, p.cpu_percent_avg, p.cpu_percent_max, p.rss_mib_max
        ));
    }
    match &report.cache {
        Some(cache) if cache.available => {
            let mut t = Table::new([
                "cached route",
                "ttl ms",
                "hits",
                "misses",
                "shared in-flight",
                "hit rate",
            ]);
            for r in &cache.routes {
                t.row([
                    r.route.clone(),
                    r.ttl_ms.to_string(),
                    r.hits.to_string(),
                    r.misses.to_string(),
                    r.shared.to_string(),
                    format!("{:.1}%", r.hit_rate * 100.0),
                ]);
            }
            let state = if cache.enabled { "on" } else { "off" };
            out.push_str(&format!("cache ({state}):\n{}", t.render()));
        }
        Some(cache) => out.push_str(&format!(
            "cache table unavailable: {}\n",
            cache
                .unavailable_reason
                .as_deref()
                .unwrap_or("no reason given")
        )),
        None => {}
    }
    match &report.audit {
        Some(a) => out.push_str(&format!(
            "audit ({}, {}): accepted {}, flushed {}, rejected {}, failed flushes {}, queue {}\n",
            a.backend, a.status, a.accepted, a.flushed, a.rejected, a.failed_flushes, a.queue_size
        )),
        None if report.cache.is_some() => out.push_str("audit health unavailable\n"),
        None => {}
    }
    if report.replicas.len() > 1 {
        out.push_str("(cache and audit above: every replica's added up)\n");
    }
    for (i, r) in report.replicas.iter().enumerate() {
        let cache = match &r.cache {
            Some(c) if c.available => {
                let (hits, answers) = c.routes.iter().fold((0, 0), |(h, n), route| {
                    (h + route.hits, n + route.hits + route.misses + route.shared)
                });
                format!("cache {hits} hits of {answers} answers")
            }
            Some(_) => "cache table unavailable".to_owned(),
            None => continue,
        };
        let audit = r
            .audit
            .as_ref()
            .map_or("audit health unavailable".to_owned(), |a| {
                format!("audit {}, rejected {}", a.status, a.rejected)
            });
        out.push_str(&format!(
            "replica {} ({}): {cache}; {audit}\n",
            i + 1,
            r.hub_base_url
        ));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::Parser;

    #[derive(Debug, Parser)]
    struct Cli {
        #[command(flatten)]
        args: LoadArgs,
    }

    #[test]
    fn users_are_spread_over_the_replicas_in_turn() {
        assert_eq!(
            (0..3).map(|i| users_on(i, 3, 10)).collect::<Vec<_>>(),
            [4, 3, 3]
        );
        assert_eq!(
            (0..2).map(|i| users_on(i, 2, 1)).collect::<Vec<_>>(),
            [1, 0]
        );
        assert_eq!(users_on(0, 1, 7), 7);
    }

    #[test]
    fn durations() {
        assert_eq!(parse_duration("30s"), Ok(Duration::from_secs(30)));
        assert_eq!(parse_duration("5s"), Ok(Duration::from_secs(5)));
        assert_eq!(parse_duration("1m"), Ok(Duration::from_secs(60)));
        assert_eq!(parse_duration("1h"), Ok(Duration::from_secs(3600)));
        assert_eq!(parse_duration("250ms"), Ok(Duration::from_millis(250)));
        assert!(parse_duration("0s").is_err());
        assert!(parse_duration("61m").is_err());
        assert!(parse_duration("soon").is_err());
        assert!(parse_duration("").is_err());
    }

    #[test]
    fn flags_defaults_and_bounds() {
        let a = Cli::try_parse_from(["load", "--hub", "http://h", "--seed", "s", "--out", "r"])
            .unwrap()
            .args;
        assert_eq!(a.users, 300);
        assert_eq!(a.duration, Duration::from_secs(30));
        assert_eq!(a.spawn_rate, 100);
        assert_eq!(a.max_requests, DEFAULT_MAX_REQUESTS);
        let a = Cli::try_parse_from([
            "load",
            "--hub",
            "http://h",
            "--seed",
            "s",
            "--out",
            "r",
            "--users",
            "5",
            "--duration",
            "2s",
            "--spawn-rate",
            "10",
        ])
        .unwrap()
        .args;
        assert_eq!(
            (a.users, a.duration, a.spawn_rate),
            (5, Duration::from_secs(2), 10)
        );
        for bad in [
            ["--users", "0"],
            ["--users", "10001"],
            ["--duration", "0s"],
            ["--duration", "2h"],
            ["--spawn-rate", "0"],
            ["--hub-pid", "0"],
            ["--hub-pid", "hub"],
            ["--csv", ""],
            ["--compare", ""],
        ] {
            let mut argv = vec!["load", "--hub", "h", "--seed", "s", "--out", "r"];
            argv.extend(bad);
            let e = Cli::try_parse_from(&argv).unwrap_err();
            assert_eq!(e.exit_code(), 2, "{bad:?}");
        }
    }

    #[test]
    fn report_flags_are_read() {
        let a = Cli::try_parse_from([
            "load",
            "--hub",
            "h",
            "--seed",
            "s",
            "--out",
            "r",
            "--hub-pid",
            "4242",
            "--csv",
            "csv-dir",
            "--compare",
            "before.json",
        ])
        .unwrap()
        .args;
        assert_eq!(a.hub_pid, Some(4242));
        assert_eq!(a.csv.as_deref(), Some(std::path::Path::new("csv-dir")));
        assert_eq!(
            a.compare.as_deref(),
            Some(std::path::Path::new("before.json"))
        );
    }

    #[test]
    fn schedule_is_exact_and_spread() {
        let s = schedule(&[5, 3, 4, 1, 1, 2, 1]);
        assert_eq!(s.len(), 17);
        for (i, w) in [5, 3, 4, 1, 1, 2, 1].iter().enumerate() {
            assert_eq!(s.iter().filter(|&&x| x == i).count(), *w as usize);
        }
        // The heaviest endpoint never runs twice in a row (5 of 17).
        assert!(s.windows(2).all(|w| !(w[0] == 0 && w[1] == 0)), "{s:?}");
        assert_eq!(schedule(&[2, 1]), vec![0, 1, 0]);
        assert!(schedule(&[]).is_empty());
    }

    #[test]
    fn agent_ids_from_responses() {
        use serde_json::json;
        assert_eq!(
            extract_agent_ids(&json!([{"id": "a"}, {"id": "b"}])),
            vec!["a", "b"]
        );
        assert_eq!(
            extract_agent_ids(
                &json!({"agents": [{"id": "a"}, {"name": "x"}, {"id": 7}], "nextCursor": null})
            ),
            vec!["a", "7"]
        );
        assert_eq!(
            extract_agent_ids(&json!({"items": [{"id": "c"}]})),
            vec!["c"]
        );
        assert!(extract_agent_ids(&json!({"agents": []})).is_empty());
        assert!(extract_agent_ids(&json!("nope")).is_empty());
    }

    #[test]
    fn missing_ids_keep_the_shape() {
        assert_eq!(
            missing_agent_id("3f2a9c1e-0b7d-4c55-9a1e-2b3c4d5e6f70"),
            "00000000-0000-4000-8000-000000000000"
        );
        assert_eq!(missing_agent_id("agent-17"), "missing-agent-0");
        assert_eq!(missing_agent_id(""), "missing-agent-0");
    }

    #[test]
    fn mix_urls() {
        let base = client::parse_hub_url("http://127.0.0.1:1").unwrap();
        let m = mix(&base, "p-1", &["a1".into(), "a2".into()]);
        let got: Vec<(&str, String, String, usize)> = m
            .iter()
            .map(|e| {
                (
                    e.name,
                    e.method.to_string(),
                    path_and_query(&e.urls[0]),
                    e.urls.len(),
                )
            })
            .collect();
        assert_eq!(
            got,
            vec![
                (
                    "project-agents-list",
                    "GET".into(),
                    "/api/v1/projects/p-1/agents".into(),
                    1
                ),
                (
                    "global-agents-list",
                    "GET".into(),
                    "/api/v1/agents".into(),
                    1
                ),
                ("agent-by-id", "GET".into(), "/api/v1/agents/a1".into(), 2),
                (
                    "missing-agent",
                    "GET".into(),
                    "/api/v1/agents/missing-agent-0".into(),
                    1
                ),
                ("healthz", "GET".into(), "/healthz".into(), 1),
                (
                    "settings-public",
                    "GET".into(),
                    "/api/v1/settings/public".into(),
                    1
                ),
                (
                    "server-config-forbidden",
                    "PUT".into(),
                    "/api/v1/admin/server-config".into(),
                    1
                ),
            ]
        );
    }

    #[test]
    fn hand_built_args_are_checked() {
        let args = LoadArgs {
            hub: "http://127.0.0.1:1".into(),
            seed: "/nonexistent".into(),
            users: 0,
            duration: Duration::from_secs(1),
            spawn_rate: 1,
            max_requests: 1,
            out: "/nonexistent/out.json".into(),
            notes: String::new(),
            hub_pid: None,
            csv: None,
            compare: None,
        };
        assert!(validate(&args).is_err());
        let ok = LoadArgs {
            users: 1,
            ..args.clone()
        };
        assert!(validate(&ok).is_ok());
        let long = LoadArgs {
            duration: Duration::from_secs(3601),
            ..ok.clone()
        };
        assert!(validate(&long).is_err());
    }
}
