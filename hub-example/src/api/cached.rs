//! Answering a cached route: from the response cache when the route is
//! cached, otherwise as before (the body encoded lazily, so the tracing
//! layer's `serialize` phase covers the encoding).
//!
//! On a miss the body is encoded inside the shared computation, since every
//! request waiting on it is sent the same bytes; its `serialize` phase then
//! times only writing them, as a hit's does.

use axum::body::Body;
use axum::http::{header, HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};
use bytes::Bytes;
use serde::Serialize;

use super::{ApiError, LazyJson};
use crate::cache::{CacheKey, ResponseCache};

/// The response of `key`'s route: `compute`'s value as JSON, from the cache
/// when the route is cached there.
pub(crate) async fn respond<V: Serialize + Unpin + Send + 'static>(
    cache: &ResponseCache,
    key: CacheKey,
    compute: impl AsyncFnOnce() -> Result<V, ApiError>,
) -> Result<Response, ApiError> {
    if !cache.caches(key.route) {
        return Ok(LazyJson::new(compute().await?).into_response());
    }
    let body = cache
        .get_or_compute(key, || async {
            let value = compute().await?;
            serde_json::to_vec(&value)
                .map(Bytes::from)
                .map_err(|_| ApiError::internal())
        })
        .await?;
    Ok(json_response(body))
}

/// A 200 with a JSON body already encoded.
fn json_response(body: Bytes) -> Response {
    let mut response = Response::new(Body::from(body));
    *response.status_mut() = StatusCode::OK;
    response.headers_mut().insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("application/json"),
    );
    response
}
