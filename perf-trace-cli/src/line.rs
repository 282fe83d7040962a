//! One `perf_trace` line, read generically from its field names.
//!
//! A line is a JSON object whose `msg` (or `message`, the GCP form) is
//! `"perf_trace"`. Every profile writes `endpoint` and `elapsed_us`; the rest
//! is named by shape: `phase_<p>_us` / `_n`, `store_<M>_n` / `_us`, the plain
//! profile's store total `store_calls` / `store_us` and `status`, and any
//! other unsigned figure (a counter or timer set's `<prefix>_<key>`, the
//! Hub's `authz_*`, `audit_*`, `db_*`, `sse_events`). A figure whose name
//! ends in `_us` is a duration; any other is a count.
//!
//! [`parse`] answers [`Parsed::NotPerf`] for anything that is not a perf
//! line (other messages, plain text) and [`Parsed::Malformed`] with a reason
//! for a line that claims to be one but cannot be read whole (cut, not JSON,
//! no endpoint, a figure that is not an unsigned integer, any field that is
//! neither text nor an unsigned integer).
//!
//! [`parse_profile`] reads the lines of one profile whose figures are known
//! (the Hub's): a field that is not one of them is passed over whatever it
//! holds, so a field added beside the profile's does not cost the line.

use std::borrow::Cow;
use std::fmt;

use serde::de::{self, Deserializer, IgnoredAny, MapAccess, Visitor};
use serde::Deserialize;

/// The message every perf line carries.
pub const MESSAGE: &str = "perf_trace";

/// The bytes every perf line holds (the message as a JSON string): lines
/// without them are skipped before any parsing.
pub const NEEDLE: &[u8] = b"\"perf_trace\"";

/// What a figure measures.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Unit {
    /// A count per request (`_n`, `_calls`, a counter).
    Count,
    /// Microseconds (`_us`).
    Micros,
}

/// Where a figure belongs, from its field name.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FigureKind<'a> {
    /// `phase_<name>_us` / `phase_<name>_n`.
    Phase(&'a str, Unit),
    /// `store_<Method>_n` / `store_<Method>_us` (any spelling of the method).
    Store(&'a str, Unit),
    /// The plain profile's store total: `store_calls` / `store_us`.
    StoreTotal(Unit),
    /// Any other figure: a counter, or a timer when it ends in `_us`.
    Other(Unit),
}

fn split_unit(name: &str) -> Option<(&str, Unit)> {
    if let Some(rest) = name.strip_suffix("_us") {
        Some((rest, Unit::Micros))
    } else {
        name.strip_suffix("_n").map(|rest| (rest, Unit::Count))
    }
}

/// Classifies a figure's field name (not `elapsed_us` nor `status`).
pub fn classify(name: &str) -> FigureKind<'_> {
    match name {
        "store_calls" => return FigureKind::StoreTotal(Unit::Count),
        "store_us" => return FigureKind::StoreTotal(Unit::Micros),
        _ => {}
    }
    if let Some((inner, unit)) = name.strip_prefix("phase_").and_then(split_unit) {
        if !inner.is_empty() {
            return FigureKind::Phase(inner, unit);
        }
    }
    if let Some((inner, unit)) = name.strip_prefix("store_").and_then(split_unit) {
        if !inner.is_empty() {
            return FigureKind::Store(inner, unit);
        }
    }
    FigureKind::Other(if name.ends_with("_us") {
        Unit::Micros
    } else {
        Unit::Count
    })
}

/// Fields every profile writes as text, never figures.
const TEXT_FIELDS: &[&str] = &[
    "time",
    "level",
    "msg",
    "message",
    "component",
    "subsystem",
    "endpoint",
    "method",
    "request_id",
    "sse_stage",
];

