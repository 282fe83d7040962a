//! The Scion contract in one place: the line's field names, the header names
//! and suffixes, the subsystem, and the contract's example line.
//!
//! `LineFormat::scion` renders this profile, and a
//! reader of the lines (a benchmark client joining lines to its requests)
//! uses the same names, and the same value renderers, to rebuild the headers
//! a line stands for:
//!
//! ```
//! use perf_trace_core::line::scion::{self, field, header};
//!
//! let line: serde_json::Value = serde_json::from_str(scion::EXAMPLE_LINE).unwrap();
//! let figure = |name: &str| line[name].as_u64().unwrap();
//! assert_eq!(line[field::SUBSYSTEM], scion::SUBSYSTEM);
//! let decisions = scion::decisions_value(
//!     figure(field::AUDIT_RECORDS),
//!     figure(field::AUDIT_ALLOW),
//!     figure(field::AUDIT_DENY),
//!     figure(field::AUDIT_OTHER),
//!     figure(field::AUDIT_EMIT_US),
//! );
//! assert_eq!(header::DECISIONS, "X-Scion-Perf-Decisions");
//! assert_eq!(decisions, "count=255,allow=162,deny=93,other=0,audit_us=188");
//! ```

use std::fmt::Write as _;

/// The `subsystem` of every contract line.
pub const SUBSYSTEM: &str = "hub.perf-trace";

/// The Hub's `component`.
pub const COMPONENT: &str = "scion-hub";

/// The message of every line (under `msg`, or `message` in GCP format).
pub const MESSAGE: &str = "perf_trace";

/// The response header that carries the request id.
pub const REQUEST_ID_HEADER: &str = "X-Request-ID";

/// The contract's example line (the seed document's), byte for byte.
pub const EXAMPLE_LINE: &str = r#"{"time":"2026-01-01T00:00:00.000000000Z","level":"INFO","msg":"perf_trace","component":"scion-hub","subsystem":"hub.perf-trace","endpoint":"agents.project.legacy","elapsed_us":557495,"phase_capabilities_us":484223,"phase_capabilities_n":1,"phase_enrich_us":43829,"phase_enrich_n":1,"phase_list_db_read_us":16435,"phase_list_db_read_n":2,"phase_list_read_authz_us":2695,"phase_list_read_authz_n":2,"phase_list_scope_authz_us":1793,"phase_list_scope_authz_n":1,"phase_scope_capabilities_us":125,"phase_scope_capabilities_n":1,"phase_serialize_us":2917,"phase_serialize_n":1,"store_GetEffectiveGroups_n":1,"store_GetEffectiveGroups_us":631,"store_GetRoleDefinitionsByIDs_n":1,"store_GetRoleDefinitionsByIDs_us":358,"store_GetUser_n":84,"store_GetUser_us":472801,"store_ListAccessConstraints_n":1,"store_ListAccessConstraints_us":303,"store_ListRoleBindingsForPrincipals_n":1,"store_ListRoleBindingsForPrincipals_us":340,"authz_store_calls":88,"authz_store_us":474434,"audit_records":255,"audit_allow":162,"audit_deny":93,"audit_other":0,"audit_emit_us":188,"db_wait_count":306,"db_wait_us":1887753,"db_in_use":1,"db_open":1,"method":"GET","request_id":"00000000-0000-4000-8000-000000000000"}"#;

/// The line's field names, in the order they are written.
pub mod field {
    /// RFC 3339 time with nanoseconds.
    pub const TIME: &str = "time";
    /// Always `INFO`.
    pub const LEVEL: &str = "level";
    /// The message key (default format).
    pub const MSG: &str = "msg";
    /// The message key in GCP format.
    pub const MESSAGE: &str = "message";
    /// The service's component.
    pub const COMPONENT: &str = "component";
    /// [`SUBSYSTEM`](super::SUBSYSTEM) in the contract.
    pub const SUBSYSTEM: &str = "subsystem";
    /// The endpoint class.
    pub const ENDPOINT: &str = "endpoint";
    /// Time from the request's start to its line.
    pub const ELAPSED_US: &str = "elapsed_us";
    /// Phases: `phase_<p>_us`, `phase_<p>_n`.
    pub const PHASE_PREFIX: &str = "phase_";
    /// Store methods: `store_<M>_n`, `store_<M>_us`.
    pub const STORE_PREFIX: &str = "store_";
    /// The suffix of a count (`_n`).
    pub const COUNT_SUFFIX: &str = "_n";
    /// The suffix of a duration in microseconds (`_us`).
    pub const MICROS_SUFFIX: &str = "_us";
    /// Store calls over all methods.
    pub const AUTHZ_STORE_CALLS: &str = "authz_store_calls";
    /// Store time over all methods.
    pub const AUTHZ_STORE_US: &str = "authz_store_us";
    /// Audit records emitted.
    pub const AUDIT_RECORDS: &str = "audit_records";
    /// Decisions that allowed.
    pub const AUDIT_ALLOW: &str = "audit_allow";
    /// Decisions that denied.
    pub const AUDIT_DENY: &str = "audit_deny";
    /// Other decisions.
    pub const AUDIT_OTHER: &str = "audit_other";
    /// Time in the audit emitter.
    pub const AUDIT_EMIT_US: &str = "audit_emit_us";
    /// Stream events written (only when above zero).
    pub const SSE_EVENTS: &str = "sse_events";
    /// Pool waits during the request.
    pub const DB_WAIT_COUNT: &str = "db_wait_count";
    /// Pool wait time during the request.
    pub const DB_WAIT_US: &str = "db_wait_us";
    /// Connections in use at the end.
    pub const DB_IN_USE: &str = "db_in_use";
    /// Connections open at the end.
    pub const DB_OPEN: &str = "db_open";
    /// `connect` / `close` on stream lines.
    pub const SSE_STAGE: &str = "sse_stage";
    /// The request method.
    pub const METHOD: &str = "method";
    /// The request id (when not empty).
    pub const REQUEST_ID: &str = "request_id";

