//! The connections the Hub holds open, bounded so that a flood of idle
//! clients cannot use up its descriptors or keep `/healthz` and callers
//! with a credential out.
//!
//! - At start, `serve` raises the soft limit on open descriptors to the
//!   hard one, as Go's runtime does (`raise_descriptor_limit`).
//! - One cap over every listener (`ConnectionCaps::capacity`), below the
//!   soft limit with room kept for the database, the log and the event
//!   relay; at it, the accept loop stops accepting and clients wait in the
//!   kernel's queue. A listener with a cap of its own (the metrics port)
//!   is bounded by that instead, and its connections, counted here too, are
//!   never on probation.
//! - The last `ConnectionCaps::headroom` connections below the cap, and
//!   a client address's connections past `ConnectionCaps::per_address`,
//!   are on probation: the first request's head must arrive within
//!   `PROBATION_HEAD_TIMEOUT` and be `GET /healthz` or carry a
//!   credential (a bearer header or the session cookie), or the connection
//!   is answered 503 (429 past the address's cap) with `Retry-After` and
//!   closed. Anonymous clients are refused first; the room left is for
//!   health checks and for callers (a health check's connection, or one
//!   whose credential is refused, is closed once answered).
//! - As connections near the cap, idle keep-alive connections (and ones
//!   that have sent nothing yet) are closed sooner (`ConnectionGate::scaled`).
//! - `/healthz` shows the figures under `connections`
//!   ([`ConnectionStats::figures`]) while the Hub serves.
//!
//! It lives below both the app, whose accept loop (`crate::app::accept`)
//! applies it, and the handlers, which read its figures and the client's
//! address.

use std::collections::HashMap;
use std::io;
use std::net::{IpAddr, SocketAddr};
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

use parking_lot::Mutex;
use serde::Serialize;

use crate::settings::ServerLimits;

/// The client address of a request: the peer of the connection it came
/// on, as accepted (never a header the client wrote). Put in each served
/// request's extensions; absent when a router is called in-process.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ClientAddr(pub SocketAddr);

impl ClientAddr {
    /// The peer's IP address.
    pub(crate) fn ip(&self) -> IpAddr {
        self.0.ip()
    }
}

/// Longest a connection on probation may take to send its first request
/// head (never longer than the header-read timeout).
pub(crate) const PROBATION_HEAD_TIMEOUT: Duration = Duration::from_secs(1);

/// The shortest an idle or silent connection is kept under pressure
/// (never longer than its own timeout).
const PRESSED_QUIET_FLOOR: Duration = Duration::from_millis(500);

/// Descriptors kept for everything but connections: at least this many...
const RESERVED_DESCRIPTORS: u64 = 64;
/// ...or this share of the soft limit, whichever is more.
const RESERVED_SHARE: u64 = 8;

/// The cap used when the descriptor limit cannot be read.
const FALLBACK_CAPACITY: usize = 4_096;

/// The soft and hard limits on the process's open descriptors.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct DescriptorLimit {
    /// The limit in force.
    pub soft: u64,
    /// How far the soft limit may be raised.
    pub hard: u64,
}

/// The process's descriptor limits now.
pub(crate) fn descriptor_limit() -> io::Result<DescriptorLimit> {
    let (soft, hard) = rlimit::getrlimit(rlimit::Resource::NOFILE)?;
    Ok(DescriptorLimit { soft, hard })
}

/// Raises the soft limit on open descriptors as far as the hard one allows
/// (the platform's own ceiling too), and returns the limits then in force.
pub(crate) fn raise_descriptor_limit() -> io::Result<DescriptorLimit> {
    rlimit::increase_nofile_limit(u64::MAX)?;
    descriptor_limit()
}

/// The caps on connections.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct ConnectionCaps {
    /// Most connections open at once, over every listener.
    pub capacity: usize,
    /// The connections below `capacity` kept for `/healthz` and requests
    /// with a credential.
    pub headroom: usize,
    /// Most connections of one address before its further ones are on
    /// probation.
    pub per_address: usize,
}

