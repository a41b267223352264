//! The faults. Each is `start` (inject) and `stop` (heal); a fault that heals by
//! itself (killing a consumer, which the harness restarts) has a no-op stop.
//!
//! One module per family owns its faults' parameters and helpers: [`consumer`],
//! [`node`] (and roles), [`partition`], [`link`] (the client proxy). Here:
//! [`FaultKind`] with its names (parsing and display), what each fault needs
//! from a deployment ([`FaultKind::needs`]), its history names, and
//! [`Fault::start`]/[`Fault::stop`].
use crate::{Cluster, NemesisError};
use serde_json::{json, Value};
use std::fmt;
use std::str::FromStr;
use std::time::Duration;

pub mod consumer;
pub mod link;
pub mod node;
pub mod partition;

pub use consumer::KillConsumerAt;
pub use link::LinkFault;
use node::on_role;

/// Every fault's syntax, as `--nemesis` takes it (the error of an unknown name lists them).
pub const SYNTAX: [&str; 15] = [
    "kill-consumer[:before-ack|:after-ack]",
    "kill-broker[:ROLE]",
    "restart-broker[:mid-batch|:ROLE]",
    "pause[:ROLE]",
    "partition[:halves|:ring|:bridge|:ROLE]",
    "ack-loss",
    "partition-one-way",
    "client-partition",
    "latency[:MS]",
    "jitter[:MS]",
    "loss[:PCT]",
    "bandwidth[:KIB]",
    "reset",
    "blackhole",
    "netem[:MS]",
];
pub use node::{find_role, NodeFault, Role};
pub use partition::{apply_grudge, complete_grudge, grudge, heal_network, Grudge, Shape};

/// A fault, as named on the command line (`--nemesis kill-consumer:before-ack,partition`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FaultKind {
    /// SIGKILL one consumer worker, at the moment of its batch the argument says; the
    /// harness restarts it under a new process number, so the fault heals by itself.
    KillConsumer(KillConsumerAt),
    /// SIGKILL a broker node, start it again when the fault ends.
    KillBroker,
    /// SIGKILL then start at once; `mid_batch` waits until a send is in flight (seed D6).
    RestartBroker {
        /// Wait (up to 10 s) until a producer has a send in flight before the kill.
        mid_batch: bool,
    },
    /// Freeze a node (cgroup freezer), resume when the fault ends.
    Pause,
    /// Isolate one node from the others (iptables inside the nodes), heal when it ends.
    Partition,
    // --- Network faults between the clients and one node (the harness's TCP proxy).
    /// A fault on the client link of the target node (see [`LinkFault`]).
    Link(LinkFault),
    /// `tc qdisc add dev eth0 root netem delay MS` inside the target node, only where
    /// the kernel has `sch_netem` (refused as unsupported otherwise).
    Netem {
        /// Milliseconds added to every packet the node sends (100 by default).
        delay_ms: u32,
    },
    // --- Partition shapes and role targeting ---
    /// Cut the network in a shape (`partition:halves|ring|bridge`), from a grudge; >= 3 nodes.
    PartitionShape(Shape),
    /// A node fault aimed at the node the broker names for a role, asked when the
    /// fault fires (`kill-broker:leader`, `restart-broker:group-coordinator`, ...).
    OnRole(NodeFault, Role),
}

/// What a fault needs from a deployment. A run refuses a fault whose needs the
/// deployment does not meet, with the reason, before anything is recorded.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Needs {
    /// At least this many broker nodes.
    pub nodes: usize,
    /// Kill, start, pause and unpause of nodes.
    pub process_faults: bool,
    /// Freezing and thawing nodes.
    pub pause: bool,
    /// Commands with NET_ADMIN inside the nodes: the tool the fault runs
    /// (`iptables` or `tc`).
    pub net_admin: Option<&'static str>,
    /// The node the fault is aimed at, by role (the storage node, or a node the
    /// broker names).
    pub role: Option<Role>,
}

impl FaultKind {
    /// What this fault needs from a deployment.
    pub fn needs(self) -> Needs {
        let process = Needs {
            process_faults: true,
            ..Needs::default()
        };
        let iptables = |nodes| Needs {
            nodes,
            net_admin: Some("iptables"),
            ..Needs::default()
        };
        match self {
            FaultKind::KillConsumer(_) | FaultKind::Link(_) => Needs::default(),
            FaultKind::KillBroker | FaultKind::RestartBroker { .. } => process,
            FaultKind::Pause => Needs {
                pause: true,
                ..process
            },
            FaultKind::Partition => iptables(2),
            FaultKind::PartitionShape(_) => iptables(3),
            FaultKind::Netem { .. } => Needs {
                net_admin: Some("tc"),
                ..Needs::default()
            },
            FaultKind::OnRole(f, role) => Needs {
                role: Some(role),
                ..f.on_node().needs()
            },
        }
    }
}

