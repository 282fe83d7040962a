//! Sample logs in the lines' real shapes, for the tests and the throughput
//! script: the Hub's (Scion profile, the contract's example line with its
//! figures varied), a plain service's (the orders example's, with a
//! status) and a catalog service's whose listings vary in size (with or
//! without planted N+1s), among other log output. The counts of each
//! request shape are fixed, as in a real workload (the catalog's follow its
//! listings' sizes); durations vary.

use std::io::{self, Write};

use rand::rngs::StdRng;
use rand::{Rng as _, SeedableRng};

/// Which service's lines.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Profile {
    /// The Hub's lines (`msg`, or `message` in the GCP form).
    Hub {
        /// Write the GCP form.
        gcp: bool,
    },
    /// The orders example's lines in the plain profile.
    Plain,
    /// A catalog service's lines (plain profile) whose listings' sizes vary:
    /// each carries `rows` and `response_bytes`, its store calls and its SQL
    /// wrapper's counts (`sql_select_n`, `sql_repeated_n`).
    Catalog {
        /// Plant two N+1s: a price read per listed row (`store_get_price_n`
        /// = rows on `catalog.list`), and a SELECT per search hit run as
        /// repeats of one statement (`sql_repeated_n` = hits - 1 on
        /// `catalog.search`). Without it both are batched: one call each.
        n_plus_one: bool,
    },
}

/// What to write.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Sample {
    /// The profile.
    pub profile: Profile,
    /// Perf lines to write.
    pub requests: u64,
    /// Seeds the durations.
    pub seed: u64,
    /// Store calls added to every project listing's `GetUser` (the Hub) or
    /// every order read's `get_product` (plain): a planted count change.
    pub extra_calls: u64,
    /// Every duration made this many percent longer: a planted slowdown.
    pub slower_percent: u64,
}

fn time(i: u64) -> String {
    let (s, ns) = (i / 1000, (i % 1000) * 1_000_000);
    format!(
        "2026-01-01T{:02}:{:02}:{:02}.{ns:09}Z",
        s / 3600 % 24,
        s / 60 % 60,
        s % 60
    )
}

fn hub_line(i: u64, rng: &mut StdRng, sample: &Sample, gcp: bool) -> String {
    let key = if gcp { "message" } else { "msg" };
    let head = format!(
        r#"{{"time":"{}","level":"INFO","{key}":"perf_trace","component":"scion-hub","subsystem":"hub.perf-trace""#,
        time(i)
    );
    let id = format!("00000000-0000-4000-8000-{i:012}");
    let mut us =
        |base: u64| (base / 2 + rng.random_range(0..=base)) * (100 + sample.slower_percent) / 100;
    match i % 4 {
        0 | 1 => {
            let users = 84 + sample.extra_calls;
            let get_user_us = us(4000);
            let (caps, enrich, read) = (us(3000), us(900), us(400));
            format!(
                r#"{head},"endpoint":"agents.project.legacy","elapsed_us":{},"phase_capabilities_us":{caps},"phase_capabilities_n":1,"phase_enrich_us":{enrich},"phase_enrich_n":1,"phase_list_db_read_us":{read},"phase_list_db_read_n":2,"phase_list_read_authz_us":{},"phase_list_read_authz_n":2,"phase_list_scope_authz_us":{},"phase_list_scope_authz_n":1,"phase_serialize_us":{},"phase_serialize_n":1,"store_GetEffectiveGroups_n":1,"store_GetEffectiveGroups_us":{},"store_GetRoleDefinitionsByIDs_n":1,"store_GetRoleDefinitionsByIDs_us":{},"store_GetUser_n":{users},"store_GetUser_us":{get_user_us},"store_ListAccessConstraints_n":1,"store_ListAccessConstraints_us":{},"store_ListRoleBindingsForPrincipals_n":1,"store_ListRoleBindingsForPrincipals_us":{},"authz_store_calls":{},"authz_store_us":{},"audit_records":255,"audit_allow":162,"audit_deny":93,"audit_other":0,"audit_emit_us":{},"db_wait_count":{},"db_wait_us":{},"db_in_use":1,"db_open":1,"method":"GET","request_id":"{id}"}}"#,
                caps + enrich + read + 900,
                us(100),
                us(80),
                us(120),
                us(30),
                us(20),
                us(25),
                us(20),
                users + 4,
                get_user_us + 100,
                us(10),
                us(200),
                us(2000),
            )
        }
        2 => format!(
            r#"{head},"endpoint":"agents.global.sorted","elapsed_us":{},"phase_list_db_read_us":{},"phase_list_db_read_n":1,"phase_serialize_us":{},"phase_serialize_n":1,"store_GetEffectiveGroups_n":1,"store_GetEffectiveGroups_us":{},"authz_store_calls":1,"authz_store_us":{},"audit_records":0,"audit_allow":0,"audit_deny":0,"audit_other":0,"audit_emit_us":0,"method":"GET","request_id":"{id}"}}"#,
            us(1500),
            us(600),
            us(100),
            us(40),
            us(40),
        ),
        _ => format!(
            r#"{head},"endpoint":"sse.events","elapsed_us":{},"phase_sse_authorize_us":{},"phase_sse_authorize_n":1,"phase_sse_expand_us":{},"phase_sse_expand_n":1,"phase_sse_write_us":{},"phase_sse_write_n":3,"authz_store_calls":0,"authz_store_us":0,"audit_records":0,"audit_allow":0,"audit_deny":0,"audit_other":0,"audit_emit_us":0,"sse_events":3,"sse_stage":"close","method":"GET","request_id":"{id}"}}"#,
            us(50_000),
            us(200),
            us(100),
            us(90),
        ),
    }
}

