//! A statement's kind, from its first keyword.

use crate::SqlStatement;

/// Bytes of a statement read to find its kind: a statement whose keyword
/// comes later (past megabytes of comments) counts as `other`.
const SCAN: usize = 4096;

/// The kind of statement `sql` is, from its first keyword past leading
/// whitespace, `--` and `/* */` comments and opening parentheses, read
/// case-insensitively within its first 4 KiB. A `WITH` takes the kind of
/// the statement after its common table expressions. Anything else,
/// a statement with no leading keyword included, is
/// [`Other`](SqlStatement::Other).
///
/// ```
/// use perf_trace_sql::{kind_of, SqlStatement};
///
/// assert_eq!(kind_of("select 1"), SqlStatement::Select);
/// assert_eq!(kind_of("  /* by id */ (SELECT 1) UNION (SELECT 2)"), SqlStatement::Select);
/// assert_eq!(kind_of("-- cleanup\nDELETE FROM stock"), SqlStatement::Delete);
/// assert_eq!(kind_of("WITH gone AS (SELECT sku FROM old) DELETE FROM stock"), SqlStatement::Delete);
/// assert_eq!(kind_of("REPLACE INTO stock VALUES (1)"), SqlStatement::Insert);
/// assert_eq!(kind_of("PRAGMA foreign_keys = ON"), SqlStatement::Other);
/// assert_eq!(kind_of("42"), SqlStatement::Other);
/// ```
pub fn kind_of(sql: &str) -> SqlStatement {
    let bytes = &sql.as_bytes()[..sql.len().min(SCAN)];
    let mut at = 0;
    let Some(word) = next_word(bytes, &mut at) else {
        return SqlStatement::Other;
    };
    match keyword(word) {
        Some(kind) => kind,
        None if word.eq_ignore_ascii_case(b"with") => after_ctes(bytes, at),
        None => SqlStatement::Other,
    }
}

/// The kind of one keyword; `None` for any other word.
fn keyword(word: &[u8]) -> Option<SqlStatement> {
    const KINDS: [(&[u8], SqlStatement); 6] = [
        (b"select", SqlStatement::Select),
        (b"insert", SqlStatement::Insert),
        (b"replace", SqlStatement::Insert),
        (b"update", SqlStatement::Update),
        (b"delete", SqlStatement::Delete),
        (b"values", SqlStatement::Select),
    ];
    KINDS
        .iter()
        .find(|(k, _)| word.eq_ignore_ascii_case(k))
        .map(|&(_, kind)| kind)
}

/// The first word from `at` past whitespace, comments and `(`; `None` when
/// something else comes first.
fn next_word<'a>(bytes: &'a [u8], at: &mut usize) -> Option<&'a [u8]> {
    loop {
        match bytes.get(*at..)? {
            [b' ' | b'\t' | b'\r' | b'\n' | b'(', ..] => *at += 1,
            [b'-', b'-', ..] => {
                *at += bytes[*at..].iter().position(|&b| b == b'\n')? + 1;
            }
            [b'/', b'*', ..] => {
                *at += bytes[*at + 2..].windows(2).position(|w| w == b"*/")? + 4;
            }
            [b, ..] if b.is_ascii_alphabetic() => {
                let start = *at;
                while bytes.get(*at).is_some_and(u8::is_ascii_alphabetic) {
                    *at += 1;
                }
                return Some(&bytes[start..*at]);
            }
            _ => return None,
        }
    }
}

/// The kind of the statement after a `WITH`'s common table expressions:
/// the first keyword outside parentheses and quotes.
fn after_ctes(bytes: &[u8], mut at: usize) -> SqlStatement {
    let mut depth = 0u32;
    while at < bytes.len() {
        match bytes[at] {
            b'(' => depth += 1,
            b')' => depth = depth.saturating_sub(1),
            quote @ (b'\'' | b'"' | b'`') => {
                match bytes[at + 1..].iter().position(|&b| b == quote) {
                    Some(end) => at += end + 1,
                    None => return SqlStatement::Other,
                }
            }
            b if depth == 0 && b.is_ascii_alphabetic() => {
                let start = at;
                while bytes
                    .get(at)
                    .is_some_and(|b| b.is_ascii_alphanumeric() || *b == b'_')
                {
                    at += 1;
                }
                if let Some(kind) = keyword(&bytes[start..at]) {
                    return kind;
                }
                continue;
            }
            _ => {}
        }
        at += 1;
    }
    SqlStatement::Other
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_kind_and_its_spellings() {
        let cases = [
            ("SELECT * FROM stock", SqlStatement::Select),
            ("\n\t sElEcT 1", SqlStatement::Select),
            ("((select 1))", SqlStatement::Select),
            ("insert into stock values (1)", SqlStatement::Insert),
            ("UPDATE stock SET qty = 1", SqlStatement::Update),
            ("delete from stock", SqlStatement::Delete),
            ("BEGIN", SqlStatement::Other),
            ("CREATE TABLE t (x)", SqlStatement::Other),
            ("", SqlStatement::Other),
            ("   ", SqlStatement::Other),
            ("?", SqlStatement::Other),
            ("-- only a comment", SqlStatement::Other),
            ("/* unterminated", SqlStatement::Other),
            ("/**/select 1", SqlStatement::Select),
            ("selects", SqlStatement::Other),
            (
                "WITH RECURSIVE n(x) AS (SELECT 1 UNION SELECT x + 1 FROM n) SELECT x FROM n",
                SqlStatement::Select,
            ),
            (
                "with a as (select ')' from t), b as (select 1) update stock set qty = 0",
                SqlStatement::Update,
            ),
            (
                "WITH a AS (SELECT 1) INSERT INTO t SELECT * FROM a",
                SqlStatement::Insert,
            ),
            ("WITH 'unterminated", SqlStatement::Other),
        ];
        for (sql, kind) in cases {
            assert_eq!(kind_of(sql), kind, "{sql:?}");
        }
    }

    #[test]
    fn a_keyword_past_the_scanned_prefix_is_other() {
        let late = format!("{}SELECT 1", " ".repeat(SCAN));
        assert_eq!(kind_of(&late), SqlStatement::Other);
        let long = format!("SELECT '{}'", "x".repeat(8 * 1024 * 1024));
        assert_eq!(kind_of(&long), SqlStatement::Select);
    }

    #[test]
    fn a_multibyte_text_is_read_safely() {
        assert_eq!(kind_of("é SELECT"), SqlStatement::Other);
        assert_eq!(kind_of(&"é".repeat(SCAN)), SqlStatement::Other);
    }
}
