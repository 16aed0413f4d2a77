//! Connection accounting. Every connection starts *untrusted*: it is counted in one pool, bounded in all
//! and per source address. It leaves the pool the moment it proves something: its TLS client key is a
//! known node's (then it is counted per key instead), it authenticates as an operator, or it registers a
//! node. When the pool is full, the oldest connection still in it is closed to make room; so a flood of
//! idle or slow connections can never lock out an operator or an accepted agent, whose connections are
//! not in the pool once they have said who they are.

use std::collections::{BTreeMap, HashMap};
use std::net::IpAddr;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use tokio::sync::Notify;

/// The most connections one accepted node's key may hold.
pub const MAX_CONNECTIONS_PER_ACCEPTED_KEY: usize = 16;
/// The most connections one registered but not accepted node's key may hold.
pub const MAX_CONNECTIONS_PER_DISCOVERED_KEY: usize = 4;

/// The peer's address, attached to each request.
#[derive(Debug, Clone, Copy)]
pub struct PeerAddr(pub std::net::SocketAddr);

/// What a connection's TLS handshake showed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Trust {
    /// The key of an accepted node.
    Accepted,
    /// The key of a registered node not yet accepted.
    Discovered,
    /// No client key, or an unknown one.
    Unknown,
}

#[derive(Debug)]
struct Slot {
    addr: IpAddr,
    evicted: AtomicBool,
    wake: Notify,
}

#[derive(Debug, Default)]
struct Inner {
    /// Untrusted connections by arrival order.
    pool: BTreeMap<u64, Arc<Slot>>,
    per_addr: HashMap<IpAddr, usize>,
    per_key: HashMap<String, usize>,
    next: u64,
}

/// The controller's connection accounting.
#[derive(Debug, Default)]
pub struct ConnectionGate {
    inner: Mutex<Inner>,
}

/// One connection's place in the accounting; dropping it (the connection closed) frees the place.
#[derive(Debug)]
pub struct ConnectionTicket {
    gate: Arc<ConnectionGate>,
    seq: u64,
    slot: Arc<Slot>,
    key: Mutex<Option<String>>,
}

impl ConnectionGate {
    fn lock(&self) -> std::sync::MutexGuard<'_, Inner> {
        self.inner.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Admits a new connection into the untrusted pool, closing the oldest untrusted one (of the same
    /// address when that address is at its bound) to make room. `None` never happens for a pool of at
    /// least one place; the signature keeps the caller honest should the bounds ever be zero.
    pub fn admit(
        self: &Arc<Self>,
        addr: IpAddr,
        max_total: usize,
        max_per_address: usize,
    ) -> Option<ConnectionTicket> {
        if max_total == 0 || max_per_address == 0 {
            return None;
        }
        let mut inner = self.lock();
        if inner.per_addr.get(&addr).copied().unwrap_or(0) >= max_per_address {
            let oldest = inner
                .pool
                .iter()
                .find(|(_, s)| s.addr == addr)
                .map(|(seq, _)| *seq);
            if let Some(seq) = oldest {
                evict(&mut inner, seq);
            }
        }
        if inner.pool.len() >= max_total {
            if let Some(seq) = inner.pool.keys().next().copied() {
                evict(&mut inner, seq);
            }
        }
        let seq = inner.next;
        inner.next += 1;
        let slot = Arc::new(Slot {
            addr,
            evicted: AtomicBool::new(false),
            wake: Notify::new(),
        });
        inner.pool.insert(seq, slot.clone());
        *inner.per_addr.entry(addr).or_default() += 1;
        Some(ConnectionTicket {
            gate: self.clone(),
            seq,
            slot,
            key: Mutex::new(None),
        })
    }

    /// How many node keys have a connection open now (the agents connected here).
    pub fn connected_keys(&self) -> usize {
        self.lock().per_key.len()
    }

    /// How many connections are in the untrusted pool now.
    pub fn untrusted(&self) -> usize {
        self.lock().pool.len()
    }
}

fn evict(inner: &mut Inner, seq: u64) {
    if let Some(slot) = inner.pool.remove(&seq) {
        release_addr(inner, slot.addr);
        slot.evicted.store(true, Ordering::Release);
        slot.wake.notify_one();
    }
}

fn release_addr(inner: &mut Inner, addr: IpAddr) {
    if let Some(n) = inner.per_addr.get_mut(&addr) {
        *n -= 1;
        if *n == 0 {
            inner.per_addr.remove(&addr);
        }
    }
}

impl ConnectionTicket {
    /// The connection proved who it is (an operator's token, a registration): it leaves the pool.
    pub fn trust(&self) {
        let mut inner = self.gate.lock();
        if inner.pool.remove(&self.seq).is_some() {
            release_addr(&mut inner, self.slot.addr);
        }
    }

