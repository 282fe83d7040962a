//! PostgreSQL restarted under load: a Hub on PostgreSQL answers 503 with
//! `Retry-After` while the server is down, serves again once it is back
//! without being restarted itself, and writes one perf_trace line per
//! request it answered throughout.
//!
//! The server is `PERF_TRACE_PG_URL`, restarted with the shell command in
//! `PERF_TRACE_PG_RESTART` (`.ci/postgres restart` in CI; e.g. `sudo
//! pg_ctlcluster 15 main restart`), which should return once the server
//! answers again. Without either variable the test is skipped with one line
//! on standard error; with `CI=true` it fails instead. The restart cuts off
//! every client of the server, so this is the only test of its binary
//! (cargo runs test binaries one after another): no other PostgreSQL test
//! runs while it does.

mod hub_support;
mod served;

use std::collections::HashMap;
use std::io::Write;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use hub_example::log::CaptureBuffer;
use hub_support::pg_url::pg_url;
use hub_support::{Seeded, TestHub, TRACED};

/// The variable holding the command that restarts the server.
const RESTART_VAR: &str = "PERF_TRACE_PG_RESTART";

/// Clients sending requests one after another, side by side.
const CLIENTS: usize = 4;

/// Answers in a row, all 200, that end the run once the server is back.
const RECOVERED_RUN: usize = 20;

/// The restart command, or `None` (after saying so) when it is not set.
fn restart_command() -> Option<String> {
    match std::env::var(RESTART_VAR) {
        Ok(command) if !command.trim().is_empty() => Some(command),
        _ => {
            if std::env::var("CI").is_ok_and(|v| v == "true") {
                panic!(
                    "{RESTART_VAR} is not set and CI=true: CI restarts PostgreSQL under load \
                     (.ci/run sets it to `.ci/postgres restart`)"
                );
            }
            let _ = writeln!(
                std::io::stderr(),
                "PostgreSQL restart test skipped: {RESTART_VAR} is not set \
                 (set it to a command that restarts the server, e.g. `sudo pg_ctlcluster 15 main restart`)"
            );
            None
        }
    }
}

/// One answered request.
#[derive(Debug, Clone)]
struct Answer {
    at: Instant,
    status: u16,
    retry_after: Option<String>,
    request_id: Option<String>,
}

/// The answers the clients have had so far, in the order they came.
type Answers = Arc<Mutex<Vec<Answer>>>;

/// `CLIENTS` clients requesting `url` one request after another until `stop`.
fn spawn_clients(
    url: &str,
    token: &str,
    answers: &Answers,
    stop: &Arc<AtomicBool>,
) -> Vec<tokio::task::JoinHandle<()>> {
    let client = reqwest::Client::new();
    (0..CLIENTS)
        .map(|_| {
            let (client, url, token) = (client.clone(), url.to_owned(), token.to_owned());
            let (answers, stop) = (answers.clone(), stop.clone());
            tokio::spawn(async move {
                while !stop.load(Ordering::Relaxed) {
                    let response = client
                        .get(&url)
                        .bearer_auth(&token)
                        .send()
                        .await
                        .expect("the Hub itself stays up: every request is answered");
                    let header = |name: &str| {
                        response
                            .headers()
                            .get(name)
                            .map(|v| v.to_str().unwrap().to_owned())
                    };
                    let answer = Answer {
                        at: Instant::now(),
                        status: response.status().as_u16(),
                        retry_after: header("retry-after"),
                        request_id: header("x-request-id"),
                    };
                    response.bytes().await.unwrap();
                    answers.lock().unwrap().push(answer);
                }
            })
        })
        .collect()
}

/// Runs the restart command; returns when it started and when it ended.
async fn restart_the_server(restart: String) -> (Instant, Instant) {
    let restart_started = Instant::now();
    let restarted = tokio::task::spawn_blocking(move || {
        std::process::Command::new("sh")
            .args(["-c", &restart])
            .output()
            .unwrap()
    })
    .await
    .unwrap();
    let restart_ended = Instant::now();
    assert!(
        restarted.status.success(),
        "{RESTART_VAR} failed: {}",
        String::from_utf8_lossy(&restarted.stderr)
    );
    (restart_started, restart_ended)
}

