//! What one principal's uncached lists may cost: a token bucket per
//! principal ([`AuditSettings::list_rate`] a second, [`AuditSettings::list_burst`]
//! at most), taken from only when a list is computed (a response-cache hit
//! decides nothing and writes no audit row). Past it the list is answered
//! 429 with `Retry-After`, before it reads or decides anything.

use std::collections::HashMap;
use std::sync::Arc;
use std::time::Instant;

use axum::http::StatusCode;
use parking_lot::Mutex;

use super::ApiError;
use crate::model::PrincipalRef;
use crate::settings::AuditSettings;

/// Buckets kept before the full ones are forgotten (a full bucket is what
/// a principal not seen has).
const FORGET_FULL_ABOVE: usize = 4_096;

/// One principal's bucket.
#[derive(Debug, Clone, Copy)]
struct Bucket {
    tokens: f64,
    at: Instant,
}

/// The per-principal buckets of uncached list requests (cheap to clone).
#[derive(Debug, Clone)]
pub struct ListQuota {
    rate: f64,
    burst: f64,
    buckets: Arc<Mutex<HashMap<PrincipalRef, Bucket>>>,
}

impl ListQuota {
    /// Buckets refilled at `settings.list_rate` a second, holding
    /// `settings.list_burst`.
    pub fn new(settings: &AuditSettings) -> ListQuota {
        ListQuota {
            rate: f64::from(settings.list_rate),
            burst: f64::from(settings.list_burst),
            buckets: Arc::default(),
        }
    }

    /// Takes one uncached list from `principal`'s bucket at `now`, or says
    /// in how many whole seconds one will be there.
    pub fn take_at(&self, principal: &PrincipalRef, now: Instant) -> Result<(), u64> {
        let mut buckets = self.buckets.lock();
        if buckets.len() > FORGET_FULL_ABOVE {
            let (rate, burst) = (self.rate, self.burst);
            buckets.retain(|_, b| b.tokens + rate * now.duration_since(b.at).as_secs_f64() < burst);
        }
        let bucket = buckets.entry(principal.clone()).or_insert(Bucket {
            tokens: self.burst,
            at: now,
        });
        let elapsed = now.saturating_duration_since(bucket.at).as_secs_f64();
        bucket.tokens = (bucket.tokens + elapsed * self.rate).min(self.burst);
        bucket.at = now;
        if bucket.tokens >= 1.0 {
            bucket.tokens -= 1.0;
            return Ok(());
        }
        Err(((1.0 - bucket.tokens) / self.rate).ceil().max(1.0) as u64)
    }

    /// Takes one uncached list from `principal`'s bucket now, or the 429
    /// to answer.
    pub fn take(&self, principal: &PrincipalRef) -> Result<(), ApiError> {
        self.take_at(principal, Instant::now())
            .map_err(ApiError::too_many_requests)
    }
}

impl ApiError {
    /// 429: the caller's uncached lists are over its quota; `Retry-After`
    /// says in how many seconds one is allowed again.
    pub fn too_many_requests(retry_after_secs: u64) -> Self {
        let mut error = ApiError::new(
            StatusCode::TOO_MANY_REQUESTS,
            "too many uncached list requests; retry later",
        );
        error.set_retry_after(retry_after_secs);
        error
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    fn quota(rate: u32, burst: u32) -> ListQuota {
        ListQuota::new(&AuditSettings {
            list_rate: rate,
            list_burst: burst,
            ..AuditSettings::default()
        })
    }

    #[test]
    fn a_principal_gets_its_burst_then_its_rate_and_others_are_unaffected() {
        let quota = quota(2, 3);
        let (me, other) = (PrincipalRef::user("me"), PrincipalRef::user("other"));
        let start = Instant::now();
        for _ in 0..3 {
            assert_eq!(quota.take_at(&me, start), Ok(()));
        }
        assert_eq!(quota.take_at(&me, start), Err(1), "the burst is spent");
        assert_eq!(
            quota.take_at(&other, start),
            Ok(()),
            "buckets are per principal"
        );
        let later = start + Duration::from_millis(500);
        assert_eq!(quota.take_at(&me, later), Ok(()), "refilled at 2 a second");
        assert!(quota.take_at(&me, later).is_err());
        let much_later = start + Duration::from_secs(60);
        for _ in 0..3 {
            assert_eq!(quota.take_at(&me, much_later), Ok(()));
        }
        assert!(
            quota.take_at(&me, much_later).is_err(),
            "never above the burst"
        );
    }

    #[test]
    fn the_retry_after_is_when_a_token_is_back() {
        let quota = quota(1, 1);
        let me = PrincipalRef::user("me");
        let now = Instant::now();
        quota.take_at(&me, now).unwrap();
        assert_eq!(quota.take_at(&me, now), Err(1));
        let error = ApiError::too_many_requests(7);
        assert_eq!(error.status(), StatusCode::TOO_MANY_REQUESTS);
        assert_eq!(error.body()["retryAfterSeconds"], 7);
    }
}
