//! Paging of agent lists: sort keys, page sizes and opaque keyset cursors.
//!
//! A cursor is base64url JSON naming the sort it belongs to and the sort
//! value and id of the last agent of the previous page; the next page starts
//! strictly after that pair.

use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use base64::Engine;
use serde::{Deserialize, Serialize};

use crate::model::{is_uuid, Agent, Id, MAX_AGENT_NAME_BYTES};

/// The largest page.
pub(crate) const MAX_LIMIT: u32 = 500;
/// The page size when only a cursor or a sort is given.
pub(crate) const DEFAULT_LIMIT: u32 = 50;
/// The longest cursor accepted: base64 of the JSON of the longest name with
/// every byte escaped (`\u0000`, 6 bytes), the sort, the id and the keys.
pub(crate) const MAX_CURSOR_LEN: usize = (MAX_AGENT_NAME_BYTES * 6 + 128).div_ceil(3) * 4;

/// What a page is sorted by.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum SortField {
    /// The agent's name.
    Name,
    /// Creation time.
    CreatedAt,
    /// Last change.
    UpdatedAt,
}

impl SortField {
    /// The column sorted on.
    pub fn column(self) -> &'static str {
        match self {
            SortField::Name => "name",
            SortField::CreatedAt => "created_at",
            SortField::UpdatedAt => "updated_at",
        }
    }
}

/// A sort: a field and a direction (`name`, `-updatedAt`, ...).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Sort {
    /// The field.
    pub(crate) field: SortField,
    /// Largest first.
    pub descending: bool,
}

impl Default for Sort {
    fn default() -> Self {
        Sort {
            field: SortField::Name,
            descending: false,
        }
    }
}

impl Sort {
    /// Parses a `sort` parameter.
    pub(crate) fn parse(text: &str) -> Result<Sort, PagingError> {
        let (descending, name) = match text.strip_prefix('-') {
            Some(rest) => (true, rest),
            None => (false, text),
        };
        let field = match name {
            "name" => SortField::Name,
            "createdAt" => SortField::CreatedAt,
            "updatedAt" => SortField::UpdatedAt,
            _ => return Err(PagingError::UnknownSort),
        };
        Ok(Sort { field, descending })
    }

    /// The parameter form (`-updatedAt`).
    pub(crate) fn as_param(self) -> &'static str {
        match (self.field, self.descending) {
            (SortField::Name, false) => "name",
            (SortField::Name, true) => "-name",
            (SortField::CreatedAt, false) => "createdAt",
            (SortField::CreatedAt, true) => "-createdAt",
            (SortField::UpdatedAt, false) => "updatedAt",
            (SortField::UpdatedAt, true) => "-updatedAt",
        }
    }
}

/// The sort value of the last agent of a page.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(untagged)]
pub(crate) enum SortValue {
    /// A name.
    Text(String),
    /// A time, Unix milliseconds.
    Int(i64),
}

/// Where the next page starts: strictly after this (value, id) pair.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CursorPosition {
    /// The sort value of the last agent returned.
    pub(crate) value: SortValue,
    /// Its id (the tie-breaker).
    pub id: Id,
}

impl CursorPosition {
    /// The position just after `agent` in `sort`.
    pub fn after(agent: &Agent, sort: Sort) -> Self {
        let value = match sort.field {
            SortField::Name => SortValue::Text(agent.name.clone()),
            SortField::CreatedAt => SortValue::Int(agent.created_at),
            SortField::UpdatedAt => SortValue::Int(agent.updated_at),
        };
        CursorPosition {
            value,
            id: agent.id.clone(),
        }
    }
}

#[derive(Serialize, Deserialize)]
struct CursorWire {
    s: String,
    v: SortValue,
    i: String,
}

/// Encodes a cursor for `sort` at `position`.
pub(crate) fn encode_cursor(sort: Sort, position: &CursorPosition) -> String {
    let wire = CursorWire {
        s: sort.as_param().to_owned(),
        v: position.value.clone(),
        i: position.id.to_string(),
    };
    URL_SAFE_NO_PAD.encode(serde_json::to_vec(&wire).expect("cursor serializes"))
}

