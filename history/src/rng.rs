//! The seeded PRNG Gauntlet's workloads, fault proxy and test generators share.
//!
//! Its sequence is part of reproducibility: a run, a schedule or a generated
//! history given the same seed must come out the same, so the constants below
//! never change.

/// SplitMix64: a tiny, fast, deterministic PRNG (no `rand` dependency).
#[derive(Debug, Clone)]
pub struct Rng(u64);

impl Rng {
    /// A generator whose sequence is fixed by `seed`.
    pub fn new(seed: u64) -> Self {
        Rng(seed ^ 0x5DEE_CE66_D1CE_4E5B)
    }
    /// The next 64 random bits.
    pub fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }
    /// Uniform in `0..n` (0 when `n` is 0).
    pub fn below(&mut self, n: u64) -> u64 {
        ((u128::from(self.next_u64()) * u128::from(n)) >> 64) as u64
    }
    /// Uniform in `lo..=hi` (`lo` when `hi < lo`).
    pub fn range(&mut self, lo: u64, hi: u64) -> u64 {
        if hi <= lo {
            lo
        } else {
            lo + self.below(hi - lo + 1)
        }
    }
    /// True with probability `p`.
    pub fn chance(&mut self, p: f64) -> bool {
        ((self.next_u64() >> 11) as f64) * (1.0 / (1u64 << 53) as f64) < p
    }
    /// An item of `items`, uniformly chosen; panics when `items` is empty.
    pub fn pick<'a, T>(&mut self, items: &'a [T]) -> &'a T {
        &items[self.below(items.len() as u64) as usize]
    }
}

#[cfg(test)]
mod tests {
    use super::Rng;

    #[test]
    fn the_sequence_of_a_seed_never_changes() {
        // Recorded schedules, runs and generated histories depend on these values.
        let mut r = Rng::new(0);
        assert_eq!(
            [r.next_u64(), r.next_u64(), r.next_u64()],
            [
                0x95b1_6f87_c43b_de85,
                0x5d89_faf7_885c_0810,
                0x9b89_248d_3008_3767
            ]
        );
        let mut r = Rng::new(27);
        let picks: Vec<u64> = (0..5).map(|_| r.below(10)).collect();
        let mut again = Rng::new(27);
        assert_eq!(picks, (0..5).map(|_| again.below(10)).collect::<Vec<_>>());
        assert!(picks.iter().all(|&p| p < 10));
    }
}
