//! Splitting identifiers into words and rendering them in the conventions
//! `#[key_set(rename_all = "...")]` accepts.

use syn::LitStr;

use crate::errors::Errors;

/// A naming convention for rendered key names.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum RenameRule {
    /// `list_db_read`
    Snake,
    /// `ListDbRead`
    Pascal,
    /// `listDbRead`
    Camel,
    /// `list-db-read`
    Kebab,
    /// `LIST_DB_READ`
    ScreamingSnake,
}

impl RenameRule {
    const VALUES: [(&'static str, RenameRule); 5] = [
        ("snake_case", RenameRule::Snake),
        ("PascalCase", RenameRule::Pascal),
        ("camelCase", RenameRule::Camel),
        ("kebab-case", RenameRule::Kebab),
        ("SCREAMING_SNAKE_CASE", RenameRule::ScreamingSnake),
    ];

    /// The rule spelled `name` in `rename_all = "name"`.
    pub(crate) fn from_name(name: &str) -> Option<Self> {
        Self::VALUES
            .iter()
            .find(|(n, _)| *n == name)
            .map(|&(_, rule)| rule)
    }

    /// The rule `lit` spells in `rename_all = "..."`; `None`, with an error
    /// that lists the accepted spellings, when it spells none.
    pub(crate) fn from_lit(lit: &LitStr, errors: &mut Errors) -> Option<Self> {
        let rule = Self::from_name(&lit.value());
        if rule.is_none() {
            errors.spanned(
                lit,
                format!(
                    "unknown rename_all value {:?}; expected one of {}",
                    lit.value(),
                    Self::expected()
                ),
            );
        }
        rule
    }

    /// The accepted spellings, for error messages.
    fn expected() -> String {
        let names: Vec<String> = Self::VALUES
            .iter()
            .map(|(n, _)| format!("\"{n}\""))
            .collect();
        names.join(", ")
    }

    /// Renders identifier `ident` (a variant or method name) in this convention.
    ///
    /// Words keep the case of their letters in PascalCase, so an identifier
    /// that is already PascalCase (acronyms included, `GetRoleDefinitionsByIDs`)
    /// renders unchanged.
    pub(crate) fn apply(self, ident: &str) -> String {
        let words = words(ident);
        let lower = || words.iter().map(|w| w.to_lowercase());
        match self {
            RenameRule::Snake => lower().collect::<Vec<_>>().join("_"),
            RenameRule::Kebab => lower().collect::<Vec<_>>().join("-"),
            RenameRule::ScreamingSnake => words
                .iter()
                .map(|w| w.to_uppercase())
                .collect::<Vec<_>>()
                .join("_"),
            RenameRule::Pascal => words.iter().map(|w| capitalize(w)).collect(),
            RenameRule::Camel => words
                .iter()
                .enumerate()
                .map(|(i, w)| {
                    if i == 0 {
                        w.to_lowercase()
                    } else {
                        capitalize(w)
                    }
                })
                .collect(),
        }
    }
}

/// Uppercases the first letter of `word`, keeping the others.
fn capitalize(word: &str) -> String {
    let mut chars = word.chars();
    match chars.next() {
        Some(first) => first.to_uppercase().chain(chars).collect(),
        None => String::new(),
    }
}

/// Splits an identifier into words: at underscores, before an uppercase
/// letter that follows a lowercase letter or a digit, and before the last
/// letter of an uppercase run that is followed by lowercase letters
/// (`HTTPServer` is `HTTP`, `Server`). A plural acronym stays one word
/// (`ByIDs` is `By`, `IDs`).
pub(crate) fn words(ident: &str) -> Vec<String> {
    let ident = ident.strip_prefix("r#").unwrap_or(ident);
    let mut words = Vec::new();
    for chunk in ident.split('_').filter(|c| !c.is_empty()) {
        let chars: Vec<char> = chunk.chars().collect();
        let mut start = 0;
        for i in 1..chars.len() {
            let (prev, c) = (chars[i - 1], chars[i]);
            let boundary = c.is_uppercase()
                && if prev.is_lowercase() || prev.is_numeric() {
                    true
                } else if prev.is_uppercase() {
                    match chars.get(i + 1) {
                        Some(&'s') => chars.get(i + 2).is_some_and(|a| a.is_lowercase()),
                        Some(next) => next.is_lowercase(),
                        None => false,
                    }
                } else {
                    false
                };
            if boundary {
                words.push(chars[start..i].iter().collect());
                start = i;
            }
        }
        words.push(chars[start..].iter().collect());
    }
    words
}

#[cfg(test)]
mod tests {
    use super::RenameRule::*;
    use super::*;

    #[test]
    fn splits_words() {
        assert_eq!(
            words("ListRoleBindingsForPrincipals"),
            ["List", "Role", "Bindings", "For", "Principals"]
        );
        assert_eq!(
            words("GetRoleDefinitionsByIDs"),
            ["Get", "Role", "Definitions", "By", "IDs"]
        );
        assert_eq!(words("HTTPServer"), ["HTTP", "Server"]);
        assert_eq!(words("ListDBs"), ["List", "DBs"]);
        assert_eq!(words("IDsForUser"), ["IDs", "For", "User"]);
        assert_eq!(words("Sse2Write"), ["Sse2", "Write"]);
        assert_eq!(words("get_user"), ["get", "user"]);
        assert_eq!(words("r#type"), ["type"]);
        assert_eq!(words("A"), ["A"]);
    }

    #[test]
    fn renders() {
        assert_eq!(
            Snake.apply("ListRoleBindingsForPrincipals"),
            "list_role_bindings_for_principals"
        );
        assert_eq!(Snake.apply("ListScopeAuthz"), "list_scope_authz");
        assert_eq!(
            Snake.apply("GetRoleDefinitionsByIDs"),
            "get_role_definitions_by_ids"
        );
        assert_eq!(
            Pascal.apply("GetRoleDefinitionsByIDs"),
            "GetRoleDefinitionsByIDs"
        );
        assert_eq!(Pascal.apply("get_user_access_token"), "GetUserAccessToken");
        assert_eq!(Camel.apply("GetUser"), "getUser");
        assert_eq!(Kebab.apply("SseExpand"), "sse-expand");
        assert_eq!(ScreamingSnake.apply("SseExpand"), "SSE_EXPAND");
        assert_eq!(RenameRule::from_name("kebab-case"), Some(Kebab));
        assert_eq!(RenameRule::from_name("Kebab"), None);
    }
}
