//! What the tests of bounded metric series share: the series of an
//! OpenMetrics text, and the varied input that must not add any.
//!
//! The Hub's tests include this file by path, so it uses `std` alone.

use std::collections::BTreeSet;
use std::ops::RangeInclusive;

/// The series of an OpenMetrics text: each sample line's name and labels,
/// without its value and exemplar.
pub fn series(text: &str) -> BTreeSet<String> {
    text.lines()
        .filter(|line| !line.starts_with('#') && !line.is_empty())
        .map(|line| {
            let end = line
                .find('}')
                .map_or_else(|| line.find(' ').unwrap(), |i| i + 1);
            line[..end].to_owned()
        })
        .collect()
}

/// A small deterministic generator (xorshift), so a failure repeats.
pub struct Rng(pub u64);

impl Rng {
    pub fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }

    /// A word of lowercase letters, its length drawn from `lengths`.
    pub fn word(&mut self, lengths: RangeInclusive<u64>) -> String {
        let len = lengths.start() + self.next() % (lengths.end() - lengths.start() + 1);
        (0..len)
            .map(|_| char::from(b'a' + (self.next() % 26) as u8))
            .collect()
    }
}