impl FromStr for FaultKind {
    type Err = NemesisError;
    fn from_str(s: &str) -> Result<Self, NemesisError> {
        if let Some((f, r)) = on_role(s.trim()) {
            return Ok(FaultKind::OnRole(f, r));
        }
        Ok(match s.trim() {
            "kill-consumer" => FaultKind::KillConsumer(KillConsumerAt::Any),
            "kill-consumer:before-ack" => FaultKind::KillConsumer(KillConsumerAt::BeforeAck),
            "kill-consumer:after-ack" | "kill-consumer:after-commit" => {
                FaultKind::KillConsumer(KillConsumerAt::AfterAck)
            }
            "kill-broker" | "kill" => FaultKind::KillBroker,
            "restart-broker" => FaultKind::RestartBroker { mid_batch: false },
            "restart-broker:mid-batch" => FaultKind::RestartBroker { mid_batch: true },
            "pause" => FaultKind::Pause,
            "partition" | "partition:isolate" => FaultKind::Partition,
            "partition:halves" | "partition:majority" => FaultKind::PartitionShape(Shape::Halves),
            "partition:ring" | "partition:majorities-ring" => {
                FaultKind::PartitionShape(Shape::Ring)
            }
            "partition:bridge" => FaultKind::PartitionShape(Shape::Bridge),
            other if other == "netem" || other.starts_with("netem:") => {
                let ms = match other.strip_prefix("netem:") {
                    None => 100,
                    Some(a) => a
                        .trim_end_matches("ms")
                        .parse()
                        .map_err(|_| NemesisError::UnknownFault(other.to_string()))?,
                };
                FaultKind::Netem { delay_ms: ms }
            }
            other if LinkFault::parse(other).is_some() => FaultKind::Link(
                LinkFault::parse(other)
                    .ok_or_else(|| NemesisError::UnknownFault(other.to_string()))?,
            ),
            other => return Err(NemesisError::UnknownFault(other.to_string())),
        })
    }
}

impl fmt::Display for FaultKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            FaultKind::Link(l) => return l.fmt(f),
            FaultKind::Netem { delay_ms } => return write!(f, "netem:{delay_ms}"),
            FaultKind::OnRole(nf, role) => return write!(f, "{}:{role}", nf.on_node()),
            _ => {}
        }
        f.write_str(match self {
            FaultKind::KillConsumer(KillConsumerAt::Any) => "kill-consumer",
            FaultKind::KillConsumer(KillConsumerAt::BeforeAck) => "kill-consumer:before-ack",
            FaultKind::KillConsumer(KillConsumerAt::AfterAck) => "kill-consumer:after-ack",
            FaultKind::KillBroker => "kill-broker",
            FaultKind::RestartBroker { mid_batch: false } => "restart-broker",
            FaultKind::RestartBroker { mid_batch: true } => "restart-broker:mid-batch",
            FaultKind::Pause => "pause",
            FaultKind::Partition => "partition",
            FaultKind::Link(_) | FaultKind::Netem { .. } | FaultKind::OnRole(..) => "",
            FaultKind::PartitionShape(Shape::Halves) => "partition:halves",
            FaultKind::PartitionShape(Shape::Ring) => "partition:ring",
            FaultKind::PartitionShape(Shape::Bridge) => "partition:bridge",
        })
    }
}

/// One fault in action: what `start` did, so `stop` can undo it.
#[derive(Debug, Clone)]
pub struct Fault {
    /// The fault done; a fault aimed at a role is stored as the node fault it became.
    pub kind: FaultKind,
    /// The node (or consumer) it targets, when it targets one.
    pub target: Option<String>,
}

