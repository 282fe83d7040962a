//! The web fixture generator against the committed schema file, and its
//! paging: the web counter budgets load the page against these answers, so
//! they must have the Hub's field names and types and page like the Hub.

use std::collections::BTreeSet;

use hub_bench::web_fixture::{
    field_types, parse_schema, schema_differences, Fixture, FIXTURE_AGENTS, SCHEMA_FILE,
    WEB_REQUESTS,
};
use serde_json::json;

fn committed_schema() -> hub_bench::web_fixture::Schema {
    let path = format!("{}/{SCHEMA_FILE}", env!("CARGO_MANIFEST_DIR"));
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{path}: {e}"));
    parse_schema(&text).unwrap_or_else(|e| panic!("{path}: {e}"))
}

#[test]
fn the_generator_matches_the_schema_file() {
    let schema = committed_schema();
    assert_eq!(
        schema.keys().map(String::as_str).collect::<Vec<_>>(),
        {
            let mut names: Vec<_> = WEB_REQUESTS.iter().map(|r| r.name).collect();
            names.sort();
            names
        },
        "the schema file holds one entry per web request"
    );
    let differences = schema_differences(&schema, &Fixture::new().schema(), "the generator");
    assert!(
        differences.is_empty(),
        "the web fixture generator does not match {SCHEMA_FILE}; change src/web_fixture.rs until it does:\n{}",
        differences.join("\n")
    );
}

#[test]
fn a_drifted_generator_is_caught() {
    let schema = committed_schema();
    let mut drifted = Fixture::new().schema();
    let first = drifted.get_mut("project-first-page").unwrap();
    let name_type = first.remove("$.agents[].name").unwrap();
    first.insert("$.agents[].title".into(), name_type);
    first.insert("$.agents[].messageable".into(), "string".into());
    let differences = schema_differences(&schema, &drifted, "the generator");
    assert_eq!(
        differences,
        [
            "project-first-page: $.agents[].messageable: boolean in the schema file, string in the generator",
            "project-first-page: $.agents[].name (string) is in the schema file, not in the generator",
            "project-first-page: $.agents[].title (string) is in the generator, not in the schema file",
        ]
    );
}

#[test]
fn pages_cover_every_agent_once_in_name_order() {
    let fixture = Fixture::new();
    let path = format!("/api/v1/projects/{}/agents", fixture.project_id());
    let mut names = Vec::new();
    let mut query = "limit=30".to_owned();
    let mut pages = 0;
    loop {
        let page = fixture.answer("GET", &path, &query).expect("answered");
        pages += 1;
        for agent in page["agents"].as_array().unwrap() {
            names.push(agent["name"].as_str().unwrap().to_owned());
        }
        match page.get("nextCursor") {
            Some(cursor) => query = format!("limit=30&cursor={}", cursor.as_str().unwrap()),
            None => break,
        }
    }
    assert_eq!(pages, 4);
    assert_eq!(names.len(), FIXTURE_AGENTS);
    let mut sorted = names.clone();
    sorted.sort();
    assert_eq!(names, sorted);
    assert_eq!(names.iter().collect::<BTreeSet<_>>().len(), FIXTURE_AGENTS);
}

#[test]
fn the_answers_are_the_same_on_every_build() {
    assert_eq!(Fixture::new().web_answers(), Fixture::new().web_answers());
    let fixture = Fixture::new();
    let first = &fixture.agents()[0];
    assert_eq!(first["name"], "amber-badger-00000");
    assert_eq!(first["createdAt"], "2026-01-01T00:00:00.000Z");
}

#[test]
fn other_requests_are_not_answered() {
    let fixture = Fixture::new();
    let path = format!("/api/v1/projects/{}/agents", fixture.project_id());
    assert!(fixture.answer("GET", "/api/v1/agents", "").is_none());
    assert!(fixture
        .answer("GET", "/api/v1/projects/other/agents", "")
        .is_none());
    assert!(fixture.answer("POST", &path, "").is_none());
    assert!(fixture.answer("GET", &path, "limit=0").is_none());
    assert!(fixture.answer("GET", &path, "cursor=not-ours").is_none());
    assert!(fixture.answer("GET", &path, "sort=unknown").is_none());
    // The unpaged list: every agent, no cursor.
    let all = fixture.answer("GET", &path, "").unwrap();
    assert_eq!(all["agents"].as_array().unwrap().len(), FIXTURE_AGENTS);
    assert!(all.get("nextCursor").is_none());
}

#[test]
fn field_types_merge_array_items_and_nulls() {
    let types = field_types(&json!({"a": [{"b": 1}, {"b": null, "c": "x"}], "d": []}));
    let pairs: Vec<(&str, &str)> = types
        .iter()
        .map(|(k, v)| (k.as_str(), v.as_str()))
        .collect();
    assert_eq!(
        pairs,
        [
            ("$", "object"),
            ("$.a", "array"),
            ("$.a[]", "object"),
            ("$.a[].b", "null|number"),
            ("$.a[].c", "string"),
            ("$.d", "array"),
        ]
    );
}
