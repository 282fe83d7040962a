//! The ids the layer draws for requests: random (version 4) UUIDs in their
//! hyphenated lowercase form; and which ids it adopts from a request.

use bytes::Bytes;
use http::HeaderValue;

/// The length of a hyphenated UUID.
pub(crate) const LENGTH: usize = 36;

/// A drawn request id: hex digits and hyphens only.
pub(crate) struct DrawnId([u8; LENGTH]);

impl DrawnId {
    /// The id as text.
    #[inline]
    pub(crate) fn as_str(&self) -> &str {
        debug_assert!(self.0.is_ascii());
        // SAFETY: `hyphenated_v4` writes hex digits and hyphens only, all
        // ASCII, so the bytes are UTF-8.
        unsafe { std::str::from_utf8_unchecked(&self.0) }
    }
}

/// The longest id the layer adopts.
pub(crate) const ADOPTED_MAX: usize = 64;

/// `id` as text when the layer may adopt it: 1 to [`ADOPTED_MAX`] bytes of
/// `[A-Za-z0-9._:-]`. Nothing else a client sends reaches a line or a
/// header: no quote, space, control byte or non-ASCII byte, which a log
/// pipeline splitting or parsing lines could trip on.
#[inline]
pub(crate) fn adoptable(id: &[u8]) -> Option<&str> {
    let fits = !id.is_empty()
        && id.len() <= ADOPTED_MAX
        && id
            .iter()
            .all(|&b| b.is_ascii_alphanumeric() || matches!(b, b'.' | b'_' | b':' | b'-'));
    // The bytes are ASCII, so UTF-8.
    fits.then(|| std::str::from_utf8(id).ok()).flatten()
}

/// A drawn or adopted id (`id`, as the request's recorder holds it) as a
/// header value, in bytes of its own. (Ids sliced from a block drawn per thread saved the
/// allocation, but every response's header then wrote the block's shared
/// reference count from whichever core dropped it: under load that cost
/// more than the allocation.)
#[inline]
pub(crate) fn header_value(id: &str) -> HeaderValue {
    debug_assert!(id.len() == LENGTH || adoptable(id.as_bytes()).is_some());
    // SAFETY: a drawn id is hex digits and hyphens, an adopted one passed
    // `adoptable`: every byte valid in a header value; checking them again
    // was a tenth of the layer's own cost.
    unsafe { HeaderValue::from_maybe_shared_unchecked(Bytes::copy_from_slice(id.as_bytes())) }
}

/// A new request id: a random version 4 UUID, hyphenated, lowercase.
///
/// Drawn from the thread's fast generator, seeded at random: the ids tell
/// requests apart and guard nothing, and a cryptographic generator cost
/// more than the rest of the id.
#[inline]
pub(crate) fn draw() -> DrawnId {
    DrawnId(hyphenated_v4(fastrand::u128(..)))
}

/// `random` as a version 4, variant 1 UUID in its hyphenated form.
#[inline]
fn hyphenated_v4(random: u128) -> [u8; LENGTH] {
    let mut bytes = random.to_be_bytes();
    bytes[6] = (bytes[6] & 0x0f) | 0x40;
    bytes[8] = (bytes[8] & 0x3f) | 0x80;
    let mut id = [b'-'; LENGTH];
    // Where each byte's two digits go: the groups are 4, 2, 2, 2 and 6 bytes.
    const AT: [usize; 16] = [0, 2, 4, 6, 9, 11, 14, 16, 19, 21, 24, 26, 28, 30, 32, 34];
    for (byte, at) in bytes.into_iter().zip(AT) {
        id[at..at + 2].copy_from_slice(&HEX_PAIRS[usize::from(byte)]);
    }
    id
}

/// Each byte's two lowercase hex digits: one load per byte, where
/// formatting took a division and a branch per digit.
static HEX_PAIRS: [[u8; 2]; 256] = {
    const DIGITS: &[u8; 16] = b"0123456789abcdef";
    let mut pairs = [[0; 2]; 256];
    let mut i = 0;
    while i < 256 {
        pairs[i] = [DIGITS[i >> 4], DIGITS[i & 0xf]];
        i += 1;
    }
    pairs
};

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn drawn_ids_are_distinct_uuids_and_their_header_values_keep_their_bytes() {
        let ids: Vec<DrawnId> = (0..1000).map(|_| draw()).collect();
        let texts: Vec<String> = ids.iter().map(|id| id.as_str().to_owned()).collect();
        let distinct: std::collections::HashSet<&String> = texts.iter().collect();
        assert_eq!(distinct.len(), texts.len());
        for (id, text) in ids.into_iter().zip(&texts) {
            let uuid = uuid::Uuid::parse_str(text).expect("a UUID");
            assert_eq!(uuid.get_version_num(), 4);
            assert_eq!(uuid.hyphenated().to_string(), *text);
            // The header value is the same bytes.
            assert_eq!(header_value(id.as_str()).as_bytes(), text.as_bytes());
        }
    }

    #[test]
    fn only_short_ids_of_safe_bytes_are_adopted() {
        for id in ["my-own-id-123", "a", "req_1.2:3", &"x".repeat(ADOPTED_MAX)] {
            assert_eq!(adoptable(id.as_bytes()), Some(id), "{id:?}");
            assert_eq!(header_value(id).as_bytes(), id.as_bytes());
        }
        let long = "x".repeat(ADOPTED_MAX + 1);
        let refused = ["", "a\nb", "a b", "a\"b", "é", "a/b", "a,b", "{}", &long];
        for id in refused {
            assert_eq!(adoptable(id.as_bytes()), None, "{id:?}");
        }
    }

    #[test]
    fn ids_are_the_uuid_crate_s_hyphenated_v4_of_the_same_bytes() {
        let mut rng = fastrand::Rng::with_seed(7);
        let edges = [0, u128::MAX, 0x0123_4567_89ab_cdef_fedc_ba98_7654_3210];
        let randoms = edges.into_iter().chain((0..10_000).map(|_| rng.u128(..)));
        for random in randoms {
            let expected = uuid::Builder::from_random_bytes(random.to_be_bytes()).into_uuid();
            let id = hyphenated_v4(random);
            assert_eq!(
                std::str::from_utf8(&id).unwrap(),
                expected.hyphenated().to_string()
            );
        }
    }
}
