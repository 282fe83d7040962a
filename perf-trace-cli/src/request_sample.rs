//! The uniform sample of a class's requests that the N+1 rule's
//! correlation reads ([`RequestSample`]), and which of a line's counts it
//! keeps. The aggregation fills it and the suspects read it, so it stands
//! apart from both; its public items are re-exported from
//! [`suspects`](crate::suspects).

use std::collections::HashMap;

use crate::dist::splitmix;
use crate::line::{classify, FigureKind, Unit};

/// Requests sampled per class for the correlation.
pub const SAMPLE: usize = 256;

/// Whether a figure is a count that an N+1 shows in: a store method's
/// calls, or the SQL wrapper's repeated statements.
pub fn is_source(name: &str) -> bool {
    name == "sql_repeated_n" || matches!(classify(name), FigureKind::Store(_, Unit::Count))
}

/// How a field name ranks as the response's size: lower first, `None`
/// when it is not one.
fn size_rank(name: &str) -> Option<u8> {
    if is_source(name) || classify(name) != FigureKind::Other(Unit::Count) {
        return None;
    }
    let stem = name.strip_suffix("_n").unwrap_or(name);
    if stem == "response_bytes" {
        Some(0)
    } else if stem.ends_with("bytes") {
        Some(1)
    } else if stem.ends_with("rows") || stem.ends_with("items") {
        Some(2)
    } else {
        None
    }
}

/// A uniform sample of a class's requests (reservoir sampling, seeded, so
/// the same log gives the same sample), holding the values of the counts
/// the rule reads: the sources and the size candidates. A count a sampled
/// request does not carry is 0 for it.
#[derive(Debug, Clone, Default)]
pub struct RequestSample {
    /// Requests offered.
    seen: u64,
    /// Rows held (at most [`SAMPLE`]).
    rows: usize,
    /// One column of `rows` values per field name.
    columns: HashMap<String, Vec<u32>>,
    rng: u64,
}

impl RequestSample {
    /// Whether the sample keeps a field's values.
    pub fn wants(name: &str) -> bool {
        is_source(name) || size_rank(name).is_some()
    }

    /// Offers one request: its figures the sample wants, `(name, value)`.
    pub fn offer<'a>(&mut self, figures: impl IntoIterator<Item = (&'a str, u64)>) {
        self.seen += 1;
        let slot = if self.rows < SAMPLE {
            self.rows += 1;
            self.rows - 1
        } else {
            let pick = self.next_random() % self.seen;
            if pick >= SAMPLE as u64 {
                return;
            }
            pick as usize
        };
        let rows = self.rows;
        for column in self.columns.values_mut() {
            column.resize(rows, 0);
            column[slot] = 0;
        }
        for (name, value) in figures {
            let column = match self.columns.get_mut(name) {
                Some(column) => column,
                None => self
                    .columns
                    .entry(name.to_owned())
                    .or_insert_with(|| vec![0; rows]),
            };
            column[slot] = u32::try_from(value).unwrap_or(u32::MAX);
        }
    }

    /// A fixed sequence, so the sample repeats.
    fn next_random(&mut self) -> u64 {
        self.rng = self.rng.wrapping_add(1);
        splitmix(self.rng)
    }

    /// Requests held.
    pub fn len(&self) -> usize {
        self.rows
    }

    /// Whether no request is held.
    pub fn is_empty(&self) -> bool {
        self.rows == 0
    }

    /// The sampled values of `name` (zeros where a request lacks it).
    pub fn column(&self, name: &str) -> Vec<u32> {
        let mut values = self.columns.get(name).cloned().unwrap_or_default();
        values.resize(self.rows, 0);
        values
    }

    /// The field that stands for the response's size here.
    pub(crate) fn size_key(&self) -> Option<&str> {
        self.columns
            .keys()
            .filter_map(|name| Some((size_rank(name)?, name.as_str())))
            .min()
            .map(|(_, name)| name)
    }

    /// Whether any sampled request carried `name`.
    pub(crate) fn has_column(&self, name: &str) -> bool {
        self.columns.contains_key(name)
    }

    /// Adds another sample's rows while there is room (used when two reads
    /// of one class are merged; the first read's rows come first).
    pub fn merge(&mut self, other: &RequestSample) {
        self.seen += other.seen;
        let take = other.rows.min(SAMPLE - self.rows);
        let base = self.rows;
        self.rows += take;
        for column in self.columns.values_mut() {
            column.resize(self.rows, 0);
        }
        for (name, theirs) in &other.columns {
            let column = self
                .columns
                .entry(name.clone())
                .or_insert_with(|| vec![0; self.rows]);
            column.resize(self.rows, 0);
            let n = take.min(theirs.len());
            column[base..base + n].copy_from_slice(&theirs[..n]);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_of_sources_and_sizes() {
        assert!(is_source("store_GetUser_n") && is_source("sql_repeated_n"));
        assert!(!is_source("store_GetUser_us") && !is_source("sql_select_n"));
        assert_eq!(size_rank("response_bytes"), Some(0));
        assert_eq!(size_rank("body_bytes"), Some(1));
        assert_eq!(size_rank("rows"), Some(2));
        assert_eq!(size_rank("list_items_n"), Some(2));
        assert_eq!(size_rank("response_bytes_us"), None);
        assert_eq!(size_rank("audit_records"), None);
    }

    #[test]
    fn the_sample_is_uniform_and_bounded() {
        let mut sample = RequestSample::default();
        for i in 0..10_000u64 {
            let figures = [("rows", i), ("store_X_n", i)];
            // Every other request lacks the store count: 0 for it.
            sample.offer(figures.into_iter().take(1 + (i % 2) as usize));
        }
        assert_eq!(sample.len(), SAMPLE);
        let rows = sample.column("rows");
        // Uniform over 0..10,000: the sampled mean is near 5,000.
        let mean = rows.iter().map(|&v| f64::from(v)).sum::<f64>() / SAMPLE as f64;
        assert!((4_000.0..6_000.0).contains(&mean), "{mean}");
        let store = sample.column("store_X_n");
        for (r, s) in rows.iter().zip(&store) {
            assert_eq!(*s, if r % 2 == 1 { *r } else { 0 });
        }
        assert_eq!(sample.size_key(), Some("rows"));
    }
}