fn plain_line(i: u64, rng: &mut StdRng, sample: &Sample) -> String {
    let head = format!(
        r#"{{"time":"{}","level":"INFO","msg":"perf_trace","component":"orders-api","subsystem":"orders.perf-trace""#,
        time(i)
    );
    let id = format!("c8277070-b387-4e01-a5ce-{i:012}");
    let mut us =
        |base: u64| (base / 2 + rng.random_range(0..=base)) * (100 + sample.slower_percent) / 100;
    if i % 3 == 2 {
        return format!(
            r#"{head},"endpoint":"orders.list","elapsed_us":{},"status":200,"phase_serialize_us":{},"phase_serialize_n":1,"store_calls":1,"store_us":{},"store_list_orders_n":1,"store_list_orders_us":{},"method":"GET","request_id":"{id}"}}"#,
            us(300),
            us(40),
            us(20),
            us(20),
        );
    }
    let products = 2 + sample.extra_calls;
    let status = if i.is_multiple_of(30) { 404 } else { 200 };
    format!(
        r#"{head},"endpoint":"orders.get","elapsed_us":{},"status":{status},"phase_load_us":{},"phase_load_n":1,"phase_price_us":{},"phase_price_n":1,"phase_serialize_us":{},"phase_serialize_n":1,"store_calls":{},"store_us":{},"store_get_order_n":1,"store_get_order_us":{},"store_get_product_n":{products},"store_get_product_us":{},"price_cache_hit":1,"price_cache_miss":{products},"method":"GET","request_id":"{id}"}}"#,
        us(170),
        us(5),
        us(17),
        us(3),
        products + 1,
        us(5),
        us(4),
        us(1),
    )
}

fn catalog_line(i: u64, rng: &mut StdRng, sample: &Sample, n_plus_one: bool) -> String {
    let head = format!(
        r#"{{"time":"{}","level":"INFO","msg":"perf_trace","component":"catalog","subsystem":"catalog.perf-trace""#,
        time(i)
    );
    let id = format!("5a1e0000-0000-4000-8000-{i:012}");
    let slower = 100 + sample.slower_percent;
    if i.is_multiple_of(2) {
        let rows = rng.random_range(1..=40u64);
        let prices = if n_plus_one { rows } else { 1 } + sample.extra_calls;
        let bytes = 120 + rows * 310 + rng.random_range(0..50u64);
        let elapsed = (300 + prices * 40 + rng.random_range(0..200u64)) * slower / 100;
        return format!(
            r#"{head},"endpoint":"catalog.list","elapsed_us":{elapsed},"status":200,"store_get_price_n":{prices},"store_get_price_us":{},"store_list_products_n":1,"store_list_products_us":{},"rows":{rows},"response_bytes":{bytes},"method":"GET","request_id":"{id}"}}"#,
            prices * 35,
            rng.random_range(50..150u64),
        );
    }
    let hits = rng.random_range(0..=12u64);
    let (selects, repeated) = if n_plus_one {
        (1 + hits, hits.saturating_sub(1))
    } else {
        (2, 0)
    };
    let bytes = 80 + hits * 200 + rng.random_range(0..30u64);
    let elapsed = (200 + selects * 60 + rng.random_range(0..100u64)) * slower / 100;
    format!(
        r#"{head},"endpoint":"catalog.search","elapsed_us":{elapsed},"status":200,"store_search_n":1,"store_search_us":{},"sql_select_n":{selects},"sql_repeated_n":{repeated},"rows":{hits},"response_bytes":{bytes},"method":"GET","request_id":"{id}"}}"#,
        selects * 50,
    )
}

/// Writes the sample: its perf lines with a line of other output every
/// 20 lines.
pub fn write(out: &mut impl Write, sample: &Sample) -> io::Result<()> {
    let mut rng = StdRng::seed_from_u64(sample.seed);
    for i in 0..sample.requests {
        if i.is_multiple_of(20) {
            writeln!(
                out,
                r#"{{"time":"{}","level":"INFO","msg":"request served","component":"server"}}"#,
                time(i)
            )?;
        }
        let line = match sample.profile {
            Profile::Hub { gcp } => hub_line(i, &mut rng, sample, gcp),
            Profile::Plain => plain_line(i, &mut rng, sample),
            Profile::Catalog { n_plus_one } => catalog_line(i, &mut rng, sample, n_plus_one),
        };
        writeln!(out, "{line}")?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::line::{parse, Parsed};

    #[test]
    fn every_sample_line_reads_whole() {
        for profile in [
            Profile::Hub { gcp: false },
            Profile::Hub { gcp: true },
            Profile::Plain,
            Profile::Catalog { n_plus_one: true },
            Profile::Catalog { n_plus_one: false },
        ] {
            let mut out = Vec::new();
            let sample = Sample {
                profile,
                requests: 40,
                seed: 1,
                extra_calls: 0,
                slower_percent: 0,
            };
            write(&mut out, &sample).unwrap();
            let text = String::from_utf8(out).unwrap();
            let perf = text
                .lines()
                .filter(|l| match parse(l) {
                    Parsed::Perf(_) => true,
                    Parsed::NotPerf => false,
                    Parsed::Malformed(why) => panic!("{why}: {l}"),
                })
                .count();
            assert_eq!(perf, 40);
        }
    }
}
