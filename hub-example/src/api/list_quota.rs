//! What one principal's uncached lists may cost: a token bucket per
//! principal ([`AuditSettings::list_rate`] a second, [`AuditSettings::list_burst`]
//! at most), taken from only when a list is computed (a response-cache hit
//! decides nothing and writes no audit row). Past it the list is answered
//! 429 with `Retry-After`, before it reads or decides anything.

use std::time::Instant;

use super::ApiError;
use crate::model::PrincipalRef;
use crate::rate::TokenBuckets;
use crate::settings::AuditSettings;

/// The per-principal buckets of uncached list requests (cheap to clone).
#[derive(Debug, Clone)]
pub(crate) struct ListQuota {
    buckets: TokenBuckets<PrincipalRef>,
}

impl ListQuota {
    /// Buckets refilled at `settings.list_rate` a second, holding
    /// `settings.list_burst`.
    pub fn new(settings: &AuditSettings) -> ListQuota {
        ListQuota {
            buckets: TokenBuckets::new(
                f64::from(settings.list_rate),
                f64::from(settings.list_burst),
            ),
        }
    }

    /// Takes one uncached list from `principal`'s bucket at `now`, or says
    /// in how many whole seconds one will be there.
    pub(crate) fn take_at(&self, principal: &PrincipalRef, now: Instant) -> Result<(), u64> {
        self.buckets.take_at(principal, now)
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
    pub(crate) fn too_many_requests(retry_after_secs: u64) -> Self {
        ApiError::too_many(
            "too many uncached list requests; retry later",
            retry_after_secs,
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    use axum::http::StatusCode;

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
