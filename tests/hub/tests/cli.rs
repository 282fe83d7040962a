//! The command line as a user meets it: help, one-line errors, seed and serve.

mod hub_support;

use std::path::Path;

use hub_support::process::{free_port, get, hub_example, serve, RunningHub};

fn run(args: &[&str]) -> (i32, String, String) {
    let out = hub_example().args(args).output().unwrap();
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

#[test]
fn every_subcommand_has_help() {
    for args in [&["--help"][..], &["serve", "--help"], &["seed", "--help"]] {
        let (code, stdout, _) = run(args);
        assert_eq!(code, 0, "{args:?}");
        assert!(stdout.contains("Usage"), "{args:?}: {stdout}");
    }
    for (subcommand, flags) in [
        (
            "serve",
            &[
                "--db",
                "--session-secret",
                "--port",
                "--host",
                "--config",
                "--no-auto-migrate",
            ][..],
        ),
        (
            "seed",
            &[
                "--db",
                "--session-secret",
                "--agents",
                "--project-slug",
                "--rand-seed",
                "--out",
            ],
        ),
    ] {
        let (_, help, _) = run(&[subcommand, "--help"]);
        for flag in flags {
            assert!(help.contains(flag), "{flag}");
        }
    }
}

#[test]
fn bad_flags_and_missing_files_are_one_line_errors() {
    let dir = tempfile::tempdir().unwrap();
    let missing = dir.path().join("missing.db");
    let missing = missing.to_str().unwrap();
    // Each command line split at its spaces (the temporary path has none).
    for (command_line, code) in [
        (String::new(), 2),
        // The demo and the clients are `hub-bench`'s.
        ("demo".to_owned(), 2),
        ("serve --bogus".to_owned(), 2),
        ("seed --db x.db".to_owned(), 2),
        (
            "seed --db x.db --session-secret s --agents -3 --out o.json".to_owned(),
            2,
        ),
        (
            format!("serve --db {missing} --session-secret s --port 0"),
            1,
        ),
        (
            format!("serve --db {missing} --session-secret s --config /nonexistent/hub.yaml"),
            1,
        ),
        (
            format!(
                "seed --db {missing} --session-secret s --agents 1 --out /nonexistent/dir/seed.json"
            ),
            1,
        ),
    ] {
        let args: Vec<&str> = command_line.split_whitespace().collect();
        let (got, stdout, stderr) = run(&args);
        assert_eq!(got, code, "{args:?}: {stderr}");
        assert!(stdout.is_empty(), "{args:?}");
        assert_eq!(stderr.trim_end().lines().count(), 1, "{args:?}: {stderr}");
        assert!(stderr.starts_with("hub-example: error: "), "{stderr}");
        assert!(!stderr.contains("panicked"));
    }
    assert!(!Path::new(missing).exists());
}

#[test]
fn seed_then_serve_with_tracing_from_the_environment() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("hub.db");
    let out = dir.path().join("seed.json");
    let (code, _, stderr) = run(&[
        "seed",
        "--db",
        db.to_str().unwrap(),
        "--session-secret",
        "bench-secret-1",
        "--agents",
        "25",
        "--project-slug",
        "bench-25",
        "--out",
        out.to_str().unwrap(),
    ]);
    assert_eq!(code, 0, "{stderr}");
    let doc: serde_json::Value = serde_json::from_slice(&std::fs::read(&out).unwrap()).unwrap();

    let port = free_port();
    let mut command = serve(&db);
    command
        .args([
            "--session-secret",
            "bench-secret-1",
            "--port",
            &port.to_string(),
            "--no-auto-migrate",
        ])
        .env("SCION_SERVER_HUB_PERFTRACE", "true");
    let mut hub = RunningHub::start(command, &[port]);
    let addr = format!("127.0.0.1:{port}");
    let path = format!(
        "/api/v1/projects/{}/agents",
        doc["projectId"].as_str().unwrap()
    );
    let response = get(&addr, &path, doc["memberToken"].as_str().unwrap());
    assert!(response.starts_with("HTTP/1.1 200"), "{response}");
    let request_id = response
        .lines()
        .find_map(|l| l.strip_prefix("x-request-id: "))
        .unwrap()
        .trim()
        .to_owned();

    // SIGTERM-free stop: kill the child we started, then read what it logged.
    // The line is rendered and written within a flush interval of the
    // request's end; a process killed outright loses what is younger.
    std::thread::sleep(hub_example::perf::LINE_FLUSH_INTERVAL * 10);
    hub.kill();
    let lines = hub.lines();
    assert_eq!(
        lines[0]["msg"],
        "Request performance tracing is on (server.hub.perf_trace); per-request perf_trace lines are logged"
    );
    let traced: Vec<&serde_json::Value> = lines
        .iter()
        .filter(|l| l["msg"] == "perf_trace" && l["endpoint"] == "agents.project.legacy")
        .collect();
    assert_eq!(traced.len(), 1);
    assert_eq!(traced[0]["request_id"], request_id.as_str());
}

