//! The contract's example line and a snapshot with the same figures, shared
//! by the golden-line tests and the rendering benchmark.
#![allow(dead_code)]

use std::time::{Duration, SystemTime, UNIX_EPOCH};

use perf_trace_core::keys::Groups;
use perf_trace_core::snapshot::DbFigures;
use perf_trace_core::snapshot::{Decisions, KeyStat};
use perf_trace_core::Snapshot;

/// The contract's example line, as the seed document prints it (kept here
/// apart from `perf_trace_core::line::scion::EXAMPLE_LINE`, so that a change to
/// the library's copy cannot pass unnoticed).
pub const SEED_LINE: &str = r#"{"time":"2026-01-01T00:00:00.000000000Z","level":"INFO","msg":"perf_trace","component":"scion-hub","subsystem":"hub.perf-trace","endpoint":"agents.project.legacy","elapsed_us":557495,"phase_capabilities_us":484223,"phase_capabilities_n":1,"phase_enrich_us":43829,"phase_enrich_n":1,"phase_list_db_read_us":16435,"phase_list_db_read_n":2,"phase_list_read_authz_us":2695,"phase_list_read_authz_n":2,"phase_list_scope_authz_us":1793,"phase_list_scope_authz_n":1,"phase_scope_capabilities_us":125,"phase_scope_capabilities_n":1,"phase_serialize_us":2917,"phase_serialize_n":1,"store_GetEffectiveGroups_n":1,"store_GetEffectiveGroups_us":631,"store_GetRoleDefinitionsByIDs_n":1,"store_GetRoleDefinitionsByIDs_us":358,"store_GetUser_n":84,"store_GetUser_us":472801,"store_ListAccessConstraints_n":1,"store_ListAccessConstraints_us":303,"store_ListRoleBindingsForPrincipals_n":1,"store_ListRoleBindingsForPrincipals_us":340,"authz_store_calls":88,"authz_store_us":474434,"audit_records":255,"audit_allow":162,"audit_deny":93,"audit_other":0,"audit_emit_us":188,"db_wait_count":306,"db_wait_us":1887753,"db_in_use":1,"db_open":1,"method":"GET","request_id":"00000000-0000-4000-8000-000000000000"}"#;

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

pub fn seed_snapshot() -> Snapshot {
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
        // The Hub's response had a status; the Scion profile leaves it out.
        status: Some(200),
        groups: Groups::SCION,
        ..Snapshot::default()
    }
}

pub fn seed_time() -> SystemTime {
    // 2026-01-01T00:00:00Z
    UNIX_EPOCH + Duration::from_secs(1_767_225_600)
}
