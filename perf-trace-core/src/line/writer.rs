//! Writes a line's bytes straight into the spare capacity of the string it
//! is rendered onto. A line is some thirty short copies (keys of 10 to 30
//! bytes, one-digit counts) and `String::push_str` pays, per copy, a
//! capacity check through the string, a call into `memcpy` and a store of
//! the length; here the pointer, capacity and length stay in registers, a
//! key is copied by two overlapping moves and the length is stored once,
//! at the end.

use std::ptr;

/// A cursor over the spare capacity of a `String` being rendered onto.
///
/// Every write copies bytes of a `&str` or ASCII digits, so what it has
/// written is UTF-8 at every moment; the string's length is set when the
/// writer is dropped (a panic included).
pub(crate) struct LineWriter<'a> {
    out: &'a mut String,
    /// The string's buffer, re-read when it grows.
    start: *mut u8,
    len: usize,
    capacity: usize,
}

impl<'a> LineWriter<'a> {
    /// Writes onto the end of `out`, with room for `expected` bytes made
    /// now.
    #[inline]
    pub(crate) fn new(out: &'a mut String, expected: usize) -> Self {
        out.reserve(expected);
        let len = out.len();
        let capacity = out.capacity();
        // SAFETY: only the spare capacity is written through `start`, and
        // only with UTF-8; the length is set in `drop`.
        let start = unsafe { out.as_mut_vec().as_mut_ptr() };
        LineWriter {
            out,
            start,
            len,
            capacity,
        }
    }

    /// Where the next `n` bytes go, with room for them.
    #[inline(always)]
    fn room(&mut self, n: usize) -> *mut u8 {
        self.reserve(n);
        // SAFETY: `len` is within the buffer's capacity.
        unsafe { self.start.add(self.len) }
    }

    #[cold]
    #[inline(never)]
    fn grow(&mut self, n: usize) {
        // SAFETY: the first `len` bytes were written, with UTF-8.
        unsafe { self.out.as_mut_vec().set_len(self.len) };
        self.out.reserve(n.max(512));
        self.capacity = self.out.capacity();
        // SAFETY: as in `new`.
        self.start = unsafe { self.out.as_mut_vec().as_mut_ptr() };
    }

    /// Appends `s`. Called, never inlined, as [`field`](Self::field) is:
    /// the renderer writes a dozen strings, and each inlined copy added
    /// its own branches by length to the code every line fetches.
    #[inline(never)]
    pub(crate) fn str(&mut self, s: &str) {
        self.str_inline(s);
    }

    /// [`str`](Self::str) in place, for the helpers that are themselves
    /// called.
    #[inline(always)]
    pub(crate) fn str_inline(&mut self, s: &str) {
        self.reserve(s.len());
        // SAFETY: room for `s` was made just above.
        unsafe { self.str_reserved(s) };
    }

    /// Appends one ASCII byte.
    #[inline(always)]
    pub(crate) fn byte(&mut self, b: u8) {
        debug_assert!(b.is_ascii());
        let at = self.room(1);
        // SAFETY: `room` made space for it.
        unsafe { at.write(b) };
        self.len += 1;
    }

    /// Appends the first `n` bytes of `bytes`, ASCII: a whole number of
    /// words is moved, which the compiler turns into a few moves.
    #[inline(always)]
    pub(crate) fn ascii_prefix<const N: usize>(&mut self, bytes: &[u8; N], n: usize) {
        debug_assert!(n <= N && bytes[..n].is_ascii());
        let at = self.room(N);
        // SAFETY: `room` made space for all `N` bytes; only `n` are kept.
        unsafe { ptr::copy_nonoverlapping(bytes.as_ptr(), at, N) };
        self.len += n;
    }

    /// Appends `value` in decimal.
    #[inline(always)]
    pub(crate) fn int(&mut self, value: u64) {
        // Most counts and many times are one or two digits: written here;
        // longer numbers through a call.
        if value < 10 {
            self.byte(b'0' + value as u8);
        } else if value < 100 {
            let at = self.room(2);
            // SAFETY: `room` made space for two bytes.
            unsafe { ptr::copy_nonoverlapping(DIGIT_PAIRS[value as usize].as_ptr(), at, 2) };
            self.len += 2;
        } else {
            self.long_int(value);
        }
    }

