//! When a credential stops being valid: a signed token's expiry, an access
//! token's, or a cookie session's. Authentication leaves it beside the
//! principal, so an event stream can end when its credential does.

use std::time::Duration;

/// When the request's credential stops being valid, in Unix milliseconds.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct CredentialExpiry(pub i64);

impl CredentialExpiry {
    /// The expiry of a signed token, given in Unix seconds.
    pub(crate) fn from_unix_secs(secs: i64) -> Self {
        CredentialExpiry(secs.saturating_mul(1000))
    }

    /// How long the credential has left at `now_ms` (zero once expired).
    pub(crate) fn time_left(self, now_ms: i64) -> Duration {
        Duration::from_millis(self.0.saturating_sub(now_ms).max(0).unsigned_abs())
    }

    /// Whether the credential has expired at `now_ms`.
    pub(crate) fn has_passed(self, now_ms: i64) -> bool {
        now_ms >= self.0
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn time_left_counts_down_to_zero() {
        let expiry = CredentialExpiry::from_unix_secs(2);
        assert_eq!(expiry, CredentialExpiry(2_000));
        assert_eq!(expiry.time_left(1_500), Duration::from_millis(500));
        assert!(!expiry.has_passed(1_999));
        assert_eq!(expiry.time_left(2_000), Duration::ZERO);
        assert!(expiry.has_passed(2_000));
        assert_eq!(expiry.time_left(i64::MAX), Duration::ZERO);
        assert_eq!(
            CredentialExpiry(i64::MAX).time_left(i64::MIN),
            Duration::from_millis(u64::MAX >> 1)
        );
        assert_eq!(CredentialExpiry::from_unix_secs(i64::MAX).0, i64::MAX);
    }
}
