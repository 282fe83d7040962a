//! Running the users: each virtual user a tokio task, started at
//! `--spawn-rate` per second, walking the mix's schedule one request at a
//! time until the deadline or the request cap, and keeping what it saw per
//! endpoint in a [`Tally`]; the progress bar on a terminal meanwhile.

use std::collections::BTreeMap;
use std::io::IsTerminal as _;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use anyhow::Context as _;
use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};
use reqwest::header::{HeaderValue, AUTHORIZATION, CONTENT_TYPE};
use reqwest::{Client, Url};
use tokio::task::JoinHandle;

use super::mix::{schedule, MixEntry};
use crate::client::error_chain;

/// How long requests in flight at the deadline may still finish.
pub const GRACE: Duration = Duration::from_secs(2);

/// How long a user waits after a request that got no response at all.
pub const RETRY_PAUSE: Duration = Duration::from_millis(100);

/// What one user (and, merged, the whole run) saw for one endpoint.
#[derive(Debug, Clone, Default)]
pub(super) struct Tally {
    pub(super) sent: u64,
    pub(super) abandoned: u64,
    pub(super) expected_failures: u64,
    pub(super) unexpected_failures: u64,
    pub(super) statuses: BTreeMap<u16, u64>,
    pub(super) first_unexpected: Option<String>,
    pub(super) latencies_us: Vec<u32>,
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

    /// Counts one completed request: its latency, its status (0 without a
    /// response) and whether it was one of `expected`.
    fn record(&mut self, status: u16, error: Option<String>, expected: &[u16], latency: Duration) {
        let us = u32::try_from(latency.as_micros()).unwrap_or(u32::MAX);
        self.latencies_us.push(us);
        *self.statuses.entry(status).or_default() += 1;
        if error.is_none() && expected.contains(&status) {
            if status >= 400 {
                self.expected_failures += 1;
            }
            return;
        }
        self.unexpected_failures += 1;
        if self.first_unexpected.is_none() {
            self.first_unexpected = Some(match error {
                Some(e) if status == 0 => e,
                Some(e) => format!("HTTP {status}: {e}"),
                None => format!("HTTP {status}, expected {expected:?}"),
            });
        }
    }
}

/// Adds `from`, one user's tallies (or one replica's), into `into`, endpoint
/// by endpoint.
pub(super) fn merge_into(into: &mut [Tally], from: Vec<Tally>) {
    for (total, t) in into.iter_mut().zip(from) {
        total.merge(t);
    }
}

/// What every user shares: the mix per replica, its schedule, the member's
/// token, the deadlines and the request counters.
pub(super) struct Run {
    pub(super) client: Client,
    /// The mix against each replica (one for a single `--hub`).
    pub(super) mixes: Vec<Vec<MixEntry>>,
    schedule: Vec<usize>,
    auth: HeaderValue,
    start: tokio::time::Instant,
    deadline: tokio::time::Instant,
    hard_deadline: tokio::time::Instant,
    max_requests: u64,
    started: AtomicU64,
    completed: AtomicU64,
    cap_reached: AtomicBool,
}

impl Run {
    /// A run starting now and lasting `duration` (then [`GRACE`]), over
    /// `mixes` (one per replica, each the same endpoints), as the member
    /// whose token is `member_token`.
    pub(super) fn new(
        client: Client,
        mixes: Vec<Vec<MixEntry>>,
        member_token: &str,
        duration: Duration,
        max_requests: u64,
    ) -> anyhow::Result<Run> {
        let auth = HeaderValue::from_str(&format!("Bearer {member_token}"))
            .context("the seed's memberToken is not a valid header value")?;
        let weights: Vec<u32> = mixes[0].iter().map(|e| e.weight).collect();
        let start = tokio::time::Instant::now();
        let deadline = start + duration;
        Ok(Run {
            client,
            schedule: schedule(&weights),
            mixes,
            auth,
            start,
            deadline,
            hard_deadline: deadline + GRACE,
            max_requests,
            started: AtomicU64::new(0),
            completed: AtomicU64::new(0),
            cap_reached: AtomicBool::new(false),
        })
    }

    /// Whether `--max-requests` requests were started.
    pub(super) fn cap_reached(&self) -> bool {
        self.cap_reached.load(Ordering::Relaxed)
    }
}

