//! The one YAML reader of the Hub: the settings file and the admin
//! server-config body are both read by `parse` into a [`Value`].
//!
//! A document is bounded by what it becomes, not by its text: every node
//! and every byte of its scalars, those replayed by aliases included, is
//! charged against `Limits::max_bytes` while it is built, so a few KiB of
//! aliases cannot expand into hundreds of MiB. Aliases can also be refused
//! outright ([`Limits::aliases`]). Non-finite numbers (`.nan`, `.inf`,
//! `1e999999`) are kept as such so the reader can name the key holding one.

use std::cell::Cell;
use std::fmt;

use serde::de::{self, DeserializeSeed, MapAccess, SeqAccess, Visitor};
use serde_saphyr::budget::BudgetBreach;
use serde_saphyr::{Budget, NonFiniteFloatPolicy, Options};

/// What a node costs besides its scalar bytes: a node of a large sequence
/// of small numbers must count too.
const NODE_BYTES: usize = 16;

/// A mapping's entries in document order; keys may be any value.
pub(crate) type Mapping = Vec<(Value, Value)>;

/// A parsed YAML node.
#[derive(Debug, Clone, PartialEq)]
pub enum Value {
    /// `null`, `~` or nothing.
    Null,
    /// `true` or `false`.
    Bool(bool),
    /// A number.
    Number(Number),
    /// A string.
    String(String),
    /// A sequence.
    Sequence(Vec<Value>),
    /// A mapping.
    Mapping(Mapping),
}

/// A YAML number: whole numbers as read (however large), others as `f64`,
/// non-finite ones included.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Number {
    /// A whole number.
    Int(i128),
    /// Any other number.
    Float(f64),
}

impl Number {
    /// The number as a `u64`, when it is a whole number that fits.
    pub fn as_u64(&self) -> Option<u64> {
        match *self {
            Number::Int(i) => u64::try_from(i).ok(),
            Number::Float(_) => None,
        }
    }

    /// The number as JSON, when JSON can hold it: finite, and whole
    /// numbers within `i64` or `u64`.
    pub(crate) fn to_json(self) -> Option<serde_json::Number> {
        match self {
            Number::Int(i) => i64::try_from(i)
                .map(serde_json::Number::from)
                .or_else(|_| u64::try_from(i).map(serde_json::Number::from))
                .ok(),
            Number::Float(f) => serde_json::Number::from_f64(f),
        }
    }
}

impl fmt::Display for Number {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match *self {
            Number::Int(i) => write!(f, "{i}"),
            Number::Float(x) if x.is_nan() => f.write_str(".nan"),
            Number::Float(x) if x.is_infinite() => {
                f.write_str(if x > 0.0 { ".inf" } else { "-.inf" })
            }
            // `{:?}` keeps the `.0` of a whole float, as YAML wrote it.
            Number::Float(x) => write!(f, "{x:?}"),
        }
    }
}

impl Value {
    /// The entries, when this is a mapping.
    pub(crate) fn as_mapping(&self) -> Option<&Mapping> {
        match self {
            Value::Mapping(map) => Some(map),
            _ => None,
        }
    }

    /// The text, when this is a string.
    pub fn as_str(&self) -> Option<&str> {
        match self {
            Value::String(s) => Some(s),
            _ => None,
        }
    }

    /// A scalar setting's text: a string as it is, a number as written;
    /// `None` for anything else.
    pub(crate) fn scalar_text(&self) -> Option<String> {
        match self {
            Value::String(s) => Some(s.clone()),
            Value::Number(n) => Some(n.to_string()),
            _ => None,
        }
    }
}

/// How much of a document is accepted.
#[derive(Debug, Clone, Copy)]
pub struct Limits {
    /// Whether anchors and aliases may be used at all.
    pub aliases: bool,
    /// The most the parsed document may hold, aliases expanded: scalar
    /// bytes plus a fixed cost per node.
    pub(crate) max_bytes: usize,
}

/// Why a document was not read.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum YamlError {
    /// It uses aliases where they are refused.
    Aliases,
    /// It holds more than `Limits::max_bytes` once parsed.
    TooLarge,
    /// It is not valid YAML; the parser's message, without the document's
    /// text.
    Syntax(String),
}

