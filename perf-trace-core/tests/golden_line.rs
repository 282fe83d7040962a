//! The seed document's example line, rebuilt from a snapshot with the same
//! figures, must come out byte for byte.

mod seed_example;

use perf_trace_core::keys::Groups;
use perf_trace_core::{line::render_headers, snapshot::SseStage, LineFormat};
use seed_example::{seed_snapshot, seed_time, SEED_LINE};

#[test]
fn seed_example_line_is_rebuilt_byte_for_byte() {
    let mut line = String::new();
    LineFormat::scion("scion-hub").render(&seed_snapshot(), seed_time(), &mut line);
    assert_eq!(line, SEED_LINE);
}

/// A plain profile's line of the same request: no optional group unless the
/// schema asks, the response's status, the store total under its own name.
#[test]
fn a_plain_line_has_no_contract_field_and_carries_the_status() {
    let plain = LineFormat::plain("inventory", "inventory.perf");
    let mut snapshot = seed_snapshot();
    snapshot.groups = Groups::NONE;
    snapshot.store_calls.clear();
    let mut line = String::new();
    plain.render(&snapshot, seed_time(), &mut line);
    for field in [r#""authz_"#, r#""audit_"#, r#""db_"#, r#""sse_"#] {
        assert!(!line.contains(field), "{field} in {line}");
    }
    assert!(
        line.ends_with(r#""phase_serialize_n":1,"method":"GET","status":200,"request_id":"00000000-0000-4000-8000-000000000000"}"#),
        "{line}"
    );
    let headers = render_headers(&snapshot);
    assert!(headers.iter().all(|h| h.suffix != "Decisions"));

    snapshot.groups = Groups {
        store_total: true,
        ..Groups::NONE
    };
    snapshot.status = Some(404);
    plain.render(&snapshot, seed_time(), &mut line);
    assert!(
        line.contains(r#""phase_serialize_n":1,"store_calls":88,"store_us":474434,"method":"GET","status":404,"#),
        "{line}"
    );
}

#[test]
fn gcp_format_uses_message_key() {
    let mut line = String::new();
    LineFormat::scion("scion-hub")
        .gcp(true)
        .render(&seed_snapshot(), seed_time(), &mut line);
    assert_eq!(
        line,
        SEED_LINE.replace(r#""msg":"perf_trace""#, r#""message":"perf_trace""#)
    );
}

#[test]
fn optional_keys_are_left_out_and_ordered() {
    let mut snapshot = seed_snapshot();
    snapshot.db = None;
    snapshot.request_id.clear();
    snapshot.phases.clear();
    snapshot.store_calls.clear();
    let mut line = String::new();
    LineFormat::scion("scion-hub").render(&snapshot, seed_time(), &mut line);
    assert!(!line.contains("db_"), "{line}");
    assert!(!line.contains("request_id"), "{line}");
    assert!(!line.contains("phase_"), "{line}");
    assert!(!line.contains("sse_"), "{line}");
    assert!(
        line.ends_with(r#""audit_emit_us":188,"method":"GET"}"#),
        "{line}"
    );

    snapshot.sse_events = 3;
    snapshot.sse_stage = Some(SseStage::Close);
    snapshot.request_id = "r1".into();
    LineFormat::scion("scion-hub").render(&snapshot, seed_time(), &mut line);
    assert!(
        line.ends_with(r#""audit_emit_us":188,"sse_events":3,"sse_stage":"close","method":"GET","request_id":"r1"}"#),
        "{line}"
    );
    let value: serde_json::Value = serde_json::from_str(&line).expect("valid JSON");
    assert_eq!(value["sse_events"], 3);
}

#[test]
fn every_line_is_valid_json_with_escaped_strings() {
    let mut snapshot = seed_snapshot();
    snapshot.request_id = "a\"b\\c\n\u{1}".into();
    let mut line = String::new();
    LineFormat::scion("odd \"component\"").render(&snapshot, seed_time(), &mut line);
    let value: serde_json::Value = serde_json::from_str(&line).expect("valid JSON");
    assert_eq!(value["request_id"], "a\"b\\c\n\u{1}");
    assert_eq!(value["component"], "odd \"component\"");
    assert!(!line.contains('\n'));
}

#[test]
fn headers_carry_the_same_figures_sorted_by_name() {
    let headers = render_headers(&seed_snapshot());
    let get = |suffix: &str| {
        headers
            .iter()
            .find(|h| h.suffix == suffix)
            .map(|h| h.value.as_str())
            .unwrap_or_else(|| panic!("no {suffix} header"))
    };
    assert_eq!(get("Endpoint"), "agents.project.legacy");
    assert_eq!(
        get("Phases"),
        "capabilities=484223,enrich=43829,list_db_read=16435,list_read_authz=2695,list_scope_authz=1793,scope_capabilities=125,serialize=2917"
    );
    assert_eq!(
        get("Phase-Counts"),
        "capabilities=1,enrich=1,list_db_read=2,list_read_authz=2,list_scope_authz=1,scope_capabilities=1,serialize=1"
    );
    assert_eq!(
        get("Store-Calls"),
        "GetEffectiveGroups=1,GetRoleDefinitionsByIDs=1,GetUser=84,ListAccessConstraints=1,ListRoleBindingsForPrincipals=1"
    );
    assert_eq!(
        get("Store-Us"),
        "GetEffectiveGroups=631,GetRoleDefinitionsByIDs=358,GetUser=472801,ListAccessConstraints=303,ListRoleBindingsForPrincipals=340"
    );
    assert_eq!(
        get("Decisions"),
        "count=255,allow=162,deny=93,other=0,audit_us=188"
    );
    assert_eq!(get("DB"), "wait_count=306,wait_us=1887753,in_use=1,open=1");
}

#[test]
fn empty_sets_leave_their_headers_out_but_decisions_stay() {
    let mut snapshot = seed_snapshot();
    snapshot.phases.clear();
    snapshot.store_calls.clear();
    snapshot.db = None;
    let suffixes: Vec<_> = render_headers(&snapshot).iter().map(|h| h.suffix).collect();
    assert_eq!(suffixes, ["Endpoint", "Decisions"]);
}
