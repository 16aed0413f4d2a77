//! The heartbeat and the sequencing lease: every second each controller records that it is alive and
//! renews the lease if it holds it, or takes it if it is free. Taking it starts the sequencing of every
//! running deployment here (rebuilt from the database); losing it lets them go. A holder that cannot
//! reach the database for longer than the lease lasts stops sequencing on its own, and in every case
//! the fencing token makes the database refuse its steps once another controller holds the lease.

use super::{Membership, Parts, BEAT_EVERY, LEASE_TTL};
use crate::clock::now_ms;
use crate::engine::Engine;
use crate::intake::board::Board;
use crate::limits::ConnectionGate;
use crate::store::{ControllerBeat, Fence, Store};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Instant;

/// How late a beat may come (after its time, plus its own length) before it is reported: the lease
/// lasts five beats.
const LATE: std::time::Duration = std::time::Duration::from_secs(2);

/// Beats and keeps the lease until a clean stop, on a thread of its own: a controller busy with a
/// large deployment (its runtime's workers, its blocking pool and the database connections all taken by
/// bulk work) must still renew the lease every second, or another controller takes the deployment over
/// while this one is only slow. The beat itself is short (two small transactions on a connection of its
/// own); taking running deployments on after the lease was won, and the holder's and followers'
/// periodic checks, run on the blocking pool beside it, one at a time.
pub fn spawn(parts: Parts) -> std::io::Result<()> {
    let handle = tokio::runtime::Handle::current();
    let busy = Arc::new(AtomicBool::new(false));
    std::thread::Builder::new()
        .name("plinth-beat".into())
        .spawn(move || {
            let mut due = Instant::now();
            loop {
                let started = Instant::now();
                if !beat(&parts) {
                    return;
                }
                let late = started.saturating_duration_since(due) + started.elapsed();
                if late > LATE {
                    tracing::warn!(
                        late_ms = u64::try_from(late.as_millis()).unwrap_or(u64::MAX),
                        "the heartbeat ran late; the lease lasts {} s",
                        LEASE_TTL.as_secs()
                    );
                }
                if !busy.swap(true, Ordering::AcqRel) {
                    let (p, busy) = (parts.clone(), busy.clone());
                    handle.spawn_blocking(move || {
                        keep_up(&p.membership, p.store.as_ref(), &p.engine, &p.board);
                        busy.store(false, Ordering::Release);
                    });
                }
                // A beat that ran late is not made up for: the next is a second after this one.
                due = (due + BEAT_EVERY).max(Instant::now());
                std::thread::sleep(due.saturating_duration_since(Instant::now()));
            }
        })
        .map(|_| ())
}

/// One beat unless the controller is stopping; false once it is.
fn beat(p: &Parts) -> bool {
    let m = &p.membership;
    let _one = m.beating.lock().unwrap_or_else(|p| p.into_inner());
    if m.stopping.load(Ordering::Acquire) {
        return false;
    }
    step(m, p.store.as_ref(), &p.engine, &p.connections);
    true
}

fn ttl_ms() -> i64 {
    i64::try_from(LEASE_TTL.as_millis()).unwrap_or(5_000)
}

/// One beat: record this controller (with how many agents are connected to it), then renew, take or
/// let go of the lease, turning the engine's sequencing on or off with it. Blocking.
pub fn step(m: &Membership, store: &dyn Store, engine: &Engine, connections: &ConnectionGate) {
    let beat = ControllerBeat {
        id: m.id.clone(),
        name: m.name.clone(),
        url: m.url.clone(),
        started_ms: m.started_ms,
        now_ms: now_ms(),
        agents: connections.connected_keys() as u64,
    };
    if let Err(e) = store.beat_controller(&beat) {
        tracing::warn!(error = %e, "cannot record this controller's heartbeat");
    }
    if !m.shared {
        return;
    }
    let held = m.held();
    let now = now_ms();
    match store.claim_lease(&m.id, held, now, ttl_ms()) {
        Ok(Some(token)) => {
            m.renewed_ms.store(now, Ordering::Release);
            if held != Some(token) {
                m.set_held(Some(token));
                store.set_fence(Some(Fence {
                    holder: m.id.clone(),
                    token,
                }));
                tracing::info!(controller = %m.id, token, "took the sequencing lease: this controller sequences deployments now");
                crate::metrics::metrics().lease_takeovers.inc();
                // The running deployments are taken on by `keep_up`, beside the beat.
                engine.start_sequencing();
            }
        }
        Ok(None) => {
            if held.is_some() {
                // The fence stays as it was: a step still in flight under the old token is refused.
                m.set_held(None);
                engine.step_down();
                tracing::warn!(controller = %m.id, "lost the sequencing lease to another controller");
            }
        }
        Err(e) => {
            tracing::warn!(error = %e, "cannot renew or take the sequencing lease");
            if held.is_some() && now - m.renewed_ms.load(Ordering::Acquire) > ttl_ms() {
                m.set_held(None);
                engine.step_down();
                tracing::warn!(controller = %m.id, "the sequencing lease expired while the database was unreachable; stopped sequencing");
            }
        }
    }
}

/// What each controller does besides the beat: the holder takes on running deployments it does not
/// run yet (all of them just after it won the lease; those started elsewhere whose notice was lost)
/// and cancels what was asked elsewhere; a follower looks for lists published since its last look and
/// puts them on `board`. Blocking.
pub fn keep_up(m: &Membership, store: &dyn Store, engine: &Engine, board: &Board) {
    if !m.shared {
        return;
    }
    if engine.is_sequencing() {
        match engine.resume() {
            Ok(n) if n > 0 => tracing::info!(deployments = n, "took running deployments on"),
            Ok(_) => {}
            Err(e) => {
                tracing::error!(error = %e, "cannot take running deployments on; trying again")
            }
        }
        if let Err(e) = engine.cancel_requested() {
            tracing::warn!(error = %e, "cannot look for cancel requests");
        }
    } else if let Err(e) = m.follower.sync(store, board) {
        tracing::warn!(error = %e, "cannot read the lists published by the sequencing controller");
    }
}

/// Gives the lease up at a clean stop (the engine stops sequencing first), so another controller takes
/// over at once.
pub fn release(m: &Membership, store: &dyn Store, engine: &Engine) {
    // No beat after this one: a beat in flight ends first, and none takes the lease back.
    m.stopping.store(true, Ordering::Release);
    drop(m.beating.lock().unwrap_or_else(|p| p.into_inner()));
    if let Some(token) = m.held() {
        engine.step_down();
        m.set_held(None);
        if let Err(e) = store.release_lease(&m.id, token) {
            tracing::warn!(error = %e, "cannot give the sequencing lease up");
        } else {
            tracing::info!("gave the sequencing lease up");
        }
    }
}
