//! W3C Trace Context: the `traceparent` and `traceresponse` headers.

use std::fmt::Write as _;

/// The request header a caller's trace arrives in.
pub const TRACEPARENT: &str = "traceparent";
/// The response header that names the request's trace and span.
pub const TRACERESPONSE: &str = "traceresponse";

/// The trace a request's span belongs to, and its place in it.
///
/// W3C Trace Context: the incoming `traceparent` a request's span is
/// parented from, and the `traceresponse` it answers with.
///
/// The layer reads these headers only when an exit asks for them
/// ([`RequestSink::wants_trace_context`](super::RequestSink::wants_trace_context)),
/// so a service with the line alone answers exactly the contract's headers.
///
/// ```
/// use perf_trace_core::exits::TraceContext;
///
/// let incoming = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01";
/// let context = TraceContext::continue_or_start(Some(incoming.as_bytes()), [7; 16], [9; 8]);
/// assert_eq!(context.trace_id_hex(), "4bf92f3577b34da6a3ce929d0e0e4736");
/// assert_eq!(context.parent_span_id, Some([0x00, 0xf0, 0x67, 0xaa, 0x0b, 0xa9, 0x02, 0xb7]));
/// assert_eq!(
///     context.traceresponse(),
///     "00-4bf92f3577b34da6a3ce929d0e0e4736-0909090909090909-01"
/// );
///
/// // A malformed header starts a new trace rather than failing the request.
/// let fresh = TraceContext::continue_or_start(Some(b"garbage"), [7; 16], [9; 8]);
/// assert_eq!(fresh.trace_id, [7; 16]);
/// assert_eq!(fresh.parent_span_id, None);
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct TraceContext {
    /// The trace id: the caller's, or a new random one.
    pub trace_id: [u8; 16],
    /// This request's span id (always new).
    pub span_id: [u8; 8],
    /// The caller's span, when a valid `traceparent` came in.
    pub parent_span_id: Option<[u8; 8]>,
    /// The trace flags: the caller's, or `01` (sampled) for a new trace.
    pub flags: u8,
}

/// The parts of a valid `traceparent` header.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TraceParent {
    /// The trace id (never all zeros).
    pub trace_id: [u8; 16],
    /// The caller's span id (never all zeros).
    pub parent_span_id: [u8; 8],
    /// The trace flags.
    pub flags: u8,
}

fn hex_digit(byte: u8) -> Option<u8> {
    match byte {
        b'0'..=b'9' => Some(byte - b'0'),
        b'a'..=b'f' => Some(byte - b'a' + 10),
        // Upper case is invalid in trace context.
        _ => None,
    }
}

fn decode_hex<const N: usize>(text: &[u8]) -> Option<[u8; N]> {
    if text.len() != 2 * N {
        return None;
    }
    let mut out = [0; N];
    for (byte, pair) in out.iter_mut().zip(text.chunks_exact(2)) {
        *byte = hex_digit(pair[0])? << 4 | hex_digit(pair[1])?;
    }
    Some(out)
}

fn push_hex(out: &mut String, bytes: &[u8]) {
    for byte in bytes {
        let _ = write!(out, "{byte:02x}");
    }
}

impl TraceParent {
    /// Parses a `traceparent` value (`00-<32 hex>-<16 hex>-<2 hex>`, lower
    /// case). Version `00` must be exactly that; a later version may carry
    /// more fields after the four, which are ignored. Anything else, and
    /// all-zero ids, is `None`.
    pub fn parse(value: &[u8]) -> Option<TraceParent> {
        let value = value.trim_ascii();
        if value.len() < 55 {
            return None;
        }
        let version = decode_hex::<1>(&value[0..2])?[0];
        if version == 0xff || (version == 0 && value.len() != 55) {
            return None;
        }
        if value[2] != b'-' || value[35] != b'-' || value[52] != b'-' {
            return None;
        }
        if value.len() > 55 && value[55] != b'-' {
            return None;
        }
        let trace_id = decode_hex::<16>(&value[3..35])?;
        let parent_span_id = decode_hex::<8>(&value[36..52])?;
        let flags = decode_hex::<1>(&value[53..55])?[0];
        if trace_id == [0; 16] || parent_span_id == [0; 8] {
            return None;
        }
        Some(TraceParent {
            trace_id,
            parent_span_id,
            flags,
        })
    }
}