/// What the users did: how many started, their tallies added up per
/// replica (user `u` on replica `u % replicas`), and how long they ran.
pub(super) struct UsersOutcome {
    pub(super) users_started: u32,
    pub(super) per_replica: Vec<Vec<Tally>>,
    pub(super) elapsed: Duration,
}

/// Starts `users` users at `spawn_rate` per second (none after the deadline
/// or the cap) and waits for every one to finish.
pub(super) async fn run_users(
    run: &Arc<Run>,
    users: u32,
    spawn_rate: u32,
) -> anyhow::Result<UsersOutcome> {
    let spawn_every = Duration::from_secs_f64(1.0 / f64::from(spawn_rate));
    let mut handles = Vec::with_capacity(users as usize);
    for u in 0..users {
        let at = run.start + spawn_every.mul_f64(f64::from(u));
        if at >= run.deadline || run.cap_reached() {
            break;
        }
        tokio::time::sleep_until(at).await;
        handles.push(tokio::spawn(user(run.clone(), u)));
    }
    let users_started = handles.len() as u32;
    let replicas = run.mixes.len();
    let mut per_replica = vec![vec![Tally::default(); run.mixes[0].len()]; replicas];
    for (u, handle) in handles.into_iter().enumerate() {
        let tallies = handle.await.context("a virtual user failed")?;
        merge_into(&mut per_replica[u % replicas], tallies);
    }
    Ok(UsersOutcome {
        users_started,
        per_replica,
        elapsed: run.start.elapsed(),
    })
}

/// Sends one request and reads its body: the status (0 without a response)
/// and an error text when something failed below HTTP.
async fn execute(run: &Run, entry: &MixEntry, url: &Url) -> (u16, Option<String>) {
    let mut req = run.client.request(entry.method.clone(), url.clone());
    if entry.member {
        req = req.header(AUTHORIZATION, run.auth.clone());
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

/// One virtual user: its replica's mix from its own place in the schedule,
/// one request at a time, until the deadline or the cap.
async fn user(run: Arc<Run>, user: u32) -> Vec<Tally> {
    let mix = &run.mixes[user as usize % run.mixes.len()];
    let mut tallies = vec![Tally::default(); mix.len()];
    let len = run.schedule.len();
    let mut step = user as usize % len.max(1);
    let mut turn = user as usize;
    while tokio::time::Instant::now() < run.deadline && !run.cap_reached() {
        if run.started.fetch_add(1, Ordering::Relaxed) >= run.max_requests {
            run.cap_reached.store(true, Ordering::Relaxed);
            break;
        }
        let index = run.schedule[step];
        step = (step + 1) % len;
        let entry = &mix[index];
        let url = &entry.urls[turn % entry.urls.len()];
        turn += 1;
        let tally = &mut tallies[index];
        tally.sent += 1;
        let start = Instant::now();
        let outcome = tokio::time::timeout_at(run.hard_deadline, execute(&run, entry, url)).await;
        let Ok((status, error)) = outcome else {
            tally.abandoned += 1;
            break;
        };
        tally.record(status, error, entry.expected, start.elapsed());
        run.completed.fetch_add(1, Ordering::Relaxed);
        if status == 0 {
            let resume = tokio::time::Instant::now() + RETRY_PAUSE;
            tokio::time::sleep_until(resume.min(run.deadline)).await;
        }
    }
    tallies
}

/// The run's progress on standard error: a bar of the time gone and the
/// requests done, on a terminal only.
pub(super) struct Progress {
    bar: ProgressBar,
    ticker: JoinHandle<()>,
}

impl Progress {
    /// Shows `run`'s progress over `duration` until [`Progress::finish`].
    pub(super) fn start(run: &Arc<Run>, duration: Duration) -> Progress {
        let bar = progress_bar(duration);
        let ticker = {
            let bar = bar.clone();
            let run = run.clone();
            tokio::spawn(async move {
                let mut tick = tokio::time::interval(Duration::from_millis(250));
                loop {
                    tick.tick().await;
                    let done = run.completed.load(Ordering::Relaxed);
                    bar.set_position(run.start.elapsed().as_millis() as u64);
                    bar.set_message(format!("{done} requests"));
                }
            })
        };
        Progress { bar, ticker }
    }

    /// Stops the bar and clears it.
    pub(super) fn finish(self) {
        self.ticker.abort();
        self.bar.finish_and_clear();
    }
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