    /// A number of three digits or more, making its own room: up to eight
    /// digits (every time and count a line holds short of hours) as
    /// [`eight_digits_reserved`](Self::eight_digits_reserved) writes them,
    /// longer through `itoa`.
    #[inline(never)]
    fn long_int(&mut self, value: u64) {
        if value < 100_000_000 {
            self.reserve(8);
            // SAFETY: room for eight bytes was made just above.
            unsafe { self.eight_digits_reserved(value as u32) };
        } else {
            self.str_inline(itoa::Buffer::new().format(value));
        }
    }

    /// Appends `value` (100 to 99,999,999) in decimal: its eight digits
    /// (see [`eight_digits`]) stored as one word, the leading zeros shifted
    /// out.
    ///
    /// # Safety
    ///
    /// [`reserve`](Self::reserve) made room for eight bytes (and for
    /// whatever else was written since).
    #[inline(always)]
    unsafe fn eight_digits_reserved(&mut self, value: u32) {
        debug_assert!((100..100_000_000).contains(&value));
        debug_assert!(self.capacity - self.len >= 8);
        let digits = eight_digits(value);
        // The leading zeros are the low bytes still zero (the value is at
        // least 100, so not every byte is).
        let zeros = (digits.trailing_zeros() / 8) as usize;
        let ascii = (digits | ASCII_ZEROS) >> (8 * zeros);
        // SAFETY: the caller made room for eight bytes, of which the digits
        // are kept.
        unsafe {
            self.start
                .add(self.len)
                .cast::<[u8; 8]>()
                .write_unaligned(ascii.to_le_bytes())
        };
        self.len += 8 - zeros;
    }

    /// Appends `key`, a field's JSON key (separator, quotes and colon
    /// included), then `value`.
    ///
    /// Called, never inlined: inlined at each of the line's fields, the
    /// field helpers made the renderer some 12 KiB of code, which a loaded
    /// service's requests evict from the instruction cache between two
    /// lines; called, they halve it, and a traced Hub under a 300-user
    /// load spent about 0.9 µs a request less, for a few more instructions.
    #[inline(never)]
    pub(crate) fn field(&mut self, key: &str, value: u64) {
        self.reserve(key.len() + MAX_DIGITS);
        // SAFETY: room for the key and any number was made just above.
        unsafe {
            self.str_reserved(key);
            self.int_reserved(value);
        }
    }

    /// Two fields, as two [`field`](Self::field)s: a timed key's count
    /// and time, which always come together. Inlined at its three callers
    /// (the phases', the store methods' and the timers' loops), where a
    /// call per key cost a fifth of what the key's two fields cost.
    ///
    /// Room for all four writes is made once: a check per write was some
    /// 200 instructions a line.
    #[inline(always)]
    pub(crate) fn two_fields(&mut self, (first, second): (&str, &str), values: [u64; 2]) {
        self.reserve(first.len() + second.len() + 2 * MAX_DIGITS);
        // SAFETY: room for both keys and any two numbers was made just above.
        unsafe {
            self.str_reserved(first);
            self.int_reserved(values[0]);
            self.str_reserved(second);
            self.int_reserved(values[1]);
        }
    }

    /// Makes room for the next `n` bytes, for the `_reserved` writes.
    #[inline(always)]
    fn reserve(&mut self, n: usize) {
        if self.capacity - self.len < n {
            self.grow(n);
        }
    }

    /// [`str_inline`](Self::str_inline) into room already made.
    ///
    /// # Safety
    ///
    /// [`reserve`](Self::reserve) made room for `s` (and for whatever else
    /// was written since).
    #[inline(always)]
    unsafe fn str_reserved(&mut self, s: &str) {
        let n = s.len();
        debug_assert!(self.capacity - self.len >= n);
        // SAFETY: the caller made room for `n` bytes past `len`.
        unsafe { copy_short(s.as_ptr(), self.start.add(self.len), n) };
        self.len += n;
    }

