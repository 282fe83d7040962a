//! The client's assets, compiled into the binary: plain ES modules and one
//! style sheet, with no build step and nothing fetched at run time.
//!
//! Each is served with its content type, `X-Content-Type-Options: nosniff`,
//! a strong `ETag` (a SHA-256 prefix of its bytes) and
//! `Cache-Control: no-cache`: a browser keeps its copy and revalidates it
//! (a 304 without a body) on each load, so a new Hub build is picked up at
//! once without versioned file names.

use std::sync::OnceLock;

use axum::extract::Path;
use axum::http::{header, HeaderMap, HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};
use sha2::{Digest, Sha256};

use crate::api::ApiError;

/// One asset: its name under `/assets/`, content type and bytes.
#[derive(Debug)]
pub struct Asset {
    /// The file name.
    pub name: &'static str,
    /// The `Content-Type`.
    pub content_type: &'static str,
    /// The contents.
    pub body: &'static str,
}

macro_rules! assets {
    ($($name:literal => $type:literal),* $(,)?) => {
        /// Every asset the client loads.
        pub(crate) const ASSETS: &[Asset] = &[
            $(Asset { name: $name, content_type: $type, body: include_str!(concat!("../../web/", $name)) },)*
        ];
    };
}

assets! {
    "app.js" => "text/javascript; charset=utf-8",
    "api.js" => "text/javascript; charset=utf-8",
    "marks.js" => "text/javascript; charset=utf-8",
    "project.js" => "text/javascript; charset=utf-8",
    "graph.js" => "text/javascript; charset=utf-8",
    "signin.js" => "text/javascript; charset=utf-8",
    "dom.js" => "text/javascript; charset=utf-8",
    "live.js" => "text/javascript; charset=utf-8",
    "style.css" => "text/css; charset=utf-8",
}

/// The asset named `name`, if there is one.
pub fn find(name: &str) -> Option<&'static Asset> {
    ASSETS.iter().find(|a| a.name == name)
}

/// The `ETag` of each asset, in [`ASSETS`] order, computed once.
fn etags() -> &'static [String] {
    static ETAGS: OnceLock<Vec<String>> = OnceLock::new();
    ETAGS.get_or_init(|| {
        ASSETS
            .iter()
            .map(|a| {
                let digest = Sha256::digest(a.body.as_bytes());
                let hex: String = digest[..8].iter().map(|b| format!("{b:02x}")).collect();
                format!("\"{hex}\"")
            })
            .collect()
    })
}

/// `GET /assets/{name}`.
pub(crate) async fn asset(
    Path(name): Path<String>,
    headers: HeaderMap,
) -> Result<Response, ApiError> {
    let index = ASSETS
        .iter()
        .position(|a| a.name == name)
        .ok_or_else(|| ApiError::not_found("asset"))?;
    let asset = &ASSETS[index];
    let etag = HeaderValue::from_str(&etags()[index]).expect("hex");
    let fresh = headers
        .get(header::IF_NONE_MATCH)
        .is_some_and(|v| v.as_bytes() == etag.as_bytes());
    let mut response = if fresh {
        StatusCode::NOT_MODIFIED.into_response()
    } else {
        let mut r = asset.body.into_response();
        r.headers_mut().insert(
            header::CONTENT_TYPE,
            HeaderValue::from_static(asset.content_type),
        );
        r
    };
    let h = response.headers_mut();
    h.insert(header::ETAG, etag);
    h.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-cache"));
    h.insert(
        header::X_CONTENT_TYPE_OPTIONS,
        HeaderValue::from_static("nosniff"),
    );
    Ok(response)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_module_the_client_imports_is_served() {
        for asset in ASSETS.iter().filter(|a| a.name.ends_with(".js")) {
            for line in asset.body.lines() {
                let Some(from) = line.split(" from './").nth(1) else {
                    continue;
                };
                let imported = from.split('\'').next().unwrap();
                assert!(
                    find(imported).is_some(),
                    "{} imports {imported}, which is not served",
                    asset.name
                );
            }
        }
        assert!(find("app.js").is_some() && find("style.css").is_some());
        assert!(find("../Cargo.toml").is_none());
    }

    #[tokio::test]
    async fn assets_have_their_type_and_revalidate_with_their_etag() {
        let first = asset(Path("app.js".into()), HeaderMap::new())
            .await
            .unwrap();
        assert_eq!(first.status(), StatusCode::OK);
        assert_eq!(
            first.headers()[header::CONTENT_TYPE],
            "text/javascript; charset=utf-8"
        );
        assert_eq!(first.headers()[header::CACHE_CONTROL], "no-cache");
        let etag = first.headers()[header::ETAG].clone();
        let mut again = HeaderMap::new();
        again.insert(header::IF_NONE_MATCH, etag);
        let second = asset(Path("app.js".into()), again).await.unwrap();
        assert_eq!(second.status(), StatusCode::NOT_MODIFIED);
        let missing = asset(Path("nope.js".into()), HeaderMap::new()).await;
        assert_eq!(missing.unwrap_err().status(), StatusCode::NOT_FOUND);
    }
}
