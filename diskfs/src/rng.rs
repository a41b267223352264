//! The seeded generator of the faults (Gauntlet's own, `gauntlet_history::rng`),
//! and a seed from the clock for a fault asked without one.

/// Gauntlet's seeded generator (SplitMix64), shared with the workloads and
/// the schedules: the same seed gives the same faults.
pub use gauntlet_history::rng::Rng;

/// A seed from the clock, for a fault asked without one (it is reported).
pub fn clock_seed() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_nanos() as u64)
        .unwrap_or(0)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn same_seed_same_sequence_and_below_bounds() {
        let mut a = Rng::new(7);
        let mut b = Rng::new(7);
        for _ in 0..100 {
            let x = a.below(10);
            assert_eq!(x, b.below(10));
            assert!(x < 10);
        }
        assert_eq!(Rng::new(1).below(0), 0);
    }
}