/// A field's value as far as a perf line cares.
#[derive(Debug, Clone, PartialEq)]
enum Value<'a> {
    Uint(u64),
    Text(Cow<'a, str>),
    /// Anything else: a negative or fractional number, null, a bool, an
    /// array or an object.
    Other(&'static str),
}

/// One perf line, borrowing from the text it was read from.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct PerfLine<'a> {
    /// The endpoint class.
    pub endpoint: Cow<'a, str>,
    /// `elapsed_us`.
    pub elapsed_us: u64,
    /// The HTTP status, where the profile writes it.
    pub status: Option<u64>,
    /// The line's `time`, as written.
    pub time: Option<Cow<'a, str>>,
    /// The HTTP method.
    pub method: Option<Cow<'a, str>>,
    /// The request id, when present and not empty.
    pub request_id: Option<Cow<'a, str>>,
    /// Whether the message stood under `message` (the GCP form) rather than
    /// `msg`.
    pub gcp_form: bool,
    /// Every other unsigned figure, by field name, in line order.
    pub figures: Vec<(Cow<'a, str>, u64)>,
    /// Every other text field (a profile's own, like the Hub's `sse_stage`),
    /// by field name, in line order.
    pub texts: Vec<(Cow<'a, str>, Cow<'a, str>)>,
}

impl PerfLine<'_> {
    /// The text field `name` among [`PerfLine::texts`].
    pub fn text(&self, name: &str) -> Option<&str> {
        self.texts
            .iter()
            .find(|(field, _)| field == name)
            .map(|(_, value)| value.as_ref())
    }
}

/// What one line of input is.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Parsed<'a> {
    /// A perf line.
    Perf(PerfLine<'a>),
    /// Not a perf line: skipped without a word.
    NotPerf,
    /// A perf line that cannot be read; the reason.
    Malformed(String),
}

/// Reads one line of input (without its newline), of any profile: every
/// field that is not text is a figure.
pub fn parse(text: &str) -> Parsed<'_> {
    read(text, None)
}

/// Reads one line of a profile whose figures `is_figure` names: another
/// field (besides `endpoint`, `elapsed_us`, `status` and the text fields
/// every profile shares) is passed over whatever it holds; a named one must
/// be an unsigned integer, as in [`parse`].
pub fn parse_profile(text: &str, is_figure: impl Fn(&str) -> bool) -> Parsed<'_> {
    read(text, Some(&is_figure))
}

/// [`parse`], or with `profile` [`parse_profile`].
fn read<'a>(text: &'a str, profile: Option<&dyn Fn(&str) -> bool>) -> Parsed<'a> {
    if memchr::memmem::find(text.as_bytes(), NEEDLE).is_none() {
        return Parsed::NotPerf;
    }
    let trimmed = text.trim();
    if !trimmed.starts_with('{') {
        return Parsed::NotPerf;
    }
    let fields = match serde_json::from_str::<Fields<'_>>(trimmed) {
        Ok(fields) => fields.0,
        Err(e) => return Parsed::Malformed(format!("not a whole JSON object ({e})")),
    };
    let message_key = fields.iter().find_map(|(name, value)| {
        let key = name.as_ref();
        (matches!(key, "msg" | "message") && matches!(value, Value::Text(t) if t == MESSAGE))
            .then_some(key)
    });
    let Some(message_key) = message_key else {
        return Parsed::NotPerf;
    };
    let gcp_form = message_key == "message";
    match build(fields, profile) {
        Ok(line) => Parsed::Perf(PerfLine { gcp_form, ..line }),
        Err(reason) => Parsed::Malformed(reason),
    }
}

