//! The faults. Each is `start` (inject) and `stop` (heal); a fault that heals by
//! itself (killing a consumer, which the harness restarts) has a no-op stop.
use crate::{Cluster, NemesisError};
use serde_json::{json, Value};
use std::collections::{BTreeMap, BTreeSet};
use std::fmt;
use std::str::FromStr;
use std::time::Duration;

/// When a consumer is killed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum KillConsumerAt {
    /// Whenever the fault fires.
    Any,
    /// After processing a batch, before acknowledging it (seed D4: redelivery).
    BeforeAck,
    /// After acknowledging (or committing) a batch, before processing finished (seed D5: loss).
    AfterAck,
}

/// A fault, as named on the command line (`--nemesis kill-consumer:before-ack,partition`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FaultKind {
    KillConsumer(KillConsumerAt),
    /// SIGKILL a broker node, start it again when the fault ends.
    KillBroker,
    /// SIGKILL then start at once; `mid_batch` waits until a send is in flight (seed D6).
    RestartBroker {
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
        delay_ms: u32,
    },
    // --- Partition shapes and role targeting ---
    /// Cut the network in a shape (`partition:halves|ring|bridge`), from a grudge; >= 3 nodes.
    PartitionShape(Shape),
    /// A node fault aimed at the node the broker names for a role, asked when the
    /// fault fires (`kill-broker:leader`, `restart-broker:group-coordinator`, ...).
    OnRole(NodeFault, Role),
}

/// A fault on the path between the clients and one node, done by the harness's TCP
/// proxy (no change inside the node). Directions: requests are client -> broker,
/// replies broker -> client.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LinkFault {
    /// Replies dropped, requests pass (seed D2): the broker stores, the client never
    /// hears so, times out and retries.
    AckLoss,
    /// Requests dropped, replies pass (seed D1): what the client sends never arrives.
    OneWay,
    /// The clients are cut off the node: open connections reset, new ones refused.
    ClientPartition,
    /// Every chunk held MS more, both directions.
    Latency { ms: u32 },
    /// Every chunk held a uniform 0..=MS more (seeded), both directions, order kept.
    Jitter { ms: u32 },
    /// Each chunk lost with PCT % probability, and its connection reset.
    Loss { percent: u32 },
    /// At most KIB KiB/s each way.
    Bandwidth { kib_per_sec: u32 },
    /// Every open connection closed with RST (new ones work).
    Reset,
    /// Connections accepted, nothing forwarded either way.
    Blackhole,
}

impl LinkFault {
    fn parse(s: &str) -> Option<LinkFault> {
        let (name, arg) = match s.split_once(':') {
            Some((n, a)) => (n, Some(a)),
            None => (s, None),
        };
        let num = |default: u32| -> Option<u32> {
            match arg {
                None => Some(default),
                Some(a) => a.trim_end_matches("ms").parse().ok(),
            }
        };
        let plain = |f: LinkFault| arg.is_none().then_some(f);
        match name {
            "ack-loss" => plain(LinkFault::AckLoss),
            "partition-one-way" => plain(LinkFault::OneWay),
            "client-partition" => plain(LinkFault::ClientPartition),
            "latency" => num(200).map(|ms| LinkFault::Latency { ms }),
            "jitter" => num(100).map(|ms| LinkFault::Jitter { ms }),
            "loss" => num(5)
                .filter(|p| *p <= 100)
                .map(|percent| LinkFault::Loss { percent }),
            "bandwidth" => num(16)
                .filter(|k| *k > 0)
                .map(|kib_per_sec| LinkFault::Bandwidth { kib_per_sec }),
            "reset" => plain(LinkFault::Reset),
            "blackhole" => plain(LinkFault::Blackhole),
            _ => None,
        }
    }

    /// The name recorded in the history when the fault starts (its end is `<name>-end`).
    pub fn name(self) -> &'static str {
        match self {
            LinkFault::AckLoss => "ack-loss",
            LinkFault::OneWay => "partition-one-way",
            LinkFault::ClientPartition => "client-partition",
            LinkFault::Latency { .. } => "latency",
            LinkFault::Jitter { .. } => "jitter",
            LinkFault::Loss { .. } => "loss",
            LinkFault::Bandwidth { .. } => "bandwidth",
            LinkFault::Reset => "reset",
            LinkFault::Blackhole => "blackhole",
        }
    }
}

/// What a fault needs from a deployment. A run refuses a fault whose needs the
/// deployment does not meet, with the reason, before anything is recorded.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Needs {
    /// At least this many broker nodes.
    pub nodes: usize,
    /// Kill, start, pause and unpause of nodes.
    pub process_faults: bool,
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
            FaultKind::KillBroker | FaultKind::RestartBroker { .. } | FaultKind::Pause => process,
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