    /// [`int`](Self::int) into room already made, every number below
    /// 100,000,000 in place (a line's times under a slow run, a profiler's
    /// say, are mostly of four to six digits, and a call each cost a third
    /// of the field); longer ones through [`long_int`](Self::long_int).
    ///
    /// # Safety
    ///
    /// [`reserve`](Self::reserve) made room for eight bytes (and for
    /// whatever else was written since).
    #[inline(always)]
    unsafe fn int_reserved(&mut self, value: u64) {
        debug_assert!(self.capacity - self.len >= 8);
        if value < 10 {
            // SAFETY: the caller made room.
            unsafe { self.start.add(self.len).write(b'0' + value as u8) };
            self.len += 1;
        } else if value < 100 {
            let pair = DIGIT_PAIRS[value as usize].as_ptr();
            // SAFETY: the caller made room.
            unsafe { ptr::copy_nonoverlapping(pair, self.start.add(self.len), 2) };
            self.len += 2;
        } else if value < 100_000_000 {
            // SAFETY: the caller made room.
            unsafe { self.eight_digits_reserved(value as u32) };
        } else {
            self.long_int(value);
        }
    }
}

/// The most digits a `u64` has in decimal.
const MAX_DIGITS: usize = 20;

/// `'0'` in every byte of a word.
const ASCII_ZEROS: u64 = u64::from_le_bytes([b'0'; 8]);

/// The eight decimal digits of `value` (below 100,000,000, leading zeros
/// included) as the bytes of a word, the first digit lowest, each byte
/// the digit's value (not yet ASCII).
///
/// The value is split into halves of four digits in the word's two 32-bit
/// lanes, the halves into pairs in its 16-bit lanes, the pairs into digits
/// in its bytes: each split a multiply by a reciprocal, a shift and a
/// mask done on every lane at once, with no branch and no table.
#[inline(always)]
fn eight_digits(value: u32) -> u64 {
    debug_assert!(value < 100_000_000);
    let value = u64::from(value);
    let high = value / 10_000;
    let halves = high | ((value - high * 10_000) << 32);
    // `x * 10_486 >> 20` is `x / 100` for every `x` below 10,000, and the
    // product stays within its lane.
    let hundreds = ((halves * 10_486) >> 20) & 0x0000_007f_0000_007f;
    let pairs = hundreds | ((halves - hundreds * 100) << 16);
    // `x * 103 >> 10` is `x / 10` for every `x` below 100, the product
    // within its lane.
    let tens = ((pairs * 103) >> 10) & 0x000f_000f_000f_000f;
    tens | ((pairs - tens * 10) << 8)
}

impl Drop for LineWriter<'_> {
    #[inline]
    fn drop(&mut self) {
        // SAFETY: the first `len` bytes were written, each write a whole
        // `&str` or ASCII bytes, and `len` is within the capacity.
        unsafe { self.out.as_mut_vec().set_len(self.len) };
    }
}

/// Copies `n` bytes from `src` to `dst`: up to 64 as two moves that may
/// overlap (of 32, 16, 8, 4 or 1 bytes by size), longer ones through
/// `memcpy` (a store method's keys run to some 45 bytes: a call each into
/// `memcpy` cost more than the rest of the field).
///
/// # Safety
/// `src` is readable and `dst` writable for `n` bytes, and they do not
/// overlap.
#[inline(always)]
unsafe fn copy_short(src: *const u8, dst: *mut u8, n: usize) {
    unsafe {
        if n > 64 {
            ptr::copy_nonoverlapping(src, dst, n);
        } else if n > 32 {
            copy_two::<[u128; 2]>(src, dst, n);
        } else if n >= 16 {
            copy_two::<u128>(src, dst, n);
        } else if n >= 8 {
            copy_two::<u64>(src, dst, n);
        } else if n >= 4 {
            copy_two::<u32>(src, dst, n);
        } else {
            for i in 0..n {
                dst.add(i).write(src.add(i).read());
            }
        }
    }
}

/// Copies `n` bytes, `n` from one to two words of `W`, as the first word
/// and the last (which overlap when `n` is less than two words).
///
/// # Safety
/// As [`copy_short`]'s, with `size_of::<W>() <= n`.
#[inline(always)]
unsafe fn copy_two<W: Copy>(src: *const u8, dst: *mut u8, n: usize) {
    let last = n - std::mem::size_of::<W>();
    unsafe {
        let (first_word, last_word) = (
            src.cast::<W>().read_unaligned(),
            src.add(last).cast::<W>().read_unaligned(),
        );
        dst.cast::<W>().write_unaligned(first_word);
        dst.add(last).cast::<W>().write_unaligned(last_word);
    }
}

