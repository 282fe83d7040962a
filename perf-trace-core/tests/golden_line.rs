//! The seed document's example line, rebuilt from a snapshot with the same
//! figures, must come out byte for byte.

use std::time::{Duration, SystemTime, UNIX_EPOCH};

use perf_trace_core::{
    render_headers, DbFigures, Decisions, KeyStat, LineFormat, Snapshot, SseStage,
};

const SEED_LINE: &str = r#"{"time":"2026-01-01T00:00:00.000000000Z","level":"INFO","msg":"perf_trace","component":"scion-hub","subsystem":"hub.perf-trace","endpoint":"agents.project.legacy","elapsed_us":557495,"phase_capabilities_us":484223,"phase_capabilities_n":1,"phase_enrich_us":43829,"phase_enrich_n":1,"phase_list_db_read_us":16435,"phase_list_db_read_n":2,"phase_list_read_authz_us":2695,"phase_list_read_authz_n":2,"phase_list_scope_authz_us":1793,"phase_list_scope_authz_n":1,"phase_scope_capabilities_us":125,"phase_scope_capabilities_n":1,"phase_serialize_us":2917,"phase_serialize_n":1,"store_GetEffectiveGroups_n":1,"store_GetEffectiveGroups_us":631,"store_GetRoleDefinitionsByIDs_n":1,"store_GetRoleDefinitionsByIDs_us":358,"store_GetUser_n":84,"store_GetUser_us":472801,"store_ListAccessConstraints_n":1,"store_ListAccessConstraints_us":303,"store_ListRoleBindingsForPrincipals_n":1,"store_ListRoleBindingsForPrincipals_us":340,"authz_store_calls":88,"authz_store_us":474434,"audit_records":255,"audit_allow":162,"audit_deny":93,"audit_other":0,"audit_emit_us":188,"db_wait_count":306,"db_wait_us":1887753,"db_in_use":1,"db_open":1,"method":"GET","request_id":"00000000-0000-4000-8000-000000000000"}"#;

/// A duration of `us` microseconds plus a sub-microsecond remainder that
/// rendering must truncate, not round.
fn us(us: u64) -> Duration {
    Duration::from_nanos(us * 1_000 + 999)
}

fn stat(name: &'static str, count: u64, micros: u64) -> KeyStat {
    KeyStat {
        name,
        count,
        duration: us(micros),
    }
}

fn seed_snapshot() -> Snapshot {
    Snapshot {
        endpoint: "agents.project.legacy",
        elapsed: us(557_495),
        phases: vec![
            stat("capabilities", 1, 484_223),
            stat("enrich", 1, 43_829),
            stat("list_db_read", 2, 16_435),
            stat("list_read_authz", 2, 2_695),
            stat("list_scope_authz", 1, 1_793),
            stat("scope_capabilities", 1, 125),
            stat("serialize", 1, 2_917),
        ],
        store_calls: vec![
            stat("GetEffectiveGroups", 1, 631),
            stat("GetRoleDefinitionsByIDs", 1, 358),
            stat("GetUser", 84, 472_801),
            stat("ListAccessConstraints", 1, 303),
            stat("ListRoleBindingsForPrincipals", 1, 340),
        ],
        authz_store_calls: 88,
        authz_store_time: us(474_434),
        decisions: Decisions {
            records: 255,
            allow: 162,
            deny: 93,
            other: 0,
            emit_time: us(188),
        },
        sse_events: 0,
        db: Some(DbFigures {
            wait_count: 306,
            wait_time: us(1_887_753),
            in_use: 1,
            open: 1,
        }),
        sse_stage: None,
        method: "GET",
        request_id: "00000000-0000-4000-8000-000000000000".into(),
    }
}

fn seed_time() -> SystemTime {
    // 2026-01-01T00:00:00Z
    UNIX_EPOCH + Duration::from_secs(1_767_225_600)
}

#[test]
fn seed_example_line_is_rebuilt_byte_for_byte() {
    let mut line = String::new();
    LineFormat::new("scion-hub").render(&seed_snapshot(), seed_time(), &mut line);
    assert_eq!(line, SEED_LINE);
}

#[test]
fn gcp_format_uses_message_key() {
    let mut line = String::new();
    LineFormat::new("scion-hub")
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
    LineFormat::new("scion-hub").render(&snapshot, seed_time(), &mut line);
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
    LineFormat::new("scion-hub").render(&snapshot, seed_time(), &mut line);
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
    LineFormat::new("odd \"component\"").render(&snapshot, seed_time(), &mut line);
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
