//! `serve --enable-web` as a user starts it: the page and the API on
//! `--web-port`, the API alone on `--port`, and the flags that only make
//! sense with the web listener refused without it.

mod hub_support;

use std::process::Stdio;

use hub_support::process::{exchange, free_port, hub_example, serve, RunningHub};

#[test]
fn web_flags_need_enable_web() {
    for flag in [&["--enable-test-login"][..], &["--web-port", "18081"]] {
        let out = hub_example()
            .args(["serve", "--db", "x.db", "--session-secret", "s"])
            .args(flag)
            .output()
            .unwrap();
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{flag:?}: {stderr}");
        assert_eq!(stderr.trim_end().lines().count(), 1, "{stderr}");
        assert!(stderr.contains("--enable-web"), "{stderr}");
    }
}

#[test]
fn the_web_port_serves_the_page_and_the_api_and_the_api_port_only_the_api() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("hub.db");
    let seed = dir.path().join("seed.json");
    let status = hub_example()
        .args([
            "seed",
            "--db",
            db.to_str().unwrap(),
            "--session-secret",
            "s1",
        ])
        .args(["--agents", "3", "--out", seed.to_str().unwrap()])
        .stderr(Stdio::null())
        .status()
        .unwrap();
    assert!(status.success());
    let doc: serde_json::Value = serde_json::from_slice(&std::fs::read(&seed).unwrap()).unwrap();
    let (api_port, web_port) = (free_port(), free_port());
    let mut command = serve(&db);
    command
        .args(["--session-secret", "s1"])
        .args(["--port", &api_port.to_string(), "--enable-web"])
        .args(["--web-port", &web_port.to_string()]);
    let hub = RunningHub::start(command, &[api_port, web_port]);
    let (api, web) = (
        format!("127.0.0.1:{api_port}"),
        format!("127.0.0.1:{web_port}"),
    );

    let page = exchange(
        &web,
        &format!(
            "GET /projects/{} HTTP/1.1",
            doc["projectId"].as_str().unwrap()
        ),
    );
    assert!(page.starts_with("HTTP/1.1 200"), "{page}");
    assert!(page.contains("content-type: text/html; charset=utf-8"));
    assert!(page.contains(r#"<script type="module" src="/assets/app.js">"#));
    let module = exchange(&web, "GET /assets/app.js HTTP/1.1");
    assert!(
        module.contains("content-type: text/javascript; charset=utf-8"),
        "{module}"
    );
    assert!(module.contains("etag: \""));
    let token = doc["memberToken"].as_str().unwrap();
    let list = format!(
        "GET /api/v1/projects/{}/agents HTTP/1.1\r\nAuthorization: Bearer {token}",
        doc["projectId"].as_str().unwrap()
    );
    for addr in [&web, &api] {
        let response = exchange(addr, &list);
        assert!(response.starts_with("HTTP/1.1 200"), "{addr}: {response}");
    }
    // The API port has no pages.
    let no_page = exchange(&api, "GET /assets/app.js HTTP/1.1");
    assert!(!no_page.starts_with("HTTP/1.1 200"), "{no_page}");
    assert!(no_page.contains("application/json"));
    drop(hub);
}
