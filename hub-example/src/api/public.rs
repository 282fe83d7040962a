//! Unauthenticated endpoints: health and public settings.

use axum::Json;
use serde_json::{json, Value};

/// The Hub's version, as `GET /api/v1/settings/public` reports it.
pub const HUB_VERSION: &str = env!("CARGO_PKG_VERSION");

/// `GET /healthz`.
pub async fn healthz() -> Json<Value> {
    Json(json!({ "status": "ok" }))
}

/// `GET /api/v1/settings/public`: what any client may know about the Hub.
pub async fn public_settings() -> Json<Value> {
    Json(json!({ "name": "scion-hub", "version": HUB_VERSION }))
}
