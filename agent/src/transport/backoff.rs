//! Exponential backoff with full jitter: after the n-th consecutive failure the agent waits a uniformly
//! random time between zero and `min(max, min_cap * 2^n)`. A thousand agents that lose the controller at
//! the same moment therefore come back spread over the whole window instead of in one wave.

use std::time::Duration;

/// Retry pacing for one kind of request.
#[derive(Debug, Clone)]
pub struct Backoff {
    min: Duration,
    max: Duration,
    failures: u32,
}

impl Backoff {
    /// A backoff whose window starts at `min` and doubles up to `max`.
    pub fn new(min: Duration, max: Duration) -> Backoff {
        Backoff {
            min,
            max: max.max(min),
            failures: 0,
        }
    }

    /// Forgets past failures (after a success).
    pub fn reset(&mut self) {
        self.failures = 0;
    }

    /// Consecutive failures so far.
    pub fn failures(&self) -> u32 {
        self.failures
    }

    /// Records a failure and returns how long to wait before the next try.
    pub fn next_delay(&mut self) -> Duration {
        let delay = self.delay_with(random_u64());
        self.failures = self.failures.saturating_add(1);
        delay
    }

    /// The window's upper bound after the failures so far.
    pub fn cap(&self) -> Duration {
        let factor = 1u64 << self.failures.min(30);
        let min_ms = u64::try_from(self.min.as_millis()).unwrap_or(u64::MAX);
        let max_ms = u64::try_from(self.max.as_millis()).unwrap_or(u64::MAX);
        Duration::from_millis(min_ms.saturating_mul(factor).min(max_ms))
    }

    /// The delay for a given random draw (uniform over the window).
    pub fn delay_with(&self, random: u64) -> Duration {
        let cap_ms = u64::try_from(self.cap().as_millis()).unwrap_or(u64::MAX);
        Duration::from_millis(random % cap_ms.saturating_add(1))
    }
}

/// Spreads a period by up to ±10% so periodic requests of many agents do not line up.
pub fn jittered(period: Duration) -> Duration {
    let ms = u64::try_from(period.as_millis()).unwrap_or(u64::MAX);
    let spread = ms / 10;
    if spread == 0 {
        return period;
    }
    let offset = random_u64() % (2 * spread + 1);
    Duration::from_millis(ms - spread + offset)
}

/// A random number from the operating system; zero if it has none (the delay is then the shortest).
fn random_u64() -> u64 {
    getrandom::u64().unwrap_or(0)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn window_doubles_up_to_the_cap() {
        let mut b = Backoff::new(Duration::from_millis(500), Duration::from_secs(8));
        let mut caps = Vec::new();
        for _ in 0..8 {
            caps.push(b.cap().as_millis());
            b.next_delay();
        }
        assert_eq!(caps, vec![500, 1000, 2000, 4000, 8000, 8000, 8000, 8000]);
        b.reset();
        assert_eq!(b.cap(), Duration::from_millis(500));
        // Many failures do not overflow.
        for _ in 0..200 {
            b.next_delay();
        }
        assert_eq!(b.cap(), Duration::from_secs(8));
    }

    #[test]
    fn delays_are_spread_over_the_whole_window() {
        let b = Backoff::new(Duration::from_millis(1000), Duration::from_secs(60));
        assert_eq!(b.delay_with(0), Duration::ZERO);
        assert_eq!(b.delay_with(1000), Duration::from_millis(1000));
        assert_eq!(b.delay_with(1001), Duration::ZERO);
        let draws: Vec<Duration> = (0..200).map(|_| b.delay_with(random_u64())).collect();
        assert!(draws.iter().all(|d| *d <= Duration::from_secs(1)));
        // 200 uniform draws over [0, 1000] ms all in one half is (1/2)^199: never.
        assert!(draws.iter().any(|d| *d < Duration::from_millis(500)));
        assert!(draws.iter().any(|d| *d >= Duration::from_millis(500)));
    }

    #[test]
    fn jitter_stays_within_ten_percent() {
        for _ in 0..100 {
            let d = jittered(Duration::from_secs(10));
            assert!(
                d >= Duration::from_secs(9) && d <= Duration::from_secs(11),
                "{d:?}"
            );
        }
    }
}
