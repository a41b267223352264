//! The nemesis side of a run: the schedule played against the deployment,
//! the final heal, and the nemesis's view of the cluster ([`RunCluster`]).
use super::faults::{busiest_link, link_state, link_target};
use super::workers::Pool;
use super::{EventSink, RunEvent, Scenario};
use crate::broker::BrokerExt;
use crate::deployment::Deployment;
use crate::proxy::Proxy;
use gauntlet_history::{Actor, Event, OpType};
use gauntlet_nemesis::faults::{heal_network, history_names};
use gauntlet_nemesis::{
    Cluster, Fault, FaultKind, KillConsumerAt, LinkFault, NemesisError, Role, Schedule,
};
use gauntlet_workloads::stall::StallPoint;
use gauntlet_workloads::Recorder;
use serde_json::json;
use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

pub(super) fn nemesis_event(kind: OpType, f: &str, value: serde_json::Value) -> Event {
    Event::new(Actor::Nemesis, kind, f).value(value)
}

/// How long a link fault watches the client links to see which ones carry traffic.
const LINK_SAMPLE: Duration = Duration::from_millis(300);

/// Marks a nemesis event with the schedule position of its fault, which pairs a
/// fault's start and end events in the report (`fault_id`).
fn with_id(value: &mut serde_json::Value, id: usize) {
    match value {
        serde_json::Value::Object(m) => {
            m.insert("fault_id".into(), json!(id));
        }
        other => *other = json!({"result": other.take(), "fault_id": id}),
    }
}

/// Plays the schedule against the cluster, recording each fault's start and end.
pub(super) async fn run_schedule(
    schedule: &Schedule,
    cluster: &RunCluster<'_>,
    recorder: &Recorder,
    t0: Instant,
    events: &EventSink,
) {
    for (id, sf) in schedule.faults.iter().enumerate() {
        let Ok(kind) = sf.kind() else { continue };
        let at = t0 + Duration::from_millis(sf.at_ms);
        tokio::time::sleep_until(at.into()).await;
        let (start_f, stop_f) = history_names(kind);
        let _ = recorder.record(&nemesis_event(
            OpType::Invoke,
            start_f,
            json!({"fault": sf.fault, "target": sf.target, "fault_id": id}),
        ));
        let started = Fault::start(kind, cluster, &sf.target, sf.pick).await;
        let fault = match started {
            Ok((fault, mut value)) => {
                events.send(RunEvent::FaultStarted {
                    fault: sf.fault.to_string(),
                    detail: value.to_string(),
                });
                with_id(&mut value, id);
                let _ = recorder.record(&nemesis_event(OpType::Info, start_f, value));
                fault
            }
            Err(e) => {
                events.send(RunEvent::FaultFailed {
                    fault: sf.fault.to_string(),
                    error: e.to_string(),
                });
                let _ = recorder.record(&nemesis_event(
                    OpType::Info,
                    start_f,
                    json!({"error": e.to_string(), "fault_id": id, "end": true}),
                ));
                continue;
            }
        };
        if matches!(kind, FaultKind::KillConsumer(_)) {
            continue;
        }
        tokio::time::sleep(Duration::from_millis(sf.duration_ms)).await;
        // The node the fault hit (a leader found at start), or none (a partition shape).
        let _ = recorder.record(&nemesis_event(
            OpType::Invoke,
            stop_f,
            json!({"target": fault.target, "fault_id": id}),
        ));
        let mut value = match fault.stop(cluster).await {
            Ok(v) => v,
            Err(e) => json!({"error": e.to_string()}),
        };
        with_id(&mut value, id);
        let _ = recorder.record(&nemesis_event(OpType::Info, stop_f, value));
        events.send(RunEvent::FaultEnded {
            fault: sf.fault.to_string(),
        });
    }
}

