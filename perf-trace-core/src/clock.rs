//! The request clock: raw counter ticks (the TSC where it is invariant), read
//! twice per recorded event and scaled to nanoseconds only when a snapshot is
//! taken. Scaling is linear, so sums of raw ticks scale exactly like sums of
//! nanoseconds.

use std::sync::LazyLock;
use std::time::Duration;

static CLOCK: LazyLock<quanta::Clock> = LazyLock::new(quanta::Clock::new);

/// Reads the raw counter.
#[inline(always)]
pub(crate) fn now() -> u64 {
    CLOCK.raw()
}

/// Converts a span (or a sum of spans) of raw ticks to nanoseconds.
#[inline]
pub(crate) fn ticks_to_nanos(ticks: u64) -> u64 {
    if ticks == 0 {
        0
    } else {
        CLOCK.delta_as_nanos(0, ticks)
    }
}

/// Converts raw ticks to a [`Duration`].
#[inline]
pub(crate) fn ticks_to_duration(ticks: u64) -> Duration {
    Duration::from_nanos(ticks_to_nanos(ticks))
}

/// Ticks between two readings; zero when the counter went backwards (readings
/// taken on two cores whose counters disagree).
#[inline(always)]
pub(crate) fn span(start: u64, end: u64) -> u64 {
    end.saturating_sub(start)
}

/// Calibrates the clock now rather than on the first traced request.
///
/// Calibration takes a few milliseconds once per process; a service calls this
/// at startup so the first request pays nothing.
pub fn warm_up() {
    LazyLock::force(&CLOCK);
}
