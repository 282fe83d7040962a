//! The HTTP API: handlers, the authentication layer that applies
//! [`crate::auth`], errors and the lazily encoded body.

pub mod admin;
pub mod agents;
pub mod audit_events;
pub mod authenticate;
mod cached;
pub mod delegations;
mod error;
pub mod events;
mod guards;
mod lazy_json;
mod list_quota;
pub mod params;
pub mod profiling;
pub mod public;
mod request_size;

pub use error::{method_not_allowed, not_found, ApiError};
pub use guards::{enforce_request_timeout, StreamCapError, StreamLimiter, StreamPermit};
pub use lazy_json::LazyJson;
pub use list_quota::ListQuota;
pub use request_size::{
    limit_request_size, panic_response, MAX_HEADER_BYTES, MAX_PATH_BYTES, MAX_QUERY_BYTES,
};