/// Heals everything: network rules flushed, nodes resumed and started, cluster ready.
pub(super) async fn final_heal(cluster: &RunCluster<'_>, recorder: &Recorder, events: &EventSink) {
    let _ = recorder.record(&nemesis_event(OpType::Invoke, "heal-all", json!({})));
    let mut notes = Vec::new();
    // The storage node first: the brokers need it to come back.
    let storage = cluster.deployment.storage_node();
    for n in storage.into_iter().chain(cluster.deployment.nodes()) {
        let _ = cluster.deployment.unpause(&n).await;
        if cluster
            .deployment
            .wait_ready(&n, Duration::from_secs(2))
            .await
            .is_err()
        {
            if let Err(e) = cluster.start_node(&n).await {
                notes.push(format!("{n}: {e}"));
            }
        }
    }
    if let Err(e) = heal_network(cluster).await {
        notes.push(e.to_string());
    }
    if let Err(e) = cluster.heal_links().await {
        notes.push(e.to_string());
    }
    if cluster.netem {
        for n in cluster.deployment.nodes() {
            if let Err(e) = cluster.remove_delay(&n).await {
                notes.push(e.to_string());
            }
        }
    }
    if let Err(e) = cluster
        .deployment
        .wait_cluster_ready(Duration::from_secs(120))
        .await
    {
        notes.push(e.to_string());
    }
    if !notes.is_empty() {
        events.send(RunEvent::HealProblems {
            problems: notes.clone(),
        });
    }
    let _ = recorder.record(&nemesis_event(
        OpType::Info,
        "heal-all",
        json!({"problems": notes}),
    ));
}

/// The nemesis's view of a run: the deployment and the consumer workers.
pub(super) struct RunCluster<'a> {
    pub(super) deployment: &'a dyn Deployment,
    /// What a coordinator's role probe asks about (see [`RoleNames`]).
    pub(super) roles: RoleNames,
    pub(super) pool: Pool,
    /// The clients' proxy, when the run has one.
    pub(super) proxy: Option<&'a Proxy>,
    /// The run may leave a netem qdisc behind (the final heal removes it).
    pub(super) netem: bool,
    /// A plan (`--plan`): nothing is waited for (a send in flight is taken as
    /// there at once).
    pub(super) planning: bool,
}

/// The names a coordinator is found for: the consumer group and the transactional
/// id of the run's workload. Role probes read them from the environment
/// (`GAUNTLET_GROUP`, `GAUNTLET_TXN_ID`).
#[derive(Debug, Clone)]
pub(super) struct RoleNames {
    group: String,
    transactional_id: String,
}

impl RoleNames {
    pub(super) fn of(scenario: &Scenario) -> Self {
        let group = if scenario.workload == super::Workload::Txn {
            gauntlet_workloads::txn::GROUP.to_string()
        } else {
            scenario
                .queue
                .groups
                .first()
                .cloned()
                .unwrap_or_else(|| "g1".to_string())
        };
        RoleNames {
            group,
            // The queue and log workloads have no transactional producer; there the
            // role names the coordinator of the txn workload's first id.
            transactional_id: gauntlet_workloads::txn::transactional_id(0),
        }
    }
}

pub(super) fn nem_err(fault: &str, target: &str, e: impl std::fmt::Display) -> NemesisError {
    NemesisError::Failed {
        fault: fault.to_string(),
        target: target.to_string(),
        why: e.to_string(),
    }
}

