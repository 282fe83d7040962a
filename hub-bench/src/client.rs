//! The HTTP side shared by apibench and load: the hub's base URL, the client,
//! and one-line error texts.
//!
//! The harness talks plain HTTP to a throwaway local hub (the guide's setup:
//! `http://127.0.0.1:19810`), so the client is built without TLS and without
//! proxies; an `https://` hub URL is refused with a clear error.

use std::error::Error as StdError;
use std::time::Duration;

use anyhow::{bail, Context as _};
use reqwest::{Client, Url};

/// Parses and checks a `--hub` URL: `http://host[:port][/prefix]`. A trailing
/// slash is dropped so paths can be appended.
pub fn parse_hub_url(text: &str) -> anyhow::Result<Url> {
    let url = Url::parse(text.trim()).with_context(|| format!("--hub {text:?}"))?;
    match url.scheme() {
        "http" => {}
        "https" => {
            bail!("--hub {text:?}: https is not supported; use the hub's plain http address")
        }
        other => bail!("--hub {text:?}: unsupported scheme {other:?} (want http)"),
    }
    if url.host_str().is_none_or(str::is_empty) {
        bail!("--hub {text:?}: no host");
    }
    if url.query().is_some() || url.fragment().is_some() {
        bail!("--hub {text:?}: a base URL takes no query or fragment");
    }
    let mut url = url;
    let trimmed = url.path().trim_end_matches('/').to_owned();
    url.set_path(&trimmed);
    Ok(url)
}

/// `base` with `segments` appended as path segments (each one escaped) and
/// `query` pairs added.
pub fn endpoint_url(base: &Url, segments: &[&str], query: &[(&str, &str)]) -> Url {
    let mut url = base.clone();
    if let Ok(mut path) = url.path_segments_mut() {
        path.pop_if_empty().extend(segments);
    }
    if !query.is_empty() {
        url.query_pairs_mut().extend_pairs(query);
    }
    url
}

/// The path and query of `url`, as shown in reports (`/api/v1/agents?projectId=p`).
pub fn path_and_query(url: &Url) -> String {
    match url.query() {
        Some(q) => format!("{}?{q}", url.path()),
        None => url.path().to_owned(),
    }
}

/// A client with an optional whole-request timeout (headers and body) and
/// room for `idle_per_host` kept-alive connections.
pub fn build_client(timeout: Option<Duration>, idle_per_host: usize) -> anyhow::Result<Client> {
    let mut builder = Client::builder()
        .no_proxy()
        .connect_timeout(Duration::from_secs(10))
        .pool_max_idle_per_host(idle_per_host)
        .tcp_nodelay(true);
    if let Some(t) = timeout {
        builder = builder.timeout(t);
    }
    builder.build().context("build HTTP client")
}

/// The hub's version from `GET /api/v1/settings/public` (field `version`);
/// empty when the request fails or the field is missing.
pub async fn hub_version(client: &Client, base: &Url) -> String {
    let url = endpoint_url(base, &["api", "v1", "settings", "public"], &[]);
    let Ok(resp) = client.get(url).send().await else {
        return String::new();
    };
    if !resp.status().is_success() {
        return String::new();
    }
    let Ok(body) = resp.bytes().await else {
        return String::new();
    };
    serde_json::from_slice::<serde_json::Value>(&body)
        .ok()
        .and_then(|v| v.get("version")?.as_str().map(str::to_owned))
        .unwrap_or_default()
}

/// An error and its sources on one line, joined by `: `, with repeats left out.
pub fn error_chain(error: &(dyn StdError + 'static)) -> String {
    let mut parts: Vec<String> = Vec::new();
    let mut current: Option<&(dyn StdError + 'static)> = Some(error);
    while let Some(e) = current {
        let text = e.to_string().replace('\n', " ");
        if !text.is_empty() && !parts.iter().any(|p| p.contains(&text)) {
            parts.push(text);
        }
        current = e.source();
    }
    parts.join(": ")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hub_urls() {
        let u = parse_hub_url("http://127.0.0.1:19810/").unwrap();
        assert_eq!(u.as_str(), "http://127.0.0.1:19810/");
        let a = endpoint_url(&u, &["api", "v1", "projects", "p 1", "agents"], &[]);
        assert_eq!(
            a.as_str(),
            "http://127.0.0.1:19810/api/v1/projects/p%201/agents"
        );
        let q = endpoint_url(&u, &["api", "v1", "agents"], &[("projectId", "p&1")]);
        assert_eq!(path_and_query(&q), "/api/v1/agents?projectId=p%261");

        let prefixed = parse_hub_url("http://localhost:8080/hub/").unwrap();
        let a = endpoint_url(&prefixed, &["healthz"], &[]);
        assert_eq!(a.as_str(), "http://localhost:8080/hub/healthz");

        for bad in [
            "https://x",
            "ftp://x",
            "not a url",
            "http://x/?a=1",
            "127.0.0.1:80",
        ] {
            let e = parse_hub_url(bad).unwrap_err();
            assert!(!format!("{e:#}").contains('\n'), "{bad}");
        }
    }

    #[test]
    fn error_chain_is_one_line() {
        let inner = std::io::Error::other("connection refused");
        let outer = anyhow::Error::new(inner).context("connect");
        let e: &(dyn StdError + 'static) = outer.as_ref();
        assert_eq!(error_chain(e), "connect: connection refused");
    }
}
