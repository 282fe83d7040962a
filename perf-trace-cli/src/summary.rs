//! What `perf-trace summary` reports per endpoint class, computed from an
//! [`Aggregate`]: the one summarizing code that every output (table, JSON,
//! CSV, HTML) renders.

use std::collections::{BTreeMap, BTreeSet};

use serde::Serialize;

use crate::aggregate::{Aggregate, ClassAgg, Figure, SlowRequest};
use crate::dist::{CountDist, CountStats, TimeDist, TimeStats};
use crate::line::{classify, FigureKind, Unit};
use crate::scan::Counts;
use crate::suspects::{self, Rule, Suspect};

/// One phase of a class.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct PhaseRow {
    /// The phase's name (`list_db_read`).
    pub name: String,
    /// Its time over the class's elapsed time (0 to 1; phases may nest or
    /// overlap, so shares need not add up to 1).
    pub share: f64,
    /// Calls per request (`phase_<p>_n`).
    pub calls: CountStats,
    /// Its time per request that ran it (`phase_<p>_us`).
    pub time: TimeStats,
}

/// One store method of a class.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct StoreRow {
    /// The method as the line spells it (`GetUser`, `get_stocks`).
    pub method: String,
    /// Calls per request (`store_<M>_n`), over every request of the class.
    pub calls: CountStats,
    /// Time per request that called it (`store_<M>_us`).
    pub time: TimeStats,
}

/// A counter (any count figure that is not a phase or store method).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct CounterRow {
    /// The field name (`price_cache_hit`, `audit_records`).
    pub name: String,
    /// Per request, over every request of the class.
    pub per_request: CountStats,
}

/// A timer (any `_us` figure that is not a phase or store method).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct TimerRow {
    /// The field name (`audit_emit_us`).
    pub name: String,
    /// Per request that has it.
    pub per_request: TimeStats,
}

/// Everything `summary` says about one endpoint class.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ClassSummary {
    /// The endpoint class.
    pub endpoint: String,
    /// Requests.
    pub requests: u64,
    /// Requests per status class, for lines that carry a status.
    pub statuses: BTreeMap<String, u64>,
    /// `elapsed_us`.
    pub elapsed: TimeStats,
    /// Phases by name.
    pub phases: Vec<PhaseRow>,
    /// Store methods by name.
    pub store: Vec<StoreRow>,
    /// Store calls per request over every method.
    pub store_calls: CountStats,
    /// Store time per request, when the lines have store times.
    pub store_time: Option<TimeStats>,
    /// Counters by name.
    pub counters: Vec<CounterRow>,
    /// Timers by name.
    pub timers: Vec<TimerRow>,
    /// The slowest requests, slowest first.
    pub slowest: Vec<SlowRequest>,
}

/// The whole summary of a read.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Summary {
    /// What was read and skipped.
    pub input: Counts,
    /// Per class, by name.
    pub classes: Vec<ClassSummary>,
    /// The N+1 suspects, by class and key.
    pub suspects: Vec<Suspect>,
}

fn count(class: &ClassAgg, name: &str) -> CountStats {
    match class.figures.get(name) {
        Some(Figure::Count(d)) => d.stats(class.requests),
        _ => CountDist::default().stats(class.requests),
    }
}

fn time(class: &ClassAgg, name: &str) -> TimeStats {
    match class.figures.get(name) {
        Some(Figure::Time(d)) => d.stats(),
        _ => TimeDist::default().stats(),
    }
}

/// The names of a class's phases, store methods, counters and timers.
#[derive(Debug, Default)]
pub struct KeyNames {
    /// Phase names.
    pub phases: BTreeSet<String>,
    /// Store method names.
    pub store: BTreeSet<String>,
    /// Counter field names.
    pub counters: BTreeSet<String>,
    /// Timer field names.
    pub timers: BTreeSet<String>,
}

/// Sorts a class's field names into phases, store methods, counters, timers.
pub fn key_names(class: &ClassAgg) -> KeyNames {
    let mut names = KeyNames::default();
    for name in class.figures.keys() {
        match classify(name) {
            FigureKind::Phase(p, _) => {
                names.phases.insert(p.to_owned());
            }
            FigureKind::Store(m, _) => {
                names.store.insert(m.to_owned());
            }
            FigureKind::StoreTotal(_) => {}
            FigureKind::Other(Unit::Count) => {
                names.counters.insert(name.clone());
            }
            FigureKind::Other(Unit::Micros) => {
                names.timers.insert(name.clone());
            }
        }
    }
    names
}