/// Parses one YAML document (JSON included) within `limits`.
pub(crate) fn parse(text: &str, limits: Limits) -> Result<Value, YamlError> {
    let mut budget = Budget::default();
    if !limits.aliases {
        budget.max_aliases = 0;
        budget.max_anchors = 0;
    }
    let mut options = Options::default();
    options.budget = Some(budget);
    options.non_finite_float_policy = NonFiniteFloatPolicy::PassThrough;
    // The message goes to logs and answers: never a snippet of the text.
    options.with_snippet = false;
    let left = Cell::new(limits.max_bytes);
    let over = Cell::new(false);
    let seed = Bounded {
        left: &left,
        over: &over,
    };
    let result = serde_saphyr::with_deserializer_from_str_with_options(text, options, |de| {
        seed.deserialize(de)
    });
    match result {
        Ok(value) => Ok(value),
        Err(_) if over.get() => Err(YamlError::TooLarge),
        Err(e) if refused_aliases(&e) => Err(YamlError::Aliases),
        Err(e) => Err(YamlError::Syntax(e.to_string())),
    }
}

/// Whether `e` is the budget's refusal of an anchor or alias.
fn refused_aliases(mut e: &serde_saphyr::Error) -> bool {
    loop {
        match e {
            serde_saphyr::Error::AliasError { error, .. }
            | serde_saphyr::Error::WithSnippet { error, .. } => e = error,
            serde_saphyr::Error::Budget { breach, .. } => {
                return matches!(
                    breach,
                    BudgetBreach::Aliases { .. } | BudgetBreach::Anchors { .. }
                )
            }
            _ => return false,
        }
    }
}

/// Builds a [`Value`], charging each node against what is left.
#[derive(Clone, Copy)]
struct Bounded<'a> {
    left: &'a Cell<usize>,
    over: &'a Cell<bool>,
}

impl Bounded<'_> {
    fn charge<E: de::Error>(&self, bytes: usize) -> Result<(), E> {
        match self
            .left
            .get()
            .checked_sub(bytes.saturating_add(NODE_BYTES))
        {
            Some(left) => {
                self.left.set(left);
                Ok(())
            }
            None => {
                self.over.set(true);
                Err(E::custom("document too large"))
            }
        }
    }

    fn scalar<E: de::Error>(&self, bytes: usize, value: Value) -> Result<Value, E> {
        self.charge(bytes)?;
        Ok(value)
    }
}

impl<'de> DeserializeSeed<'de> for Bounded<'_> {
    type Value = Value;

    fn deserialize<D: de::Deserializer<'de>>(self, de: D) -> Result<Value, D::Error> {
        de.deserialize_any(self)
    }
}

