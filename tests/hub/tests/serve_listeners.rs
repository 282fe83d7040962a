//! `serve` with every listener (the API, `--enable-web`, `--metrics-port`)
//! as one server: one shutdown for all of them, after which the audit queue
//! is drained once and `shutdown finished` is the last line; the metrics
//! port under the Hub's timeouts, a cap on its connections and its own
//! `Host` only; and the web client's own routes behind the Hub's request
//! guards, traced as their own endpoint classes.

mod hub_support;

use std::io::Write;
use std::net::TcpStream;
use std::path::Path;
use std::process::{Command, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use hub_example::seed::SeedDocument;
use hub_support::process::{
    first_agent, free_port, read_until_closed, round_trip, seed_in, serve, RunningHub,
};
use hub_support::SECRET;
use serde_json::Value;

fn seeded(dir: &Path) -> SeedDocument {
    seed_in(dir, 5, "listeners")
}

/// `serve`'s arguments for the API on `api` and the web client on `web`,
/// then `more`.
fn web_args(api: u16, web: u16, more: &[&str]) -> Vec<String> {
    let ports = [
        "--port",
        &api.to_string(),
        "--enable-web",
        "--web-port",
        &web.to_string(),
    ]
    .map(str::to_owned);
    ports
        .into_iter()
        .chain(more.iter().map(|a| a.to_string()))
        .collect()
}

/// `hub-example serve` on the seeded database in `dir`, tracing on, with
/// `args` added.
fn serve_command<S: AsRef<std::ffi::OsStr>>(dir: &Path, args: &[S]) -> Command {
    let mut command = serve(&dir.join("hub.db"));
    command
        .args(["--session-secret", SECRET])
        .args(args)
        .env("SCION_SERVER_HUB_PERFTRACE", "true");
    command
}

/// One request on a fresh connection to `port` (`head` without the empty
/// line), closed after the answer; the whole answer as text.
fn exchange(port: u16, head: &str) -> String {
    round_trip(
        &format!("127.0.0.1:{port}"),
        &format!("{head}\r\nConnection: close\r\n\r\n"),
    )
}

/// The status code and JSON body of an answer.
fn json_answer(answer: &str) -> (u16, Value) {
    let status = answer.get(9..12).and_then(|s| s.parse().ok()).unwrap_or(0);
    let (head, body) = answer.split_once("\r\n\r\n").unwrap_or((answer, ""));
    assert!(
        head.to_ascii_lowercase()
            .contains("content-type: application/json"),
        "{answer}"
    );
    (status, serde_json::from_str(body).unwrap_or(Value::Null))
}

fn has_request_id(answer: &str) -> bool {
    let head = answer.split("\r\n\r\n").next().unwrap_or("");
    head.lines()
        .any(|l| l.to_ascii_lowercase().starts_with("x-request-id: "))
}

#[test]
fn sigterm_stops_every_listener_at_once_and_drains_the_audit_queue_after_every_write() {
    let dir = tempfile::tempdir().unwrap();
    let doc = seeded(dir.path());
    let (api, web, metrics) = (free_port(), free_port(), free_port());
    let mut hub = RunningHub::start(
        serve_command(
            dir.path(),
            &web_args(
                api,
                web,
                &[
                    "--metrics-port",
                    &metrics.to_string(),
                    "--shutdown-timeout",
                    "10s",
                    "--request-timeout",
                    "60s",
                ],
            ),
        ),
        &[api, web, metrics],
    );
    let agent = first_agent(&dir.path().join("hub.db"), &doc.project_id);

    // A write whose body is still arriving when the signal comes; the web
    // listener has nothing in flight.
    let body = br#"{"phase":"stopped"}"#;
    let mut write = TcpStream::connect(("127.0.0.1", api)).unwrap();
    write!(
        write,
        "PUT /api/v1/agents/{agent}/status HTTP/1.1\r\nHost: 127.0.0.1:{api}\r\nAuthorization: Bearer {}\r\nContent-Length: {}\r\nConnection: close\r\n\r\n",
        doc.owner_token,
        body.len()
    )
    .unwrap();
    write.write_all(&body[..1]).unwrap();
    std::thread::sleep(Duration::from_millis(300));
    hub.terminate();
    let started = hub.wait_for_line("shutdown started", |l| l["msg"] == "shutdown started");
    assert_eq!(started["requests_in_flight"], 1, "{started}");
    // Whatever an idle listener would do on its own has had time to happen.
    std::thread::sleep(Duration::from_millis(500));
    let still_accepting: Vec<&str> = [("api", api), ("web", web), ("metrics", metrics)]
        .into_iter()
        .filter(|(_, port)| TcpStream::connect(("127.0.0.1", *port)).is_ok())
        .map(|(name, _)| name)
        .collect();

    // The write finishes during the shutdown.
    write.write_all(&body[1..]).unwrap();
    let (answer, closed) = read_until_closed(&mut write, Duration::from_secs(10));
    assert!(closed);
    assert!(answer.starts_with("HTTP/1.1 200"), "{answer}");
    assert!(answer.contains(r#""phase":"stopped""#), "{answer}");
    assert!(hub.wait_for_exit(Duration::from_secs(30)).success());

    // Its decision was recorded: the audit queue was drained after it.
    let audited: i64 = rusqlite::Connection::open(dir.path().join("hub.db"))
        .unwrap()
        .query_row(
            "SELECT COUNT(*) FROM audit_events WHERE action = 'agent.update'",
            [],
            |r| r.get(0),
        )
        .unwrap();
    assert!(audited >= 1, "no audit row for the write");
    let lines = hub.lines();
    let count = |msg: &str| lines.iter().filter(|l| l["msg"] == msg).count();
    assert_eq!(count("shutdown started"), 1, "{lines:?}");
    assert_eq!(count("shutdown finished"), 1, "{lines:?}");
    assert_eq!(count("audit records lost at shutdown"), 0, "{lines:?}");
    let drained: Vec<&Value> = lines
        .iter()
        .filter(|l| l["msg"] == "audit drained")
        .collect();
    assert_eq!(drained.len(), 1, "{lines:?}");
    assert_eq!(drained[0]["rejected"], 0, "{}", drained[0]);
    assert_eq!(drained[0]["lost"], 0, "{}", drained[0]);
    let last = lines.last().unwrap();
    assert_eq!(last["msg"], "shutdown finished", "{lines:?}");
    assert_eq!(last["cut_off_requests"], 0, "{last}");
    assert!(
        still_accepting.is_empty(),
        "still accepting after shutdown started: {still_accepting:?}"
    );
}

#[test]
fn silent_connections_to_the_metrics_port_leave_descriptors_for_the_api() {
    let dir = tempfile::tempdir().unwrap();
    seeded(dir.path());
    let (api, metrics) = (free_port(), free_port());
    // The Hub under a low descriptor limit, as `ulimit -n 256` sets it.
    let serve = serve_command(
        dir.path(),
        &[
            "--port",
            &api.to_string(),
            "--metrics-port",
            &metrics.to_string(),
            "--header-read-timeout",
            "2s",
        ],
    );
    let mut command = Command::new("sh");
    command
        .args(["-c", r#"ulimit -n 256 && exec "$0" "$@""#])
        .arg(serve.get_program())
        .args(serve.get_args())
        .envs(serve.get_envs().filter_map(|(k, v)| Some((k, v?))))
        .stdout(Stdio::piped())
        .stderr(Stdio::null());
    let hub = RunningHub::start(command, &[api, metrics]);

    // More silent connections than the Hub has descriptors, opened in the
    // background: past the listen queue, a connect completes only as the
    // Hub takes one (the capped Hub, as it closes late heads).
    let silent = Arc::new(Mutex::new(Vec::new()));
    let stop = Arc::new(std::sync::atomic::AtomicBool::new(false));
    let opener = {
        let (silent, stop) = (Arc::clone(&silent), Arc::clone(&stop));
        std::thread::spawn(move || {
            for _ in 0..260 {
                let Ok(stream) = TcpStream::connect(("127.0.0.1", metrics)) else {
                    break;
                };
                if stop.load(std::sync::atomic::Ordering::Relaxed) {
                    break;
                }
                silent.lock().unwrap().push(stream);
            }
        })
    };
    // Past the listen queue (128) and most of the Hub's descriptors.
    let started = Instant::now();
    while silent.lock().unwrap().len() < 140 {
        assert!(
            started.elapsed() < Duration::from_secs(20),
            "connects stalled"
        );
        std::thread::sleep(Duration::from_millis(10));
    }
    std::thread::sleep(Duration::from_millis(500));
    let mut health = TcpStream::connect(("127.0.0.1", api)).unwrap();
    write!(
        health,
        "GET /healthz HTTP/1.1\r\nHost: 127.0.0.1:{api}\r\nConnection: close\r\n\r\n"
    )
    .unwrap();
    let (answer, _) = read_until_closed(&mut health, Duration::from_secs(5));
    assert!(answer.starts_with("HTTP/1.1 200"), "healthz: {answer:?}");

    // The first of them is closed by the Hub once its head is late.
    let mut first = silent.lock().unwrap()[0].try_clone().unwrap();
    let (_, closed) = read_until_closed(&mut first, Duration::from_secs(10));
    assert!(closed, "a silent connection is still open");
    stop.store(true, std::sync::atomic::Ordering::Relaxed);
    silent.lock().unwrap().clear();
    drop(first);
    opener.join().unwrap();

    let scrape = exchange(
        metrics,
        &format!("GET /metrics HTTP/1.1\r\nHost: 127.0.0.1:{metrics}"),
    );
    assert!(scrape.starts_with("HTTP/1.1 200"), "{scrape}");
    assert!(scrape.contains("scion_hub_requests_total"), "{scrape}");
    let (status, body) = json_answer(&exchange(
        metrics,
        &format!("GET /nothing-here HTTP/1.1\r\nHost: 127.0.0.1:{metrics}"),
    ));
    assert_eq!(
        (status, body["error"].as_str()),
        (404, Some("route not found"))
    );
    let (status, body) = json_answer(&exchange(
        metrics,
        &format!("POST /metrics HTTP/1.1\r\nHost: 127.0.0.1:{metrics}\r\nContent-Length: 0"),
    ));
    assert_eq!(status, 405, "{body}");
    for host in [
        format!("attacker.example:{metrics}"),
        format!("localhost:{metrics}"),
    ] {
        let answer = exchange(metrics, &format!("GET /metrics HTTP/1.1\r\nHost: {host}"));
        let (status, body) = json_answer(&answer);
        assert_eq!(
            (status, body["error"].as_str()),
            (421, Some("unknown host"))
        );
        assert!(!answer.contains("scion_hub_"), "{answer}");
    }
    drop(hub);
}

#[test]
fn the_web_port_s_own_routes_pass_the_hub_s_guards_and_write_their_lines() {
    let dir = tempfile::tempdir().unwrap();
    seeded(dir.path());
    let (api, web) = (free_port(), free_port());
    let hub = RunningHub::start(
        serve_command(
            dir.path(),
            &web_args(
                api,
                web,
                &["--enable-test-login", "--request-timeout", "3s"],
            ),
        ),
        &[api, web],
    );
    let host = format!("Host: 127.0.0.1:{web}");

    // A body trickled at one byte a second is cut off by the request timeout.
    let mut trickle = TcpStream::connect(("127.0.0.1", web)).unwrap();
    write!(
        trickle,
        "POST /api/v1/auth/test-login HTTP/1.1\r\n{host}\r\nX-Scion-Client: web\r\nContent-Type: application/json\r\nContent-Length: 100\r\n\r\n"
    )
    .unwrap();
    let mut writer = trickle.try_clone().unwrap();
    std::thread::spawn(move || {
        for _ in 0..20 {
            if writer.write_all(b" ").is_err() {
                break;
            }
            std::thread::sleep(Duration::from_secs(1));
        }
    });
    let sent = Instant::now();
    let (answer, closed) = read_until_closed(&mut trickle, Duration::from_secs(15));
    assert!(closed, "the trickled request is still open: {answer}");
    assert!(sent.elapsed() < Duration::from_secs(15));
    let (status, body) = json_answer(&answer);
    assert_eq!(
        (status, body["error"].as_str()),
        (408, Some("request timed out"))
    );

    let page = exchange(web, &format!("GET / HTTP/1.1\r\n{host}"));
    assert!(page.starts_with("HTTP/1.1 200"), "{page}");
    assert!(has_request_id(&page), "{page}");
    let asset = exchange(web, &format!("GET /assets/app.js HTTP/1.1\r\n{host}"));
    assert!(has_request_id(&asset), "{asset}");
    for head in [
        "PUT /assets/app.js HTTP/1.1",
        "GET /api/v1/auth/session HTTP/1.1",
        "DELETE / HTTP/1.1",
    ] {
        let answer = exchange(web, &format!("{head}\r\n{host}"));
        let (status, body) = json_answer(&answer);
        assert_eq!(
            (status, body["error"].as_str()),
            (405, Some("method not allowed")),
            "{head}: {answer}"
        );
        assert!(has_request_id(&answer), "{answer}");
    }
    let long = format!("GET /assets/{} HTTP/1.1\r\n{host}", "a".repeat(3000));
    let (status, body) = json_answer(&exchange(web, &long));
    assert_eq!(
        (status, body["error"].as_str()),
        (414, Some("request path too long"))
    );
    // The API through the web port: one line, the API's class.
    let health = exchange(web, &format!("GET /healthz HTTP/1.1\r\n{host}"));
    assert!(health.starts_with("HTTP/1.1 200"), "{health}");

    // Each request has exactly one line, of its own class (the 414 is
    // refused before tracing, as on the API), in whatever order the
    // threads' buffers wrote them.
    let mut expected = vec![
        ("web.auth", "POST"),
        ("web.page", "GET"),
        ("web.asset", "GET"),
        ("web.asset", "PUT"),
        ("web.auth", "GET"),
        ("web.page", "DELETE"),
        ("other", "GET"),
    ];
    expected.sort();
    let perf_lines = || -> Vec<(String, String)> {
        let mut lines: Vec<(String, String)> = hub
            .lines()
            .iter()
            .filter(|l| l["msg"] == "perf_trace")
            .map(|l| {
                (
                    l["endpoint"].as_str().unwrap().to_owned(),
                    l["method"].as_str().unwrap().to_owned(),
                )
            })
            .collect();
        lines.sort();
        lines
    };
    let started = Instant::now();
    while perf_lines().len() < expected.len() && started.elapsed() < Duration::from_secs(10) {
        std::thread::sleep(Duration::from_millis(20));
    }
    std::thread::sleep(Duration::from_millis(200));
    let perf = perf_lines();
    let perf: Vec<(&str, &str)> = perf.iter().map(|(e, m)| (&e[..], &m[..])).collect();
    assert_eq!(perf, expected);
}
