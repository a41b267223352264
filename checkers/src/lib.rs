//! Gauntlet's checkers: pure functions from a [`History`] to a [`Verdict`].
//!
//! Each anomaly of the v1 contract is computed by one module; `docs/checkers.md`
//! is the exact definition of each, and the tests follow it. Nothing here does
//! I/O: checking a stored history never needs a broker or Docker.
pub mod verdict;

pub use gauntlet_history::History;
pub use verdict::{Anomaly, AnomalyKind, Guarantee, Latency, Stats, Status, Validity, Verdict};

/// How to judge a history.
#[derive(Debug, Clone)]
pub struct CheckOptions {
    /// The guarantees the run claims; `valid` is judged against them.
    pub expect: Vec<Guarantee>,
    /// Examples kept per anomaly type.
    pub max_examples: usize,
}

impl Default for CheckOptions {
    fn default() -> Self {
        CheckOptions {
            expect: vec![Guarantee::AtLeastOnce],
            max_examples: 10,
        }
    }
}

/// Judges a history.
pub fn check(h: &History, opts: &CheckOptions) -> Verdict {
    let _ = (h, opts);
    unimplemented!("in progress")
}
