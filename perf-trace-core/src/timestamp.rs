//! RFC 3339 UTC timestamps with nanoseconds (`2026-01-01T00:00:00.000000000Z`),
//! written straight into the line. A general formatter goes through
//! `fmt::Display` and costs a third of the whole line's budget; this is a few
//! divisions.

use std::cell::Cell;
use std::time::{SystemTime, UNIX_EPOCH};

use crate::line::writer::{LineWriter, DIGIT_PAIRS};

/// Nanoseconds since the epoch of `time`: 0 before it, saturating past
/// the year 2554.
pub(crate) fn epoch_nanos(time: SystemTime) -> u64 {
    time.duration_since(UNIX_EPOCH).map_or(0, |since| {
        u64::try_from(since.as_nanos()).unwrap_or(u64::MAX)
    })
}

/// The system clock's time now, in nanoseconds since the epoch.
pub(crate) fn epoch_nanos_now() -> u64 {
    epoch_nanos(SystemTime::now())
}

/// Appends the time `epoch_nanos` nanoseconds after the epoch as
/// `YYYY-MM-DDTHH:MM:SS.nnnnnnnnnZ`.
pub(crate) fn push_rfc3339_nanos(out: &mut LineWriter<'_>, epoch_nanos: u64) {
    let (secs, nanos) = (epoch_nanos / 1_000_000_000, epoch_nanos % 1_000_000_000);
    // Lines come many to a second: the date and time of day are written
    // once per second and thread, then copied.
    let mut text = LAST_SECOND.with(|last| {
        let (cached, text) = last.get();
        if cached == secs {
            return text;
        }
        let text = second_text(secs);
        last.set((secs, text));
        text
    });
    write_nanos(&mut text, nanos as u32);
    text[LENGTH - 1] = b'Z';
    out.ascii_prefix(&text, LENGTH);
}

/// The length of `YYYY-MM-DDTHH:MM:SS.nnnnnnnnnZ`.
const LENGTH: usize = 30;

/// A timestamp's text, with room to spare: a whole number of words, which
/// copy as a few moves where an odd length copied byte by byte.
type Text = [u8; 32];

thread_local! {
    /// The last second written on this thread, and its text up to the
    /// fraction's point.
    static LAST_SECOND: Cell<(u64, Text)> = const { Cell::new((u64::MAX, [0; 32])) };
}

/// `YYYY-MM-DDTHH:MM:SS.` of `secs` since the epoch.
fn second_text(secs: u64) -> Text {
    let (year, month, day) = civil_from_days((secs / 86_400) as i64);
    let of_day = secs % 86_400;
    let mut text = [0u8; 32];
    write_digits(&mut text[0..4], year.clamp(0, 9999) as u64);
    text[4] = b'-';
    write_digits(&mut text[5..7], month as u64);
    text[7] = b'-';
    write_digits(&mut text[8..10], day as u64);
    text[10] = b'T';
    write_digits(&mut text[11..13], of_day / 3600);
    text[13] = b':';
    write_digits(&mut text[14..16], of_day / 60 % 60);
    text[16] = b':';
    write_digits(&mut text[17..19], of_day % 60);
    text[19] = b'.';
    text
}

/// Writes `nanos` (below a billion) as nine digits after the point, two
/// at a time: four divisions where a digit at a time took nine.
#[inline]
fn write_nanos(text: &mut Text, nanos: u32) {
    let nanos = nanos.min(999_999_999);
    let (pair_1, rest) = (nanos / 10_000_000, nanos % 10_000_000);
    let (pair_2, rest) = (rest / 100_000, rest % 100_000);
    let (pair_3, rest) = (rest / 1_000, rest % 1_000);
    let (pair_4, last) = (rest / 10, rest % 10);
    for (at, pair) in [(20, pair_1), (22, pair_2), (24, pair_3), (26, pair_4)] {
        text[at..at + 2].copy_from_slice(&DIGIT_PAIRS[pair as usize]);
    }
    text[28] = b'0' + last as u8;
}

fn write_digits(dst: &mut [u8], mut value: u64) {
    for d in dst.iter_mut().rev() {
        *d = b'0' + (value % 10) as u8;
        value /= 10;
    }
}

/// Days since 1970-01-01 to (year, month, day) in the proleptic Gregorian
/// calendar (Howard Hinnant's `civil_from_days`).
fn civil_from_days(days: i64) -> (i64, u32, u32) {
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = (doy - (153 * mp + 2) / 5 + 1) as u32;
    let month = if mp < 10 { mp + 3 } else { mp - 9 } as u32;
    let year = yoe + era * 400 + i64::from(month <= 2);
    (year, month, day)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    fn render(time: SystemTime) -> String {
        let mut s = String::new();
        push_rfc3339_nanos(&mut LineWriter::new(&mut s, 0), epoch_nanos(time));
        s
    }

    /// Renders each time, in order, and compares it with the text it was
    /// read from.
    fn renders_as_written(texts: &[&str]) {
        for text in texts {
            let t: SystemTime = humantime::parse_rfc3339(text).unwrap();
            assert_eq!(render(t), *text);
        }
    }

    #[test]
    fn matches_a_reference_formatter_across_centuries() {
        // Every ~7.3 days for 400 years, plus leap days and ends of months.
        let mut secs: u64 = 0;
        while secs < 13_000_000_000 {
            let t = UNIX_EPOCH + Duration::new(secs, (secs % 1_000_000_000) as u32);
            assert_eq!(render(t), humantime::format_rfc3339_nanos(t).to_string());
            secs += 631_151;
        }
        renders_as_written(&[
            "2000-02-29T23:59:59.999999999Z",
            "2024-12-31T00:00:00.000000001Z",
            "2100-03-01T12:00:00.000000000Z",
        ]);
    }

    #[test]
    fn the_second_kept_from_the_last_line_is_used_only_for_that_second() {
        renders_as_written(&[
            "2026-11-30T23:59:59.000000001Z",
            "2026-11-30T23:59:59.999999999Z",
            "2026-12-01T00:00:00.000000000Z",
            "2026-11-30T23:59:59.500000000Z",
            "1970-01-01T00:00:00.000000000Z",
            "2026-11-30T23:59:59.250000000Z",
        ]);
    }

    #[test]
    fn the_epoch_and_earlier() {
        assert_eq!(render(UNIX_EPOCH), "1970-01-01T00:00:00.000000000Z");
        assert_eq!(
            render(UNIX_EPOCH - Duration::from_secs(5)),
            "1970-01-01T00:00:00.000000000Z"
        );
    }
}
