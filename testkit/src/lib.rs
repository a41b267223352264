//! Gauntlet's test kit: what the tests, `gauntlet bench` and `gauntlet fuzz` feed
//! the reader and the checkers. Nothing here runs in a real test run.
//!
//! - [`queue_gen`]: histories of sends and polls with anomalies injected at known
//!   places, and the [`Expected`](queue_gen::Expected) count of each;
//! - [`txn_gen`]: transactional histories, strict serializable by construction;
//! - [`repartition_gen`]: a topic whose partition count changes mid-run, with
//!   `repartition-key-order` injected at known keys;
//! - [`twohop_gen`]: two-hop pipeline histories with lost, duplicated and
//!   reordered outputs injected, and their exact counts;
//! - [`mutator`]: the byte mutator that makes valid histories hostile ([`mutate`]).
//!
//! All of them are deterministic in their seed, through the workspace's one PRNG,
//! [`Rng`] (`gauntlet_history::rng`, re-exported here).
//!
//! Only tests, `gauntlet bench` and `gauntlet fuzz` use this crate. Production
//! code (the reader, the checkers, the reports, a run) must never depend on it.
#![warn(missing_docs)]
pub mod mutator;
pub mod queue_gen;
pub mod repartition_gen;
pub mod twohop_gen;
pub mod txn_gen;

pub use gauntlet_history::rng::Rng;
pub use mutator::mutate;