/// Summarizes one class.
pub fn summarize_class(endpoint: &str, class: &ClassAgg) -> ClassSummary {
    let names = key_names(class);
    let elapsed_sum = class.elapsed.sum().max(1) as f64;
    let phases = names
        .phases
        .iter()
        .map(|p| {
            let time = time(class, &format!("phase_{p}_us"));
            PhaseRow {
                name: p.clone(),
                share: time.sum_us as f64 / elapsed_sum,
                calls: count(class, &format!("phase_{p}_n")),
                time,
            }
        })
        .collect();
    let store = names
        .store
        .iter()
        .map(|m| StoreRow {
            method: m.clone(),
            calls: count(class, &format!("store_{m}_n")),
            time: time(class, &format!("store_{m}_us")),
        })
        .collect();
    ClassSummary {
        endpoint: endpoint.to_owned(),
        requests: class.requests,
        statuses: class.statuses.clone(),
        elapsed: class.elapsed.stats(),
        phases,
        store,
        store_calls: class.store_total.stats(class.requests),
        store_time: (!class.store_total_us.is_empty()).then(|| class.store_total_us.stats()),
        counters: names
            .counters
            .iter()
            .map(|n| CounterRow {
                name: n.clone(),
                per_request: count(class, n),
            })
            .collect(),
        timers: names
            .timers
            .iter()
            .map(|n| TimerRow {
                name: n.clone(),
                per_request: time(class, n),
            })
            .collect(),
        slowest: class.slowest(),
    }
}

/// Summarizes every class of an aggregate, its N+1 suspects by `rule`.
pub fn summarize(agg: &Aggregate, input: Counts, rule: &Rule) -> Summary {
    Summary {
        input,
        classes: agg
            .classes
            .iter()
            .map(|(name, class)| summarize_class(name, class))
            .collect(),
        suspects: agg
            .classes
            .iter()
            .flat_map(|(name, class)| suspects::of_class(name, class, rule))
            .collect(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::line::{parse, Parsed};

    #[test]
    fn a_class_in_phases_store_counters_and_timers() {
        let mut agg = Aggregate::new(3);
        for text in [
            r#"{"msg":"perf_trace","endpoint":"orders.get","elapsed_us":100,"phase_load_us":40,"phase_load_n":1,"store_GetOrder_n":1,"store_GetOrder_us":30,"price_cache_hit":1,"audit_emit_us":5,"status":200}"#,
            r#"{"msg":"perf_trace","endpoint":"orders.get","elapsed_us":300,"phase_load_us":60,"phase_load_n":2,"store_GetOrder_n":3,"store_GetOrder_us":50,"status":500}"#,
        ] {
            let Parsed::Perf(line) = parse(text) else {
                panic!("{text}")
            };
            agg.add(&line, text);
        }
        let s = summarize(&agg, Counts::default(), &Rule::default());
        let c = &s.classes[0];
        assert_eq!((c.endpoint.as_str(), c.requests), ("orders.get", 2));
        assert_eq!(c.statuses["2xx"], 1);
        assert_eq!(c.statuses["5xx"], 1);
        assert_eq!(c.phases[0].name, "load");
        assert!((c.phases[0].share - 0.25).abs() < 1e-9);
        assert_eq!((c.phases[0].calls.p50, c.phases[0].calls.max), (1, 2));
        assert_eq!(c.store[0].method, "GetOrder");
        assert_eq!(c.store_calls.max, 3);
        assert_eq!(c.store_time.unwrap().sum_us, 80);
        assert_eq!(c.counters[0].name, "price_cache_hit");
        // One of two requests had a hit: the median is 0, the mean a half.
        assert_eq!(c.counters[0].per_request.p50, 0);
        assert!((c.counters[0].per_request.mean - 0.5).abs() < 1e-9);
        assert_eq!(c.timers[0].name, "audit_emit_us");
        assert_eq!(c.slowest[0].elapsed_us, 300);
    }
}