/// The `f` names recorded in the history for start and stop.
pub fn history_names(kind: FaultKind) -> (&'static str, &'static str) {
    match kind {
        FaultKind::KillConsumer(_) => ("kill-consumer", "restart-consumer"),
        FaultKind::KillBroker => ("kill", "start"),
        FaultKind::RestartBroker { .. } => ("restart", "restarted"),
        FaultKind::Pause => ("pause", "resume"),
        FaultKind::Partition | FaultKind::PartitionShape(_) => ("partition", "heal"),
        FaultKind::OnRole(f, _) => history_names(f.on_node()),
        FaultKind::Link(l) => link::history_names(l),
        FaultKind::Netem { .. } => ("netem", "netem-end"),
    }
}

pub(super) fn failed(kind: FaultKind, target: &str, e: impl fmt::Display) -> NemesisError {
    NemesisError::Failed {
        fault: kind.to_string(),
        target: target.to_string(),
        why: e.to_string(),
    }
}

impl Fault {
    /// Injects the fault on `target` (a node name; ignored by kill-consumer, which uses
    /// `pick`, by partition shapes, which shuffle the nodes by `pick`, and by faults aimed
    /// at a role, which ask the cluster for the node). A fault aimed at a role comes back
    /// as the plain node fault on the node found, which is what `stop` heals.
    pub async fn start(
        kind: FaultKind,
        cluster: &dyn Cluster,
        target: &str,
        pick: u64,
    ) -> Result<(Fault, Value), NemesisError> {
        if let FaultKind::OnRole(f, role) = kind {
            let node = find_role(cluster, kind, role).await?;
            let (fault, mut value) = Fault::start_on(f.on_node(), cluster, &node, pick).await?;
            value["role"] = json!(role.to_string());
            return Ok((fault, value));
        }
        Fault::start_on(kind, cluster, target, pick).await
    }

    async fn start_on(
        kind: FaultKind,
        cluster: &dyn Cluster,
        target: &str,
        pick: u64,
    ) -> Result<(Fault, Value), NemesisError> {
        let fault = Fault {
            kind,
            target: Some(target.to_string()),
        };
        let value = match kind {
            FaultKind::KillConsumer(at) => cluster.kill_consumer(pick, at).await?,
            FaultKind::KillBroker => {
                cluster.kill_node(target).await?;
                json!({"node": target})
            }
            FaultKind::RestartBroker { mid_batch } => {
                let in_flight = if mid_batch {
                    cluster.wait_send_in_flight(Duration::from_secs(10)).await
                } else {
                    false
                };
                cluster.kill_node(target).await?;
                json!({"node": target, "mid_batch": mid_batch, "send_in_flight": in_flight})
            }
            FaultKind::Pause => {
                cluster.pause_node(target).await?;
                json!({"node": target})
            }
            FaultKind::Partition => partition::isolate(cluster, kind, target).await?,
            FaultKind::Link(l) => cluster.link(target, l).await?,
            FaultKind::Netem { delay_ms } => node::netem(cluster, kind, target, delay_ms).await?,
            FaultKind::PartitionShape(shape) => {
                let g = grudge(shape, &cluster.nodes(), pick)?;
                apply_grudge(cluster, kind, &g).await?;
                let value = json!({"shape": kind.to_string(), "grudge": g});
                // A shape targets no one node: it heals by flushing every node.
                return Ok((Fault { kind, target: None }, value));
            }
            FaultKind::OnRole(..) => {
                return Err(failed(kind, target, "a role is resolved by `start`"))
            }
        };
        Ok((fault, value))
    }

