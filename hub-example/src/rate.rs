//! Token buckets by key: `rate` tokens a second, `burst` at most, one taken
//! per request. The uncached lists' quota per principal and the sign-in
//! rates per user and per client address are kept in them; the audit
//! trail's per-principal rate uses the same [`Bucket`].

use std::collections::HashMap;
use std::hash::Hash;
use std::sync::Arc;
use std::time::Instant;

use parking_lot::Mutex;

/// Buckets kept before the full ones are forgotten (a full bucket is what
/// a key not seen has).
const FORGET_FULL_ABOVE: usize = 4_096;

/// One token bucket: its tokens when last refilled, and when that was.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Bucket {
    tokens: f64,
    at: Instant,
}

impl Bucket {
    /// A bucket of `burst` tokens at `now`: what a key not seen has.
    pub(crate) fn full(burst: f64, now: Instant) -> Bucket {
        Bucket {
            tokens: burst,
            at: now,
        }
    }

    /// Its tokens at `now`, earned at `rate` up to `burst`, without
    /// refilling it.
    fn tokens_at(&self, rate: f64, burst: f64, now: Instant) -> f64 {
        let earned = now.saturating_duration_since(self.at).as_secs_f64() * rate;
        (self.tokens + earned).min(burst)
    }

    /// Whether it is full at `now`: as good as a new one, so it may be
    /// forgotten.
    pub(crate) fn is_full_at(&self, rate: f64, burst: f64, now: Instant) -> bool {
        self.tokens_at(rate, burst, now) >= burst
    }

    /// Adds the tokens earned since it was last refilled.
    pub(crate) fn refill(&mut self, rate: f64, burst: f64, now: Instant) {
        self.tokens = self.tokens_at(rate, burst, now);
        self.at = now;
    }

    /// Takes one token, when it holds one.
    pub(crate) fn try_take(&mut self) -> bool {
        let holds = self.tokens >= 1.0;
        if holds {
            self.tokens -= 1.0;
        }
        holds
    }
}

/// A token bucket per key (cheap to clone: the buckets are shared).
#[derive(Debug)]
pub(crate) struct TokenBuckets<K> {
    rate: f64,
    burst: f64,
    buckets: Arc<Mutex<HashMap<K, Bucket>>>,
}

impl<K> Clone for TokenBuckets<K> {
    fn clone(&self) -> Self {
        TokenBuckets {
            rate: self.rate,
            burst: self.burst,
            buckets: Arc::clone(&self.buckets),
        }
    }
}

impl<K: Hash + Eq> TokenBuckets<K> {
    /// Buckets refilled at `rate` tokens a second, holding `burst` (each at
    /// least one).
    pub fn new(rate: f64, burst: f64) -> Self {
        TokenBuckets {
            rate: rate.max(f64::MIN_POSITIVE),
            burst: burst.max(1.0),
            buckets: Arc::default(),
        }
    }

    /// Buckets of `per_minute` tokens a minute, all of them at once.
    pub(crate) fn per_minute(per_minute: usize) -> Self {
        let n = per_minute as f64;
        Self::new(n / 60.0, n)
    }

    /// Takes one token from `key`'s bucket at `now`, or says in how many
    /// whole seconds (at least one) one will be there.
    pub(crate) fn take_at(&self, key: &K, now: Instant) -> Result<(), u64>
    where
        K: Clone,
    {
        let mut buckets = self.buckets.lock();
        let (rate, burst) = (self.rate, self.burst);
        if buckets.len() > FORGET_FULL_ABOVE {
            buckets.retain(|_, b| !b.is_full_at(rate, burst, now));
        }
        let bucket = buckets
            .entry(key.clone())
            .or_insert(Bucket::full(burst, now));
        bucket.refill(rate, burst, now);
        if bucket.try_take() {
            return Ok(());
        }
        Err(((1.0 - bucket.tokens) / rate).ceil().max(1.0) as u64)
    }

    /// Takes one token from `key`'s bucket now.
    pub fn take(&self, key: &K) -> Result<(), u64>
    where
        K: Clone,
    {
        self.take_at(key, Instant::now())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    #[test]
    fn a_minutes_tokens_come_at_once_then_one_every_sixtieth() {
        let buckets = TokenBuckets::per_minute(6);
        let start = Instant::now();
        for _ in 0..6 {
            assert_eq!(buckets.take_at(&"a", start), Ok(()));
        }
        assert_eq!(buckets.take_at(&"a", start), Err(10));
        assert_eq!(buckets.take_at(&"b", start), Ok(()), "per key");
        let later = start + Duration::from_secs(10);
        assert_eq!(buckets.take_at(&"a", later), Ok(()));
        assert_eq!(buckets.take_at(&"a", later), Err(10));
    }

    #[test]
    fn full_buckets_are_forgotten_past_the_bound() {
        let buckets = TokenBuckets::new(1.0, 1.0);
        let start = Instant::now();
        for key in 0..=FORGET_FULL_ABOVE {
            buckets.take_at(&key, start).unwrap();
        }
        let later = start + Duration::from_secs(5);
        buckets.take_at(&usize::MAX, later).unwrap();
        assert_eq!(buckets.buckets.lock().len(), 1, "refilled ones forgotten");
    }
}
