//! Wall-clock time in the units the Hub stores.

use std::time::{SystemTime, UNIX_EPOCH};

/// Now, in Unix milliseconds.
pub fn now_ms() -> i64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_millis() as i64)
        .unwrap_or(0)
}

/// Now, in Unix seconds.
pub fn now_secs() -> i64 {
    now_ms() / 1000
}