impl ConnectionCaps {
    /// The caps of `limits`; an unset capacity is derived from
    /// `soft_limit`, the descriptors the process may open.
    pub fn derive(limits: &ServerLimits, soft_limit: Option<u64>) -> ConnectionCaps {
        let derived = || match soft_limit {
            Some(soft) => {
                let reserved = RESERVED_DESCRIPTORS.max(soft / RESERVED_SHARE);
                usize::try_from(soft.saturating_sub(reserved))
                    .unwrap_or(usize::MAX)
                    .max(2)
            }
            None => FALLBACK_CAPACITY,
        };
        let capacity = limits.max_connections.unwrap_or_else(derived).max(2);
        let headroom = (capacity / 8).max(4).min(capacity / 2).max(1);
        let per_address = limits
            .max_connections_per_address
            .unwrap_or(capacity / 2)
            .clamp(1, capacity);
        ConnectionCaps {
            capacity,
            headroom,
            per_address,
        }
    }
}

/// Why a connection is on probation.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Probation {
    /// It came within the headroom below the cap.
    Headroom,
    /// Its address holds its cap of connections.
    Address,
}

/// The figures of the connections, shared between the accept loop and
/// `/healthz` (cheap to clone). All zero until the Hub serves.
#[derive(Debug, Clone, Default)]
pub struct ConnectionStats(Arc<StatsInner>);

#[derive(Debug, Default)]
struct StatsInner {
    open: AtomicUsize,
    refused: AtomicU64,
    capacity: AtomicUsize,
    headroom: AtomicUsize,
    per_address: AtomicUsize,
}

/// What `/healthz` shows under `connections`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ConnectionFigures {
    /// Connections open now, over every listener.
    pub open: usize,
    /// The caps in force.
    #[serde(flatten)]
    pub(crate) caps: ConnectionCaps,
    /// Connections answered 503 or 429 on probation, or closed there
    /// without a request, since the Hub started.
    pub refused: u64,
}

impl ConnectionStats {
    /// The figures, or `None` while the Hub is not serving (called
    /// in-process).
    pub fn figures(&self) -> Option<ConnectionFigures> {
        let capacity = self.0.capacity.load(Ordering::Relaxed);
        (capacity > 0).then(|| ConnectionFigures {
            open: self.0.open.load(Ordering::Relaxed),
            caps: ConnectionCaps {
                capacity,
                headroom: self.0.headroom.load(Ordering::Relaxed),
                per_address: self.0.per_address.load(Ordering::Relaxed),
            },
            refused: self.0.refused.load(Ordering::Relaxed),
        })
    }
}

/// Admits connections under [`ConnectionCaps`] and counts them in
/// [`ConnectionStats`].
#[derive(Debug)]
pub(crate) struct ConnectionGate {
    caps: ConnectionCaps,
    stats: ConnectionStats,
    by_address: Mutex<HashMap<IpAddr, usize>>,
}

impl ConnectionGate {
    /// A gate with `caps`, its figures in `stats`.
    pub(crate) fn new(caps: ConnectionCaps, stats: ConnectionStats) -> Arc<ConnectionGate> {
        let inner = &stats.0;
        inner.capacity.store(caps.capacity, Ordering::Relaxed);
        inner.headroom.store(caps.headroom, Ordering::Relaxed);
        inner.per_address.store(caps.per_address, Ordering::Relaxed);
        Arc::new(ConnectionGate {
            caps,
            stats,
            by_address: Mutex::default(),
        })
    }

    fn open(&self) -> usize {
        self.stats.0.open.load(Ordering::Acquire)
    }

    /// Whether another connection may be accepted.
    pub(crate) fn has_room(&self) -> bool {
        self.open() < self.caps.capacity
    }

    /// Counts a connection from `peer`, and says whether it is on
    /// probation; it is counted until the slot is dropped.
    pub(crate) fn admit(self: &Arc<Self>, peer: IpAddr) -> (GateSlot, Option<Probation>) {
        let before = self.stats.0.open.fetch_add(1, Ordering::AcqRel);
        let of_address = {
            let mut by_address = self.by_address.lock();
            let count = by_address.entry(peer).or_insert(0);
            *count += 1;
            *count - 1
        };
        let probation = if of_address >= self.caps.per_address {
            Some(Probation::Address)
        } else if before >= self.caps.capacity - self.caps.headroom {
            Some(Probation::Headroom)
        } else {
            None
        };
        let slot = GateSlot {
            gate: Arc::clone(self),
            peer,
        };
        (slot, probation)
    }

    /// Counts a connection refused on probation.
    pub(crate) fn refuse(&self) {
        self.stats.0.refused.fetch_add(1, Ordering::Relaxed);
    }