impl<'de> Visitor<'de> for Bounded<'_> {
    type Value = Value;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("any YAML value")
    }

    fn visit_unit<E: de::Error>(self) -> Result<Value, E> {
        self.scalar(0, Value::Null)
    }

    fn visit_none<E: de::Error>(self) -> Result<Value, E> {
        self.scalar(0, Value::Null)
    }

    fn visit_some<D: de::Deserializer<'de>>(self, de: D) -> Result<Value, D::Error> {
        de.deserialize_any(self)
    }

    fn visit_newtype_struct<D: de::Deserializer<'de>>(self, de: D) -> Result<Value, D::Error> {
        de.deserialize_any(self)
    }

    fn visit_bool<E: de::Error>(self, v: bool) -> Result<Value, E> {
        self.scalar(0, Value::Bool(v))
    }

    fn visit_i64<E: de::Error>(self, v: i64) -> Result<Value, E> {
        self.visit_i128(i128::from(v))
    }

    fn visit_u64<E: de::Error>(self, v: u64) -> Result<Value, E> {
        self.visit_i128(i128::from(v))
    }

    fn visit_i128<E: de::Error>(self, v: i128) -> Result<Value, E> {
        self.scalar(0, Value::Number(Number::Int(v)))
    }

    fn visit_u128<E: de::Error>(self, v: u128) -> Result<Value, E> {
        // Past i128 no setting can hold it anyway: kept out of range.
        self.visit_i128(i128::try_from(v).unwrap_or(i128::MAX))
    }

    fn visit_f64<E: de::Error>(self, v: f64) -> Result<Value, E> {
        self.scalar(0, Value::Number(Number::Float(v)))
    }

    fn visit_str<E: de::Error>(self, v: &str) -> Result<Value, E> {
        self.charge(v.len())?;
        Ok(Value::String(v.to_owned()))
    }

    fn visit_string<E: de::Error>(self, v: String) -> Result<Value, E> {
        self.scalar(v.len(), Value::String(v))
    }

    fn visit_bytes<E: de::Error>(self, v: &[u8]) -> Result<Value, E> {
        self.charge(v.len())?;
        String::from_utf8(v.to_vec())
            .map(Value::String)
            .map_err(|_| E::custom("binary values are not settings"))
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Value, A::Error> {
        self.charge(0)?;
        let mut items = Vec::new();
        while let Some(item) = seq.next_element_seed(self)? {
            items.push(item);
        }
        Ok(Value::Sequence(items))
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Value, A::Error> {
        self.charge(0)?;
        let mut entries = Vec::new();
        while let Some(key) = map.next_key_seed(self)? {
            let value = map.next_value_seed(self)?;
            entries.push((key, value));
        }
        Ok(Value::Mapping(entries))
    }
}

/// A document of one `width`-byte scalar aliased `times` times.
#[cfg(test)]
pub(crate) fn alias_bomb(width: usize, times: usize) -> String {
    let mut text = format!("a: &big \"{}\"\nb: [*big", "x".repeat(width));
    text.push_str(&", *big".repeat(times.saturating_sub(1)));
    text.push_str("]\n");
    text
}

#[cfg(test)]
mod tests {
    use super::*;

    const OPEN: Limits = Limits {
        aliases: true,
        max_bytes: 1 << 20,
    };

    #[test]
    fn json_and_yaml_read_alike() {
        let json = parse(r#"{"a": {"b": [1, 2.5, "x", null, true]}}"#, OPEN).unwrap();
        let yaml = parse(
            "a:\n  b:\n    - 1\n    - 2.5\n    - x\n    - ~\n    - true\n",
            OPEN,
        );
        assert_eq!(json, yaml.unwrap());
        let b = &json.as_mapping().unwrap()[0].1.as_mapping().unwrap()[0].1;
        assert_eq!(
            b,
            &Value::Sequence(vec![
                Value::Number(Number::Int(1)),
                Value::Number(Number::Float(2.5)),
                Value::String("x".into()),
                Value::Null,
                Value::Bool(true),
            ])
        );
    }

    #[test]
    fn aliases_are_bounded_by_what_they_expand_to() {
        let small = alias_bomb(10, 10);
        assert!(parse(&small, OPEN).is_ok());
        // 48 MB once expanded from 24 KiB of text.
        let bomb = alias_bomb(8_000, 6_000);
        assert_eq!(parse(&bomb, OPEN), Err(YamlError::TooLarge));
        let refused = Limits {
            aliases: false,
            ..OPEN
        };
        assert_eq!(parse(&small, refused), Err(YamlError::Aliases));
        assert_eq!(parse("a: &x 1\n", refused), Err(YamlError::Aliases));
    }

    #[test]
    fn large_documents_are_bounded_without_aliases_too() {
        let many = format!("[{}]", vec!["1"; 10_000].join(","));
        let tight = Limits {
            aliases: false,
            max_bytes: 64 * 1024,
        };
        assert_eq!(parse(&many, tight), Err(YamlError::TooLarge));
        assert!(parse(&many, OPEN).is_ok());
    }

    #[test]
    fn non_finite_and_huge_numbers_are_kept_to_be_refused_by_key() {
        for (text, shown) in [
            ("a: .nan", ".nan"),
            ("a: -.inf", "-.inf"),
            ("a: 1e999999", ".inf"),
            ("a: 30.0", "30.0"),
            // Past 64 bits a whole number is read as a float.
            ("a: 99999999999999999999999", "1e23"),
        ] {
            let doc = parse(text, OPEN).unwrap();
            let Value::Number(n) = &doc.as_mapping().unwrap()[0].1 else {
                panic!("{text}: not a number");
            };
            assert_eq!(n.to_string(), shown, "{text}");
        }
        assert_eq!(Number::Float(f64::NAN).to_json(), None);
        assert_eq!(Number::Int(i128::from(u64::MAX) + 1).to_json(), None);
        assert_eq!(Number::Int(-3).to_json(), Some((-3).into()));
    }

    #[test]
    fn syntax_errors_carry_no_snippet_of_the_text() {
        let Err(YamlError::Syntax(message)) = parse("secret: [unclosed", OPEN) else {
            panic!("not a syntax error");
        };
        assert!(!message.contains("secret"), "{message}");
    }
}