/// The shapes of [`FaultKind::PartitionShape`], after Jepsen's `nemesis.clj`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Shape {
    /// Two halves, the smaller (minority) and the larger (majority); shuffled.
    Halves,
    /// Majorities ring: every node sees a majority, no two nodes the same one.
    Ring,
    /// Two halves joined by one node that sees both (and both see it).
    Bridge,
}

/// The node faults that can target a role ([`FaultKind::OnRole`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum NodeFault {
    Kill,
    Restart,
    Pause,
    /// Isolate the node in the role from every other node.
    Isolate,
}

impl NodeFault {
    pub const ALL: [NodeFault; 4] = [
        NodeFault::Kill,
        NodeFault::Restart,
        NodeFault::Pause,
        NodeFault::Isolate,
    ];

    /// The same fault on a node named by the schedule.
    pub fn on_node(self) -> FaultKind {
        match self {
            NodeFault::Kill => FaultKind::KillBroker,
            NodeFault::Restart => FaultKind::RestartBroker { mid_batch: false },
            NodeFault::Pause => FaultKind::Pause,
            NodeFault::Isolate => FaultKind::Partition,
        }
    }
}

impl fmt::Display for LinkFault {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            LinkFault::Latency { ms } | LinkFault::Jitter { ms } => {
                write!(f, "{}:{ms}", self.name())
            }
            LinkFault::Loss { percent } => write!(f, "loss:{percent}"),
            LinkFault::Bandwidth { kib_per_sec } => write!(f, "bandwidth:{kib_per_sec}"),
            _ => f.write_str(self.name()),
        }
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
}

impl Role {
    pub const ALL: [Role; 4] = [
        Role::Leader,
        Role::GroupCoordinator,
        Role::TxnCoordinator,
        Role::Storage,
    ];

    /// The name after the fault's, as in `kill-broker:group-coordinator`.
    pub fn name(self) -> &'static str {
        match self {
            Role::Leader => "leader",
            Role::GroupCoordinator => "group-coordinator",
            Role::TxnCoordinator => "txn-coordinator",
            Role::Storage => "storage",
        }
    }
}