#[async_trait::async_trait]
impl Cluster for RunCluster<'_> {
    fn nodes(&self) -> Vec<String> {
        self.deployment.nodes()
    }
    fn storage_node(&self) -> Option<String> {
        self.deployment.storage_node()
    }
    async fn kill_node(&self, node: &str) -> Result<(), NemesisError> {
        self.deployment
            .kill(node)
            .await
            .map_err(|e| nem_err("kill", node, e))
    }
    async fn start_node(&self, node: &str) -> Result<(), NemesisError> {
        self.deployment
            .start(node)
            .await
            .map_err(|e| nem_err("start", node, e))?;
        self.deployment
            .wait_ready(node, Duration::from_secs(90))
            .await
            .map_err(|e| nem_err("start", node, e))
    }
    async fn pause_node(&self, node: &str) -> Result<(), NemesisError> {
        self.deployment
            .pause(node)
            .await
            .map_err(|e| nem_err("pause", node, e))
    }
    async fn unpause_node(&self, node: &str) -> Result<(), NemesisError> {
        self.deployment
            .unpause(node)
            .await
            .map_err(|e| nem_err("resume", node, e))
    }
    async fn exec(&self, node: &str, script: &str) -> Result<String, NemesisError> {
        let out = self
            .deployment
            .exec(
                node,
                &crate::broker::Command::shell(script),
                Duration::from_secs(20),
            )
            .await
            .map_err(|e| nem_err("exec", node, e))?;
        if !out.success() {
            return Err(nem_err(
                "exec",
                node,
                format!("`{script}` exited {}: {}", out.exit_code, out.combined()),
            ));
        }
        Ok(out.combined())
    }
    async fn drop_traffic(
        &self,
        node: &str,
        ips: &[String],
        outbound: bool,
    ) -> Result<(), NemesisError> {
        self.deployment
            .drop_traffic(node, ips, outbound)
            .await
            .map_err(|e| nem_err("drop-traffic", node, e))
    }
    async fn heal_traffic(&self, node: &str) -> Result<(), NemesisError> {
        self.deployment
            .heal_traffic(node)
            .await
            .map_err(|e| nem_err("heal-traffic", node, e))
    }
    async fn add_delay(&self, node: &str, ms: u32) -> Result<(), NemesisError> {
        self.deployment
            .add_delay(node, ms)
            .await
            .map_err(|e| nem_err("add-delay", node, e))
    }
    async fn remove_delay(&self, node: &str) -> Result<(), NemesisError> {
        self.deployment
            .remove_delay(node)
            .await
            .map_err(|e| nem_err("remove-delay", node, e))
    }
    async fn node_ip(&self, node: &str) -> Result<String, NemesisError> {
        self.deployment
            .node_ip(node)
            .await
            .map_err(|e| nem_err("node-ip", node, e))
    }
    async fn kill_consumer(
        &self,
        pick: u64,
        at: KillConsumerAt,
    ) -> Result<serde_json::Value, NemesisError> {
        let mut ws = self.pool.lock().await;
        if ws.is_empty() {
            return Err(nem_err("kill-consumer", "-", "no consumer is running"));
        }
        let i = (pick % ws.len() as u64) as usize;
        let w = &mut ws[i].1;
        let command = match at {
            KillConsumerAt::Any => None,
            KillConsumerAt::BeforeAck => Some(StallPoint::BeforeAck),
            KillConsumerAt::AfterAck => Some(StallPoint::AfterAck),
        }
        .map(|p| format!("{}\n", p.command()));
        let mut stalled = false;
        if let Some(c) = command {
            if let Some(stdin) = w.child.stdin.as_mut() {
                use tokio::io::AsyncWriteExt;
                let _ = stdin.write_all(c.as_bytes()).await;
                let _ = stdin.flush().await;
            }
            stalled = tokio::time::timeout(Duration::from_secs(15), w.stalled.notified())
                .await
                .is_ok();
        }
        let pid = w.child.id();
        w.child
            .start_kill()
            .map_err(|e| nem_err("kill-consumer", &w.process.to_string(), e))?;
        Ok(json!({"process": w.process, "pid": pid, "at": format!("{at:?}"), "stalled": stalled}))
    }
    async fn link(&self, node: &str, fault: LinkFault) -> Result<serde_json::Value, NemesisError> {
        let unsupported = || NemesisError::Unsupported {
            fault: fault.to_string(),
            why: format!("no client proxy in front of {node}"),
        };
        let proxy = self.proxy.ok_or_else(unsupported)?;
        // The client -> broker bytes of each link so far, and over the next
        // moment: where the clients send now.
        let sent = || -> Vec<u64> { proxy.links.iter().map(|l| l.stats().bytes_up).collect() };
        let before = sent();
        tokio::time::sleep(LINK_SAMPLE).await;
        let after = sent();
        let recent: Vec<(&str, u64)> = proxy
            .links
            .iter()
            .zip(before.iter().zip(&after))
            .map(|(l, (b, a))| (l.node(), a.saturating_sub(*b)))
            .collect();
        let so_far: Vec<(&str, u64)> = proxy
            .links
            .iter()
            .zip(&after)
            .map(|(l, a)| (l.node(), *a))
            .collect();
        let traffic = if recent.iter().any(|&(_, b)| b > 0) {
            &recent
        } else {
            &so_far
        };
        let aimed = if matches!(fault, LinkFault::AckLoss) {
            busiest_link(node, traffic)
        } else {
            link_target(node, traffic)
        };
        let link = proxy.link(aimed).ok_or_else(unsupported)?;
        let state = link_state(fault);
        link.set(state);
        if matches!(fault, LinkFault::Reset | LinkFault::ClientPartition) {
            link.reset_all();
        }
        let mut value = json!({
            "node": aimed,
            "fault": fault.to_string(),
            "proxy": link.addr().to_string(),
            "stats": link.stats(),
        });
        if aimed != node {
            value["scheduled"] = json!(node);
            value["why"] = json!(if matches!(fault, LinkFault::AckLoss) {
                format!("ack-loss takes the link clients send the most through: {aimed}'s")
            } else {
                format!(
                    "{node}'s link carries under a quarter of the busiest's client bytes now; {aimed}'s carries the most"
                )
            });
        }
        Ok(value)
    }
    async fn heal_links(&self) -> Result<serde_json::Value, NemesisError> {
        let Some(proxy) = self.proxy else {
            return Ok(serde_json::Value::Null);
        };
        proxy.heal();
        let stats: serde_json::Map<String, serde_json::Value> = proxy
            .links
            .iter()
            .map(|l| (l.node().to_string(), json!(l.stats())))
            .collect();
        Ok(json!({"healed": "links", "stats": stats}))
    }
    async fn wait_send_in_flight(&self, limit: Duration) -> bool {
        if self.planning {
            return true;
        }
        let until = Instant::now() + limit;
        while Instant::now() < until {
            if gauntlet_workloads::queue::IN_FLIGHT.load(Ordering::Relaxed) > 0 {
                return true;
            }
            tokio::time::sleep(Duration::from_millis(1)).await;
        }
        false
    }
    async fn leader(&self, role: Role) -> Result<Option<String>, NemesisError> {
        if role == Role::Storage {
            return Ok(self.deployment.storage_node());
        }
        let broker = self.deployment.broker();
        let probe = broker
            .recipe()
            .role_probe(role)
            .ok_or_else(|| NemesisError::Unsupported {
                fault: format!("targeting the {role}"),
                why: format!("{broker} cannot tell which node is the {role}"),
            })?;
        let mut command = probe.command.clone();
        command
            .env
            .push(format!("GAUNTLET_GROUP={}", self.roles.group));
        command
            .env
            .push(format!("GAUNTLET_TXN_ID={}", self.roles.transactional_id));
        // Ask every node in turn (a killed or paused one does not answer); an election
        // may be under way, so keep asking for a while.
        let until = Instant::now() + Duration::from_secs(15);
        loop {
            for n in self.deployment.nodes() {
                let Ok(out) = self
                    .deployment
                    .exec(&n, &command, Duration::from_secs(15))
                    .await
                else {
                    continue;
                };
                if out.success() {
                    if let Some(node) = (probe.parse)(&n, &out.stdout) {
                        if self.deployment.nodes().contains(&node) {
                            return Ok(Some(node));
                        }
                    }
                }
            }
            if Instant::now() >= until {
                return Ok(None);
            }
            tokio::time::sleep(Duration::from_secs(1)).await;
        }
    }
}
