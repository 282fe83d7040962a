//! Wall-clock time in the units the Hub stores.

use std::time::{Duration, SystemTime, UNIX_EPOCH};

/// The last millisecond RFC 3339 can write: 9999-12-31T23:59:59.999Z.
pub(crate) const MAX_RFC3339_MS: i64 = 253_402_300_799_999;

/// Now, in Unix milliseconds.
pub fn now_ms() -> i64 {
    unix_ms(SystemTime::now())
}

/// `at` in Unix milliseconds (0 before the epoch).
pub(crate) fn unix_ms(at: SystemTime) -> i64 {
    at.duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_millis() as i64)
}

/// Now, in Unix seconds.
pub fn now_secs() -> i64 {
    now_ms() / 1000
}

/// `ms` (Unix milliseconds) written as RFC 3339 with milliseconds
/// (`2026-01-01T00:00:00.000Z`), to be displayed. A time the format cannot write is held to
/// its nearest end (1970, year 9999) rather than failing: formatting never
/// panics, whatever a row or a request holds.
pub(crate) fn rfc3339_ms(ms: i64) -> humantime::Rfc3339Timestamp {
    let within = ms.clamp(0, MAX_RFC3339_MS).unsigned_abs();
    humantime::format_rfc3339_millis(UNIX_EPOCH + Duration::from_millis(within))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_millisecond_is_written_without_panicking() {
        assert_eq!(rfc3339_ms(0).to_string(), "1970-01-01T00:00:00.000Z");
        assert_eq!(
            rfc3339_ms(1_767_225_600_123).to_string(),
            "2026-01-01T00:00:00.123Z"
        );
        assert_eq!(
            rfc3339_ms(MAX_RFC3339_MS).to_string(),
            "9999-12-31T23:59:59.999Z"
        );
        for past_the_format in [MAX_RFC3339_MS + 1, i64::MAX - 1, i64::MAX] {
            assert_eq!(
                rfc3339_ms(past_the_format).to_string(),
                "9999-12-31T23:59:59.999Z"
            );
        }
        assert_eq!(rfc3339_ms(i64::MIN).to_string(), "1970-01-01T00:00:00.000Z");
    }
}
