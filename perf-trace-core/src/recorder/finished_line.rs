//! A finished request's recorder read in place for its line: the fields
//! the renderer asks for, key by key, straight from the tables, with none
//! of a [`Snapshot`](crate::Snapshot)'s lists built. The line of every
//! request that has no exit is rendered this way.

use std::sync::atomic::Ordering::Relaxed;

use super::line_keys::{CounterKey, CounterKeys, TimedTable};
use super::{Inner, Recorder, RequestEnd, Stat, Table, ALL};
use crate::clock;
use crate::keys::{Groups, KeySetInfo};
use crate::line::{CounterName, FieldName, LineSource};
use crate::record::pool::DbFigures;
use crate::snapshot::{Decisions, SseStage};

/// A finished request's recorder, read in place for its line: what
/// [`Recorder::snapshot_into`] would collect, handed to the renderer key by
/// key without building the snapshot's lists.
pub(crate) struct FinishedLine<'a> {
    inner: &'a Inner,
    end: RequestEnd,
}

impl Recorder {
    /// The line of the request ended at `end`, read from the tables as it
    /// is rendered (the same line as rendering [`snapshot_at`](Self::snapshot_at)).
    pub(crate) fn line_at(&self, end: RequestEnd) -> FinishedLine<'_> {
        FinishedLine {
            inner: &self.0,
            end,
        }
    }
}

impl FinishedLine<'_> {
    /// Each key of the phase or store table added to at least once, in
    /// name order, with its field's keys.
    fn each_touched(&self, table: Table, each: impl FnMut(FieldName, u64, u64)) {
        let inner = self.inner;
        let keys = match table {
            Table::Phases => &inner.line_keys.phases,
            Table::Stores => &inner.line_keys.stores,
        };
        each_keyed(inner.table(table), inner.touched(table), keys, each);
    }
}

impl LineSource for FinishedLine<'_> {
    fn endpoint(&self) -> &str {
        self.inner.endpoint_name()
    }

    fn endpoint_is_plain(&self) -> bool {
        true
    }

    fn elapsed_us(&self) -> u64 {
        clock::ticks_to_micros(clock::span(self.inner.start_ticks, self.end.ticks))
    }

    fn phases(&self, each: impl FnMut(FieldName, u64, u64)) {
        self.each_touched(Table::Phases, each);
    }

    fn store_calls(&self, each: impl FnMut(FieldName, u64, u64)) {
        self.each_touched(Table::Stores, each);
    }

    fn store_total(&self) -> (u64, u64) {
        let (calls, ticks) = self.inner.store_total();
        (calls, clock::ticks_to_micros(ticks))
    }

    fn decisions(&self) -> Decisions {
        self.inner.decisions()
    }

    fn sse_events(&self) -> u64 {
        self.inner.sse_events.load(Relaxed)
    }

    fn db(&self) -> Option<DbFigures> {
        let (_, start) = self.inner.pool.as_ref()?;
        Some(DbFigures::between(*start, self.end.pool?))
    }

    fn counters(&self, mut each: impl FnMut(CounterName, u64)) {
        let inner = self.inner;
        let keys: &'static [CounterKeys] = &inner.line_keys.counters;
        for (keys, offset) in keys.iter().zip(inner.counter_offsets) {
            let offset = offset as usize;
            let table = &inner.counters[offset..offset + keys.rank.len()];
            let read = |key: &'static CounterKey| {
                let value = table[usize::from(key.slot)].load(Relaxed);
                (value > 0).then_some((CounterName::Key(&key.key), value))
            };
            if keys.rank.len() <= 64 {
                // A bit per touched slot, at its place in the line: read
                // back in order, with no sort.
                let mut in_order = 0u64;
                inner.each_touched_counter(offset, table.len(), |slot| {
                    in_order |= 1 << keys.rank[slot];
                });
                while in_order != 0 {
                    let place = in_order.trailing_zeros() as usize;
                    in_order &= in_order - 1;
                    if let Some((name, value)) = read(&keys.in_order[place]) {
                        each(name, value);
                    }
                }
            } else {
                paired_counters(inner, keys, offset, &mut each);
            }
        }
        if !inner.extra.is_empty() {
            unlisted_counters(inner, &mut each);
        }
    }

    fn timers(&self, mut each: impl FnMut(&'static KeySetInfo, FieldName, u64, u64)) {
        let inner = self.inner;
        let keys: &'static [TimedTable] = &inner.line_keys.timers;
        let sets = inner
            .schema
            .timers
            .iter()
            .zip(keys)
            .zip(inner.timer_offsets);
        for ((set, keys), offset) in sets {
            let table = &inner.timers()[offset as usize..];
            each_keyed(table, ALL, keys, |name, count, duration| {
                each(set.0, name, count, duration)
            });
        }
        if !inner.extra.is_empty() {
            unlisted_timers(inner, &mut each);
        }
    }

    fn sse_stage(&self) -> Option<SseStage> {
        self.inner.stream.load(Relaxed).then_some(SseStage::Close)
    }

    fn method(&self) -> &str {
        self.inner.method
    }

    fn method_is_plain(&self) -> bool {
        self.inner.method_plain
    }

    fn request_id(&self) -> &str {
        &self.inner.request_id
    }

    fn request_id_is_plain(&self) -> bool {
        self.inner.request_id_plain
    }

    fn status(&self) -> Option<u16> {
        self.inner.status()
    }

    fn groups(&self) -> Groups {
        self.inner.schema.groups
    }
}

