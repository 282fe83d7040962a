//! The JSON keys of a schema's fields, rendered once per schema: each with
//! its separator, quotes and colon (`,"phase_load_us":`), each set's in the
//! line's order. A request's line then writes one key per field, where
//! assembling it from the prefix, the name and the suffix took three
//! copies. A paired counter set's keys are kept in the order of their
//! rendered names with each slot's place among them, so a line puts its
//! few touched slots in order by place, with no name compared and no
//! division per slot.

use std::any::TypeId;
use std::sync::Mutex;

use crate::keys::{KeySetInfo, Schema, SchemaInfo};

/// A timed field's two keys: `,"phase_load_us":` then `,"phase_load_n":`,
/// or the other way round for a store method (its count first).
#[derive(Debug)]
pub(crate) struct TimedKeys {
    /// The key's index in its table.
    pub(crate) index: u16,
    keys: Box<str>,
    /// Where the second key starts in `keys`.
    split: u16,
}

impl TimedKeys {
    fn new(index: u16, first: String, second: &str) -> Self {
        let split = u16::try_from(first.len()).expect("a key name under 64 KiB");
        TimedKeys {
            index,
            keys: (first + second).into_boxed_str(),
            split,
        }
    }

    /// The first key in line order, then the second.
    #[inline]
    pub(crate) fn keys(&self) -> (&str, &str) {
        self.keys.split_at(usize::from(self.split))
    }
}

/// A counter's key: `,"cache_hit":`, or `,"cache_agents.project_hit":` for
/// a paired set.
#[derive(Debug)]
pub(crate) struct CounterKey {
    /// The counter's slot in its set.
    pub(crate) slot: u16,
    pub(crate) key: Box<str>,
}

/// The keys of one counter set.
#[derive(Debug)]
pub(crate) struct CounterKeys {
    /// Every slot, by rendered name.
    pub(crate) in_order: Box<[CounterKey]>,
    /// Each slot's place in `in_order`.
    pub(crate) rank: Box<[u16]>,
}

/// The keys of one table of timed keys (a set has at most
/// [`MAX_KEYS`](crate::keys::MAX_KEYS) = 64).
#[derive(Debug)]
pub(crate) struct TimedTable {
    /// Every key, by name.
    pub(crate) in_order: Box<[TimedKeys]>,
    /// Each key's place in `in_order`, by its index in the table.
    pub(crate) place: Box<[u8]>,
}

impl TimedTable {
    fn new(in_order: Box<[TimedKeys]>) -> Self {
        let mut place = vec![0; in_order.len()].into_boxed_slice();
        for (at, key) in in_order.iter().enumerate() {
            place[usize::from(key.index)] = u8::try_from(at).expect("at most 64 keys a set");
        }
        TimedTable { in_order, place }
    }
}

/// Every field key of one schema, each set's in the line's order.
#[derive(Debug)]
pub(crate) struct LineKeys {
    pub(crate) phases: TimedTable,
    pub(crate) stores: TimedTable,
    /// Per counter set, in the schema's order.
    pub(crate) counters: Box<[CounterKeys]>,
    /// Per timer set, in the schema's order.
    pub(crate) timers: Box<[TimedTable]>,
}

/// The keys of every schema a recorder was built for, made once each and
/// kept for the life of the process (a program has a handful of schemas).
static SCHEMAS: Mutex<Vec<(TypeId, &'static LineKeys)>> = Mutex::new(Vec::new());

impl LineKeys {
    /// The keys of schema `S`, rendered on its first recorder.
    pub(crate) fn of<S: Schema>() -> &'static LineKeys {
        let id = TypeId::of::<S>();
        let mut schemas = SCHEMAS.lock().unwrap_or_else(|e| e.into_inner());
        if let Some((_, keys)) = schemas.iter().find(|(schema, _)| *schema == id) {
            return keys;
        }
        let keys: &'static LineKeys = Box::leak(Box::new(LineKeys::render(&SchemaInfo::of::<S>())));
        schemas.push((id, keys));
        keys
    }

    fn render(schema: &SchemaInfo) -> LineKeys {
        let timed = |names: &[&str], sorted: &[u16], prefix: &str, n_first: bool| {
            let in_order = sorted
                .iter()
                .map(|&i| {
                    let name = names[usize::from(i)];
                    let us = format!(",\"{prefix}{name}_us\":");
                    let n = format!(",\"{prefix}{name}_n\":");
                    match n_first {
                        false => TimedKeys::new(i, us, &n),
                        true => TimedKeys::new(i, n, &us),
                    }
                })
                .collect();
            TimedTable::new(in_order)
        };
        LineKeys {
            phases: timed(schema.phases.names, schema.phases.sorted, "phase_", false),
            stores: timed(schema.stores.names, schema.stores.sorted, "store_", true),
            counters: schema
                .counters
                .iter()
                .map(|set| counter_keys(set.0))
                .collect(),
            timers: schema
                .timers
                .iter()
                .map(|set| {
                    let prefix = format!("{}_", set.0.prefix);
                    timed(set.0.names, set.0.sorted, &prefix, false)
                })
                .collect(),
        }
    }
}

/// Every slot of counter set `set` with its key, by rendered name: for a
/// paired set `<by>_<name>`, which nesting the two sets' orders does not
/// give (`a_x` sorts after `a_b_y`).
fn counter_keys(set: &'static KeySetInfo) -> CounterKeys {
    let prefix = set.prefix;
    let mut keys: Vec<(String, u16)> = match set.by {
        None => set
            .sorted
            .iter()
            .map(|&i| (set.names[usize::from(i)].to_owned(), i))
            .collect(),
        Some(by) => {
            let width = set.names.len();
            (0..set.slots())
                .map(|slot| {
                    let rendered =
                        format!("{}_{}", by.names[slot / width], set.names[slot % width]);
                    (rendered, slot as u16)
                })
                .collect()
        }
    };
    keys.sort_by(|a, b| a.0.as_bytes().cmp(b.0.as_bytes()));
    let mut rank = vec![0; keys.len()].into_boxed_slice();
    for (place, (_, slot)) in keys.iter().enumerate() {
        rank[usize::from(*slot)] = place as u16;
    }
    let in_order = keys
        .into_iter()
        .map(|(name, slot)| CounterKey {
            slot,
            key: format!(",\"{prefix}_{name}\":").into_boxed_str(),
        })
        .collect();
    CounterKeys { in_order, rank }
}
