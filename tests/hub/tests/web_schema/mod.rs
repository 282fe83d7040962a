//! The web fixture's schema against the Hub: the field names and JSON types
//! of a seeded Hub's answers to the project page's requests
//! (`hub_bench::web_fixture::WEB_REQUESTS`), compared with the committed
//! schema file the web fixture generator is held to, or written to it with
//! `SCION_PERF_BUDGET_WRITE_WEB_SCHEMA=1`.

use axum::http::StatusCode;
use hub_bench::web_fixture::{
    field_types, parse_schema, schema_differences, schema_text, Schema, HUB_DRIFT_MESSAGE,
    SCHEMA_FILE, WEB_REQUESTS, WRITE_SCHEMA_ENV,
};

use crate::hub_support::TestHub;

/// The schema file, in the `hub-bench` crate beside its generator.
pub fn schema_path() -> String {
    format!(
        "{}/../../hub-bench/{SCHEMA_FILE}",
        env!("CARGO_MANIFEST_DIR")
    )
}

/// The field types of the Hub's answers to the web requests, as the seeded
/// member (the page's caller).
pub async fn hub_schema(hub: &TestHub) -> Schema {
    let token = hub.doc().member_token.clone();
    let project = hub.doc().project_id.clone();
    let mut cursor = String::new();
    let mut schema = Schema::new();
    for request in WEB_REQUESTS {
        let uri = request.uri(&project, &cursor);
        let reply = hub.get(&uri, Some(&token)).await;
        assert_eq!(reply.status, StatusCode::OK, "{}: {uri}", request.name);
        let answer = reply.json();
        if request.name == "project-first-page" {
            cursor = answer["nextCursor"]
                .as_str()
                .expect("the first page of 100 agents has a next page")
                .to_owned();
        }
        schema.insert(request.name.to_owned(), field_types(&answer));
    }
    schema
}

/// Compares `actual` with the committed file, or rewrites the file when
/// `SCION_PERF_BUDGET_WRITE_WEB_SCHEMA=1`; the error is the failure message.
pub fn check_or_write(actual: &Schema, path: &str, write: bool) -> Result<(), String> {
    if write {
        std::fs::write(path, schema_text(actual)).map_err(|e| format!("write {path}: {e}"))?;
        println!("wrote {path}");
        return Ok(());
    }
    let text = std::fs::read_to_string(path).map_err(|e| format!("read {path}: {e}"))?;
    let committed = parse_schema(&text).map_err(|e| format!("{path}: {e}"))?;
    let differences = schema_differences(&committed, actual, "the hub's responses");
    if differences.is_empty() {
        return Ok(());
    }
    Err(format!(
        "the web fixture schema {SCHEMA_FILE} {HUB_DRIFT_MESSAGE}:\n{}\nrefresh it with \
         {WRITE_SCHEMA_ENV}=1 cargo test -p hub-tests --test perf_budget web_fixture_schema, \
         commit it, then change hub-bench/src/web_fixture.rs until \
         cargo test -p hub-bench --test web_fixture passes",
        differences.join("\n")
    ))
}

/// Whether the environment asks for the file to be rewritten.
pub fn write_requested() -> bool {
    std::env::var(WRITE_SCHEMA_ENV).is_ok_and(|v| v == "1")
}
