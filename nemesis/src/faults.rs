//! The faults. Each is `start` (inject) and `stop` (heal); a fault that heals by
//! itself (killing a consumer, which the harness restarts) has a no-op stop.
use crate::{Cluster, NemesisError};
use serde_json::{json, Value};
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

impl FromStr for FaultKind {
    type Err = NemesisError;
    fn from_str(s: &str) -> Result<Self, NemesisError> {
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
            FaultKind::Link(_) | FaultKind::Netem { .. } => "",
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
        FaultKind::Partition => ("partition", "heal"),
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
    /// Injects the fault on `target` (a node name; ignored by kill-consumer, which uses `pick`).
    pub async fn start(
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
                let mut script = String::new();
                for ip in &ips {
                    script.push_str(&format!(
                        "iptables -A INPUT -s {ip} -j DROP && iptables -A OUTPUT -d {ip} -j DROP && "
                    ));
                }
                script.push_str("true");
                cluster
                    .exec(target, &script)
                    .await
                    .map_err(|e| failed(kind, target, e))?;
                let me = cluster.node_ip(target).await?;
                for n in &others {
                    cluster
                        .exec(n, &format!("iptables -A INPUT -s {me} -j DROP && iptables -A OUTPUT -d {me} -j DROP"))
                        .await?;
                }
                json!({"isolated": target, "from": others})
            }
            FaultKind::Link(l) => cluster.link(target, l).await?,
            FaultKind::Netem { delay_ms } => {
                let cmd = format!("tc qdisc add dev eth0 root netem delay {delay_ms}ms");
                match cluster.exec(target, &cmd).await {
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
            FaultKind::Partition => {
                heal_network(cluster).await?;
                Ok(json!({"healed": cluster.nodes()}))
            }
            FaultKind::Link(_) => {
                let healed = cluster.heal_links().await?;
                Ok(json!({"node": target, "healed": healed}))
            }
            FaultKind::Netem { .. } => {
                cluster.exec(&target, NETEM_HEAL).await?;
                Ok(json!({"node": target}))
            }
        }
    }
}

/// Removes a netem qdisc (and succeeds when there is none, or no `tc`).
pub const NETEM_HEAL: &str = "tc qdisc del dev eth0 root 2>/dev/null || true";

/// Removes every DROP rule the partitions added, on every node.
pub async fn heal_network(cluster: &dyn Cluster) -> Result<(), NemesisError> {
    for n in cluster.nodes() {
        cluster
            .exec(&n, "iptables -F INPUT && iptables -F OUTPUT")
            .await?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

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
