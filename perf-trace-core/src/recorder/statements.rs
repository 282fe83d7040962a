//! The statements a request ran, by a hash of their text: what tells a
//! statement that already ran in the request (`sql_repeated_n`) from a
//! first one, and, in a test's recorder only, each statement's text and
//! how often it ran.
//!
//! Only hashes are kept in a service's recorder: the text never reaches a
//! line, so the line's keys stay bounded whatever the statements are.
//! Hashing reads a bounded part of the text (its length, its first and its
//! last [`HASHED_EDGE`] bytes), so a statement of megabytes costs what one
//! of 8 KiB does.

use parking_lot::Mutex;

/// Bytes hashed at each end of a statement's text.
pub const HASHED_EDGE: usize = 4096;

/// Distinct statements one request tracks; later distinct ones count as
/// first runs (none is repeated), so the table stays bounded.
pub const MAX_DISTINCT: usize = 1024;

/// Bytes of a statement's text a test's recorder keeps.
pub const MAX_TEXT: usize = 4096;

/// A hash of `text` that reads at most `2 * HASHED_EDGE` bytes of it:
/// texts that differ only in the middle of a statement longer than that
/// hash alike.
pub fn statement_hash(text: &str) -> u64 {
    let bytes = text.as_bytes();
    let mut hash = Hasher::new(bytes.len() as u64);
    if bytes.len() <= 2 * HASHED_EDGE {
        hash.write(bytes);
    } else {
        hash.write(&bytes[..HASHED_EDGE]);
        hash.write(&bytes[bytes.len() - HASHED_EDGE..]);
    }
    hash.finish()
}

/// A word-at-a-time multiply-rotate hash (FxHash's step) with a final mix
/// (MurmurHash3's): fast on short statements, well spread for a table
/// that compares the whole 64 bits.
struct Hasher(u64);

impl Hasher {
    const K: u64 = 0x517c_c1b7_2722_0a95;

    fn new(seed: u64) -> Self {
        Hasher(seed.wrapping_mul(Self::K))
    }

    fn add(&mut self, word: u64) {
        self.0 = (self.0.rotate_left(5) ^ word).wrapping_mul(Self::K);
    }

    fn write(&mut self, bytes: &[u8]) {
        let mut words = bytes.chunks_exact(8);
        for word in &mut words {
            self.add(u64::from_le_bytes(word.try_into().expect("8 bytes")));
        }
        let rest = words.remainder();
        if !rest.is_empty() {
            let mut last = [0u8; 8];
            last[..rest.len()].copy_from_slice(rest);
            self.add(u64::from_le_bytes(last) ^ ((rest.len() as u64) << 59));
        }
    }

    fn finish(self) -> u64 {
        let mut h = self.0;
        h ^= h >> 33;
        h = h.wrapping_mul(0xff51_afd7_ed55_8ccd);
        h ^= h >> 33;
        h = h.wrapping_mul(0xc4ce_b9fe_1a85_ec53);
        h ^ (h >> 33)
    }
}

/// One distinct statement of a request.
#[derive(Debug)]
struct Entry {
    hash: u64,
    runs: u64,
    /// The text, up to [`MAX_TEXT`] bytes, in a test's recorder only.
    text: Option<Box<str>>,
}

/// The distinct statements of one request.
#[derive(Debug, Default)]
pub(crate) struct Statements {
    /// Whether texts are kept: a test's recorder
    /// ([`RecorderBuilder::capture_statements`](super::RecorderBuilder::capture_statements)).
    capture: bool,
    entries: Mutex<Vec<Entry>>,
}

impl Statements {
    /// An empty table; `capture`: whether texts are kept.
    pub(crate) fn new(capture: bool) -> Self {
        Statements {
            capture,
            entries: Mutex::default(),
        }
    }

    /// Notes one run of `text` (of hash `hash`); whether it had already run
    /// in this request.
    pub(crate) fn note(&self, hash: u64, text: &str) -> bool {
        let mut entries = self.entries.lock();
        if let Some(entry) = entries.iter_mut().find(|e| e.hash == hash) {
            entry.runs += 1;
            return true;
        }
        if entries.len() < MAX_DISTINCT {
            let text = self.capture.then(|| truncated(text).into());
            entries.push(Entry {
                hash,
                runs: 1,
                text,
            });
        }
        false
    }

