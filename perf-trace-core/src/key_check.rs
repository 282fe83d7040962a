//! Checking a key named in a macro at compile time: finding the variant, and
//! when there is none, the message of the compile error (the closest key, by
//! edit distance, and the set's keys), all in `const fn`s.

use crate::keys::KeySet;

/// Byte-wise string equality usable in constants.
const fn const_str_eq(a: &str, b: &str) -> bool {
    let (a, b) = (a.as_bytes(), b.as_bytes());
    if a.len() != b.len() {
        return false;
    }
    let mut i = 0;
    while i < a.len() {
        if a[i] != b[i] {
            return false;
        }
        i += 1;
    }
    true
}

/// Finds a key by variant identifier at compile time.
const fn lookup_variant<K: KeySet>(variant: &str) -> Option<K> {
    let mut i = 0;
    while i < K::VARIANTS.len() {
        if const_str_eq(K::VARIANTS[i], variant) {
            return Some(K::ALL[i]);
        }
        i += 1;
    }
    None
}

/// Longest name the edit distance is computed for; longer names get no
/// suggestion.
const MAX_COMPARED: usize = 96;

/// Levenshtein distance between `a` and `b`, ignoring ASCII case; `None` when
/// either is longer than [`MAX_COMPARED`].
pub(crate) const fn edit_distance(a: &[u8], b: &[u8]) -> Option<usize> {
    if a.len() > MAX_COMPARED || b.len() > MAX_COMPARED {
        return None;
    }
    let mut previous = [0usize; MAX_COMPARED + 1];
    let mut row = [0usize; MAX_COMPARED + 1];
    let mut j = 0;
    while j <= b.len() {
        previous[j] = j;
        j += 1;
    }
    let mut i = 1;
    while i <= a.len() {
        row[0] = i;
        let mut j = 1;
        while j <= b.len() {
            let cost = if a[i - 1].eq_ignore_ascii_case(&b[j - 1]) {
                0
            } else {
                1
            };
            let mut best = previous[j - 1] + cost;
            if previous[j] + 1 < best {
                best = previous[j] + 1;
            }
            if row[j - 1] + 1 < best {
                best = row[j - 1] + 1;
            }
            row[j] = best;
            j += 1;
        }
        let mut k = 0;
        while k <= b.len() {
            previous[k] = row[k];
            k += 1;
        }
        i += 1;
    }
    Some(previous[b.len()])
}

/// The variant closest to `typed`, when it is close enough to be a likely
/// misspelling: at most one edit per four characters, and at least one.
const fn closest_variant<K: KeySet>(typed: &str) -> Option<usize> {
    let limit = 1 + typed.len() / 4;
    let mut best: Option<(usize, usize)> = None;
    let mut i = 0;
    while i < K::VARIANTS.len() {
        if let Some(d) = edit_distance(typed.as_bytes(), K::VARIANTS[i].as_bytes()) {
            let better = match best {
                Some((_, best_d)) => d < best_d,
                None => true,
            };
            if d <= limit && better {
                best = Some((i, d));
            }
        }
        i += 1;
    }
    match best {
        Some((i, _)) => Some(i),
        None => None,
    }
}

/// The key `Set::variant` of `K`, or the message of the compile error when
/// `K` has no such key. Built only when the key is missing.
// Only ever evaluated in a constant, so the large error costs nothing at run time.
#[allow(clippy::result_large_err)]
pub const fn check_key<K: KeySet>(variant: &str) -> Result<K, KeyMessage> {
    match lookup_variant::<K>(variant) {
        Some(key) => Ok(key),
        None => Err(unknown_key::<K>(variant)),
    }
}

/// Size of a compile-error message; a longer list of keys is cut with `...`.
const MESSAGE_CAPACITY: usize = 4096;

/// A message built at compile time in a fixed buffer.
#[derive(Debug)]
pub struct KeyMessage {
    bytes: [u8; MESSAGE_CAPACITY],
    len: usize,
}

impl KeyMessage {
    const fn new() -> Self {
        KeyMessage {
            bytes: [0; MESSAGE_CAPACITY],
            len: 0,
        }
    }

    const fn push(&mut self, s: &str) {
        let s = s.as_bytes();
        let mut i = 0;
        // Leave room for the ellipsis.
        while i < s.len() && self.len < MESSAGE_CAPACITY - 3 {
            self.bytes[self.len] = s[i];
            self.len += 1;
            i += 1;
        }
        if i < s.len() {
            self.bytes[self.len] = b'.';
            self.bytes[self.len + 1] = b'.';
            self.bytes[self.len + 2] = b'.';
            self.len += 3;
        }
    }

    /// The message.
    pub const fn as_str(&self) -> &str {
        let (bytes, _) = self.bytes.split_at(self.len);
        match core::str::from_utf8(bytes) {
            Ok(s) => s,
            // Key names are ASCII (the derive checks them), so every cut is at
            // a character boundary.
            Err(_) => "unknown perf-trace key",
        }
    }
}

/// The message of the compile error for `Set::typed`, a key `K` does not
/// have: the closest key when one is close, then the set's keys.
///
/// ```text
/// `Phase` has no key `Pricee`; did you mean `Phase::Price`? The keys of `Phase` are: Phase::Load, Phase::Price
/// ```
pub const fn unknown_key<K: KeySet>(typed: &str) -> KeyMessage {
    let mut m = KeyMessage::new();
    m.push("`");
    m.push(K::SET_NAME);
    m.push("` has no key `");
    m.push(typed);
    m.push("`; ");
    if let Some(i) = closest_variant::<K>(typed) {
        m.push("did you mean `");
        m.push(K::SET_NAME);
        m.push("::");
        m.push(K::VARIANTS[i]);
        m.push("`? ");
    }
    m.push("the keys of `");
    m.push(K::SET_NAME);
    m.push("` are: ");
    let mut i = 0;
    while i < K::VARIANTS.len() {
        if i > 0 {
            m.push(", ");
        }
        m.push(K::SET_NAME);
        m.push("::");
        m.push(K::VARIANTS[i]);
        i += 1;
    }
    m
}
