//! Query strings and path ids: parsed by hand so every problem is a JSON 400
//! that names the parameter, never the value.

use super::ApiError;
use crate::listing::View;
use crate::model::{is_uuid, Id};

/// Most ids in an `ids=` list.
pub(crate) const MAX_IDS: usize = 100;

/// The decoded parameters of a query string.
#[derive(Debug, Default, Clone)]
pub(crate) struct Params(Vec<(String, String)>);

impl Params {
    /// Decodes a raw query string.
    pub fn parse(query: Option<&str>) -> Params {
        Params(
            query
                .map(|q| {
                    form_urlencoded::parse(q.as_bytes())
                        .map(|(k, v)| (k.into_owned(), v.into_owned()))
                        .collect()
                })
                .unwrap_or_default(),
        )
    }

    /// The one value of `name`; 400 when it is given more than once.
    pub(crate) fn single(&self, name: &str) -> Result<Option<&str>, ApiError> {
        let mut values = self
            .0
            .iter()
            .filter(|(k, _)| k == name)
            .map(|(_, v)| v.as_str());
        let first = values.next();
        if values.next().is_some() {
            return Err(ApiError::bad_request(format!(
                "{name} may be given only once"
            )));
        }
        Ok(first)
    }

    /// Every value of `name`.
    pub fn all<'a>(&'a self, name: &'a str) -> impl Iterator<Item = &'a str> + 'a {
        self.0
            .iter()
            .filter(move |(k, _)| k == name)
            .map(|(_, v)| v.as_str())
    }

    /// Refuses (400) a parameter that is not one of `known`. The message
    /// lists the known names and never the unknown one: a name in a query
    /// string is the caller's input, and an error must not reflect it.
    pub(crate) fn only(&self, known: &[&str]) -> Result<(), ApiError> {
        if self.0.iter().all(|(k, _)| known.contains(&k.as_str())) {
            return Ok(());
        }
        Err(ApiError::bad_request(format!(
            "unknown parameter; the parameters are {}",
            known.join(", ")
        )))
    }

    /// Whether any of `names` is present.
    pub(crate) fn has_any(&self, names: &[&str]) -> bool {
        self.0.iter().any(|(k, _)| names.contains(&k.as_str()))
    }
}

/// Checks an id from a path or parameter.
pub(crate) fn parse_id(text: &str, what: &str) -> Result<Id, ApiError> {
    if is_uuid(text) {
        Ok(Id::from(text))
    } else {
        Err(ApiError::bad_request(format!("invalid {what} id")))
    }
}

/// Parses `ids=a,b,...`: 1 to 100 agent ids, duplicates removed.
pub(crate) fn parse_id_list(text: &str) -> Result<Vec<Id>, ApiError> {
    let mut ids: Vec<Id> = Vec::new();
    for part in text.split(',') {
        let id = parse_id(part.trim(), "agent")?;
        if !ids.contains(&id) {
            ids.push(id);
        }
        if ids.len() > MAX_IDS {
            return Err(ApiError::bad_request("at most 100 ids"));
        }
    }
    Ok(ids)
}

/// Parses `view=`.
pub(crate) fn parse_view(text: Option<&str>) -> Result<View, ApiError> {
    match text {
        None | Some("full") => Ok(View::Full),
        Some("compact") => Ok(View::Compact),
        Some(_) => Err(ApiError::bad_request("view must be full or compact")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const A: &str = "0b7f1f2e-1c1d-4a7e-9a51-0f5b6c0c1d2e";

    #[test]
    fn repeated_parameters_are_refused() {
        let p = Params::parse(Some("limit=1&limit=2&sub=a&sub=b"));
        assert!(p.single("limit").is_err());
        assert_eq!(p.all("sub").count(), 2);
        assert_eq!(p.single("cursor").unwrap(), None);
    }

    #[test]
    fn unknown_parameters_are_refused_without_echoing_them() {
        let known = ["window", "limit"];
        assert!(Params::parse(Some("limit=1&window=5m"))
            .only(&known)
            .is_ok());
        assert!(Params::parse(None).only(&known).is_ok());
        let err = Params::parse(Some("limit=1&%3Cscript%3Ealert(1)=1"))
            .only(&known)
            .unwrap_err();
        assert_eq!(err.status(), 400);
        assert_eq!(
            err.body()["error"],
            "unknown parameter; the parameters are window, limit"
        );
    }

    #[test]
    fn id_lists_are_checked() {
        assert_eq!(parse_id_list(&format!("{A},{A}")).unwrap().len(), 1);
        assert!(parse_id_list("x").is_err());
        assert!(parse_id_list("").is_err());
        let err = parse_id("<script>", "agent").unwrap_err();
        assert!(!err.body().to_string().contains("script"));
    }

    mod fuzz {
        use super::*;
        use proptest::prelude::*;

        fn uuid() -> impl Strategy<Value = String> {
            any::<[u8; 16]>().prop_map(crate::model::uuid_from_bytes)
        }

        proptest! {
            #[test]
            fn fuzz_query_strings_never_panic(query in "\\PC{0,200}", name in "[a-z]{1,8}") {
                let params = Params::parse(Some(&query));
                let _ = params.single(&name);
                let _ = params.all(&name).count();
                let _ = params.has_any(&["limit", "cursor", "sort"]);
                if let Ok(Some(view)) = params.single("view") {
                    let _ = parse_view(Some(view));
                }
            }

            #[test]
            fn fuzz_id_lists_never_panic_and_errors_echo_nothing(text in "\\PC{0,300}") {
                match parse_id_list(&text) {
                    Ok(ids) => prop_assert!((1..=MAX_IDS).contains(&ids.len())),
                    Err(e) => {
                        prop_assert_eq!(e.status(), 400);
                        let message = e.body()["error"].as_str().unwrap().to_owned();
                        prop_assert!(message == "invalid agent id" || message == "at most 100 ids");
                    }
                }
            }

            #[test]
            fn fuzz_id_lists_keep_valid_ids_once_in_order(
                ids in proptest::collection::vec(uuid(), 1..MAX_IDS),
            ) {
                let mut text = ids.join(",");
                text.push(',');
                text.push_str(&ids[0]);
                let parsed = parse_id_list(&text).unwrap();
                let mut unique: Vec<&String> = Vec::new();
                for id in &ids {
                    if !unique.contains(&id) {
                        unique.push(id);
                    }
                }
                prop_assert_eq!(parsed.len(), unique.len());
                for (got, want) in parsed.iter().zip(unique) {
                    prop_assert_eq!(&**got, want.as_str());
                }
            }
        }
    }
}
