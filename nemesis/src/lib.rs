//! Gauntlet's nemesis: the faults ([`Fault`]), what they act on ([`Cluster`],
//! implemented by the harness for each deployment backend), and seeded,
//! replayable schedules ([`Schedule`]).
//!
//! Nothing here knows about Docker: a fault asks the cluster to kill a node,
//! pause it, run a command in it or kill a consumer process; the harness
//! decides how (containers today; Kubernetes or SSH tomorrow).
//!
//! This crate must not depend on Docker or on any backend, nor on the harness:
//! every fault acts through the [`Cluster`] trait alone. What a fault needs
//! from a deployment ([`faults::Needs`]) is data the harness checks before a
//! run; the iptables and tc commands a fault runs inside a node are in [`net`].
#![warn(missing_docs)]
pub mod faults;
pub mod net;
pub mod schedule;

pub use faults::{Fault, FaultKind, Grudge, KillConsumerAt, LinkFault, NodeFault, Role, Shape};
pub use schedule::{Schedule, ScheduledFault};

use async_trait::async_trait;
use serde_json::Value;
use std::time::Duration;

/// Why a fault could not be done.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum NemesisError {
    /// A fault name that parses to no [`FaultKind`] (the name as given).
    #[error("unknown fault `{0}` (expected {syntax}; ROLE: {roles})", syntax = faults::SYNTAX.join(", "), roles = faults::Role::ALL.map(|r| r.name()).join(", "))]
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

/// What the faults act on. The harness implements it over a deployment and its workers.
#[async_trait]
pub trait Cluster: Send + Sync {
    /// Node names, n1..nN.
    fn nodes(&self) -> Vec<String>;
    /// The node that stores the brokers' data when it is not a broker (a tansu
    /// cluster's PostgreSQL); aimed at by role only, healed with the others.
    fn storage_node(&self) -> Option<String> {
        None
    }
    /// SIGKILL a node's broker.
    async fn kill_node(&self, node: &str) -> Result<(), NemesisError>;
    /// Start a killed or stopped node and wait until it is ready again.
    async fn start_node(&self, node: &str) -> Result<(), NemesisError>;
    /// Freeze every process of a node until [`Cluster::unpause_node`].
    async fn pause_node(&self, node: &str) -> Result<(), NemesisError>;
    /// Resume the processes [`Cluster::pause_node`] froze.
    async fn unpause_node(&self, node: &str) -> Result<(), NemesisError>;
    /// Run a shell script inside a node (as root, with NET_ADMIN); returns its output.
    async fn exec(&self, node: &str, script: &str) -> Result<String, NemesisError>;
    /// The node's address on the cluster's own network (for partitions).
    async fn node_ip(&self, node: &str) -> Result<String, NemesisError>;
    /// SIGKILL one consumer worker (chosen by `pick`, modulo the number of workers),
    /// at the moment `at` says; returns what was killed (process number, pid).
    async fn kill_consumer(&self, pick: u64, at: KillConsumerAt) -> Result<Value, NemesisError>;
    /// Wait until a producer has a send in flight (for mid-batch faults), at most `limit`.
    async fn wait_send_in_flight(&self, limit: Duration) -> bool;
    /// Degrade the clients' link to `node` (a proxy between the clients and the node);
    /// returns what was done. Unsupported unless the run routes clients through one.
    async fn link(&self, node: &str, fault: LinkFault) -> Result<Value, NemesisError> {
        Err(NemesisError::Unsupported {
            fault: fault.to_string(),
            why: format!("no client proxy in front of {node}"),
        })
    }
    /// Every client link back to pass; returns what was healed.
    async fn heal_links(&self) -> Result<Value, NemesisError> {
        Ok(Value::Null)
    }
    /// Drop what `node` receives from `ips` (and, with `outbound`, what it sends
    /// to them) until [`Cluster::heal_traffic`]. By default iptables through `exec`.
    async fn drop_traffic(
        &self,
        node: &str,
        ips: &[String],
        outbound: bool,
    ) -> Result<(), NemesisError> {
        self.exec(node, &net::drop_script(ips, outbound))
            .await
            .map(drop)
    }
    /// Remove every rule [`Cluster::drop_traffic`] added on `node`.
    async fn heal_traffic(&self, node: &str) -> Result<(), NemesisError> {
        self.exec(node, net::HEAL_SCRIPT).await.map(drop)
    }
    /// Delay what `node` sends by `ms` (netem) until [`Cluster::remove_delay`].
    async fn add_delay(&self, node: &str, ms: u32) -> Result<(), NemesisError> {
        self.exec(node, &net::delay_script(ms)).await.map(drop)
    }
    /// Remove the delay of [`Cluster::add_delay`]; succeeds when there is none.
    async fn remove_delay(&self, node: &str) -> Result<(), NemesisError> {
        self.exec(node, net::UNDELAY_SCRIPT).await.map(drop)
    }
    /// The node the broker names for `role` right now (`None`: none, e.g. while it
    /// elects one, after waiting a little); `Unsupported` where the broker cannot tell.
    async fn leader(&self, role: Role) -> Result<Option<String>, NemesisError> {
        Err(NemesisError::Unsupported {
            fault: format!("targeting the {role}"),
            why: "this cluster cannot name the node in that role".into(),
        })
    }
}