/// The touched counters of a paired set of more than 64 slots, in line
/// order: the places of a handful sorted on the stack, every slot read
/// past a stack's worth. Out of line and called through `dyn`, so that the
/// renderer's common path stays small.
#[cold]
#[inline(never)]
fn paired_counters(
    inner: &Inner,
    keys: &'static CounterKeys,
    offset: usize,
    each: &mut dyn FnMut(CounterName, u64),
) {
    let table = &inner.counters[offset..offset + keys.rank.len()];
    let read = |key: &'static CounterKey| {
        let value = table[usize::from(key.slot)].load(Relaxed);
        (value > 0).then_some((CounterName::Key(&key.key), value))
    };
    let mut places = [0u16; 16];
    let mut found = 0;
    inner.each_touched_counter(offset, table.len(), |slot| {
        if let Some(place) = places.get_mut(found) {
            *place = keys.rank[slot];
        }
        found += 1;
    });
    if found > places.len() {
        for (name, value) in keys.in_order.iter().filter_map(read) {
            each(name, value);
        }
        return;
    }
    let places = &mut places[..found];
    places.sort_unstable();
    for &place in places.iter() {
        if let Some((name, value)) = read(&keys.in_order[usize::from(place)]) {
            each(name, value);
        }
    }
}

/// The counters of the sets the schema does not list, after the listed
/// ones, as a snapshot holds them.
#[cold]
#[inline(never)]
fn unlisted_counters(inner: &Inner, each: &mut impl FnMut(CounterName, u64)) {
    for set in inner.extra.collect().0 {
        for value in set.values {
            let name = CounterName::Name {
                set: set.set,
                by: value.by,
                name: value.name,
            };
            each(name, value.value);
        }
    }
}

