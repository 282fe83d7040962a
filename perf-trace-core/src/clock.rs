//! The request clock: raw counter ticks (the TSC where it is invariant), read
//! twice per recorded event and scaled to nanoseconds only when a snapshot is
//! taken. Scaling is linear, so sums of raw ticks scale exactly like sums of
//! nanoseconds.

use std::cell::Cell;
use std::sync::atomic::{AtomicBool, Ordering::Relaxed};
use std::sync::LazyLock;
use std::time::Duration;

use crate::timestamp;

static CLOCK: LazyLock<quanta::Clock> = LazyLock::new(|| {
    let clock = quanta::Clock::new();
    READS_TSC.store(reads_tsc(&clock), Relaxed);
    clock
});

/// Whether the clock's raw readings are the TSC's own, so that [`now`] may
/// read the TSC itself: a read through the clock checks that it was made
/// and which kind of counter it has, each time, which was about two
/// thirds of what a read cost (some 50 reads a request).
static READS_TSC: AtomicBool = AtomicBool::new(false);

/// Reads the raw counter.
#[inline(always)]
pub(crate) fn now() -> u64 {
    #[cfg(target_arch = "x86_64")]
    if READS_TSC.load(Relaxed) {
        // SAFETY: every x86-64 processor has the time-stamp counter.
        return unsafe { std::arch::x86_64::_rdtsc() };
    }
    CLOCK.raw()
}

/// Whether `clock` reads the TSC: a TSC reading falls between two of the
/// clock's, taken just before and after, twice, a millisecond apart (a
/// clock of another kind counts from another start or at another rate).
/// Never on other processors.
fn reads_tsc(clock: &quanta::Clock) -> bool {
    #[cfg(target_arch = "x86_64")]
    {
        let between = || {
            let before = clock.raw();
            // SAFETY: as in `now`.
            let tsc = unsafe { std::arch::x86_64::_rdtsc() };
            let after = clock.raw();
            before <= tsc && tsc <= after && after - before < 1_000_000
        };
        if !between() {
            return false;
        }
        std::thread::sleep(Duration::from_millis(1));
        between()
    }
    #[cfg(not(target_arch = "x86_64"))]
    {
        let _ = clock;
        false
    }
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
///
/// Called, never inlined: a line converts up to a dozen sums, and each
/// inlined conversion (the calibration's lazy check, the scaling, the
/// `Duration`) added its own copy to the renderer's code, which a loaded
/// service fetches afresh for every line.
#[inline(never)]
pub(crate) fn ticks_to_duration(ticks: u64) -> Duration {
    Duration::from_nanos(ticks_to_nanos(ticks))
}

/// Converts a span (or a sum of spans) of raw ticks to whole microseconds,
/// truncated: the same as [`ticks_to_duration`]'s microseconds (a
/// `Duration`'s whole microseconds are its nanoseconds over 1,000), with
/// no `Duration` built and taken apart again, once per field of a line.
#[inline]
pub(crate) fn ticks_to_micros(ticks: u64) -> u64 {
    ticks_to_nanos(ticks) / 1_000
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

/// How long a thread keeps one anchor of the request clock to the system
/// clock before it reads the system clock again.
const ANCHOR_LIFE_NANOS: u64 = 100_000_000;

thread_local! {
    /// The system clock's time (nanoseconds since the epoch) and the
    /// request clock's reading taken together, last: `(epoch nanos, ticks)`.
    static ANCHOR: Cell<Option<(u64, u64)>> = const { Cell::new(None) };
}

/// The system clock's time, in nanoseconds since the epoch, at request-clock
/// reading `ticks`, a reading this thread took just now: from an anchor the
/// thread took at most 100 ms earlier, so that a line's time costs no read
/// of the system clock (a call into the kernel's shared page, slower than
/// the rest of the line's fields under a hypervisor). The two clocks drift
/// apart within an anchor's life by the system clock's adjustment rate at
/// most: a few microseconds; a step of the system clock shows within 100 ms.
/// Kept as an integer, not a `SystemTime`: the line wants the seconds and
/// the nanoseconds, which a `SystemTime` gives only through a checked
/// subtraction.
pub(crate) fn epoch_nanos_at(ticks: u64) -> u64 {
    let anchored = ANCHOR.try_with(|anchor| {
        if let Some((epoch_nanos, at)) = anchor.get() {
            if ticks >= at {
                let since = ticks_to_nanos(ticks - at);
                if since < ANCHOR_LIFE_NANOS {
                    return epoch_nanos.saturating_add(since);
                }
            }
        }
        let (at, epoch_nanos) = (now(), timestamp::epoch_nanos_now());
        anchor.set(Some((epoch_nanos, at)));
        epoch_nanos.saturating_sub(ticks_to_nanos(at.saturating_sub(ticks)))
    });
    anchored.unwrap_or_else(|_| timestamp::epoch_nanos_now())
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::SystemTime;

    /// How far apart two times are, whichever is first.
    fn apart(a: SystemTime, b: SystemTime) -> Duration {
        a.duration_since(b).unwrap_or_else(|e| e.duration())
    }

    /// The system time at request-clock reading `ticks`.
    fn wall_time_at(ticks: u64) -> SystemTime {
        std::time::UNIX_EPOCH + Duration::from_nanos(epoch_nanos_at(ticks))
    }

    #[test]
    fn a_direct_read_is_a_read_through_the_clock() {
        warm_up();
        // Within a hair of two reads through the clock around it: a thread
        // moved to another core between the reads may meet a counter a few
        // ticks apart; another counter would be seconds apart.
        const SKEW: u64 = 1_000_000;
        for _ in 0..1_000 {
            let before = CLOCK.raw();
            let direct = now();
            let after = CLOCK.raw();
            assert!(
                before.saturating_sub(SKEW) <= direct && direct <= after.saturating_add(SKEW),
                "{before} {direct} {after}"
            );
        }
    }

    #[test]
    fn microseconds_of_ticks_are_those_of_their_duration() {
        let spans = (0..64)
            .map(|bit| 1u64 << bit)
            .chain([3, 999, 1_001, 123_456_789]);
        for ticks in spans.chain((0..1_000).map(|_| now() % 10_000_000_000)) {
            let duration = ticks_to_duration(ticks);
            assert_eq!(
                ticks_to_micros(ticks),
                crate::line::micros(duration),
                "{ticks}"
            );
        }
    }

    #[test]
    fn the_anchored_time_is_the_system_clock_s_time_of_the_reading() {
        for _ in 0..1_000 {
            let time = wall_time_at(now());
            assert!(apart(time, SystemTime::now()) < Duration::from_secs(1));
        }
        // A reading older than the anchor the call takes is placed before
        // it, not at it.
        let earlier = now();
        let earlier_time = SystemTime::now();
        std::thread::sleep(Duration::from_millis(150));
        let time = wall_time_at(earlier);
        assert!(
            apart(time, earlier_time) < Duration::from_millis(100),
            "{time:?} {earlier_time:?}"
        );
        // And a reading within the anchor's life is placed after it.
        let later = wall_time_at(now());
        assert!(later >= time + Duration::from_millis(100));
    }
}
