//! The loop that keeps every enrolled server's power state current: a round every `interval` (give or
//! take a fifth, so that controllers and BMCs are not hit in step), at most `concurrency` BMCs at once,
//! each within `timeout`. A BMC that failed is tried again after a backoff that doubles up to ten
//! intervals, so a rack of dead BMCs costs little; its state shows `unknown` with the error meanwhile.
//! With several controllers, only the one sequencing deployments reads BMCs.

use super::{driver, read_state, reading};
use crate::clock::now_ms;
use crate::config::LiveConfig;
use crate::engine::Engine;
use crate::enrollment::secrets::Sealer;
use crate::store::{PowerReading, Store};
use std::collections::HashMap;
use std::sync::Arc;
use std::time::{Duration, Instant};

/// When a failing BMC is read next.
#[derive(Debug, Clone, Copy)]
struct Backoff {
    failures: u32,
    next: Instant,
}

/// The wait after `failures` failures in a row: one interval, doubling, at most ten.
pub fn backoff(interval: Duration, failures: u32) -> Duration {
    let factor = 1u32 << failures.saturating_sub(1).min(4);
    (interval * factor).min(interval * 10)
}

/// `interval` moved by up to a fifth either way.
fn jittered(interval: Duration) -> Duration {
    let mut b = [0u8; 2];
    let r = getrandom::fill(&mut b).map_or(0.5, |()| f64::from(u16::from_le_bytes(b)) / 65535.0);
    interval.mul_f64(0.8 + 0.4 * r)
}

/// Starts the loop, which reads BMCs while the configuration in force has an interval and `engine`
/// sequences: the enrollments from `store`, their passwords opened under the signing keys in
/// `keys` (as they are at each round), what was read written back to `store`.
pub fn spawn(
    config: Arc<LiveConfig>,
    store: Arc<dyn Store>,
    engine: Arc<Engine>,
    keys: Arc<crate::keys::KeyRing>,
) {
    tokio::spawn(async move {
        let mut failing: HashMap<u64, Backoff> = HashMap::new();
        loop {
            let settings = config.get().power;
            let Some(interval) = settings.interval else {
                tokio::time::sleep(Duration::from_secs(60)).await;
                continue;
            };
            if engine.is_sequencing() {
                let sealer = Arc::new(keys.sealer());
                round(&config, &store, &sealer, interval, &mut failing).await;
            }
            tokio::time::sleep(jittered(interval)).await;
        }
    });
}

/// Reads every due BMC once, and records what was read in one write.
async fn round(
    config: &Arc<LiveConfig>,
    store: &Arc<dyn Store>,
    sealer: &Arc<Sealer>,
    interval: Duration,
    failing: &mut HashMap<u64, Backoff>,
) {
    let s = store.clone();
    let servers = match tokio::task::spawn_blocking(move || s.list_enrollment_secrets()).await {
        Ok(Ok(servers)) => servers,
        Ok(Err(e)) => {
            tracing::warn!(error = %e, "the power loop cannot read enrollments");
            return;
        }
        Err(_) => return,
    };
    let now = Instant::now();
    let limit = Arc::new(tokio::sync::Semaphore::new(config.get().power.concurrency));
    let mut reads = tokio::task::JoinSet::new();
    for (e, sealed) in servers {
        if e.bmc.is_none() || failing.get(&e.id).is_some_and(|b| b.next > now) {
            continue;
        }
        let (config, sealer, limit) = (config.clone(), sealer.clone(), limit.clone());
        reads.spawn(async move {
            let Ok(_permit) = limit.acquire_owned().await else {
                return None;
            };
            let timeout = config.get().power.timeout;
            let read = match driver(&sealer, timeout, &e, sealed.as_deref()) {
                Ok(bmc) => read_state(&bmc).await.map_err(|e| e.to_string()),
                Err(err) => Err(err.to_string()),
            };
            Some(reading(e.id, read, now_ms()))
        });
    }
    let mut readings: Vec<PowerReading> = Vec::new();
    while let Some(done) = reads.join_next().await {
        if let Ok(Some(r)) = done {
            if r.power.error.is_some() {
                let b = failing.entry(r.enrollment_id).or_insert(Backoff {
                    failures: 0,
                    next: now,
                });
                b.failures += 1;
                b.next = Instant::now() + backoff(interval, b.failures);
            } else {
                failing.remove(&r.enrollment_id);
            }
            readings.push(r);
        }
    }
    if readings.is_empty() {
        return;
    }
    let s = store.clone();
    let written = tokio::task::spawn_blocking(move || s.record_power(&readings)).await;
    if let Ok(Err(e)) = written {
        tracing::warn!(error = %e, "the power loop cannot record power states");
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_failing_bmc_waits_longer_each_time_up_to_ten_intervals() {
        let i = Duration::from_secs(60);
        let waits: Vec<u64> = (1..=7).map(|f| backoff(i, f).as_secs()).collect();
        assert_eq!(waits, [60, 120, 240, 480, 600, 600, 600]);
        for _ in 0..100 {
            let j = jittered(i).as_secs_f64();
            assert!((48.0..=72.0).contains(&j), "{j}");
        }
    }
}