    /// The connection's TLS key is a known node's: it leaves the pool and is counted against the key,
    /// which may hold at most [`MAX_CONNECTIONS_PER_ACCEPTED_KEY`] (accepted) or
    /// [`MAX_CONNECTIONS_PER_DISCOVERED_KEY`] connections. False when the key has too many already.
    pub fn trust_key(&self, fingerprint: &str, trust: Trust) -> bool {
        let cap = match trust {
            Trust::Accepted => MAX_CONNECTIONS_PER_ACCEPTED_KEY,
            Trust::Discovered => MAX_CONNECTIONS_PER_DISCOVERED_KEY,
            Trust::Unknown => return true,
        };
        let mut inner = self.gate.lock();
        let held = inner.per_key.get(fingerprint).copied().unwrap_or(0);
        if held >= cap {
            return false;
        }
        *inner.per_key.entry(fingerprint.to_string()).or_default() += 1;
        if inner.pool.remove(&self.seq).is_some() {
            release_addr(&mut inner, self.slot.addr);
        }
        drop(inner);
        *self.key.lock().unwrap_or_else(|p| p.into_inner()) = Some(fingerprint.to_string());
        true
    }

    /// Resolves when the connection was closed to make room for a newer one.
    pub async fn evicted(&self) {
        loop {
            let notified = self.slot.wake.notified();
            if self.slot.evicted.load(Ordering::Acquire) {
                return;
            }
            notified.await;
        }
    }
}

impl Drop for ConnectionTicket {
    fn drop(&mut self) {
        let key = self.key.lock().unwrap_or_else(|p| p.into_inner()).take();
        let mut inner = self.gate.lock();
        if inner.pool.remove(&self.seq).is_some() {
            release_addr(&mut inner, self.slot.addr);
        }
        if let Some(key) = key {
            if let Some(n) = inner.per_key.get_mut(&key) {
                *n -= 1;
                if *n == 0 {
                    inner.per_key.remove(&key);
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ip(last: u8) -> IpAddr {
        IpAddr::from([192, 0, 2, last])
    }

    #[test]
    fn a_full_pool_closes_its_oldest_untrusted_connection() {
        let gate = Arc::new(ConnectionGate::default());
        let first = gate.admit(ip(1), 2, 10).unwrap();
        let second = gate.admit(ip(2), 2, 10).unwrap();
        let third = gate.admit(ip(3), 2, 10).unwrap();
        assert!(first.slot.evicted.load(Ordering::Acquire));
        assert!(!second.slot.evicted.load(Ordering::Acquire));
        assert_eq!(gate.untrusted(), 2);
        // A trusted connection is never closed to make room.
        second.trust();
        let _fourth = gate.admit(ip(4), 2, 10).unwrap();
        assert!(!third.slot.evicted.load(Ordering::Acquire), "room was made");
        let _fifth = gate.admit(ip(5), 2, 10).unwrap();
        assert!(!second.slot.evicted.load(Ordering::Acquire));
        assert!(third.slot.evicted.load(Ordering::Acquire));
    }

    #[test]
    fn one_address_cannot_take_more_than_its_share() {
        let gate = Arc::new(ConnectionGate::default());
        let other = gate.admit(ip(9), 100, 2).unwrap();
        let a = gate.admit(ip(1), 100, 2).unwrap();
        let _b = gate.admit(ip(1), 100, 2).unwrap();
        let _c = gate.admit(ip(1), 100, 2).unwrap();
        assert!(a.slot.evicted.load(Ordering::Acquire));
        assert!(!other.slot.evicted.load(Ordering::Acquire));
        assert_eq!(gate.untrusted(), 3);
    }

    #[test]
    fn keys_are_capped_and_places_come_back_on_drop() {
        let gate = Arc::new(ConnectionGate::default());
        let tickets: Vec<_> = (0..MAX_CONNECTIONS_PER_DISCOVERED_KEY)
            .map(|_| {
                let t = gate.admit(ip(1), 100, 100).unwrap();
                assert!(t.trust_key("k", Trust::Discovered));
                t
            })
            .collect();
        let extra = gate.admit(ip(1), 100, 100).unwrap();
        assert!(!extra.trust_key("k", Trust::Discovered));
        drop(tickets);
        assert!(extra.trust_key("k", Trust::Discovered));
        drop(extra);
        assert_eq!(gate.untrusted(), 0);
        assert!(gate.lock().per_key.is_empty());
    }
}