/// Decodes a cursor and checks it belongs to `sort`.
pub(crate) fn decode_cursor(text: &str, sort: Sort) -> Result<CursorPosition, PagingError> {
    if text.is_empty() || text.len() > MAX_CURSOR_LEN {
        return Err(PagingError::BadCursor);
    }
    let bytes = URL_SAFE_NO_PAD
        .decode(text)
        .map_err(|_| PagingError::BadCursor)?;
    let wire: CursorWire = serde_json::from_slice(&bytes).map_err(|_| PagingError::BadCursor)?;
    let cursor_sort = Sort::parse(&wire.s).map_err(|_| PagingError::BadCursor)?;
    if cursor_sort != sort {
        return Err(PagingError::CursorSortMismatch);
    }
    let value_fits = matches!(
        (&wire.v, sort.field),
        (SortValue::Text(_), SortField::Name)
            | (
                SortValue::Int(_),
                SortField::CreatedAt | SortField::UpdatedAt
            )
    );
    if !value_fits || !is_uuid(&wire.i) {
        return Err(PagingError::BadCursor);
    }
    Ok(CursorPosition {
        value: wire.v,
        id: Id::from(wire.i),
    })
}

/// Parses a `limit` parameter.
pub(crate) fn parse_limit(text: &str) -> Result<u32, PagingError> {
    match text.parse::<u32>() {
        Ok(n) if (1..=MAX_LIMIT).contains(&n) => Ok(n),
        _ => Err(PagingError::BadLimit),
    }
}

/// One page's request.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PageRequest {
    /// Most agents returned.
    pub limit: u32,
    /// The order.
    pub sort: Sort,
    /// Start after this position; `None` for the first page.
    pub(crate) after: Option<CursorPosition>,
}

impl PageRequest {
    /// Builds a page request from the raw `limit`, `sort` and `cursor` parameters.
    pub(crate) fn from_params(
        limit: Option<&str>,
        sort: Option<&str>,
        cursor: Option<&str>,
    ) -> Result<PageRequest, PagingError> {
        let limit = limit.map(parse_limit).transpose()?.unwrap_or(DEFAULT_LIMIT);
        let sort = sort.map(Sort::parse).transpose()?.unwrap_or_default();
        let after = cursor.map(|c| decode_cursor(c, sort)).transpose()?;
        Ok(PageRequest { limit, sort, after })
    }
}

/// A paging parameter that is not acceptable.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub(crate) enum PagingError {
    /// `limit` is not an integer in range.
    #[error("limit must be an integer from 1 to 500")]
    BadLimit,
    /// `sort` is not a known key.
    #[error("sort must be one of name, createdAt, updatedAt (prefix - for descending)")]
    UnknownSort,
    /// The cursor cannot be decoded.
    #[error("invalid cursor")]
    BadCursor,
    /// The cursor was made for another sort.
    #[error("cursor does not match sort")]
    CursorSortMismatch,
}

#[cfg(test)]
mod tests {
    use super::*;

    const ID: &str = "0b7f1f2e-1c1d-4a7e-9a51-0f5b6c0c1d2e";

