//! The HTTP API: handlers, the authentication layer that applies
//! [`crate::auth`], errors and the lazily encoded body.

pub mod admin;
pub mod agents;
pub mod audit_events;
pub(crate) mod authenticate;
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
pub mod state;

pub(crate) use error::ApiError;
pub(crate) use error::{method_not_allowed, not_found};
pub(crate) use guards::StreamLimiter;
pub(crate) use guards::{enforce_request_timeout, StreamPermit};
pub(crate) use lazy_json::LazyJson;
pub(crate) use list_quota::ListQuota;
pub(crate) use request_size::{limit_request_size, panic_response};
