//! New registrations per source address: a token bucket per address, refilled at the configured rate per
//! minute, holding a quarter of a minute's worth (at least one). Buckets that are full are forgotten when
//! the table grows, so the table stays small whatever addresses are seen.

use std::collections::HashMap;
use std::net::IpAddr;
use std::sync::Mutex;
use std::time::Instant;

/// Addresses remembered before full buckets are forgotten.
const PRUNE_AT: usize = 10_000;

#[derive(Debug, Clone, Copy)]
struct Bucket {
    tokens: f64,
    at: Instant,
}

/// Registrations allowed per source address.
#[derive(Debug)]
pub struct RegistrationRate {
    buckets: Mutex<HashMap<IpAddr, Bucket>>,
}

impl Default for RegistrationRate {
    fn default() -> Self {
        RegistrationRate {
            buckets: Mutex::new(HashMap::new()),
        }
    }
}

impl RegistrationRate {
    /// Takes one registration for `addr` at `per_minute`; `Err` carries how long to wait, in seconds.
    pub fn take(&self, addr: IpAddr, per_minute: u32, now: Instant) -> Result<(), u64> {
        let rate = f64::from(per_minute.max(1)) / 60.0;
        let capacity = (f64::from(per_minute) / 4.0).max(1.0);
        let mut buckets = self.buckets.lock().unwrap_or_else(|p| p.into_inner());
        if buckets.len() >= PRUNE_AT {
            buckets.retain(|_, b| {
                let refilled = b.tokens + now.saturating_duration_since(b.at).as_secs_f64() * rate;
                refilled < capacity
            });
        }
        let bucket = buckets.entry(addr).or_insert(Bucket {
            tokens: capacity,
            at: now,
        });
        let elapsed = now.saturating_duration_since(bucket.at).as_secs_f64();
        bucket.tokens = (bucket.tokens + elapsed * rate).min(capacity);
        bucket.at = now;
        if bucket.tokens >= 1.0 {
            bucket.tokens -= 1.0;
            Ok(())
        } else {
            Err(((1.0 - bucket.tokens) / rate).ceil().max(1.0) as u64)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    #[test]
    fn a_burst_then_the_rate() {
        let r = RegistrationRate::default();
        let a: IpAddr = "192.0.2.1".parse().unwrap();
        let b: IpAddr = "192.0.2.2".parse().unwrap();
        let t0 = Instant::now();
        for _ in 0..15 {
            assert!(r.take(a, 60, t0).is_ok());
        }
        let wait = r.take(a, 60, t0).unwrap_err();
        assert_eq!(wait, 1);
        assert!(
            r.take(b, 60, t0).is_ok(),
            "another address has its own bucket"
        );
        assert!(r.take(a, 60, t0 + Duration::from_secs(1)).is_ok());
        assert!(r.take(a, 60, t0 + Duration::from_secs(1)).is_err());
    }
}