    #[test]
    fn cursors_round_trip_and_belong_to_their_sort() {
        let sort = Sort::parse("-updatedAt").unwrap();
        let pos = CursorPosition {
            value: SortValue::Int(42),
            id: Id::from(ID),
        };
        let text = encode_cursor(sort, &pos);
        assert_eq!(decode_cursor(&text, sort), Ok(pos));
        assert_eq!(
            decode_cursor(&text, Sort::default()),
            Err(PagingError::CursorSortMismatch)
        );
        assert_eq!(decode_cursor("!!", sort), Err(PagingError::BadCursor));
        assert_eq!(decode_cursor("", sort), Err(PagingError::BadCursor));
        let wrong_type = URL_SAFE_NO_PAD.encode(format!(r#"{{"s":"name","v":1,"i":"{ID}"}}"#));
        assert_eq!(
            decode_cursor(&wrong_type, Sort::default()),
            Err(PagingError::BadCursor)
        );
    }

    #[test]
    fn the_longest_name_fits_a_cursor_even_fully_escaped() {
        let sort = Sort::default();
        for name in [
            "\u{1}".repeat(MAX_AGENT_NAME_BYTES),
            "\"".repeat(MAX_AGENT_NAME_BYTES),
        ] {
            let pos = CursorPosition {
                value: SortValue::Text(name),
                id: Id::from(ID),
            };
            let text = encode_cursor(sort, &pos);
            assert!(text.len() <= MAX_CURSOR_LEN, "{}", text.len());
            assert_eq!(decode_cursor(&text, sort), Ok(pos));
        }
    }

    /// Every sort the listing takes, as a query parameter.
    const SORTS: [&str; 6] = [
        "name",
        "-name",
        "createdAt",
        "-createdAt",
        "updatedAt",
        "-updatedAt",
    ];

    mod fuzz {
        use super::*;
        use proptest::prelude::*;

        fn sort() -> impl Strategy<Value = Sort> {
            proptest::sample::select(&SORTS[..]).prop_map(|s| Sort::parse(s).unwrap())
        }

        fn uuid() -> impl Strategy<Value = String> {
            any::<[u8; 16]>().prop_map(crate::model::uuid_from_bytes)
        }

        /// A name of at most the longest length, in bytes.
        fn name() -> impl Strategy<Value = String> {
            proptest::collection::vec(any::<char>(), 0..MAX_AGENT_NAME_BYTES).prop_map(|chars| {
                let mut name = String::new();
                for c in chars {
                    if name.len() + c.len_utf8() > MAX_AGENT_NAME_BYTES {
                        break;
                    }
                    name.push(c);
                }
                name
            })
        }

        /// Cursor-shaped JSON with any field types, base64url encoded.
        fn cursor_like() -> impl Strategy<Value = String> {
            let value = prop_oneof![
                any::<i64>().prop_map(|v| v.to_string()),
                "\\PC{0,20}".prop_map(|s| serde_json::to_string(&s).unwrap()),
                Just("null".to_owned()),
                Just("[1]".to_owned()),
                Just("1e999".to_owned()),
            ];
            (
                proptest::sample::select(&["name", "-name", "createdAt", "x", ""][..]),
                value,
                prop_oneof![uuid(), "\\PC{0,40}"],
            )
                .prop_map(|(s, v, i)| {
                    URL_SAFE_NO_PAD.encode(format!(
                        r#"{{"s":"{s}","v":{v},"i":{}}}"#,
                        serde_json::to_string(&i).unwrap()
                    ))
                })
        }

        proptest! {
            #[test]
            fn fuzz_cursor_decode_never_panics(text in "\\PC{0,200}", sort in sort()) {
                let _ = decode_cursor(&text, sort);
            }

            #[test]
            fn fuzz_cursor_decode_of_base64_garbage_never_panics(
                bytes in proptest::collection::vec(any::<u8>(), 0..300),
                sort in sort(),
            ) {
                let _ = decode_cursor(&URL_SAFE_NO_PAD.encode(bytes), sort);
            }

            #[test]
            fn fuzz_cursor_decode_of_cursor_like_json_never_panics(text in cursor_like(), sort in sort()) {
                if let Ok(pos) = decode_cursor(&text, sort) {
                    prop_assert!(is_uuid(&pos.id));
                }
            }

            #[test]
            fn fuzz_cursor_round_trips(
                sort in sort(),
                name in name(),
                time in any::<i64>(),
                id in uuid(),
            ) {
                let value = match sort.field {
                    SortField::Name => SortValue::Text(name),
                    SortField::CreatedAt | SortField::UpdatedAt => SortValue::Int(time),
                };
                let pos = CursorPosition { value, id: Id::from(id) };
                let text = encode_cursor(sort, &pos);
                prop_assert!(text.len() <= MAX_CURSOR_LEN);
                prop_assert_eq!(decode_cursor(&text, sort), Ok(pos));
            }

            #[test]
            fn fuzz_page_params_never_panic(
                limit in proptest::option::of("\\PC{0,24}"),
                sort in proptest::option::of("-?\\PC{0,12}"),
                cursor in proptest::option::of("[A-Za-z0-9_-]{0,64}"),
            ) {
                let _ = PageRequest::from_params(limit.as_deref(), sort.as_deref(), cursor.as_deref());
            }

            #[test]
            fn fuzz_limits_accept_exactly_1_to_500(text in prop_oneof![
                "\\PC{0,12}",
                any::<i64>().prop_map(|n| n.to_string()),
                (0u32..600).prop_map(|n| n.to_string()),
            ]) {
                let expected = text.parse::<u32>().ok().filter(|n| (1..=MAX_LIMIT).contains(n));
                prop_assert_eq!(parse_limit(&text).ok(), expected);
            }

            #[test]
            fn fuzz_sorts_parse_only_known_keys(text in "-?\\PC{0,12}") {
                if let Ok(sort) = Sort::parse(&text) {
                    prop_assert_eq!(sort.as_param(), text.as_str());
                }
            }
        }
    }

    #[test]
    fn limits_and_sorts_are_checked() {
        for bad in ["0", "-1", "501", "abc", "", "99999999999"] {
            assert_eq!(parse_limit(bad), Err(PagingError::BadLimit), "{bad}");
        }
        assert_eq!(parse_limit("500"), Ok(500));
        assert_eq!(Sort::parse("size"), Err(PagingError::UnknownSort));
        for s in SORTS {
            assert_eq!(Sort::parse(s).unwrap().as_param(), s);
        }
    }
}