    /// Forgets every statement, for the recorder's next request.
    pub(crate) fn clear(&mut self) {
        self.entries.get_mut().clear();
    }

    /// The statements run so far, most runs first, then in order of first
    /// run.
    pub(crate) fn runs(&self) -> Vec<StatementRuns> {
        let mut runs: Vec<StatementRuns> = self
            .entries
            .lock()
            .iter()
            .map(|e| StatementRuns {
                hash: e.hash,
                runs: e.runs,
                text: e.text.as_deref().map(str::to_owned),
            })
            .collect();
        runs.sort_by_key(|r| std::cmp::Reverse(r.runs));
        runs
    }
}

/// `text`, cut to at most [`MAX_TEXT`] bytes at a character boundary, with
/// `…` where it was cut.
fn truncated(text: &str) -> String {
    if text.len() <= MAX_TEXT {
        return text.to_owned();
    }
    let mut end = MAX_TEXT;
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    format!("{}…", &text[..end])
}

/// How often one distinct statement ran in a request (see
/// [`Recorder::statements`](super::Recorder::statements)).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StatementRuns {
    /// The statement's [`statement_hash`].
    pub hash: u64,
    /// How many times it ran.
    pub runs: u64,
    /// Its text (up to [`MAX_TEXT`] bytes), when the recorder keeps texts:
    /// a test's recorder does, a service's never.
    pub text: Option<String>,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_statement_is_repeated_from_its_second_run() {
        let statements = Statements::new(true);
        let a = "SELECT * FROM stock WHERE sku = ?";
        assert!(!statements.note(statement_hash(a), a));
        assert!(statements.note(statement_hash(a), a));
        assert!(!statements.note(statement_hash("SELECT 1"), "SELECT 1"));
        let runs = statements.runs();
        assert_eq!(runs[0].runs, 2);
        assert_eq!(runs[0].text.as_deref(), Some(a));
        assert_eq!(runs[1].runs, 1);
    }

    #[test]
    fn a_service_recorder_keeps_no_text() {
        let statements = Statements::default();
        statements.note(statement_hash("SELECT 1"), "SELECT 1");
        assert_eq!(statements.runs()[0].text, None);
    }

    #[test]
    fn the_table_stays_bounded() {
        let statements = Statements::default();
        for i in 0..MAX_DISTINCT + 10 {
            let text = format!("SELECT {i}");
            assert!(!statements.note(statement_hash(&text), &text));
        }
        assert_eq!(statements.runs().len(), MAX_DISTINCT);
        let late = format!("SELECT {}", MAX_DISTINCT + 1);
        assert!(!statements.note(statement_hash(&late), &late), "untracked");
    }

    #[test]
    fn a_long_statement_is_hashed_by_its_edges_and_length_and_kept_cut() {
        let long = format!("SELECT '{}'", "x".repeat(3 * 1024 * 1024));
        let same_edges = {
            let mut s = long.clone().into_bytes();
            s[1024 * 1024] = b'y';
            String::from_utf8(s).unwrap()
        };
        assert_eq!(statement_hash(&long), statement_hash(&same_edges));
        let other_end = format!("{}!", &long[..long.len() - 1]);
        assert_ne!(statement_hash(&long), statement_hash(&other_end));
        let longer = format!("{long} ");
        assert_ne!(statement_hash(&long), statement_hash(&longer));
        let kept = truncated(&"é".repeat(MAX_TEXT));
        assert!(kept.len() <= MAX_TEXT + "…".len() && kept.ends_with('…'));
    }

    #[test]
    fn short_statements_hash_apart() {
        let texts = [
            "",
            "a",
            "b",
            "ab",
            "ba",
            "SELECT 1",
            "SELECT 2",
            "SELECT 10",
        ];
        let mut hashes: Vec<u64> = texts.iter().map(|t| statement_hash(t)).collect();
        hashes.sort_unstable();
        hashes.dedup();
        assert_eq!(hashes.len(), texts.len());
    }
}