fn build<'a>(
    fields: Vec<(Cow<'a, str>, Value<'a>)>,
    profile: Option<&dyn Fn(&str) -> bool>,
) -> Result<PerfLine<'a>, String> {
    let mut line = PerfLine::default();
    let (mut has_endpoint, mut has_elapsed) = (false, false);
    for (name, value) in fields {
        // Whether the profile names this field as one of its figures (the
        // generic reading asks nothing, so its hot path pays nothing).
        let named = match profile {
            Some(is_figure)
                if !matches!(name.as_ref(), "endpoint" | "elapsed_us" | "status")
                    && !TEXT_FIELDS.contains(&name.as_ref()) =>
            {
                if !is_figure(&name) {
                    if let Value::Text(text) = value {
                        line.texts.push((name, text));
                    }
                    continue;
                }
                true
            }
            _ => false,
        };
        let wrong = |what: &str| format!("`{name}` is {what}");
        let mut kept = None;
        match (name.as_ref(), value) {
            ("endpoint", Value::Text(text)) => {
                line.endpoint = text;
                has_endpoint = true;
            }
            ("elapsed_us", Value::Uint(v)) => {
                line.elapsed_us = v;
                has_elapsed = true;
            }
            ("status", Value::Uint(v)) => line.status = Some(v),
            ("time", Value::Text(text)) => line.time = Some(text),
            ("method", Value::Text(text)) => line.method = Some(text),
            ("request_id", Value::Text(text)) => {
                line.request_id = (!text.is_empty()).then_some(text);
            }
            (known, Value::Uint(_)) if TEXT_FIELDS.contains(&known) => {
                return Err(wrong("a number, not text"))
            }
            (_, Value::Uint(v)) => {
                line.figures.push((name, v));
                continue;
            }
            ("elapsed_us" | "status", Value::Text(_)) => {
                return Err(wrong("text, not an unsigned integer"))
            }
            ("endpoint" | "elapsed_us" | "status", Value::Other(what)) => return Err(wrong(what)),
            // Every field of a perf line is text or an unsigned integer: a
            // null or a fraction where a figure should be would otherwise
            // read as a silent 0.
            (_, Value::Other(what)) => return Err(wrong(what)),
            (other, Value::Text(text)) => {
                // A field named like a figure must be one; other text is a
                // profile's own business, kept for its reader.
                let shared = TEXT_FIELDS.contains(&other);
                let figure_like = named
                    || !shared
                        && (other.starts_with("phase_")
                            || other.starts_with("store_")
                            || split_unit(other).is_some());
                if figure_like {
                    return Err(wrong("text, not a figure"));
                }
                if !shared || other == "sse_stage" {
                    kept = Some(text);
                }
            }
        }
        if let Some(text) = kept {
            line.texts.push((name, text));
        }
    }
    if !has_endpoint {
        return Err("no `endpoint`".to_owned());
    }
    if !has_elapsed {
        return Err("no `elapsed_us`".to_owned());
    }
    Ok(line)
}

/// The object's fields in order, keys and text borrowed where unescaped.
struct Fields<'a>(Vec<(Cow<'a, str>, Value<'a>)>);

struct Key<'a>(Cow<'a, str>);

/// `Deserialize` for `$ty<'de>` by a visitor of the given `visit_*`
/// methods, asked for with `$ask` and expecting `$what`.
macro_rules! deserialize_by_visitor {
    ($ty:ident, $ask:ident, $what:literal, { $($visit:item)* }) => {
        impl<'de> Deserialize<'de> for $ty<'de> {
            fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
                struct TheVisitor;
                impl<'de> Visitor<'de> for TheVisitor {
                    type Value = $ty<'de>;
                    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                        f.write_str($what)
                    }
                    $($visit)*
                }
                d.$ask(TheVisitor)
            }
        }
    };
}

deserialize_by_visitor!(Key, deserialize_str, "a field name", {
    fn visit_borrowed_str<E: de::Error>(self, v: &'de str) -> Result<Key<'de>, E> {
        Ok(Key(Cow::Borrowed(v)))
    }
    fn visit_str<E: de::Error>(self, v: &str) -> Result<Key<'de>, E> {
        Ok(Key(Cow::Owned(v.to_owned())))
    }
});

