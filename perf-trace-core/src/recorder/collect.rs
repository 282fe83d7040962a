//! A recorder's tables read into a [`Snapshot`]: each key entered at least
//! once, in name order, into lists a thread keeps from one snapshot to the
//! next.

use std::sync::atomic::{AtomicU64, Ordering::Relaxed};
use std::time::Duration;

use super::{Recorder, RequestEnd, Stat, Table, ALL};
use crate::clock;
use crate::keys::KeySetInfo;
use crate::record::pool::DbFigures;
use crate::snapshot::{CounterStat, Counters, KeyStat, Snapshot, SseStage, Timers};

impl Recorder {
    /// [`snapshot_at`](Self::snapshot_at) into `out`, whose lists are
    /// cleared and refilled: a thread that renders many lines keeps one
    /// snapshot and allocates nothing once its lists have grown.
    pub(crate) fn snapshot_into(&self, end: RequestEnd, out: &mut Snapshot) {
        let inner = &*self.0;
        let stores = inner.table(Table::Stores);
        collect_into(
            &mut out.phases,
            inner.table(Table::Phases),
            inner.touched(Table::Phases),
            inner.schema.phases.names,
            inner.schema.phases.sorted,
        );
        collect_into(
            &mut out.store_calls,
            stores,
            inner.touched(Table::Stores),
            inner.schema.stores.names,
            inner.schema.stores.sorted,
        );
        let (authz_store_calls, store_ticks) = inner.store_total();
        let sets = inner.schema.counters.iter().zip(inner.counter_offsets);
        out.counters.truncate(inner.schema.counters.len());
        for (i, (set, offset)) in sets.enumerate() {
            let table = &inner.counters[offset as usize..];
            match out.counters.get_mut(i) {
                Some(counters) if std::ptr::eq(counters.set, set.0) => {
                    collect_counters_into(&mut counters.values, set.0, table)
                }
                _ => {
                    out.counters.truncate(i);
                    let mut values = Vec::new();
                    collect_counters_into(&mut values, set.0, table);
                    out.counters.push(Counters { set: set.0, values });
                }
            }
        }
        let sets = inner.schema.timers.iter().zip(inner.timer_offsets);
        out.timers.truncate(inner.schema.timers.len());
        for (i, (set, offset)) in sets.enumerate() {
            let table = &inner.timers()[offset as usize..];
            match out.timers.get_mut(i) {
                Some(timers) if std::ptr::eq(timers.set, set.0) => {
                    collect_into(&mut timers.stats, table, ALL, set.0.names, set.0.sorted)
                }
                _ => {
                    out.timers.truncate(i);
                    let mut stats = Vec::new();
                    collect_into(&mut stats, table, ALL, set.0.names, set.0.sorted);
                    out.timers.push(Timers { set: set.0, stats });
                }
            }
        }
        if !inner.extra.is_empty() {
            let (counters, timers) = inner.extra.collect();
            out.counters.extend(counters);
            out.timers.extend(timers);
        }
        out.endpoint = inner.endpoint_name();
        out.elapsed = clock::ticks_to_duration(clock::span(inner.start_ticks, end.ticks));
        out.authz_store_calls = authz_store_calls;
        out.authz_store_time = clock::ticks_to_duration(store_ticks);
        out.decisions = inner.decisions();
        out.sse_events = inner.sse_events.load(Relaxed);
        out.db = inner
            .pool
            .as_ref()
            .zip(end.pool)
            .map(|((_, start), end)| DbFigures::between(*start, end));
        out.sse_stage = inner.stream.load(Relaxed).then_some(SseStage::Close);
        out.method = inner.method;
        out.request_id.clear();
        out.request_id.push_str(&inner.request_id);
        out.status = inner.status();
        out.groups = inner.schema.groups;
    }
}

