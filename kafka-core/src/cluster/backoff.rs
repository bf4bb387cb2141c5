//! Exponential backoff with jitter for reconnects and retries (`reconnect.backoff.ms`,
//! `reconnect.backoff.max.ms`, `retry.backoff.ms`, `retry.backoff.max.ms`).
//!
//! As in the Java client: `initial * 2^failures`, capped at `max`, times a random factor
//! in [0.8, 1.2]. The randomness is a seeded generator, so simulations are reproducible.

use std::time::Duration;

/// A seeded backoff calculator.
#[derive(Debug, Clone)]
pub struct Backoff {
    initial: Duration,
    max: Duration,
    state: u64,
}

impl Backoff {
    /// A backoff from `initial` to `max`; `seed` drives the jitter.
    pub fn new(initial: Duration, max: Duration, seed: u64) -> Self {
        Backoff {
            initial,
            max: max.max(initial),
            state: seed | 1,
        }
    }

    /// The delay after `failures` consecutive failures (0 = first failure).
    pub fn delay(&mut self, failures: u32) -> Duration {
        let exp = self.initial.saturating_mul(1u32 << failures.min(20));
        let base = exp.min(self.max);
        // xorshift64*
        self.state ^= self.state >> 12;
        self.state ^= self.state << 25;
        self.state ^= self.state >> 27;
        let r = self.state.wrapping_mul(0x2545_F491_4F6C_DD1D) >> 11;
        let factor = 0.8 + 0.4 * (r as f64 / (1u64 << 53) as f64);
        base.mul_f64(factor)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn grows_exponentially_with_bounded_jitter_and_cap() {
        let mut b = Backoff::new(Duration::from_millis(50), Duration::from_millis(1000), 42);
        for (failures, base) in [
            (0u32, 50u64),
            (1, 100),
            (2, 200),
            (3, 400),
            (4, 800),
            (5, 1000),
            (30, 1000),
        ] {
            let d = b.delay(failures).as_secs_f64() * 1000.0;
            assert!(
                d >= base as f64 * 0.8 - 1e-6 && d <= base as f64 * 1.2 + 1e-6,
                "{failures}: {d}"
            );
        }
        let mut a = Backoff::new(Duration::from_millis(50), Duration::from_millis(1000), 7);
        let mut c = Backoff::new(Duration::from_millis(50), Duration::from_millis(1000), 7);
        assert_eq!(a.delay(3), c.delay(3), "same seed, same jitter");
    }
}