/// `00` to `99`.
pub(crate) static DIGIT_PAIRS: [[u8; 2]; 100] = {
    let mut pairs = [[0; 2]; 100];
    let mut i = 0;
    while i < 100 {
        pairs[i] = [b'0' + (i / 10) as u8, b'0' + (i % 10) as u8];
        i += 1;
    }
    pairs
};

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_length_of_copy_lands_whole_after_what_was_there() {
        let source: String = (0..100u8).map(|i| char::from(b'a' + i % 26)).collect();
        for n in 0..=source.len() {
            let mut out = String::from("head:");
            {
                let mut writer = LineWriter::new(&mut out, 0);
                writer.str(&source[..n]);
                writer.byte(b'|');
            }
            assert_eq!(out, format!("head:{}|", &source[..n]), "{n}");
        }
    }

    #[test]
    fn integers_and_fields_read_as_decimal() {
        let mut out = String::new();
        {
            let mut writer = LineWriter::new(&mut out, 8);
            for value in [0, 7, 10, 42, 99, 100, 12_345, u64::MAX] {
                writer.field(",\"k\":", value);
            }
        }
        assert_eq!(
            out,
            ",\"k\":0,\"k\":7,\"k\":10,\"k\":42,\"k\":99,\"k\":100,\"k\":12345,\"k\":18446744073709551615"
        );
    }

    #[test]
    fn every_length_of_number_reads_as_decimal() {
        let mut values = vec![0, u64::MAX, u64::MAX - 1];
        for digits in 1..=20u32 {
            let low = 10u64.pow(digits - 1);
            values.extend([
                low,
                low + 1,
                low.saturating_mul(10) - 1,
                low.saturating_mul(3).saturating_add(7),
            ]);
        }
        for value in values {
            let mut out = String::from("x");
            {
                let mut writer = LineWriter::new(&mut out, 0);
                writer.int(value);
                writer.byte(b'|');
                writer.field(",\"k\":", value);
            }
            assert_eq!(out, format!("x{value}|,\"k\":{value}"));
        }
        let mut out = String::new();
        {
            let mut writer = LineWriter::new(&mut out, 0);
            writer.two_fields((",\"a_n\":", ",\"a_us\":"), [3, 12_345_678]);
        }
        assert_eq!(out, ",\"a_n\":3,\"a_us\":12345678");
    }

    #[test]
    fn eight_digits_agree_with_decimal_at_every_carry() {
        let mut values: Vec<u32> = (0..20_000).collect();
        for digits in 1..=8u32 {
            let low = 10u32.pow(digits - 1);
            for near in [low, low * 10 - 1] {
                values.extend(near.saturating_sub(50)..=(near + 50).min(99_999_999));
            }
        }
        // Every carry between the two halves, and a stride over the range.
        values.extend((0..10_000u32).map(|i| i * 10_000 + 9_999));
        values.extend((0..10_000u32).map(|i| i * 9_973 + 10_000));
        for value in values {
            let digits = (eight_digits(value) | ASCII_ZEROS).to_le_bytes();
            assert_eq!(std::str::from_utf8(&digits).unwrap(), format!("{value:08}"));
        }
    }

    #[test]
    fn a_line_longer_than_the_room_made_first_grows_its_string() {
        let mut out = String::with_capacity(4);
        let key = ",\"a_rather_long_key_of_a_field\":";
        {
            let mut writer = LineWriter::new(&mut out, 1);
            for i in 0..200 {
                writer.field(key, i);
            }
            writer.ascii_prefix(b"0123456789abcdef", 10);
        }
        let expected: String =
            (0..200).map(|i| format!("{key}{i}")).collect::<String>() + "0123456789";
        assert_eq!(out, expected);
    }

    #[test]
    fn two_fields_grow_the_string_at_any_fill_whatever_their_numbers() {
        let keys = (",\"store_ListRoleBindingsForPrincipals_n\":", ",\"a_us\":");
        let values = [0, 9, 10, 99, 100, 12_345, 123_456_789, u64::MAX];
        for filled in 0..80 {
            let mut out = "x".repeat(filled);
            out.shrink_to_fit();
            let mut expected = out.clone();
            {
                let mut writer = LineWriter::new(&mut out, 0);
                for (i, &first) in values.iter().enumerate() {
                    let second = values[values.len() - 1 - i];
                    writer.two_fields(keys, [first, second]);
                    expected += &format!("{}{first}{}{second}", keys.0, keys.1);
                }
            }
            assert_eq!(out, expected, "{filled}");
        }
    }
}
