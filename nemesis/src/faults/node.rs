//! Faults on broker nodes, the roles they can be aimed at and the counts of
//! nodes they can take: `kill-broker`, `restart-broker[:mid-batch]`, `pause`,
//! `<fault>:<role>` and `<fault>:<count>`.
use super::{failed, FaultKind};
use crate::{Cluster, NemesisError};
use serde_json::{json, Value};
use std::fmt;

/// The node faults that can target a role ([`FaultKind::OnRole`]) or a count of
/// nodes ([`FaultKind::OnNodes`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum NodeFault {
    /// SIGKILL the node in the role, start it when the fault ends (`kill-broker`).
    Kill,
    /// SIGKILL the node in the role and start it at once (`restart-broker`).
    Restart,
    /// Freeze the node in the role, resume it when the fault ends (`pause`).
    Pause,
    /// Isolate the node in the role from every other node.
    Isolate,
    /// Cut the power of the node in the role (`power-loss`).
    PowerLoss,
}

impl NodeFault {
    /// Every node fault, in the order the parser tries them.
    pub const ALL: [NodeFault; 5] = [
        NodeFault::Kill,
        NodeFault::Restart,
        NodeFault::Pause,
        NodeFault::Isolate,
        NodeFault::PowerLoss,
    ];

    /// The same fault on a node named by the schedule.
    pub fn on_node(self) -> FaultKind {
        match self {
            NodeFault::Kill => FaultKind::KillBroker,
            NodeFault::Restart => FaultKind::RestartBroker { mid_batch: false },
            NodeFault::Pause => FaultKind::Pause,
            NodeFault::Isolate => FaultKind::Partition,
            NodeFault::PowerLoss => FaultKind::PowerLoss { torn: false },
        }
    }

    /// Whether it takes a count of nodes (`:minority`, `:majority`, `:all`):
    /// every node fault but the partition, whose `:majority` is the halves
    /// shape (`partition:halves`).
    pub fn takes_counts(self) -> bool {
        !matches!(self, NodeFault::Isolate)
    }

    /// Whether it crashes the node, so it can be the crash of `pause-kill`:
    /// every node fault but a pause and a partition.
    pub fn crashes(self) -> bool {
        !matches!(self, NodeFault::Pause | NodeFault::Isolate)
    }
}

/// How many of the broker nodes a node fault takes ([`FaultKind::OnNodes`]);
/// the schedule draws which. Never the storage node (a role names it).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Spread {
    /// `(n-1)/2` nodes, at least one: the most that leave a majority up.
    Minority,
    /// `n/2 + 1` nodes: the fewest that take a majority.
    Majority,
    /// Every broker node.
    All,
}

impl Spread {
    /// Every count, in the order the unknown-fault error lists them.
    pub const ALL: [Spread; 3] = [Spread::Minority, Spread::Majority, Spread::All];

    /// The name after the fault's, as in `kill-broker:majority`.
    pub fn name(self) -> &'static str {
        match self {
            Spread::Minority => "minority",
            Spread::Majority => "majority",
            Spread::All => "all",
        }
    }

    /// The count it names.
    pub fn from_name(name: &str) -> Option<Spread> {
        Spread::ALL.into_iter().find(|s| s.name() == name)
    }

    /// How many of `n` broker nodes it takes (never more than `n`).
    pub fn count(self, n: usize) -> usize {
        match self {
            Spread::Minority => (n.saturating_sub(1) / 2).max(1),
            Spread::Majority => n / 2 + 1,
            Spread::All => n,
        }
        .min(n)
    }
}

impl fmt::Display for Spread {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// A role in the cluster the broker can name a node for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Role {
    /// The node that leads the workload's data: the quorum queue's leader (RabbitMQ),
    /// the stream's leader (NATS JetStream), the primary (Redis).
    Leader,
    /// The coordinator of the workload's consumer group (Kafka's FindCoordinator, key type 0).
    GroupCoordinator,
    /// The coordinator of the workload's first transactional id (FindCoordinator, key type 1).
    TxnCoordinator,
    /// The node that stores the brokers' data where that is a node of its own
    /// (the PostgreSQL of a tansu cluster): not a broker, never drawn at random.
    Storage,
    /// The idempotent consumers' dedup store (seed D7), a Redis node beside the
    /// broker: not a broker, never drawn at random.
    DedupStore,
}

impl Role {
    /// Every role, in the order the unknown-fault error lists them.
    pub const ALL: [Role; 5] = [
        Role::Leader,
        Role::GroupCoordinator,
        Role::TxnCoordinator,
        Role::Storage,
        Role::DedupStore,
    ];

    /// The name after the fault's, as in `kill-broker:group-coordinator`.
    pub fn name(self) -> &'static str {
        match self {
            Role::Leader => "leader",
            Role::GroupCoordinator => "group-coordinator",
            Role::TxnCoordinator => "txn-coordinator",
            Role::Storage => "storage",
            Role::DedupStore => "dedup-store",
        }
    }
}

impl fmt::Display for Role {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// The node the broker names for `role` (the cluster waits out an election in progress).
pub async fn find_role(
    cluster: &Cluster<'_>,
    kind: FaultKind,
    role: Role,
) -> Result<String, NemesisError> {
    cluster.leader(role).await?.ok_or_else(|| {
        failed(
            kind,
            &role.to_string(),
            "the broker names no node for it now",
        )
    })
}

/// `netem[:MS]`: delays what `target` sends by `delay_ms` (refused as unsupported
/// where the kernel has no `sch_netem`).
pub(super) async fn netem(
    cluster: &Cluster<'_>,
    kind: FaultKind,
    target: &str,
    delay_ms: u32,
) -> Result<Value, NemesisError> {
    let cmd = crate::net::delay_script(delay_ms);
    match cluster.add_delay(target, delay_ms).await {
        Ok(()) => Ok(json!({"node": target, "netem": format!("delay {delay_ms}ms")})),
        Err(e) => Err(NemesisError::Unsupported {
            fault: kind.to_string(),
            why: format!("`{cmd}` failed in {target} (no sch_netem in this kernel?): {e}"),
        }),
    }
}
