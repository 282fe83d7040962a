//! Invalidation by stamps: a write moves on the stamp of what it changed,
//! and a cache key carries the stamp read when the request looked it up.
//!
//! Entries computed before a write keep their old stamp and are never found
//! again (they age out with their TTL). This also covers a computation that
//! started before the write and ends after it: removing entries could not,
//! since that computation would insert its stale answer after the removal.

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};

use parking_lot::RwLock;

use crate::model::Id;

/// The stamps of everything a cached response can show.
#[derive(Debug, Default)]
pub(crate) struct Generations {
    /// Moved by changes that may touch any response (hub settings).
    everything: AtomicU64,
    /// Moved by any agent write: the global lists show every project.
    any_agent: AtomicU64,
    /// Moved per project (its list) and per agent (its read).
    scoped: RwLock<HashMap<Id, u64>>,
}

impl Generations {
    /// The stamp of a response that shows `scope` (a project or an agent).
    pub(crate) fn of_scope(&self, scope: &str) -> (u64, u64) {
        let scoped = self.scoped.read().get(scope).copied().unwrap_or(0);
        (self.everything.load(Ordering::Acquire), scoped)
    }

    /// The stamp of a response that shows every project's agents.
    pub(crate) fn of_all_agents(&self) -> (u64, u64) {
        (
            self.everything.load(Ordering::Acquire),
            self.any_agent.load(Ordering::Acquire),
        )
    }

    /// The stamp of a response that shows no stored data.
    pub(crate) fn of_nothing(&self) -> (u64, u64) {
        (self.everything.load(Ordering::Acquire), 0)
    }

    /// After an agent's row changed: its read, its project's lists and the
    /// global lists.
    pub(crate) fn agent_changed(&self, agent: &Id, project: &Id) {
        {
            let mut scoped = self.scoped.write();
            for id in [agent, project] {
                *scoped.entry(id.clone()).or_insert(0) += 1;
            }
        }
        self.any_agent.fetch_add(1, Ordering::AcqRel);
    }

    /// After a change that may touch any response.
    pub(crate) fn everything_changed(&self) {
        self.everything.fetch_add(1, Ordering::AcqRel);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_write_moves_the_stamps_of_what_it_shows_only() {
        let generations = Generations::default();
        let (agent, project, other) = (Id::from("a1"), Id::from("p1"), Id::from("p2"));
        let before = (
            generations.of_scope(&agent),
            generations.of_scope(&project),
            generations.of_scope(&other),
            generations.of_all_agents(),
            generations.of_nothing(),
        );
        generations.agent_changed(&agent, &project);
        assert_ne!(generations.of_scope(&agent), before.0);
        assert_ne!(generations.of_scope(&project), before.1);
        assert_eq!(generations.of_scope(&other), before.2);
        assert_ne!(generations.of_all_agents(), before.3);
        assert_eq!(generations.of_nothing(), before.4);
        let settled = generations.of_scope(&other);
        generations.everything_changed();
        assert_ne!(generations.of_scope(&other), settled);
        assert_ne!(generations.of_nothing(), before.4);
    }
}
