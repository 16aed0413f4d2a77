//! The heartbeat and the sequencing lease: every second each controller records that it is alive and
//! renews the lease if it holds it, or takes it if it is free. Taking it starts the sequencing of every
//! running deployment here (rebuilt from the database); losing it lets them go. A holder that cannot
//! reach the database for longer than the lease lasts stops sequencing on its own, and in every case
//! the fencing token makes the database refuse its steps once another controller holds the lease.

use super::{BEAT_EVERY, LEASE_TTL};
use crate::clock::now_ms;
use crate::state::AppState;
use crate::store::{ControllerBeat, Fence};
use std::sync::atomic::Ordering;
use std::sync::Arc;

/// Beats and keeps the lease until the process ends. The beat itself is short (two small
/// transactions), so it is never late behind other work: taking running deployments on after the lease
/// was won, and the holder's and followers' periodic checks, run beside it, one at a time.
pub async fn run(state: Arc<AppState>) {
    let mut tick = tokio::time::interval(BEAT_EVERY);
    tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    let busy = Arc::new(std::sync::atomic::AtomicBool::new(false));
    loop {
        tick.tick().await;
        let s = state.clone();
        let Ok(()) = tokio::task::spawn_blocking(move || step(&s)).await else {
            continue;
        };
        if !busy.swap(true, Ordering::AcqRel) {
            let (s, busy) = (state.clone(), busy.clone());
            tokio::task::spawn_blocking(move || {
                keep_up(&s);
                busy.store(false, Ordering::Release);
            });
        }
    }
}

fn ttl_ms() -> i64 {
    i64::try_from(LEASE_TTL.as_millis()).unwrap_or(5_000)
}

/// One beat: record this controller, then renew, take or let go of the lease. Blocking.
pub fn step(s: &AppState) {
    let m = &s.cluster;
    let beat = ControllerBeat {
        id: m.id.clone(),
        name: m.name.clone(),
        url: m.url.clone(),
        started_ms: m.started_ms,
        now_ms: now_ms(),
        agents: s.connections.connected_keys() as u64,
    };
    if let Err(e) = s.store.beat_controller(&beat) {
        tracing::warn!(error = %e, "cannot record this controller's heartbeat");
    }
    if !m.shared {
        return;
    }
    let held = m.held();
    let now = now_ms();
    match s.store.claim_lease(&m.id, held, now, ttl_ms()) {
        Ok(Some(token)) => {
            m.renewed_ms.store(now, Ordering::Release);
            if held != Some(token) {
                m.set_held(Some(token));
                s.store.set_fence(Some(Fence {
                    holder: m.id.clone(),
                    token,
                }));
                tracing::info!(controller = %m.id, token, "took the sequencing lease: this controller sequences deployments now");
                // The running deployments are taken on by `keep_up`, beside the beat.
                s.engine.start_sequencing();
            }
        }
        Ok(None) => {
            if held.is_some() {
                // The fence stays as it was: a step still in flight under the old token is refused.
                m.set_held(None);
                s.engine.step_down();
                tracing::warn!(controller = %m.id, "lost the sequencing lease to another controller");
            }
        }
        Err(e) => {
            tracing::warn!(error = %e, "cannot renew or take the sequencing lease");
            if held.is_some() && now - m.renewed_ms.load(Ordering::Acquire) > ttl_ms() {
                m.set_held(None);
                s.engine.step_down();
                tracing::warn!(controller = %m.id, "the sequencing lease expired while the database was unreachable; stopped sequencing");
            }
        }
    }
}

/// What each controller does besides the beat: the holder takes on running deployments it does not
/// run yet (all of them just after it won the lease; those started elsewhere whose notice was lost)
/// and cancels what was asked elsewhere; a follower looks for lists published since its last look.
/// Blocking.
pub fn keep_up(s: &AppState) {
    if !s.cluster.shared {
        return;
    }
    if s.engine.is_sequencing() {
        match s.engine.resume() {
            Ok(n) if n > 0 => tracing::info!(deployments = n, "took running deployments on"),
            Ok(_) => {}
            Err(e) => {
                tracing::error!(error = %e, "cannot take running deployments on; trying again")
            }
        }
        if let Err(e) = s.engine.cancel_requested() {
            tracing::warn!(error = %e, "cannot look for cancel requests");
        }
    } else if let Err(e) = s.cluster.follower.sync(s.store.as_ref(), &s.board) {
        tracing::warn!(error = %e, "cannot read the lists published by the sequencing controller");
    }
}

/// Gives the lease up at a clean stop, so another controller takes over at once.
pub fn release(s: &AppState) {
    let m = &s.cluster;
    if let Some(token) = m.held() {
        s.engine.step_down();
        m.set_held(None);
        if let Err(e) = s.store.release_lease(&m.id, token) {
            tracing::warn!(error = %e, "cannot give the sequencing lease up");
        } else {
            tracing::info!("gave the sequencing lease up");
        }
    }
}
