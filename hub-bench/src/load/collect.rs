//! Collecting: the users' tallies turned into the report's figures, per
//! endpoint and per replica, and the Hub's side of the run: each Hub
//! process sampled while the users run ([`super::hub_process`]), and its
//! cache table and audit health read once they have finished
//! ([`super::hub_state`]).

use std::time::Duration;

use reqwest::{Client, Url};

use super::hub_process::{self, HubProcessReport, Sampler};
use super::hub_state::{self, AuditHealth, CacheTable};
use super::mix::MixEntry;
use super::users::{merge_into, Tally, UsersOutcome};
use crate::client::path_and_query;
use crate::report::{EndpointLoad, LatencySummary, ReplicaLoad};
use crate::stats::{latency_dist, latency_summary};

/// How often the Hub process is sampled.
pub const SAMPLE_EVERY: Duration = Duration::from_millis(500);

/// The processes sampled during the run: each Hub's (or why it could not
/// be found), and the load client's own, to set them against.
pub(super) struct Samplers {
    hubs: Vec<Result<Sampler, String>>,
    own: Sampler,
}

impl Samplers {
    /// Starts sampling the Hub behind each of `bases`: the process
    /// `hub_pid` names, or the one listening on the URL's port.
    pub(super) fn spawn(bases: &[Url], hub_pid: Option<u32>) -> Samplers {
        let hubs = bases
            .iter()
            .map(|b| {
                let (pid, found_by) = match hub_pid {
                    Some(pid) => (pid, "hub-pid"),
                    None => (hub_process::find_pid_for_url(b)?, "port"),
                };
                Ok(Sampler::spawn(pid, found_by, SAMPLE_EVERY))
            })
            .collect();
        let own = Sampler::spawn(std::process::id(), "self", SAMPLE_EVERY);
        Samplers { hubs, own }
    }

    /// Stops sampling: each Hub's figures (or why there are none), and the
    /// load client's.
    pub(super) async fn finish(
        self,
    ) -> (
        Vec<Result<HubProcessReport, String>>,
        Option<HubProcessReport>,
    ) {
        let mut processes = Vec::with_capacity(self.hubs.len());
        for sampler in self.hubs {
            processes.push(match sampler {
                Ok(sampler) => sampler.finish().await,
                Err(reason) => Err(reason),
            });
        }
        (processes, self.own.finish().await.ok())
    }
}

/// The Hub's side of a run and each replica's figures.
pub(super) struct HubSide {
    /// Every replica's figures; empty with a single `--hub`.
    pub(super) replicas: Vec<ReplicaLoad>,
    /// The single Hub's process, or why it has none.
    pub(super) hub_process: Option<HubProcessReport>,
    pub(super) hub_process_missing: Option<String>,
    /// The cache table and audit health (added up over the replicas).
    pub(super) cache: CacheTable,
    pub(super) audit: Option<AuditHealth>,
}

/// Each replica's figures and process, and the cache table and audit
/// health read from each Hub as the seeded admin.
pub(super) async fn hub_side(
    client: &Client,
    bases: &[Url],
    admin_token: &str,
    users: &UsersOutcome,
    processes: Vec<Result<HubProcessReport, String>>,
) -> HubSide {
    let replicas = bases.len();
    let mut loads: Vec<ReplicaLoad> = bases
        .iter()
        .zip(&users.per_replica)
        .zip(processes)
        .enumerate()
        .map(|(i, ((base, tallies), process))| {
            replica_load(
                base,
                (i, replicas),
                users.users_started,
                tallies,
                users.elapsed,
                process,
            )
        })
        .collect();
    let (cache, audit) = if loads.len() == 1 {
        hub_state::read(client, &bases[0], admin_token).await
    } else {
        // Each replica has its own cache and audit writer: read every one,
        // and add them up for the run's own figures.
        for (replica, base) in loads.iter_mut().zip(bases) {
            let (cache, audit) = hub_state::read(client, base, admin_token).await;
            replica.cache = Some(cache);
            replica.audit = audit;
        }
        let tables: Vec<_> = loads.iter().filter_map(|r| r.cache.clone()).collect();
        let audits: Vec<_> = loads.iter().filter_map(|r| r.audit.clone()).collect();
        (CacheTable::merged(&tables), AuditHealth::merged(&audits))
    };
    let (hub_process, hub_process_missing, replicas) = match <[ReplicaLoad; 1]>::try_from(loads) {
        Ok([one]) => (one.hub_process, one.hub_process_missing, Vec::new()),
        Err(several) => (None, None, several),
    };
    HubSide {
        replicas,
        hub_process,
        hub_process_missing,
        cache,
        audit,
    }
}

/// Every replica's tallies added up, as the report's figures per endpoint
/// of `mix`, and the latency over them all.
pub(super) fn endpoints(
    mix: &[MixEntry],
    per_replica: Vec<Vec<Tally>>,
    elapsed: Duration,
) -> (Vec<EndpointLoad>, LatencySummary) {
    let mut totals = vec![Tally::default(); mix.len()];
    for tallies in per_replica {
        merge_into(&mut totals, tallies);
    }
    let (mut all, mut all_count) = (latency_dist([]), 0);
    let mut endpoints = Vec::with_capacity(totals.len());
    for (entry, t) in mix.iter().zip(totals) {
        let count = t.latencies_us.len() as u64;
        let dist = latency_dist(t.latencies_us.iter().copied());
        all.merge(&dist);
        all_count += count;
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
            rps: per_second(count, elapsed.as_secs_f64()),
            latency: latency_summary(&dist, count),
        });
    }
    (endpoints, latency_summary(&all, all_count))
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
    let count = tallies.iter().map(|t| t.latencies_us.len() as u64).sum();
    let latencies = latency_dist(tallies.iter().flat_map(|t| t.latencies_us.iter().copied()));
    let latency = latency_summary(&latencies, count);
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

/// `count / seconds`, to one decimal; 0 for an empty run.
pub(super) fn per_second(count: u64, seconds: f64) -> f64 {
    if seconds > 0.0 {
        (count as f64 / seconds * 10.0).round() / 10.0
    } else {
        0.0
    }
}

#[cfg(test)]
mod tests {
    use super::*;

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
}
