//! The HTTP API: handlers, authentication, errors and the lazily encoded body.

pub mod admin;
pub mod agents;
pub mod auth;
mod error;
pub mod events;
mod lazy_json;
pub mod params;
pub mod public;

pub use error::{method_not_allowed, not_found, ApiError};
pub use lazy_json::LazyJson;
