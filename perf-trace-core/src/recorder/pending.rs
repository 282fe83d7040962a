//! What this thread has recorded into the current recorder since it became
//! current, in plain thread-local memory: the phases, store calls and
//! decisions of one scope (one poll, one blocking closure) are summed here
//! without a single atomic operation, and added to the recorder's shared
//! table when the scope ends.
//!
//! A scope that records 3,500 decisions (an agent list at 500 agents) pays
//! for one atomic add per key it touched instead of two per decision. The
//! counts stay exact: whatever is pending belongs to the recorder current on
//! this thread, and it is flushed before that changes (entering or leaving a
//! scope, also by a panic) and before that recorder takes a snapshot on this
//! thread, so a request's other threads have flushed their work by the time
//! they hand their results back.

use std::cell::Cell;

use super::{Inner, Outcome, Table};
use crate::keys::MAX_KEYS;

/// A key's count and summed ticks, pending.
struct PendingStat {
    count: Cell<u64>,
    ticks: Cell<u64>,
}

impl PendingStat {
    const fn new() -> Self {
        PendingStat {
            count: Cell::new(0),
            ticks: Cell::new(0),
        }
    }
}

/// One table's pending keys, and which of them were touched (a bit per key:
/// a table has at most [`MAX_KEYS`] = 64 keys).
struct PendingTable {
    touched: Cell<u64>,
    stats: [PendingStat; MAX_KEYS],
}

impl PendingTable {
    const fn new() -> Self {
        PendingTable {
            touched: Cell::new(0),
            stats: [const { PendingStat::new() }; MAX_KEYS],
        }
    }

    #[inline(always)]
    fn add(&self, index: usize, ticks: u64) {
        let stat = &self.stats[index];
        stat.count.set(stat.count.get() + 1);
        stat.ticks.set(stat.ticks.get() + ticks);
        self.touched.set(self.touched.get() | 1 << index);
    }

    /// Adds every touched key to `current`'s `table` and clears it.
    fn flush(&self, current: &Inner, table: Table) {
        let touched = self.touched.replace(0);
        if touched == 0 {
            return;
        }
        let shared = current.table(table);
        let mut keys = touched;
        while keys != 0 {
            let index = keys.trailing_zeros() as usize;
            keys &= keys - 1;
            let stat = &self.stats[index];
            shared[index].add_n(stat.count.replace(0), stat.ticks.replace(0));
        }
        current.mark_touched(table, touched);
    }
}

struct Pending {
    /// Whether anything at all is pending: the one check a scope that
    /// recorded nothing pays when it ends.
    any: Cell<bool>,
    phases: PendingTable,
    stores: PendingTable,
    decisions: [Cell<u64>; 3],
    decision_ticks: Cell<u64>,
}

thread_local! {
    // Invariant: everything pending belongs to the recorder current on this
    // thread (`scope::CURRENT`), and nothing is pending while none is.
    static PENDING: Pending = const {
        Pending {
            any: Cell::new(false),
            phases: PendingTable::new(),
            stores: PendingTable::new(),
            decisions: [const { Cell::new(0) }; 3],
            decision_ticks: Cell::new(0),
        }
    };
}

/// Adds one timed event of key `index` of `table` for the current recorder.
#[inline(always)]
pub(crate) fn add_timed(table: Table, index: usize, ticks: u64) {
    PENDING.with(|p| {
        match table {
            Table::Phases => p.phases.add(index, ticks),
            Table::Stores => p.stores.add(index, ticks),
        }
        p.any.set(true);
    });
}

/// Adds one decision and its emission ticks for the current recorder.
#[inline(always)]
pub(crate) fn add_decision(outcome: Outcome, ticks: u64) {
    PENDING.with(|p| {
        let n = &p.decisions[outcome as usize];
        n.set(n.get() + 1);
        p.decision_ticks.set(p.decision_ticks.get() + ticks);
        p.any.set(true);
    });
}

/// Adds a batch of decisions, by outcome (allow, deny, other), whose
/// emissions took `ticks` in all, for the current recorder.
#[inline]
pub(crate) fn add_decisions(by_outcome: [u64; 3], ticks: u64) {
    PENDING.with(|p| {
        for (pending, n) in p.decisions.iter().zip(by_outcome) {
            pending.set(pending.get() + n);
        }
        p.decision_ticks.set(p.decision_ticks.get() + ticks);
        p.any.set(true);
    });
}

/// Adds everything pending to `current` (the recorder current on this
/// thread, whose events they are) and clears it.
#[inline]
pub(super) fn flush(current: &Inner) {
    PENDING.with(|p| {
        if p.any.replace(false) {
            flush_all(p, current);
        }
    });
}

#[inline(never)]
fn flush_all(p: &Pending, current: &Inner) {
    p.phases.flush(current, Table::Phases);
    p.stores.flush(current, Table::Stores);
    let decisions = [0, 1, 2].map(|i| p.decisions[i].replace(0));
    current.add_decisions(decisions, p.decision_ticks.replace(0));
}
