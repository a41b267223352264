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
            other => return Err(NemesisError::UnknownFault(other.to_string())),
        })
    }
}

impl fmt::Display for FaultKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            FaultKind::KillConsumer(KillConsumerAt::Any) => "kill-consumer",
            FaultKind::KillConsumer(KillConsumerAt::BeforeAck) => "kill-consumer:before-ack",
            FaultKind::KillConsumer(KillConsumerAt::AfterAck) => "kill-consumer:after-ack",
            FaultKind::KillBroker => "kill-broker",
            FaultKind::RestartBroker { mid_batch: false } => "restart-broker",
            FaultKind::RestartBroker { mid_batch: true } => "restart-broker:mid-batch",
            FaultKind::Pause => "pause",
            FaultKind::Partition => "partition",
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
        }
    }
}

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
}