    /// The decisions group, in line order.
    pub const DECISIONS: [&str; 5] = [
        AUDIT_RECORDS,
        AUDIT_ALLOW,
        AUDIT_DENY,
        AUDIT_OTHER,
        AUDIT_EMIT_US,
    ];
    /// The pool group, in line order.
    pub const DB: [&str; 4] = [DB_WAIT_COUNT, DB_WAIT_US, DB_IN_USE, DB_OPEN];
}

/// Declares [`HEADER_PREFIX`], the header suffixes (`suffix`) and the full
/// header names (`header`) from one table: each full name is the prefix and
/// its suffix by construction.
macro_rules! perf_headers {
    (
        prefix: $prefix:literal;
        response: [$($(#[doc = $doc:literal])+ $name:ident = $suffix:literal,)+]
        $(#[doc = $trigger_doc:literal])+
        trigger: $trigger:literal;
    ) => {
        /// The prefix of every perf header.
        pub const HEADER_PREFIX: &str = $prefix;

        /// Header suffixes: what follows the profile's prefix.
        pub mod suffix {
            $($(#[doc = $doc])+ pub const $name: &str = $suffix;)+
            $(#[doc = $trigger_doc])+
            pub const TRIGGER: &str = $trigger;

            /// The response headers' suffixes, in rendering order.
            pub const ALL: [&str; [$($suffix),+].len()] = [$($name),+];
        }

        /// The contract's full header names.
        pub mod header {
            $(
                #[doc = concat!("`", $prefix, $suffix, "`.")]
                pub const $name: &str = concat!($prefix, $suffix);
            )+
            #[doc = concat!("`", $prefix, $trigger, "`, the request header that asks for the others.")]
            pub const TRIGGER: &str = concat!($prefix, $trigger);

            /// The response headers, in rendering order.
            pub const ALL: [&str; [$($suffix),+].len()] = [$($name),+];
        }
    };
}

perf_headers! {
    prefix: "X-Scion-Perf-";
    response: [
        /// The endpoint class.
        ENDPOINT = "Endpoint",
        /// Phase durations in microseconds.
        PHASES = "Phases",
        /// Phase counts.
        PHASE_COUNTS = "Phase-Counts",
        /// Store calls per method.
        STORE_CALLS = "Store-Calls",
        /// Store time per method in microseconds.
        STORE_US = "Store-Us",
        /// `count=..,allow=..,deny=..,other=..,audit_us=..`.
        DECISIONS = "Decisions",
        /// `wait_count=..,wait_us=..,in_use=..,open=..`.
        DB = "DB",
    ]
    /// The request header that asks for the perf headers (value `1`).
    trigger: "Trace";
}

/// A header value of `name=int` pairs joined by `,`, in the order given
/// (the renderer gives them sorted by name).
pub fn pairs_value<'a>(pairs: impl IntoIterator<Item = (&'a str, u64)>) -> String {
    let mut out = String::new();
    for (i, (name, value)) in pairs.into_iter().enumerate() {
        if i > 0 {
            out.push(',');
        }
        out.push_str(name);
        out.push('=');
        out.push_str(itoa::Buffer::new().format(value));
    }
    out
}

/// The `Decisions` header value.
pub fn decisions_value(records: u64, allow: u64, deny: u64, other: u64, emit_us: u64) -> String {
    let mut out = String::new();
    let _ = write!(
        out,
        "count={records},allow={allow},deny={deny},other={other},audit_us={emit_us}"
    );
    out
}

/// The `DB` header value.
pub fn db_value(wait_count: u64, wait_us: u64, in_use: u64, open: u64) -> String {
    let mut out = String::new();
    let _ = write!(
        out,
        "wait_count={wait_count},wait_us={wait_us},in_use={in_use},open={open}"
    );
    out
}