/// Each key of `table` entered at least once, in name order; only the keys
/// in `touched` (a bit per key) are read.
#[inline]
fn each_stat(
    table: &[Stat],
    touched: u64,
    names: &'static [&'static str],
    sorted: &[u16],
    mut each: impl FnMut(&'static str, u64, Duration),
) {
    if touched == 0 {
        return;
    }
    for &i in sorted {
        if touched & 1 << i == 0 {
            continue;
        }
        let (count, ticks) = table[i as usize].read();
        if count > 0 {
            each(names[i as usize], count, clock::ticks_to_duration(ticks));
        }
    }
}

/// The non-zero counters of one set into `values`, sorted by rendered name
/// (`by` key, `_`, key).
fn collect_counters_into(
    values: &mut Vec<CounterStat>,
    set: &'static KeySetInfo,
    table: &[AtomicU64],
) {
    values.clear();
    // A new list is sized first (growing from empty would copy it more
    // than once); a reused one (a thread's own, for its lines) keeps its room.
    if values.capacity() == 0 {
        let table = &table[..set.slots()];
        values.reserve(table.iter().filter(|v| v.load(Relaxed) > 0).count());
    }
    each_counter(set, table, |by, name, value| {
        values.push(CounterStat { by, name, value })
    });
}

/// Each non-zero counter of `set`, whose slots start `table`, in the order
/// of its rendered name: `by` key, key, value.
fn each_counter(
    set: &'static KeySetInfo,
    table: &[AtomicU64],
    mut each: impl FnMut(Option<&'static str>, &'static str, u64),
) {
    let table = &table[..set.slots()];
    let Some(by) = set.by else {
        for &i in set.sorted {
            let value = table[i as usize].load(Relaxed);
            if value > 0 {
                each(None, set.names[i as usize], value);
            }
        }
        return;
    };
    // A paired set's order is that of `<by>_<name>`, which nesting the two
    // sets' orders does not give (`a_x` sorts after `a_b_y`): its non-zero
    // slots, a handful, are sorted here, on the stack unless there are many.
    let width = set.names.len();
    let names = |slot: u16| {
        let slot = usize::from(slot);
        (by.names[slot / width], set.names[slot % width])
    };
    // Slot numbers fit: a set has at most 64 keys, by at most 64.
    let mut few = [0u16; 32];
    let mut found = 0;
    let mut many = Vec::new();
    for (slot, value) in table.iter().enumerate() {
        if value.load(Relaxed) == 0 {
            continue;
        }
        let slot = slot as u16;
        if found < few.len() {
            few[found] = slot;
            found += 1;
        } else {
            if many.is_empty() {
                many.extend_from_slice(&few);
            }
            many.push(slot);
        }
    }
    let found = if many.is_empty() {
        &mut few[..found]
    } else {
        &mut many[..]
    };
    if found.len() > 1 {
        let rendered = |slot: u16| {
            let (by, name) = names(slot);
            CounterStat {
                by: Some(by),
                name,
                value: 0,
            }
        };
        found.sort_unstable_by(|&a, &b| {
            rendered(a)
                .rendered_bytes()
                .cmp(rendered(b).rendered_bytes())
        });
    }
    for &mut slot in found {
        let (by, name) = names(slot);
        // Read again: a counter never goes back to zero, so the slot is
        // still non-zero, and this is its latest value.
        let value = table[usize::from(slot)].load(Relaxed);
        each(Some(by), name, value);
    }
}

/// The keys of `table` entered at least once into `stats`, in name order.
fn collect_into(
    stats: &mut Vec<KeyStat>,
    table: &[Stat],
    touched: u64,
    names: &'static [&'static str],
    sorted: &[u16],
) {
    stats.clear();
    // As in `collect_counters_into`: a new list is sized first (growing
    // from empty would copy it more than once).
    if stats.capacity() == 0 {
        stats.reserve((touched.count_ones() as usize).min(sorted.len()));
    }
    each_stat(table, touched, names, sorted, |name, count, duration| {
        stats.push(KeyStat {
            name,
            count,
            duration,
        })
    });
}