deserialize_by_visitor!(Value, deserialize_any, "a JSON value", {
    fn visit_u64<E: de::Error>(self, v: u64) -> Result<Value<'de>, E> {
        Ok(Value::Uint(v))
    }
    fn visit_i64<E: de::Error>(self, _: i64) -> Result<Value<'de>, E> {
        Ok(Value::Other("a negative number"))
    }
    fn visit_f64<E: de::Error>(self, _: f64) -> Result<Value<'de>, E> {
        Ok(Value::Other("not a whole number"))
    }
    fn visit_bool<E: de::Error>(self, _: bool) -> Result<Value<'de>, E> {
        Ok(Value::Other("a bool"))
    }
    fn visit_unit<E: de::Error>(self) -> Result<Value<'de>, E> {
        Ok(Value::Other("null"))
    }
    fn visit_borrowed_str<E: de::Error>(self, v: &'de str) -> Result<Value<'de>, E> {
        Ok(Value::Text(Cow::Borrowed(v)))
    }
    fn visit_str<E: de::Error>(self, v: &str) -> Result<Value<'de>, E> {
        Ok(Value::Text(Cow::Owned(v.to_owned())))
    }
    fn visit_seq<A: de::SeqAccess<'de>>(self, mut seq: A) -> Result<Value<'de>, A::Error> {
        while seq.next_element::<IgnoredAny>()?.is_some() {}
        Ok(Value::Other("an array"))
    }
    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Value<'de>, A::Error> {
        while map.next_entry::<IgnoredAny, IgnoredAny>()?.is_some() {}
        Ok(Value::Other("an object"))
    }
});

deserialize_by_visitor!(Fields, deserialize_map, "a JSON object", {
    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Fields<'de>, A::Error> {
        let mut fields = Vec::with_capacity(64);
        while let Some((Key(name), value)) = map.next_entry::<Key<'de>, Value<'de>>()? {
            fields.push((name, value));
        }
        Ok(Fields(fields))
    }
});

#[cfg(test)]
mod tests {
    use super::*;

    const HUB: &str = perf_trace_core_example();

