//! Counter and timer sets the schema does not list, recorded all the same.
//!
//! A schema lists its sets ([`Schema::COUNTERS`](crate::Schema::COUNTERS),
//! [`Schema::TIMERS`](crate::Schema::TIMERS)) so that their tables are laid
//! out with the recorder and their field keys rendered once; a set left
//! out still reaches the line, after the listed ones, from a table made
//! on its first use in the request. That path takes a lock and may
//! allocate, which a listed set never does: list the sets a service
//! records on every request.

use std::sync::atomic::{AtomicBool, Ordering::Relaxed};

use parking_lot::Mutex;

use crate::clock;
use crate::keys::{KeySetInfo, Role};
use crate::snapshot::{CounterStat, Counters, KeyStat, Timers};

/// One slot of a set: a count (or the largest value, for a max counter)
/// and, for a timer, its summed ticks.
#[derive(Debug, Default, Clone, Copy)]
struct Slot {
    count: u64,
    ticks: u64,
}

/// One unlisted set's slots.
#[derive(Debug)]
struct ExtraSet {
    set: &'static KeySetInfo,
    slots: Box<[Slot]>,
}

/// The unlisted sets one request recorded, in order of first use.
#[derive(Debug, Default)]
pub(crate) struct ExtraSets {
    /// Whether any set is held: read before the lock, so that a line with
    /// none (the rule) takes no lock.
    any: AtomicBool,
    sets: Mutex<Vec<ExtraSet>>,
}

impl ExtraSets {
    /// Adds `count` events taking `ticks` to `slot` of `set` (keeps the
    /// larger count for a max counter).
    #[cold]
    #[inline(never)]
    pub(crate) fn add(&self, set: &'static KeySetInfo, slot: usize, count: u64, ticks: u64) {
        let mut sets = self.sets.lock();
        let at = match sets.iter().position(|s| std::ptr::eq(s.set, set)) {
            Some(at) => at,
            None => {
                let slots = vec![Slot::default(); set.slots()].into_boxed_slice();
                sets.push(ExtraSet { set, slots });
                self.any.store(true, Relaxed);
                sets.len() - 1
            }
        };
        let Some(held) = sets[at].slots.get_mut(slot) else {
            return;
        };
        let key = slot % set.names.len();
        if matches!(set.role, Role::Counters) && set.max_mask & (1 << key) != 0 {
            held.count = held.count.max(count);
        } else {
            held.count += count;
        }
        held.ticks += ticks;
    }

    /// Forgets every set, for the recorder's next request.
    pub(crate) fn clear(&mut self) {
        *self.any.get_mut() = false;
        self.sets.get_mut().clear();
    }

    /// Whether no unlisted set was recorded.
    #[inline]
    pub(crate) fn is_empty(&self) -> bool {
        !self.any.load(Relaxed)
    }

    /// The unlisted counter sets and timer sets, each set's values in the
    /// line's order, the sets by prefix (a request's order of first use
    /// is not the next one's).
    #[cold]
    #[inline(never)]
    pub(crate) fn collect(&self) -> (Vec<Counters>, Vec<Timers>) {
        let mut sets: Vec<_> = self
            .sets
            .lock()
            .iter()
            .map(|s| (s.set, s.slots.clone()))
            .collect();
        sets.sort_by_key(|(set, _)| set.prefix);
        let (mut counters, mut timers) = (Vec::new(), Vec::new());
        for (set, slots) in sets {
            if matches!(set.role, Role::Timers) {
                let stats = set
                    .sorted
                    .iter()
                    .map(|&i| (set.names[usize::from(i)], slots[usize::from(i)]))
                    .filter(|(_, slot)| slot.count > 0)
                    .map(|(name, slot)| KeyStat {
                        name,
                        count: slot.count,
                        duration: clock::ticks_to_duration(slot.ticks),
                    })
                    .collect();
                timers.push(Timers { set, stats });
            } else {
                counters.push(Counters {
                    set,
                    values: counter_values(set, &slots),
                });
            }
        }
        (counters, timers)
    }
}

/// The non-zero counters of `set` from its `slots`, by rendered name.
fn counter_values(set: &'static KeySetInfo, slots: &[Slot]) -> Vec<CounterStat> {
    let width = set.names.len();
    let mut values: Vec<CounterStat> = slots
        .iter()
        .enumerate()
        .filter(|(_, slot)| slot.count > 0)
        .map(|(at, slot)| CounterStat {
            by: set.by.map(|by| by.names[at / width]),
            name: set.names[at % width],
            value: slot.count,
        })
        .collect();
    values.sort_by(|a, b| a.rendered_bytes().cmp(b.rendered_bytes()));
    values
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::keys::KeySet;

    #[derive(crate::KeySet, Clone, Copy, PartialEq, Eq, Debug)]
    #[key_set(counters, prefix = "zeta")]
    enum Zeta {
        B,
        A,
        #[key(max)]
        Most,
    }

    #[derive(crate::KeySet, Clone, Copy, PartialEq, Eq, Debug)]
    #[key_set(timers, prefix = "alpha")]
    enum Alpha {
        Only,
    }

    #[test]
    fn unlisted_sets_come_back_by_prefix_with_their_values_by_name() {
        let mut extra = ExtraSets::default();
        assert!(extra.is_empty());
        extra.add(Zeta::INFO, Zeta::B.index(), 2, 0);
        extra.add(Zeta::INFO, Zeta::A.index(), 1, 0);
        extra.add(Zeta::INFO, Zeta::Most.index(), 7, 0);
        extra.add(Zeta::INFO, Zeta::Most.index(), 3, 0);
        extra.add(Alpha::INFO, Alpha::Only.index(), 1, 0);
        assert!(!extra.is_empty());
        let (counters, timers) = extra.collect();
        let values: Vec<_> = counters[0]
            .values
            .iter()
            .map(|v| (v.name, v.value))
            .collect();
        assert_eq!(values, [("a", 1), ("b", 2), ("most", 7)]);
        assert_eq!(timers[0].stats[0].count, 1);
        assert_eq!(timers[0].stats[0].duration, std::time::Duration::ZERO);
        extra.clear();
        assert!(extra.is_empty());
        assert_eq!(extra.collect().0.len(), 0);
    }
}
