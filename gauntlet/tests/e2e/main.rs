//! End to end against real brokers in containers: `gauntlet run` deploys a
//! cluster, drives the queue workload with consumers as worker processes,
//! injects the seed's faults, drains and checks. Needs Docker and the local
//! images (`gauntlet images build`; built on demand when missing).
//!
//! Each test asserts the anomaly the seed predicts under the unsafe setting and
//! its absence under the safe one, plus the false-alarm check: a clean run is valid.
//!
//! One binary for every heavy container test (nextest group `containers`, with the
//! broker tests: several at a time, `.config/nextest.toml`): add a module per
//! scenario family. A test is one run where it can be (two runs that show the
//! two sides of a setting are two tests in a module named after both), so that
//! the group packs them well; a test that compares two runs holds both at once
//! (`common::side_by_side`) and counts as two. Every test's names, folders and
//! files carry its process id, and what it checks on the machine (containers,
//! mounts, processes) is its own run's only: other tests run beside it.
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