impl TraceContext {
    /// The context of a request: the caller's trace when `traceparent` is
    /// valid, else a new one with `new_trace_id`; its span is `new_span_id`.
    pub fn continue_or_start(
        traceparent: Option<&[u8]>,
        new_trace_id: [u8; 16],
        new_span_id: [u8; 8],
    ) -> TraceContext {
        match traceparent.and_then(TraceParent::parse) {
            Some(parent) => TraceContext {
                trace_id: parent.trace_id,
                span_id: new_span_id,
                parent_span_id: Some(parent.parent_span_id),
                flags: parent.flags,
            },
            None => TraceContext {
                trace_id: new_trace_id,
                span_id: new_span_id,
                parent_span_id: None,
                flags: 0x01,
            },
        }
    }

    /// The trace id as 32 lower-case hex digits.
    pub fn trace_id_hex(&self) -> String {
        let mut out = String::with_capacity(32);
        push_hex(&mut out, &self.trace_id);
        out
    }

    /// The `traceresponse` value: `00-<trace id>-<this span>-<flags>`.
    pub fn traceresponse(&self) -> String {
        let mut out = String::with_capacity(55);
        out.push_str("00-");
        push_hex(&mut out, &self.trace_id);
        out.push('-');
        push_hex(&mut out, &self.span_id);
        out.push('-');
        push_hex(&mut out, &[self.flags]);
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const VALID: &str = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01";

    #[test]
    fn parses_the_specification_example() {
        let parent = TraceParent::parse(VALID.as_bytes()).expect("valid");
        assert_eq!(parent.trace_id[0], 0x4b);
        assert_eq!(parent.parent_span_id[7], 0xb7);
        assert_eq!(parent.flags, 1);
    }

    #[test]
    fn refuses_malformed_values() {
        let cases = [
            "",
            "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7",
            "00-4BF92F3577B34DA6A3CE929D0E0E4736-00f067aa0ba902b7-01",
            "00-00000000000000000000000000000000-00f067aa0ba902b7-01",
            "00-4bf92f3577b34da6a3ce929d0e0e4736-0000000000000000-01",
            "ff-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01",
            "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01-extra",
            "00_4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01",
            "00-4bf92f3577b34da6a3ce929d0e0e473g-00f067aa0ba902b7-01",
        ];
        for case in cases {
            assert_eq!(TraceParent::parse(case.as_bytes()), None, "{case:?}");
        }
    }

    #[test]
    fn a_later_version_may_carry_more_fields() {
        let value = "01-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01-later";
        assert!(TraceParent::parse(value.as_bytes()).is_some());
    }

    #[test]
    fn continues_the_callers_trace_with_a_new_span() {
        let context = TraceContext::continue_or_start(Some(VALID.as_bytes()), [1; 16], [2; 8]);
        assert_eq!(context.trace_id_hex(), "4bf92f3577b34da6a3ce929d0e0e4736");
        assert_eq!(context.span_id, [2; 8]);
        assert_eq!(
            context.traceresponse(),
            "00-4bf92f3577b34da6a3ce929d0e0e4736-0202020202020202-01"
        );
    }

    #[test]
    fn starts_a_sampled_trace_without_a_header() {
        let context = TraceContext::continue_or_start(None, [0xab; 16], [0xcd; 8]);
        assert_eq!(context.parent_span_id, None);
        assert_eq!(context.flags, 1);
        assert_eq!(context.trace_id_hex(), "ab".repeat(16));
    }
}