#[test]
fn serve_takes_its_secret_from_a_file_or_the_environment_and_checks_its_limits() {
    let dir = tempfile::tempdir().unwrap();
    let missing = dir.path().join("missing.db");
    let missing = missing.to_str().unwrap();
    let empty = dir.path().join("empty-secret");
    std::fs::write(&empty, "\n").unwrap();
    let empty = empty.to_str().unwrap();
    fn serve<'a>(missing: &'a str, extra: &[&'a str]) -> Vec<&'a str> {
        let mut args = vec!["serve", "--db", missing];
        args.extend_from_slice(extra);
        args
    }
    for (args, env, code, expected) in [
        (serve(missing, &[]), None, 2, "--session-secret-file"),
        (
            serve(
                missing,
                &["--session-secret", "s", "--session-secret-file", empty],
            ),
            None,
            2,
            "cannot be used with",
        ),
        (
            serve(missing, &["--session-secret-file", "/nonexistent/secret"]),
            None,
            1,
            "cannot read session secret file",
        ),
        (
            serve(missing, &["--session-secret-file", empty]),
            None,
            1,
            "the session secret is empty",
        ),
        (
            serve(
                missing,
                &["--session-secret", "s", "--request-timeout", "soon"],
            ),
            None,
            2,
            "--request-timeout",
        ),
        (
            serve(missing, &["--session-secret", "s", "--max-streams", "0"]),
            None,
            2,
            "--max-streams",
        ),
        (
            serve(
                missing,
                &["--session-secret", "s", "--shutdown-timeout", "0s"],
            ),
            None,
            1,
            "--shutdown-timeout must be above zero",
        ),
        (
            serve(
                missing,
                &["--session-secret", "s", "--max-connections", "1"],
            ),
            None,
            2,
            "--max-connections",
        ),
        (
            serve(missing, &["--session-secret", "s"]),
            Some(("SCION_SERVER_HUB_MAX_CONNECTIONS_PER_ADDRESS", "all")),
            1,
            "SCION_SERVER_HUB_MAX_CONNECTIONS_PER_ADDRESS must be a whole number above zero",
        ),
        (
            serve(missing, &["--session-secret", "s"]),
            Some(("SCION_SERVER_HUB_MAX_STREAMS_PER_PRINCIPAL", "lots")),
            1,
            "SCION_SERVER_HUB_MAX_STREAMS_PER_PRINCIPAL must be a whole number above zero",
        ),
        // The secret from the environment: the start goes on to the database.
        (
            serve(missing, &[]),
            Some(("SCION_SESSION_SECRET", "from-the-environment")),
            1,
            "does not exist",
        ),
    ] {
        let mut command = hub_example();
        command.args(&args);
        if let Some((name, value)) = env {
            command.env(name, value);
        }
        let out = command.output().unwrap();
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(code), "{args:?}: {stderr}");
        assert_eq!(stderr.trim_end().lines().count(), 1, "{args:?}: {stderr}");
        assert!(stderr.contains(expected), "{args:?}: {stderr}");
        assert!(!stderr.contains("from-the-environment") && !stderr.contains("lots"));
    }
}