/// Waits (a liveness bound only) until the last answers are all 200;
/// whether they were.
async fn wait_recovered(answers: &Answers, restart_ended: Instant) -> bool {
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        let done = {
            let answers = answers.lock().unwrap();
            let after: Vec<&Answer> = answers.iter().filter(|a| a.at > restart_ended).collect();
            after.len() >= RECOVERED_RUN
                && after[after.len() - RECOVERED_RUN..]
                    .iter()
                    .all(|a| a.status == 200)
        };
        if done || Instant::now() > deadline {
            break done;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

/// 200 before the restart, 503 with `Retry-After: 1` during it, 200 again
/// after; nothing else. Returns the 503 answers.
fn assert_outage_answers(
    answers: &[Answer],
    recovered: bool,
    restart_started: Instant,
) -> Vec<&Answer> {
    assert!(
        recovered,
        "the Hub did not serve 200 again after the restart"
    );
    assert!(
        answers
            .iter()
            .any(|a| a.at < restart_started && a.status == 200),
        "no 200 before the restart"
    );
    let unavailable: Vec<&Answer> = answers.iter().filter(|a| a.status == 503).collect();
    assert!(
        !unavailable.is_empty(),
        "no request met the outage: {} answers, all 200",
        answers.len()
    );
    for a in answers {
        assert!(a.status == 200 || a.status == 503, "{a:?}");
    }
    for a in &unavailable {
        assert_eq!(a.retry_after.as_deref(), Some("1"), "{a:?}");
        assert!(
            a.at >= restart_started,
            "a 503 before the restart began: {a:?}"
        );
    }
    unavailable
}

/// One line per request answered, matched by request id; returns the lines
/// per request id.
fn assert_one_line_per_answer(log: &CaptureBuffer, answers: &[Answer]) -> HashMap<String, usize> {
    let mut lines: HashMap<String, usize> = HashMap::new();
    for line in served::perf_values(log) {
        let id = line["request_id"].as_str().unwrap().to_owned();
        *lines.entry(id).or_default() += 1;
    }
    let ours: HashMap<&str, &Answer> = answers
        .iter()
        .filter_map(|a| Some((a.request_id.as_deref()?, a)))
        .collect();
    for (id, n) in &lines {
        assert_eq!(*n, 1, "request {id} has {n} lines");
        assert!(
            ours.contains_key(id.as_str()),
            "a line for no request: {id}"
        );
    }
    // Every answer has its line: a 503 answered while authenticating (the
    // credential's user is read from the database) too.
    for a in answers {
        let lined = a
            .request_id
            .as_ref()
            .is_some_and(|id| lines.contains_key(id));
        assert!(lined, "an answer without its line: {a:?}");
    }
    lines
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_restarted_server_is_503_with_retry_after_then_served_again_with_one_line_per_request() {
    let Some(server) = pg_url() else { return };
    let Some(restart) = restart_command() else {
        return;
    };
    let TestHub {
        seeded, hub, log, ..
    } = TestHub::over_small_pool(
        Seeded::on_postgres(8, &server),
        // Every answer reads the database: none comes from a cache.
        TRACED,
        8,
    );
    let served = served::Served::hub(&hub).await;
    let url = format!(
        "{}/api/v1/projects/{}/agents",
        served.url(),
        seeded.doc.project_id
    );
    let token = seeded.doc.member_token.clone();

    let answers: Answers = Arc::new(Mutex::new(Vec::new()));
    let stop = Arc::new(AtomicBool::new(false));
    let clients = spawn_clients(&url, &token, &answers, &stop);

    tokio::time::sleep(Duration::from_millis(500)).await;
    let (restart_started, restart_ended) = restart_the_server(restart).await;
    let recovered = wait_recovered(&answers, restart_ended).await;
    stop.store(true, Ordering::Relaxed);
    for client in clients {
        client.await.unwrap();
    }
    served.stop().await;
    let answers = answers.lock().unwrap().clone();

    let unavailable = assert_outage_answers(&answers, recovered, restart_started);
    let lines = assert_one_line_per_answer(&log, &answers);
    let _ = writeln!(
        std::io::stderr(),
        "restart took {:?}; {} answers: {} 503, {} lines",
        restart_ended - restart_started,
        answers.len(),
        unavailable.len(),
        lines.len()
    );
    assert_eq!(lines.len(), answers.len());
}
