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
//! ([`hub_process`]), and the cache table and audit health of the
//! first Hub read once every user has finished ([`hub_state`]). `--csv` and
//! `--compare` write and print the same figures in other shapes ([`csv`],
//! [`compare`]).
//!
//! The run in steps, a file each: the flags (`flags.rs`), the mix
//! (`mix.rs`), running the users (`users.rs`), collecting their figures and
//! the Hub's side (`collect.rs`, with [`hub_process`] and [`hub_state`]),
//! and reporting (`output.rs`, with [`csv`] and [`compare`]).

use std::sync::Arc;

use crate::report::LoadReport;
use crate::seed_file::LoadedSeed;
use crate::stats::round_ms;
use crate::{client, machine};

mod collect;
pub mod compare;
pub mod csv;
mod flags;
pub mod hub_process;
pub mod hub_state;
mod mix;
mod output;
mod users;

pub use collect::SAMPLE_EVERY;
pub use flags::{parse_duration, LoadArgs, DEFAULT_MAX_REQUESTS, MAX_DURATION};
pub use mix::{extract_agent_ids, missing_agent_id, mix, schedule, MixEntry};
pub use output::{hub_tables, load_table, replica_table};
pub use users::{GRACE, RETRY_PAUSE};

/// Runs the load: discovers the seeded project's agent ids, runs the users
/// until the deadline (or the request cap), writes the report to `--out`,
/// prints it as a table and returns it. Errors (bad arguments, an unreadable
/// seed, a hub that does not list the project) are one line and come before
/// any request of the run.
pub async fn run_load(args: LoadArgs) -> anyhow::Result<LoadReport> {
    flags::validate(&args)?;
    let bases = flags::hub_urls(&args)?;
    let loaded = LoadedSeed::load(&args.seed)?;
    let seed = &loaded.seed;
    let before = args
        .compare
        .as_deref()
        .map(compare::read_report)
        .transpose()?;
    let harness = machine::harness_commit();
    let mut machine_info = machine::machine_at_start(&args.notes);
    let http = client::build_client(None, args.users as usize)?;
    let agent_ids =
        mix::discover_agent_ids(&http, &bases[0], &seed.project_id, &seed.member_token).await?;
    let mixes = bases
        .iter()
        .map(|b| mix(b, &seed.project_id, &agent_ids))
        .collect();
    let run = Arc::new(users::Run::new(
        http,
        mixes,
        &seed.member_token,
        args.duration,
        args.max_requests,
    )?);

    let samplers = collect::Samplers::spawn(&bases, args.hub_pid);
    let progress = users::Progress::start(&run, args.duration);
    let outcome = users::run_users(&run, args.users, args.spawn_rate).await?;
    let (processes, load_process) = samplers.finish().await;
    let hub = collect::hub_side(&run.client, &bases, &seed.admin_token, &outcome, processes).await;
    progress.finish();
    machine::finish(&mut machine_info);

    let duration_seconds = outcome.elapsed.as_secs_f64();
    let (endpoints, overall) =
        collect::endpoints(&run.mixes[0], outcome.per_replica, outcome.elapsed);
    let total_requests = overall.count;
    let report = LoadReport {
        generated_at: machine::now_rfc3339(),
        harness,
        hub_base_url: args.hub.clone(),
        users: args.users,
        users_started: outcome.users_started,
        spawn_rate: args.spawn_rate,
        requested_duration_seconds: args.duration.as_secs_f64(),
        duration_seconds: round_ms(duration_seconds),
        total_requests,
        rps: collect::per_second(total_requests, duration_seconds),
        expected_failures: endpoints.iter().map(|e| e.expected_failures).sum(),
        unexpected_failures: endpoints.iter().map(|e| e.unexpected_failures).sum(),
        sent_requests: endpoints.iter().map(|e| e.sent).sum(),
        abandoned_requests: endpoints.iter().map(|e| e.abandoned).sum(),
        request_cap_reached: run.cap_reached(),
        overall,
        endpoints,
        hub_process: hub.hub_process,
        hub_process_missing: hub.hub_process_missing,
        load_process,
        cache: Some(hub.cache),
        audit: hub.audit,
        machine: machine_info,
        replicas: hub.replicas,
    };
    output::write_and_print(&report, &args.out, args.csv.as_deref(), before.as_ref())?;
    Ok(report)
}