impl fmt::Display for Role {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// Who drops whose packets: node -> the nodes it drops packets *from* (Jepsen's grudge).
pub type Grudge = BTreeMap<String, BTreeSet<String>>;

/// Every node of a component drops every node outside it (Jepsen's `complete-grudge`).
pub fn complete_grudge(components: &[Vec<String>]) -> Grudge {
    let universe: BTreeSet<String> = components.iter().flatten().cloned().collect();
    let mut g = Grudge::new();
    for c in components {
        let mine: BTreeSet<String> = c.iter().cloned().collect();
        for n in c {
            g.insert(n.clone(), universe.difference(&mine).cloned().collect());
        }
    }
    g
}

/// `nodes` shuffled by the seeded `pick` (Fisher-Yates over SplitMix64).
fn shuffled(nodes: &[String], pick: u64) -> Vec<String> {
    let mut v = nodes.to_vec();
    let mut state = pick ^ 0x7061_7274_6974_696F;
    let mut next = || {
        state = state.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = state;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    };
    for i in (1..v.len()).rev() {
        let j = (next() % (i as u64 + 1)) as usize;
        v.swap(i, j);
    }
    v
}

/// The grudge of a shape over `nodes`, the nodes shuffled by `pick` first (the same
/// pick gives the same grudge). Every shape needs at least three nodes.
pub fn grudge(shape: Shape, nodes: &[String], pick: u64) -> Result<Grudge, NemesisError> {
    if nodes.len() < 3 {
        return Err(NemesisError::Unsupported {
            fault: FaultKind::PartitionShape(shape).to_string(),
            why: format!(
                "needs at least three nodes, the cluster has {}",
                nodes.len()
            ),
        });
    }
    let v = shuffled(nodes, pick);
    let n = v.len();
    // Jepsen's `bisect`: the smaller half first.
    let (small, large) = v.split_at(n / 2);
    Ok(match shape {
        Shape::Halves => complete_grudge(&[small.to_vec(), large.to_vec()]),
        Shape::Bridge => {
            let bridge = large[0].clone();
            let mut g = complete_grudge(&[small.to_vec(), large.to_vec()]);
            g.remove(&bridge);
            for drops in g.values_mut() {
                drops.remove(&bridge);
            }
            g
        }
        Shape::Ring => {
            let majority = n / 2 + 1;
            let all: BTreeSet<String> = v.iter().cloned().collect();
            (0..n)
                .map(|i| {
                    let sees: BTreeSet<String> =
                        (0..majority).map(|k| v[(i + k) % n].clone()).collect();
                    (v[i].clone(), all.difference(&sees).cloned().collect())
                })
                .collect()
        }
    })
}

/// Cuts the network as `grudge` says: on each node, its packets from each node it
/// holds a grudge against are dropped (iptables INPUT). Healed by [`heal_network`].
pub async fn apply_grudge(
    cluster: &dyn Cluster,
    kind: FaultKind,
    grudge: &Grudge,
) -> Result<(), NemesisError> {
    let mut ips = BTreeMap::new();
    for n in cluster.nodes() {
        ips.insert(n.clone(), cluster.node_ip(&n).await?);
    }
    for (node, drops) in grudge {
        if drops.is_empty() {
            continue;
        }
        let mut from = Vec::new();
        for d in drops {
            let ip = ips
                .get(d)
                .ok_or_else(|| failed(kind, node, format!("no node {d}")))?;
            from.push(ip.clone());
        }
        cluster
            .drop_traffic(node, &from, false)
            .await
            .map_err(|e| failed(kind, node, e))?;
    }
    Ok(())
}

/// The node the broker names for `role` (the cluster waits out an election in progress).
pub async fn find_role(
    cluster: &dyn Cluster,
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

/// `<node fault>:<role>`, e.g. `restart-broker:txn-coordinator`: the node fault is
/// named as on a node (`kill-broker`, `restart-broker`, `pause`, `partition`).
fn on_role(s: &str) -> Option<(NodeFault, Role)> {
    let (fault, role) = s.rsplit_once(':')?;
    let f = NodeFault::ALL
        .into_iter()
        .find(|f| f.on_node().to_string() == fault)?;
    let r = Role::ALL.into_iter().find(|r| r.name() == role)?;
    Some((f, r))
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
        FaultKind::Link(l) => link_history_names(l),
        FaultKind::Netem { .. } => ("netem", "netem-end"),
    }
}

fn link_history_names(l: LinkFault) -> (&'static str, &'static str) {
    match l {
        LinkFault::AckLoss => ("ack-loss", "ack-loss-end"),
        LinkFault::OneWay => ("partition-one-way", "partition-one-way-end"),
        LinkFault::ClientPartition => ("client-partition", "client-partition-end"),
        LinkFault::Latency { .. } => ("latency", "latency-end"),
        LinkFault::Jitter { .. } => ("jitter", "jitter-end"),
        LinkFault::Loss { .. } => ("loss", "loss-end"),
        LinkFault::Bandwidth { .. } => ("bandwidth", "bandwidth-end"),
        LinkFault::Reset => ("reset", "reset-end"),
        LinkFault::Blackhole => ("blackhole", "blackhole-end"),
    }
}

fn failed(kind: FaultKind, target: &str, e: impl fmt::Display) -> NemesisError {
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
            FaultKind::Partition => {
                let others: Vec<String> = cluster
                    .nodes()
                    .into_iter()
                    .filter(|n| n != target)
                    .collect();
                if others.is_empty() {
                    return Err(NemesisError::Unsupported {
                        fault: kind.to_string(),
                        why: "a partition needs at least two nodes".into(),
                    });
                }
                let mut ips = Vec::new();
                for n in &others {
                    ips.push(cluster.node_ip(n).await?);
                }
                // Both directions, on the isolated node and on every other node.
                cluster
                    .drop_traffic(target, &ips, true)
                    .await
                    .map_err(|e| failed(kind, target, e))?;
                let me = cluster.node_ip(target).await?;
                for n in &others {
                    cluster
                        .drop_traffic(n, std::slice::from_ref(&me), true)
                        .await?;
                }
                json!({"isolated": target, "from": others})
            }
            FaultKind::Link(l) => cluster.link(target, l).await?,
            FaultKind::Netem { delay_ms } => {
                let cmd = crate::net::delay_script(delay_ms);
                match cluster.add_delay(target, delay_ms).await {
                    Ok(_) => json!({"node": target, "netem": format!("delay {delay_ms}ms")}),
                    Err(e) => {
                        return Err(NemesisError::Unsupported {
                            fault: kind.to_string(),
                            why: format!(
                                "`{cmd}` failed in {target} (no sch_netem in this kernel?): {e}"
                            ),
                        })
                    }
                }
            }
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

/// Removes every DROP rule the partitions added, on every node.
pub async fn heal_network(cluster: &dyn Cluster) -> Result<(), NemesisError> {
    for n in cluster.nodes().into_iter().chain(cluster.storage_node()) {
        cluster.heal_traffic(&n).await?;
    }
    Ok(())
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

    fn names(n: usize) -> Vec<String> {
        (1..=n).map(|i| format!("n{i}")).collect()
    }

    fn set(xs: &[&str]) -> BTreeSet<String> {
        xs.iter().map(|s| s.to_string()).collect()
    }

    /// What each node still hears: every node minus the ones it drops.
    fn hears(g: &Grudge, nodes: &[String], n: &str) -> BTreeSet<String> {
        let all: BTreeSet<String> = nodes.iter().cloned().collect();
        match g.get(n) {
            Some(d) => all.difference(d).cloned().collect(),
            None => all,
        }
    }

    #[test]
    fn complete_grudge_cuts_between_components_only() {
        let g = complete_grudge(&[vec!["a".into()], vec!["b".into(), "c".into()]]);
        assert_eq!(g["a"], set(&["b", "c"]));
        assert_eq!(g["b"], set(&["a"]));
        assert_eq!(g["c"], set(&["a"]));
    }

    #[test]
    fn halves_are_a_minority_and_a_majority_cut_both_ways() {
        for n in [3, 4, 5, 7] {
            let nodes = names(n);
            for pick in 0..50 {
                let g = grudge(Shape::Halves, &nodes, pick).expect("grudge");
                assert_eq!(g.len(), n);
                let mut sizes: Vec<usize> =
                    nodes.iter().map(|x| hears(&g, &nodes, x).len()).collect();
                sizes.sort_unstable();
                let minority = n / 2;
                assert!(
                    sizes[..minority].iter().all(|&s| s == minority),
                    "{n} {pick} {g:?}"
                );
                assert!(
                    sizes[minority..].iter().all(|&s| s == n - minority),
                    "{n} {pick} {g:?}"
                );
                // Symmetric: a drops b iff b drops a.
                for (a, drops) in &g {
                    for b in drops {
                        assert!(g[b].contains(a), "{a} drops {b} but not back: {g:?}");
                    }
                }
            }
        }
    }

    #[test]
    fn ring_gives_every_node_a_distinct_majority() {
        for n in [3, 5, 6, 7] {
            let nodes = names(n);
            for pick in 0..50 {
                let g = grudge(Shape::Ring, &nodes, pick).expect("grudge");
                let seen: BTreeSet<BTreeSet<String>> =
                    nodes.iter().map(|x| hears(&g, &nodes, x)).collect();
                assert_eq!(seen.len(), n, "two nodes see the same majority: {g:?}");
                for x in &nodes {
                    let h = hears(&g, &nodes, x);
                    assert_eq!(h.len(), n / 2 + 1, "{x} in {g:?}");
                    assert!(h.contains(x));
                }
            }
        }
        // Three nodes: each drops exactly one other, and no two drop the same one.
        let g = grudge(Shape::Ring, &names(3), 1).expect("grudge");
        let dropped: BTreeSet<&String> = g.values().flatten().collect();
        assert!(g.values().all(|d| d.len() == 1));
        assert_eq!(dropped.len(), 3);
    }

    #[test]
    fn bridge_joins_two_halves_through_one_node() {
        for n in [3, 5, 7] {
            let nodes = names(n);
            for pick in 0..50 {
                let g = grudge(Shape::Bridge, &nodes, pick).expect("grudge");
                let bridges: Vec<&String> = nodes
                    .iter()
                    .filter(|x| hears(&g, &nodes, x).len() == n)
                    .collect();
                assert_eq!(bridges.len(), 1, "{g:?}");
                let bridge = bridges[0];
                assert!(
                    g.values().all(|d| !d.contains(bridge)),
                    "someone drops the bridge: {g:?}"
                );
                // The others form two sides that cannot hear each other.
                let side = |x: &String| hears(&g, &nodes, x);
                let others: Vec<&String> = nodes.iter().filter(|x| *x != bridge).collect();
                let sides: BTreeSet<BTreeSet<String>> = others.iter().map(|x| side(x)).collect();
                assert_eq!(sides.len(), 2, "{g:?}");
                // Each side hears itself and the bridge; the two sides hold every other node.
                let total: usize = sides.iter().map(|s| s.len() - 1).sum();
                assert_eq!(total, n - 1, "{g:?}");
            }
        }
    }

    #[test]
    fn grudges_are_seeded_and_need_three_nodes() {
        let nodes = names(5);
        for shape in [Shape::Halves, Shape::Ring, Shape::Bridge] {
            assert_eq!(grudge(shape, &nodes, 7).ok(), grudge(shape, &nodes, 7).ok());
            let distinct: BTreeSet<Vec<(String, Vec<String>)>> = (0..20)
                .map(|p| {
                    grudge(shape, &nodes, p)
                        .expect("grudge")
                        .into_iter()
                        .map(|(k, v)| (k, v.into_iter().collect()))
                        .collect()
                })
                .collect();
            assert!(distinct.len() > 1, "{shape:?}: the pick changes nothing");
            let e = grudge(shape, &names(2), 0).expect_err("two nodes");
            assert!(e.to_string().contains("at least three nodes"), "{e}");
        }
    }
}
