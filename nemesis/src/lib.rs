//! Gauntlet's nemesis: the faults ([`Fault`], one table of their specifications
//! in [`faults`]), what they act on ([`Cluster`]: the deployment's
//! [`NodeControl`] and the run's other capabilities), and seeded, replayable
//! schedules ([`Schedule`]).
//!
//! Nothing here knows about Docker: a fault asks the node control to kill a
//! node, pause it, run a command in it, and the run's capabilities to kill a
//! consumer process or degrade a client link; each backend implements
//! [`NodeControl`] its own way (containers, hosts over SSH).
//!
//! This crate must not depend on Docker or on any backend, nor on the harness.
//! What a fault needs from a deployment ([`faults::Needs`]) is data the harness
//! checks before a run; the iptables and tc commands a fault runs inside a node
//! are in [`net`].
#![warn(missing_docs)]
pub mod control;
pub mod faults;
pub mod net;
pub mod schedule;

pub use control::{
    Cluster, Command, Consumers, ControlError, DiskFault, ExecOutput, InFlight, Links, NodeControl,
    Readiness, Roles,
};
pub use faults::{
    Acts, Corruption, Fault, FaultKind, FaultSpec, Grudge, Heal, KillConsumerAt, LinkFault,
    NodeFault, Role, Shape, Spread,
};
pub use schedule::{Pacing, Schedule, ScheduledFault};

/// Why a fault could not be done.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum NemesisError {
    /// A fault name that parses to no [`FaultKind`] (the name as given).
    #[error("unknown fault `{0}` (expected {syntax}; ROLE: {roles}; COUNT: {counts}; CRASH: {crashes})", syntax = faults::syntax().join(", "), roles = faults::Role::ALL.map(|r| r.name()).join(", "), counts = faults::Spread::ALL.map(|s| s.name()).join(", "), crashes = faults::crashes().join(", "))]
    UnknownFault(String),
    /// The cluster cannot do this fault at all (no client proxy, a role the broker
    /// cannot name, no `sch_netem`).
    #[error("{fault} is not supported here: {why}")]
    Unsupported {
        /// The fault, or what was asked of the cluster (`targeting the leader`).
        fault: String,
        /// Why the cluster cannot do it.
        why: String,
    },
    /// The cluster can do the fault, but doing it on this target failed.
    #[error("{fault} on {target}: {why}")]
    Failed {
        /// The fault, as named on the command line.
        fault: String,
        /// The node (or role, or consumer) it was aimed at.
        target: String,
        /// What went wrong.
        why: String,
    },
    /// A schedule's TOML that does not parse (the parser's message).
    #[error("schedule: {0}")]
    Schedule(String),
}
