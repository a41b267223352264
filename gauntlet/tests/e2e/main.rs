//! End to end against real brokers in containers: `gauntlet run` deploys a
//! cluster, drives the queue workload with consumers as worker processes,
//! injects the seed's faults, drains and checks. Needs Docker and the local
//! images (`gauntlet images build`; built on demand when missing).
//!
//! Each test asserts the anomaly the seed predicts under the unsafe setting and
//! its absence under the safe one, plus the false-alarm check: a clean run is valid.
//!
//! One binary for every heavy container test (nextest group `brokers`, one at a time):
//! add a module per scenario family.
mod basics;
mod clean;
mod common;
mod dedup;
mod disk;
mod hot;
mod incomplete;
mod load;
mod log;
mod matrix;
mod network;
mod process;
mod repartition;
mod several;
mod ssh;
mod twohop;
mod txn;