/// The timers of the sets the schema does not list, after the listed ones.
#[cold]
#[inline(never)]
fn unlisted_timers(inner: &Inner, each: &mut impl FnMut(&'static KeySetInfo, FieldName, u64, u64)) {
    for set in inner.extra.collect().1 {
        for stat in set.stats {
            each(
                set.set,
                FieldName::Name(stat.name),
                stat.count,
                crate::line::micros(stat.duration),
            );
        }
    }
}

/// Each key of `table` in `touched` (a bit per key) entered at least once,
/// in the order of `keys`, with its field's keys.
#[inline]
fn each_keyed(
    table: &[Stat],
    touched: u64,
    keys: &'static TimedTable,
    mut each: impl FnMut(FieldName, u64, u64),
) {
    // A bit per touched key at its place in the line, read back in order:
    // a request touches a few of a set's keys, and the line visits those
    // only.
    let mut touched = touched & low_bits(keys.place.len());
    let mut in_order = 0u64;
    while touched != 0 {
        in_order |= 1 << keys.place[touched.trailing_zeros() as usize];
        touched &= touched - 1;
    }
    while in_order != 0 {
        let key = &keys.in_order[in_order.trailing_zeros() as usize];
        in_order &= in_order - 1;
        let (count, ticks) = table[usize::from(key.index)].read();
        if count > 0 {
            each(
                FieldName::Keys(key.keys()),
                count,
                clock::ticks_to_micros(ticks),
            );
        }
    }
}

/// The lowest `n` bits (`n` at most 64).
#[inline]
fn low_bits(n: usize) -> u64 {
    u64::MAX.checked_shr(64 - n as u32).unwrap_or(0)
}

#[cfg(test)]
mod tests {
    use std::time::{Duration, UNIX_EPOCH};

    use std::sync::Arc;

    use super::super::{Outcome, PoolFigures, PoolStats};
    use super::*;
    use crate::guard::TimedGuard;
    use crate::record::{
        add_sse_events, count_n, count_n_by, mark_stream, record_decision, set_endpoint, time,
    };
    use crate::test_keys::{Bare, Batch, Cache, Endpoint, Full, Method, Phase, Render};
    use crate::{KeySet, LineFormat};

    struct FixedPool;

    impl PoolStats for FixedPool {
        fn pool_figures(&self) -> PoolFigures {
            PoolFigures {
                wait_count: 9,
                wait_time: Duration::from_micros(1_234),
                in_use: 2,
                open: 4,
            }
        }
    }

    /// The line rendered from the recorder in place and the line rendered
    /// from its snapshot at the same end.
    fn both_lines(recorder: &Recorder) -> (String, String) {
        let end = recorder.end_now();
        let format = LineFormat::scion("svc");
        let mut in_place = String::new();
        format.render_onto(&recorder.line_at(end), 0, &mut in_place);
        let mut from_snapshot = String::new();
        format.render(&recorder.snapshot_at(end), UNIX_EPOCH, &mut from_snapshot);
        (in_place, from_snapshot)
    }

    #[test]
    fn the_line_read_in_place_is_the_snapshot_s_line_byte_for_byte() {
        let pool: Arc<dyn PoolStats> = Arc::new(FixedPool);
        let start = PoolFigures {
            wait_count: 1,
            ..FixedPool.pool_figures()
        };
        let builder = || Recorder::builder().method("GET").pool(Arc::clone(&pool));
        let cases = [
            // Nothing recorded, a request id that must be escaped, a pool.
            builder().request_id("odd \"id\"\n").build::<Full>(),
            // Everything, the layer's kind of id, the pool from a baseline.
            builder()
                .request_id("0b9e5f8a-3c1d-4e2f-9a7b-6c5d4e3f2a1b")
                .pool_since(start)
                .build::<Full>(),
            // A few keys, no id, no pool.
            Recorder::builder().method("PUT").build::<Full>(),
        ];
        for (i, recorder) in cases.iter().enumerate() {
            recorder.in_scope(|| {
                if i == 0 {
                    return;
                }
                set_endpoint(Endpoint::AB);
                drop(TimedGuard::phase(Phase::Render));
                drop(TimedGuard::store_call(Method::ListThings));
                count_n(Batch::Largest, 7);
                count_n(Batch::Largest, 3);
                count_n_by(Endpoint::A, Cache::X, 2);
                time(Render::Footer, || ());
                if i == 2 {
                    return;
                }
                for (n, endpoint) in Endpoint::ALL.iter().enumerate() {
                    for (m, outcome) in Cache::ALL.iter().enumerate() {
                        count_n_by(*endpoint, *outcome, (n * 10 + m + 1) as u64);
                    }
                }
                for phase in Phase::ALL {
                    drop(TimedGuard::phase(*phase));
                }
                for method in Method::ALL {
                    drop(TimedGuard::store_call(*method));
                }
                count_n(Batch::Size, 12);
                count_n(Batch::Count, 1);
                for timer in Render::ALL {
                    time(*timer, || ());
                }
                record_decision(Outcome::Allow);
                record_decision(Outcome::Deny);
                record_decision(Outcome::Other);
                add_sse_events(3);
                mark_stream();
            });
            let (in_place, from_snapshot) = both_lines(recorder);
            assert_eq!(in_place, from_snapshot, "case {i}");
            let value: serde_json::Value = serde_json::from_str(&in_place).expect("JSON");
            assert_eq!(value["method"], if i == 2 { "PUT" } else { "GET" });
            if i == 1 {
                // More non-zero counters of the paired set than the stack
                // keeps, in the order of their rendered names.
                let cache: Vec<&str> = value
                    .as_object()
                    .expect("an object")
                    .keys()
                    .filter_map(|k| k.strip_prefix("cache_"))
                    .collect();
                assert_eq!(cache.len(), Endpoint::ALL.len() * Cache::ALL.len());
                assert!(cache.is_sorted(), "{cache:?}");
                assert_eq!(cache[..2], ["a_b_hit", "a_b_miss"]);
                assert_eq!(value["db_wait_count"], 8);
            }
        }
    }

    #[test]
    fn sets_the_schema_does_not_list_reach_the_line_after_the_listed_ones() {
        let cases = [
            (Recorder::new::<Bare>(), true),
            (Recorder::new::<Full>(), false),
        ];
        for (recorder, batch_first) in cases {
            recorder.in_scope(|| {
                count_n(Batch::Largest, 7);
                count_n(Batch::Largest, 3);
                count_n(Batch::Size, 2);
                count_n_by(Endpoint::A, Cache::X, 2);
                time(Render::Footer, || ());
            });
            let (in_place, from_snapshot) = both_lines(&recorder);
            assert_eq!(in_place, from_snapshot);
            // Unlisted sets by prefix, after the listed ones: `batch`,
            // `cache` for Bare; `cache`, `batch` (the schema's order) for Full.
            let at = |key: &str| in_place.find(key).expect(key);
            let (batch, cache) = (
                at(r#""batch_largest":7,"batch_size":2,"#),
                at(r#""cache_a_x":2,"#),
            );
            assert_eq!(batch < cache, batch_first, "{in_place}");
            assert!(cache < at(r#""render_footer_n":1,"#), "{in_place}");
            let value: serde_json::Value = serde_json::from_str(&in_place).expect("JSON");
            assert_eq!(value["batch_largest"], 7);
            assert_eq!(value["batch_size"], 2);
            assert_eq!(value["cache_a_x"], 2);
            assert_eq!(value["render_footer_n"], 1);
            let snapshot = recorder.snapshot();
            assert_eq!(snapshot.counter(Batch::Largest), 7);
            assert_eq!(snapshot.counter_by(Endpoint::A, Cache::X), 2);
            assert_eq!(snapshot.timer(Render::Footer).count, 1);
        }
    }
}