    /// `quiet`, the time an idle or silent connection is kept, shortened
    /// as the open connections near the cap: whole up to half of it, then
    /// in proportion to the room left, down to a floor at the cap.
    pub(crate) fn scaled(&self, quiet: Duration) -> Duration {
        scaled_at(quiet, self.open(), self.caps.capacity)
    }
}

fn scaled_at(quiet: Duration, open: usize, capacity: usize) -> Duration {
    let half = capacity / 2;
    if open <= half {
        return quiet;
    }
    let room = capacity.saturating_sub(open) as f64 / (capacity - half).max(1) as f64;
    quiet.mul_f64(room).max(PRESSED_QUIET_FLOOR.min(quiet))
}

/// A connection counted by its gate until it ends.
#[derive(Debug)]
pub(crate) struct GateSlot {
    gate: Arc<ConnectionGate>,
    peer: IpAddr,
}

impl Drop for GateSlot {
    fn drop(&mut self) {
        {
            let mut by_address = self.gate.by_address.lock();
            if let Some(count) = by_address.get_mut(&self.peer) {
                *count -= 1;
                if *count == 0 {
                    by_address.remove(&self.peer);
                }
            }
        }
        self.gate.stats.0.open.fetch_sub(1, Ordering::AcqRel);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn caps(max: Option<usize>, per_address: Option<usize>, soft: Option<u64>) -> ConnectionCaps {
        let limits = ServerLimits {
            max_connections: max,
            max_connections_per_address: per_address,
            ..ServerLimits::default()
        };
        ConnectionCaps::derive(&limits, soft)
    }

    #[test]
    fn the_cap_is_derived_below_the_soft_limit() {
        let at_1024 = caps(None, None, Some(1024));
        assert_eq!(at_1024.capacity, 1024 - 128);
        assert_eq!(at_1024.headroom, 112);
        assert_eq!(at_1024.per_address, 448);
        assert_eq!(caps(None, None, Some(256)).capacity, 256 - 64);
        assert_eq!(caps(None, None, None).capacity, FALLBACK_CAPACITY);
        let set = caps(Some(20), Some(3), Some(1024));
        assert_eq!((set.capacity, set.headroom, set.per_address), (20, 4, 3));
    }

    #[test]
    fn the_headroom_and_an_addresss_excess_are_on_probation() {
        let stats = ConnectionStats::default();
        assert_eq!(stats.figures(), None, "not serving");
        let gate = ConnectionGate::new(caps(Some(8), Some(5), None), stats.clone());
        let (a, b): (IpAddr, IpAddr) = ("10.0.0.1".parse().unwrap(), "10.0.0.2".parse().unwrap());
        let mut slots = Vec::new();
        for _ in 0..4 {
            let (slot, probation) = gate.admit(a);
            assert_eq!(probation, None);
            slots.push(slot);
        }
        let (slot, probation) = gate.admit(b);
        assert_eq!(probation, Some(Probation::Headroom), "4 of 8 kept");
        slots.push(slot);
        let (slot, probation) = gate.admit(a);
        assert_eq!(probation, Some(Probation::Headroom));
        slots.push(slot);
        let (slot, probation) = gate.admit(a);
        assert_eq!(probation, Some(Probation::Address), "a's sixth");
        slots.push(slot);
        assert!(gate.has_room());
        slots.push(gate.admit(b).0);
        assert!(!gate.has_room());
        gate.refuse();
        let figures = stats.figures().unwrap();
        assert_eq!((figures.open, figures.refused), (8, 1));
        slots.clear();
        assert_eq!(stats.figures().unwrap().open, 0);
        assert!(gate.by_address.lock().is_empty());
        assert_eq!(gate.admit(a).1, None, "counts fall as connections end");
    }

    #[test]
    fn quiet_times_shrink_as_the_cap_nears() {
        let minute = Duration::from_secs(60);
        assert_eq!(scaled_at(minute, 50, 100), minute);
        assert_eq!(scaled_at(minute, 75, 100), Duration::from_secs(30));
        assert_eq!(scaled_at(minute, 100, 100), PRESSED_QUIET_FLOOR);
        let short = Duration::from_millis(200);
        assert_eq!(
            scaled_at(short, 100, 100),
            short,
            "never longer than its own"
        );
    }
}