    /// Heals the fault.
    pub async fn stop(&self, cluster: &dyn Cluster) -> Result<Value, NemesisError> {
        let target = self.target.clone().unwrap_or_default();
        match self.kind {
            FaultKind::KillConsumer(_) => Ok(json!({})),
            FaultKind::KillBroker | FaultKind::RestartBroker { .. } => {
                cluster.start_node(&target).await?;
                Ok(json!({"node": target}))
            }
            FaultKind::Pause => {
                cluster.unpause_node(&target).await?;
                Ok(json!({"node": target}))
            }
            // `start` returns the fault it did on the node found, never this kind; heal it as that.
            FaultKind::OnRole(f, _) => match f {
                NodeFault::Kill | NodeFault::Restart => {
                    cluster.start_node(&target).await?;
                    Ok(json!({"node": target}))
                }
                NodeFault::Pause => {
                    cluster.unpause_node(&target).await?;
                    Ok(json!({"node": target}))
                }
                NodeFault::Isolate => {
                    heal_network(cluster).await?;
                    Ok(json!({"healed": cluster.nodes()}))
                }
            },
            FaultKind::Partition | FaultKind::PartitionShape(_) => {
                heal_network(cluster).await?;
                Ok(json!({"healed": cluster.nodes()}))
            }
            FaultKind::Link(_) => {
                let healed = cluster.heal_links().await?;
                Ok(json!({"node": target, "healed": healed}))
            }
            FaultKind::Netem { .. } => {
                cluster.remove_delay(&target).await?;
                Ok(json!({"node": target}))
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_fault_says_what_it_needs() {
        let n = |s: &str| FaultKind::from_str(s).expect("a fault").needs();
        assert_eq!(n("kill-consumer:before-ack"), Needs::default());
        assert_eq!(n("ack-loss"), Needs::default());
        assert!(n("kill-broker").process_faults && n("pause").process_faults);
        assert!(n("pause").pause && n("pause:leader").pause && !n("kill-broker").pause);
        assert_eq!(
            (n("partition").nodes, n("partition").net_admin),
            (2, Some("iptables"))
        );
        assert_eq!(n("partition:ring").nodes, 3);
        assert_eq!(n("netem:50").net_admin, Some("tc"));
        let r = n("restart-broker:txn-coordinator");
        assert!(r.process_faults && r.role == Some(Role::TxnCoordinator));
        let i = n("partition:storage");
        assert_eq!(
            (i.nodes, i.net_admin, i.role),
            (2, Some("iptables"), Some(Role::Storage))
        );
    }

    #[test]
    fn every_syntax_listed_parses_and_every_fault_is_listed() {
        for s in SYNTAX {
            let base = s.split('[').next().unwrap_or(s);
            assert!(FaultKind::from_str(base).is_ok(), "{s}");
        }
        let e = FaultKind::from_str("kill-everything").expect_err("unknown");
        let text = e.to_string();
        assert!(
            text.contains("netem[:MS]") && text.contains("txn-coordinator, storage"),
            "{text}"
        );
    }

    #[test]
    fn names_round_trip() {
        for s in [
            "kill-consumer",
            "kill-consumer:before-ack",
            "kill-consumer:after-ack",
            "kill-broker",
            "restart-broker",
            "restart-broker:mid-batch",
            "pause",
            "partition",
            "partition:halves",
            "partition:ring",
            "partition:bridge",
            "kill-broker:leader",
            "restart-broker:leader",
            "pause:leader",
            "partition:leader",
            "kill-broker:group-coordinator",
            "restart-broker:txn-coordinator",
            "pause:group-coordinator",
            "partition:txn-coordinator",
        ] {
            assert_eq!(
                FaultKind::from_str(s)
                    .map(|k| k.to_string())
                    .ok()
                    .as_deref(),
                Some(s)
            );
        }
        assert!(FaultKind::from_str("meteor").is_err());
        assert!(FaultKind::from_str("kill-consumer:leader").is_err());
        assert!(FaultKind::from_str("kill-broker:coordinator").is_err());
        for f in [
            NodeFault::Kill,
            NodeFault::Restart,
            NodeFault::Pause,
            NodeFault::Isolate,
        ] {
            for r in Role::ALL {
                let k = FaultKind::OnRole(f, r);
                assert_eq!(FaultKind::from_str(&k.to_string()).ok(), Some(k));
            }
        }
    }

    #[test]
    fn network_fault_names_round_trip_with_defaults() {
        for s in [
            "ack-loss",
            "partition-one-way",
            "client-partition",
            "latency:250",
            "jitter:40",
            "loss:10",
            "bandwidth:8",
            "reset",
            "blackhole",
            "netem:100",
        ] {
            let k = FaultKind::from_str(s).expect(s);
            assert_eq!(k.to_string(), s);
            let (start, end) = history_names(k);
            assert_eq!(end, format!("{start}-end"));
        }
        assert_eq!(
            FaultKind::from_str("latency").ok(),
            Some(FaultKind::Link(LinkFault::Latency { ms: 200 }))
        );
        assert_eq!(
            FaultKind::from_str("latency:200ms").ok(),
            Some(FaultKind::Link(LinkFault::Latency { ms: 200 }))
        );
        assert_eq!(
            FaultKind::from_str("loss").ok(),
            Some(FaultKind::Link(LinkFault::Loss { percent: 5 }))
        );
        for bad in [
            "latency:soon",
            "loss:150",
            "bandwidth:0",
            "ack-loss:x",
            "netem:x",
        ] {
            assert!(FaultKind::from_str(bad).is_err(), "{bad}");
        }
    }
}
