//! A response body that encodes its JSON value when it is first polled, not
//! when the handler returns, so the tracing layer's `serialize` phase (from
//! response start to the end of the body) covers the real encoding.
//!
//! The buffer starts at the size of the last body this thread encoded
//! (bounded): an agent list of a few hundred kilobytes is then written
//! without the dozen reallocations (and copies) of a buffer grown from
//! empty.

use std::cell::Cell;
use std::convert::Infallible;
use std::pin::Pin;
use std::task::{Context, Poll};

use axum::body::Body;
use axum::http::{header, HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};
use bytes::Bytes;
use http_body::Frame;
use serde::Serialize;

/// The smallest and largest buffer a body starts with.
const MIN_CAPACITY: usize = 128;
const MAX_CAPACITY: usize = 1 << 20;

thread_local! {
    /// The length of the last body encoded on this thread.
    static LAST_LEN: Cell<usize> = const { Cell::new(MIN_CAPACITY) };
}

/// A JSON body encoded on first poll.
#[derive(Debug)]
pub(crate) struct LazyJson<T> {
    value: Option<T>,
}

impl<T> LazyJson<T> {
    /// A body that will encode `value`.
    pub fn new(value: T) -> Self {
        LazyJson { value: Some(value) }
    }
}

impl<T: Serialize + Unpin> http_body::Body for LazyJson<T> {
    type Data = Bytes;
    type Error = Infallible;

    fn poll_frame(
        self: Pin<&mut Self>,
        _cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, Infallible>>> {
        let Some(value) = self.get_mut().value.take() else {
            return Poll::Ready(None);
        };
        let mut bytes = Vec::with_capacity(LAST_LEN.get());
        if serde_json::to_writer(&mut bytes, &value).is_err() {
            // Only a non-string map key or a failing Serialize impl gets here;
            // the Hub's views have neither.
            bytes = br#"{"error":"internal error"}"#.to_vec();
        }
        LAST_LEN.set(bytes.len().clamp(MIN_CAPACITY, MAX_CAPACITY));
        Poll::Ready(Some(Ok(Frame::data(Bytes::from(bytes)))))
    }

    fn is_end_stream(&self) -> bool {
        self.value.is_none()
    }
}

impl<T: Serialize + Unpin + Send + 'static> IntoResponse for LazyJson<T> {
    fn into_response(self) -> Response {
        let mut response = Response::new(Body::new(self));
        *response.status_mut() = StatusCode::OK;
        response.headers_mut().insert(
            header::CONTENT_TYPE,
            HeaderValue::from_static("application/json"),
        );
        response
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use http_body_util::BodyExt;

    #[tokio::test]
    async fn encodes_when_polled() {
        let response = LazyJson::new(serde_json::json!({"a": [1, 2]})).into_response();
        assert_eq!(response.headers()[header::CONTENT_TYPE], "application/json");
        let bytes = response.into_body().collect().await.unwrap().to_bytes();
        assert_eq!(&bytes[..], br#"{"a":[1,2]}"#);
    }
}
