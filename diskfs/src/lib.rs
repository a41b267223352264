//! gauntlet-diskfs: Gauntlet's own FUSE filesystem that keeps file data that
//! was not made durable in memory and loses it on a simulated power loss.
//!
//! The model is defined in `docs/nemesis.md` ("Disk faults: what a power loss
//! keeps"). The library holds the JSON the daemon and the harness exchange
//! ([`Report`], [`Status`], [`Request`]), the pure parts (the pending-write
//! log, the glob matcher, the seeded generator) and the daemon itself, which
//! the `gauntlet-diskfs` binary drives.

pub mod bench;
pub mod client;
pub mod daemon;
mod error;
pub mod faults;
mod fs;
pub mod glob;
pub mod log;
pub mod report;
pub mod rng;

pub use error::DiskfsError;
pub use report::{Change, FileReport, Reply, Report, Request, Status};

/// Where the control socket is unless `--socket` says otherwise.
pub const DEFAULT_SOCKET: &str = "/run/gauntlet-diskfs.sock";

/// The prefix of the one line the daemon prints when it fails itself.
pub const FAILED_PREFIX: &str = "gauntlet-diskfs: FAILED: ";

/// The daemon's exit code when it fails itself (mount refused, panic, socket).
pub const EXIT_FAILED: i32 = 86;

/// The daemon's exit code after a fault (as if SIGKILLed).
pub const EXIT_FAULT: i32 = 137;