    const fn perf_trace_core_example() -> &'static str {
        r#"{"time":"2026-01-01T00:00:00.000000000Z","level":"INFO","msg":"perf_trace","component":"scion-hub","subsystem":"hub.perf-trace","endpoint":"agents.project.legacy","elapsed_us":557495,"phase_enrich_us":43829,"phase_enrich_n":1,"store_GetUser_n":84,"store_GetUser_us":472801,"authz_store_calls":88,"db_open":1,"method":"GET","request_id":"r-1"}"#
    }

    fn perf(text: &str) -> PerfLine<'_> {
        match parse(text) {
            Parsed::Perf(line) => line,
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn reads_a_hub_line_generically() {
        let line = perf(HUB);
        assert_eq!(line.endpoint, "agents.project.legacy");
        assert_eq!(line.elapsed_us, 557495);
        assert_eq!(line.request_id.as_deref(), Some("r-1"));
        let names: Vec<&str> = line.figures.iter().map(|(n, _)| n.as_ref()).collect();
        assert_eq!(
            names,
            [
                "phase_enrich_us",
                "phase_enrich_n",
                "store_GetUser_n",
                "store_GetUser_us",
                "authz_store_calls",
                "db_open"
            ]
        );
    }

    #[test]
    fn gcp_form_and_plain_profile() {
        let gcp = HUB.replace(r#""msg":"perf_trace""#, r#""message":"perf_trace""#);
        assert_eq!(perf(&gcp).elapsed_us, 557495);
        let plain = r#"{"msg":"perf_trace","endpoint":"orders.get","elapsed_us":9,"status":200,"store_calls":3,"store_get_stocks_n":3,"price_cache_hit":1}"#;
        let line = perf(plain);
        assert_eq!(line.status, Some(200));
        assert_eq!(line.figures.len(), 3);
    }

    #[test]
    fn classifies_names() {
        assert_eq!(
            classify("phase_list_db_read_n"),
            FigureKind::Phase("list_db_read", Unit::Count)
        );
        assert_eq!(
            classify("store_GetUser_us"),
            FigureKind::Store("GetUser", Unit::Micros)
        );
        assert_eq!(
            classify("store_get_stocks_n"),
            FigureKind::Store("get_stocks", Unit::Count)
        );
        assert_eq!(classify("store_calls"), FigureKind::StoreTotal(Unit::Count));
        assert_eq!(classify("store_us"), FigureKind::StoreTotal(Unit::Micros));
        assert_eq!(classify("authz_store_us"), FigureKind::Other(Unit::Micros));
        assert_eq!(classify("price_cache_hit"), FigureKind::Other(Unit::Count));
        assert_eq!(classify("phase__n"), FigureKind::Other(Unit::Count));
    }

    #[test]
    fn other_lines_are_not_perf() {
        for text in [
            "",
            "plain text",
            "Request performance tracing is on (server.hub.perf_trace)",
            r#"{"msg":"server started","note":"perf_trace"}"#,
            r#"{"msg":"listening","detail":"\"perf_trace\""}"#,
            r#"["perf_trace"]"#,
        ] {
            assert_eq!(parse(text), Parsed::NotPerf, "{text}");
        }
    }

    #[test]
    fn broken_perf_lines_are_malformed_with_a_reason() {
        // A field of the example given a value of the wrong kind: the field,
        // its value in `HUB`, the wrong value, and what the reason says of it.
        let wrong_kinds = [
            ("elapsed_us", "557495", "-3", "is a negative number"),
            ("store_GetUser_n", "84", "8.5", "is not a whole number"),
            ("phase_enrich_us", "43829", r#""1""#, "is text"),
            ("method", r#""GET""#, "7", "is a number"),
            ("method", r#""GET""#, r#"["GET"]"#, "is an array"),
            ("authz_store_calls", "88", "null", "is null"),
            ("db_open", "1", "true", "is a bool"),
            ("level", r#""INFO""#, "{}", "is an object"),
        ];
        let mut cases = vec![
            (
                HUB[..HUB.len() / 2].to_owned(),
                "not a whole JSON object".to_owned(),
            ),
            (
                HUB.replace("\"endpoint\":\"agents.project.legacy\",", ""),
                "no `endpoint`".to_owned(),
            ),
            (
                HUB.replace("\"elapsed_us\":557495,", ""),
                "no `elapsed_us`".to_owned(),
            ),
        ];
        cases.extend(wrong_kinds.map(|(field, value, wrong, what)| {
            let text = HUB.replace(
                &format!("\"{field}\":{value}"),
                &format!("\"{field}\":{wrong}"),
            );
            (text, format!("`{field}` {what}"))
        }));
        for (text, reason) in cases {
            match parse(&text) {
                Parsed::Malformed(why) => assert!(why.contains(&reason), "{why} / {reason}"),
                other => panic!("{text}: {other:?}"),
            }
        }
    }

    #[test]
    fn a_known_profile_passes_over_fields_it_does_not_name() {
        let is_figure = |name: &str| name.starts_with("phase_") || name == "db_open";
        let odd = HUB.replace(
            "\"method\":\"GET\"",
            "\"method\":\"GET\",\"future\":[1],\"note\":null,\"sse_stage\":\"close\"",
        );
        assert!(matches!(parse(&odd), Parsed::Malformed(_)));
        let Parsed::Perf(line) = parse_profile(&odd, is_figure) else {
            panic!("{odd}")
        };
        let names: Vec<&str> = line.figures.iter().map(|(n, _)| n.as_ref()).collect();
        assert_eq!(names, ["phase_enrich_us", "phase_enrich_n", "db_open"]);
        assert_eq!(line.text("sse_stage"), Some("close"));
        assert!(!line.gcp_form);
        // A figure the profile names must still be an unsigned integer.
        let text_figure = HUB.replace("\"db_open\":1", "\"db_open\":\"1\"");
        assert!(matches!(
            parse_profile(&text_figure, is_figure),
            Parsed::Malformed(_)
        ));
        let gcp = HUB.replace(r#""msg":"perf_trace""#, r#""message":"perf_trace""#);
        assert!(perf(&gcp).gcp_form);
    }

    #[test]
    fn escaped_keys_and_values_are_read() {
        let text = r#"{"msg":"perf_trace","endpoint":"a\"b","elapsed_us":1,"request_id":""}"#;
        let line = perf(text);
        assert_eq!(line.endpoint, "a\"b");
        assert_eq!(line.request_id, None);
    }
}
