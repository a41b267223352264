//! One run, end to end: deploy the broker, run the workload with consumers as
//! separate worker processes, record the history as it goes, stop, drain with
//! fresh consumers, tear down, check, and write the run folder.
//!
//! The run folder is `results/<scenario>/<timestamp>/` with `history.jsonl`,
//! `verdict.json`, `scenario.toml` (the effective scenario) and `nodes/` (logs);
//! `results/<scenario>/latest` points at the newest.
use crate::broker::{BrokerKind, ImageRef};
use crate::deployment::{Deployment, NodeControl};
use crate::docker::{self, ClusterSpec, DockerDeployment};
use crate::error::HarnessError;
use crate::proxy::{LinkState, Proxy, Toxic};
use crate::RunId;
use gauntlet_checkers::{CheckOptions, Guarantee, Incomplete, IncompleteReason, Verdict};
use gauntlet_history::{Actor, Event, OpType};
use gauntlet_nemesis::faults::{heal_network, history_names, NETEM_HEAL};
use gauntlet_nemesis::{
    Cluster, Fault, FaultKind, KillConsumerAt, LinkFault, NemesisError, NodeFault, Role, Schedule,
};
use gauntlet_workloads::log::{LogConfig, LogDriver, Membership};
use gauntlet_workloads::queue::{QueueConfig, WireEvent};
use gauntlet_workloads::recorder::WriteFailure;
use gauntlet_workloads::{Delivery, Recorder};
use serde::{Deserialize, Serialize};
use serde_json::json;
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::str::FromStr;
use std::sync::atomic::{AtomicBool, AtomicI64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};
use tokio::io::{AsyncBufReadExt, BufReader};
use tokio::process::{Child, Command};

/// A scenario: what to deploy, what to run against it, what it should guarantee.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case", deny_unknown_fields)]
pub struct Scenario {
    pub name: String,
    pub broker: String,
    /// Nodes; the broker's default when absent.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub nodes: Option<usize>,
    /// Image by name (e.g. `rabbitmq:4` for users who can pull); Gauntlet's local image when absent.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub image: Option<String>,
    #[serde(default = "default_workload")]
    pub workload: String,
    /// How long producers send, e.g. "30s", "2m", "500ms".
    #[serde(default = "default_time")]
    pub time: String,
    /// Sends per second, all producers together.
    #[serde(default = "default_rate")]
    pub rate: f64,
    #[serde(default)]
    pub seed: u64,
    /// Guarantees the run claims (`valid` is judged against them).
    #[serde(default = "default_expect")]
    pub expect: Vec<String>,
    #[serde(default)]
    pub delivery: Delivery,
    #[serde(default)]
    pub queue: QueueConfig,
    /// The log workload's topic and membership (`workload = "log"`).
    #[serde(default, skip_serializing_if = "is_default_log")]
    pub log: LogConfig,
    /// Faults to inject, e.g. ["kill-consumer:before-ack", "partition"]; none when empty.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub nemesis: Vec<String>,
    /// Time between faults.
    #[serde(default = "default_interval")]
    pub nemesis_interval: String,
    /// How long a fault lasts before it is healed.
    #[serde(default = "default_fault_duration")]
    pub nemesis_duration: String,
    /// A schedule to replay instead of generating one (`<run>/schedule.toml`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub replay: Option<PathBuf>,
    /// The storage node's settings, where the deployment has one (the Kafka
    /// cluster's PostgreSQL).
    #[serde(default, skip_serializing_if = "StorageConfig::is_default")]
    pub storage: StorageConfig,
    /// Where run folders go.
    #[serde(default = "default_results", skip_serializing)]
    pub results: PathBuf,
}

fn is_default_log(c: &LogConfig) -> bool {
    *c == LogConfig::default()
}
fn default_workload() -> String {
    "queue".into()
}
fn default_time() -> String {
    "20s".into()
}
fn default_rate() -> f64 {
    100.0
}
fn default_expect() -> Vec<String> {
    vec!["at-least-once".into()]
}
fn default_interval() -> String {
    "5s".into()
}
fn default_fault_duration() -> String {
    "3s".into()
}
fn default_results() -> PathBuf {
    PathBuf::from("results")
}

/// `[storage]` of a scenario: how the storage node keeps what it is given.
/// Both `true` by default (the durable setting); `false` makes a negative control.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case", deny_unknown_fields)]
pub struct StorageConfig {
    /// PostgreSQL `fsync`.
    #[serde(default = "yes")]
    pub fsync: bool,
    /// PostgreSQL `synchronous_commit` (`on` or `off`).
    #[serde(default = "yes")]
    pub synchronous_commit: bool,
}

fn yes() -> bool {
    true
}

impl Default for StorageConfig {
    fn default() -> Self {
        StorageConfig {
            fsync: true,
            synchronous_commit: true,
        }
    }
}

impl StorageConfig {
    fn is_default(&self) -> bool {
        *self == StorageConfig::default()
    }

    /// The storage node's environment for these settings.
    pub fn env(&self) -> Vec<String> {
        let on = |b: bool| if b { "on" } else { "off" };
        vec![
            format!("GAUNTLET_PG_FSYNC={}", on(self.fsync)),
            format!(
                "GAUNTLET_PG_SYNCHRONOUS_COMMIT={}",
                on(self.synchronous_commit)
            ),
        ]
    }
}

/// The faults of the default scenario, chosen for Redis Streams at-least-once.
pub const DEFAULT_FAULTS: [&str; 2] = ["kill-consumer:before-ack", "restart-broker:mid-batch"];
/// The default scenario's seed: with [`DEFAULT_FAULTS`], 20 s and faults every 5 s
/// it draws kill-consumer, restart-broker:mid-batch on n1 (the primary), kill-consumer.
pub const DEFAULT_SEED: u64 = 27;

impl Scenario {
    /// The default scenario of `gauntlet run` with no arguments: Redis Streams, a
    /// primary with two replicas, at-least-once (XACK after processing), 20 s, under
    /// faults Redis survives with the recipe's `appendfsync always`: a consumer
    /// killed before its ack (redelivered, nothing lost), a restart of the primary
    /// with a send in flight, and another kill. Seed 27 draws that schedule from
    /// [`DEFAULT_FAULTS`]: kill at ~5.8 s, restart of n1 at ~11.2 s, kill at ~16.1 s
    /// (docs/nemesis.md, "The default run").
    pub fn default_scenario() -> Scenario {
        Scenario {
            name: "redis-at-least-once".into(),
            broker: "redis".into(),
            nodes: None,
            image: None,
            workload: default_workload(),
            time: default_time(),
            rate: default_rate(),
            seed: DEFAULT_SEED,
            expect: default_expect(),
            delivery: Delivery::default(),
            queue: QueueConfig::default(),
            log: LogConfig::default(),
            nemesis: DEFAULT_FAULTS.iter().map(|f| f.to_string()).collect(),
            nemesis_interval: default_interval(),
            nemesis_duration: default_fault_duration(),
            replay: None,
            storage: StorageConfig::default(),
            results: default_results(),
        }
    }

    pub fn from_toml(text: &str) -> Result<Scenario, HarnessError> {
        toml::from_str(text).map_err(|e| HarnessError::Scenario(e.to_string()))
    }

    pub fn to_toml(&self) -> String {
        toml::to_string_pretty(self).unwrap_or_default()
    }

    pub fn duration(&self) -> Result<Duration, HarnessError> {
        parse_duration(&self.time)
    }

    pub fn guarantees(&self) -> Result<Vec<Guarantee>, HarnessError> {
        self.expect
            .iter()
            .map(|g| Guarantee::from_str(g).map_err(|e| HarnessError::Scenario(e.to_string())))
            .collect()
    }
}

/// "30s", "2m", "500ms", "1h", or plain seconds.
pub fn parse_duration(s: &str) -> Result<Duration, HarnessError> {
    let s = s.trim();
    let bad = || HarnessError::Scenario(format!("`{s}` is not a duration (e.g. 30s, 2m, 500ms)"));
    let (num, unit) = match s.find(|c: char| !(c.is_ascii_digit() || c == '.')) {
        Some(i) => (&s[..i], &s[i..]),
        None => (s, "s"),
    };
    let n: f64 = num.parse().map_err(|_| bad())?;
    let secs = match unit {
        "ms" => n / 1000.0,
        "s" => n,
        "m" => n * 60.0,
        "h" => n * 3600.0,
        _ => return Err(bad()),
    };
    if !secs.is_finite() || secs < 0.0 {
        return Err(bad());
    }
    Ok(Duration::from_secs_f64(secs))
}

mod txn;

type Pool = Arc<tokio::sync::Mutex<Vec<(String, Worker)>>>;

/// The faults a scenario may inject: its `nemesis` list, or those of its replayed schedule.
fn fault_kinds(scenario: &Scenario) -> Result<Vec<FaultKind>, HarnessError> {
    if let Some(path) = &scenario.replay {
        let text = std::fs::read_to_string(path).map_err(io("reading", path))?;
        let s = Schedule::from_toml(&text)
            .map_err(|e| HarnessError::Scenario(format!("{}: {e}", path.display())))?;
        return Ok(s.faults.iter().filter_map(|f| f.kind().ok()).collect());
    }
    scenario
        .nemesis
        .iter()
        .map(|n| FaultKind::from_str(n).map_err(|e| HarnessError::Scenario(e.to_string())))
        .collect()
}

/// Whether the run puts the harness's TCP proxy between the clients and the nodes:
/// only when a fault needs it (the clean path stays direct).
fn needs_proxy(kinds: &[FaultKind]) -> bool {
    kinds.iter().any(|k| matches!(k, FaultKind::Link(_)))
}

/// The node whose client link a link fault hits: the scheduled `node` when clients
/// have sent bytes through its link, else the link that carried the most client ->
/// broker bytes (first in node order on a tie), so a fault is never spent on a link
/// no client uses (a Kafka client talks only to the brokers metadata names). With no
/// traffic anywhere yet, the scheduled node.
fn link_target<'a>(node: &'a str, traffic: &[(&'a str, u64)]) -> &'a str {
    if traffic.iter().any(|&(n, up)| n == node && up > 0) {
        return node;
    }
    let mut best: Option<(&str, u64)> = None;
    for &(n, up) in traffic {
        if up > 0 && best.map_or(true, |(_, b)| up > b) {
            best = Some((n, up));
        }
    }
    best.map_or(node, |(n, _)| n)
}

/// What the proxy does for a link fault.
fn link_state(fault: LinkFault) -> LinkState {
    let both = |t: Toxic| LinkState {
        up: t,
        down: t,
        ..Default::default()
    };
    match fault {
        LinkFault::AckLoss => LinkState {
            down: Toxic::Drop,
            ..Default::default()
        },
        LinkFault::OneWay => LinkState {
            up: Toxic::Drop,
            ..Default::default()
        },
        LinkFault::ClientPartition => LinkState {
            refuse: true,
            ..Default::default()
        },
        LinkFault::Latency { ms } => both(Toxic::Delay {
            latency: Duration::from_millis(u64::from(ms)),
            jitter: Duration::ZERO,
        }),
        LinkFault::Jitter { ms } => both(Toxic::Delay {
            latency: Duration::ZERO,
            jitter: Duration::from_millis(u64::from(ms)),
        }),
        LinkFault::Loss { percent } => LinkState {
            loss: f64::from(percent) / 100.0,
            ..Default::default()
        },
        LinkFault::Bandwidth { kib_per_sec } => both(Toxic::Bandwidth {
            bytes_per_sec: u64::from(kib_per_sec) * 1024,
        }),
        LinkFault::Reset => LinkState::default(),
        LinkFault::Blackhole => both(Toxic::Drop),
    }
}

/// The run's schedule: replayed from a file, or generated from the seed.
fn schedule_for(
    scenario: &Scenario,
    deployment: &DockerDeployment,
    time: Duration,
) -> Result<Schedule, HarnessError> {
    if let Some(path) = &scenario.replay {
        let text = std::fs::read_to_string(path).map_err(io("reading", path))?;
        return Schedule::from_toml(&text)
            .map_err(|e| HarnessError::Scenario(format!("{}: {e}", path.display())));
    }
    let mut kinds = Vec::new();
    for name in &scenario.nemesis {
        let kind = FaultKind::from_str(name).map_err(|e| HarnessError::Scenario(e.to_string()))?;
        let caps = deployment.capabilities();
        let nodes = deployment.nodes().len();
        let refuse =
            |why: String| HarnessError::Scenario(format!("{kind} on {}: {why}", scenario.broker));
        match kind {
            FaultKind::Partition if nodes < 2 => {
                return Err(refuse(format!(
                    "needs at least two nodes, the deployment has {nodes}"
                )))
            }
            FaultKind::Partition if !caps.net_admin_exec => {
                return Err(refuse(
                    "the nodes cannot run iptables (no NET_ADMIN exec)".into(),
                ))
            }
            FaultKind::Netem { .. } if !caps.net_admin_exec => {
                return Err(refuse("the nodes cannot run tc (no NET_ADMIN exec)".into()))
            }
            FaultKind::KillBroker | FaultKind::RestartBroker { .. } | FaultKind::Pause
                if !caps.process_faults =>
            {
                return Err(refuse(
                    "the deployment does not offer process faults".into(),
                ))
            }
            // Partition shapes and faults aimed at a role.
            FaultKind::PartitionShape(_) if nodes < 3 => {
                return Err(refuse(format!(
                    "needs at least three nodes, the deployment has {nodes}"
                )))
            }
            FaultKind::PartitionShape(_) | FaultKind::OnRole(NodeFault::Isolate, _)
                if !caps.net_admin_exec =>
            {
                return Err(refuse(
                    "the nodes cannot run iptables (no NET_ADMIN exec)".into(),
                ))
            }
            FaultKind::OnRole(_, Role::Storage) if deployment.storage_node().is_none() => {
                return Err(refuse(format!(
                    "the {} deployment has no storage node (its brokers keep their own data)",
                    scenario.broker
                )))
            }
            FaultKind::OnRole(f, role) => {
                if role != Role::Storage && deployment.broker().recipe().role_probe(role).is_none()
                {
                    let which = match role {
                        Role::Leader => "which node leads".to_string(),
                        _ => format!("which node is the {role}"),
                    };
                    return Err(refuse(format!(
                        "{} cannot tell {which} (no role probe in its recipe)",
                        scenario.broker
                    )));
                }
                if f != NodeFault::Isolate && !caps.process_faults {
                    return Err(refuse(
                        "the deployment does not offer process faults".into(),
                    ));
                }
                if f == NodeFault::Isolate && nodes < 2 {
                    return Err(refuse(format!(
                        "needs at least two nodes, the deployment has {nodes}"
                    )));
                }
            }
            _ => {}
        }
        kinds.push(kind);
    }
    Ok(Schedule::generate(
        scenario.seed,
        &kinds,
        &deployment.nodes(),
        time,
        parse_duration(&scenario.nemesis_interval)?,
        parse_duration(&scenario.nemesis_duration)?,
    ))
}

fn nemesis_event(kind: OpType, f: &str, value: serde_json::Value) -> Event {
    Event::new(Actor::Nemesis, kind, f).value(value)
}

/// Plays the schedule against the cluster, recording each fault's start and end.
async fn run_schedule(
    schedule: &Schedule,
    cluster: &RunCluster<'_>,
    recorder: &Recorder,
    t0: Instant,
    progress: &Progress,
) {
    for sf in &schedule.faults {
        let Ok(kind) = sf.kind() else { continue };
        let at = t0 + Duration::from_millis(sf.at_ms);
        tokio::time::sleep_until(at.into()).await;
        let (start_f, stop_f) = history_names(kind);
        let _ = recorder.record(&nemesis_event(
            OpType::Invoke,
            start_f,
            json!({"fault": sf.fault, "target": sf.target}),
        ));
        let started = Fault::start(kind, cluster, &sf.target, sf.pick).await;
        let fault = match started {
            Ok((fault, value)) => {
                progress(&format!("nemesis: {} {}", sf.fault, value));
                let _ = recorder.record(&nemesis_event(OpType::Info, start_f, value));
                fault
            }
            Err(e) => {
                progress(&format!("nemesis: {} failed: {e}", sf.fault));
                let _ = recorder.record(&nemesis_event(
                    OpType::Info,
                    start_f,
                    json!({"error": e.to_string()}),
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
            json!({"target": fault.target}),
        ));
        let value = match fault.stop(cluster).await {
            Ok(v) => v,
            Err(e) => json!({"error": e.to_string()}),
        };
        let _ = recorder.record(&nemesis_event(OpType::Info, stop_f, value));
    }
}

/// Heals everything: network rules flushed, nodes resumed and started, cluster ready.
async fn final_heal(cluster: &RunCluster<'_>, recorder: &Recorder, progress: &Progress) {
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
            if let Err(e) = cluster.exec(&n, NETEM_HEAL).await {
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
        progress(&format!("final heal: {}", notes.join("; ")));
    }
    let _ = recorder.record(&nemesis_event(
        OpType::Info,
        "heal-all",
        json!({"problems": notes}),
    ));
}

/// The nemesis's view of a run: the deployment and the consumer workers.
struct RunCluster<'a> {
    deployment: &'a DockerDeployment,
    /// What a coordinator's role probe asks about (see [`RoleNames`]).
    roles: RoleNames,
    pool: Pool,
    /// The clients' proxy, when the run has one.
    proxy: Option<&'a Proxy>,
    /// The run may leave a netem qdisc behind (the final heal removes it).
    netem: bool,
}

/// The names a coordinator is found for: the consumer group and the transactional
/// id of the run's workload. Role probes read them from the environment
/// (`GAUNTLET_GROUP`, `GAUNTLET_TXN_ID`).
#[derive(Debug, Clone)]
pub(crate) struct RoleNames {
    group: String,
    transactional_id: String,
}

impl RoleNames {
    pub(crate) fn of(scenario: &Scenario) -> Self {
        let group = if scenario.workload == "txn" {
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

fn nem_err(fault: &str, target: &str, e: impl std::fmt::Display) -> NemesisError {
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
    async fn node_ip(&self, node: &str) -> Result<String, NemesisError> {
        let out = self.exec(node, "hostname -i").await?;
        out.split_whitespace()
            .find(|w| w.parse::<std::net::Ipv4Addr>().is_ok())
            .map(str::to_string)
            .ok_or_else(|| nem_err("node-ip", node, format!("no IPv4 address in {out:?}")))
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
            KillConsumerAt::BeforeAck => Some("stall:before-ack\n"),
            KillConsumerAt::AfterAck => Some("stall:after-ack\n"),
        };
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
        let traffic: Vec<(&str, u64)> = proxy
            .links
            .iter()
            .map(|l| (l.node(), l.stats().bytes_up))
            .collect();
        let aimed = link_target(node, &traffic);
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
            value["why"] = json!(format!(
                "no client bytes through {node}'s link yet; {aimed}'s carries the most"
            ));
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

/// What a finished run left.
#[derive(Debug)]
pub struct RunOutcome {
    pub dir: PathBuf,
    /// With [`RunOptions::discard_history`], the verdict of an empty history (nothing was kept).
    pub verdict: Verdict,
    pub sends: u64,
    pub figures: Figures,
}

/// Measurements of a run, for benchmarks.
#[derive(Debug, Clone, Default)]
pub struct Figures {
    /// From the start of [`run_with`] (before Docker is contacted) to the first recorded client op.
    pub first_op_after: Option<Duration>,
    /// How long the producers ran.
    pub workload_time: Duration,
    /// Every send's latency in microseconds ([`RunOptions::keep_latencies`]).
    pub latencies_us: Vec<u32>,
    /// Client completions at the end of the workload phase.
    pub counts: gauntlet_workloads::recorder::Counts,
}

/// How a run records (the benchmark's knobs; the defaults are what `gauntlet run` does).
#[derive(Debug, Clone, Copy, Default)]
pub struct RunOptions {
    /// Format every event as usual but write it to a sink that drops it: no history,
    /// no check, no reports (the benchmark's recorder-off case).
    pub discard_history: bool,
    /// Keep each send's latency in [`Figures::latencies_us`].
    pub keep_latencies: bool,
}

/// Progress lines while a run goes.
pub type Progress = Box<dyn Fn(&str) + Send + Sync>;

/// Prefix of the periodic count lines (`TICK` + "elapsed/total s  ops N  ok N  fail N
/// info N"): a terminal may redraw them in place as a progress bar.
pub const TICK: &str = "tick ";

/// A consumer worker process and the relay that records what it reports.
struct Worker {
    child: Child,
    relay: tokio::task::JoinHandle<()>,
    process: u64,
    /// Told when the worker reports that it stalled where the nemesis asked.
    stalled: Arc<tokio::sync::Notify>,
}

/// How to start `gauntlet worker` processes.
#[derive(Clone)]
struct WorkerSpec {
    exe: PathBuf,
    broker: String,
    addrs: Vec<String>,
    delivery_json: String,
    cfg: QueueConfig,
    workload: String,
    log: LogConfig,
}

impl WorkerSpec {
    fn spawn(
        &self,
        recorder: &Arc<Recorder>,
        group: &str,
        drain: bool,
    ) -> Result<Worker, HarnessError> {
        self.spawn_in(recorder, group, drain, 0)
    }

    /// A worker in consumer slot `slot` (the log workload's `assign` shares partitions by slot).
    fn spawn_in(
        &self,
        recorder: &Arc<Recorder>,
        group: &str,
        drain: bool,
        slot: usize,
    ) -> Result<Worker, HarnessError> {
        let process = recorder.new_process();
        let mut cmd = Command::new(&self.exe);
        cmd.arg("worker")
            .arg("--broker")
            .arg(&self.broker)
            .arg("--addrs")
            .arg(self.addrs.join(","))
            .arg("--group")
            .arg(group)
            .arg("--process")
            .arg(process.to_string())
            .arg("--delivery")
            .arg(&self.delivery_json)
            .arg("--batch")
            .arg(self.cfg.batch.to_string())
            .arg("--processing-ms")
            .arg(self.cfg.processing_ms.to_string());
        if drain {
            cmd.arg("--drain");
        }
        if self.workload == "log" {
            let membership = match self.log.membership {
                Membership::Subscribe => "subscribe",
                Membership::Assign => "assign",
            };
            cmd.args(["--workload", "log", "--membership", membership])
                .arg("--slot")
                .arg(slot.to_string())
                .arg("--slots")
                .arg(self.cfg.consumers.max(1).to_string());
        }
        cmd.stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .kill_on_drop(true);
        let mut child = cmd.spawn().map_err(|e| {
            HarnessError::Worker(format!("cannot start {}: {e}", self.exe.display()))
        })?;
        let stdout = child
            .stdout
            .take()
            .ok_or_else(|| HarnessError::Worker("worker has no stdout".into()))?;
        let rec = recorder.clone();
        let stalled = Arc::new(tokio::sync::Notify::new());
        let told = stalled.clone();
        let relay = tokio::spawn(async move {
            let mut lines = BufReader::new(stdout).lines();
            while let Ok(Some(line)) = lines.next_line().await {
                match serde_json::from_str::<WireEvent>(&line) {
                    Ok(w) if w.kind == gauntlet_workloads::queue::STALLED => told.notify_one(),
                    Ok(w) => {
                        if let Some(e) = w.into_event(process) {
                            let _ = rec.record(&e);
                        }
                    }
                    Err(e) => eprintln!("worker {process}: unreadable line ({e}): {line}"),
                }
            }
        });
        Ok(Worker {
            child,
            relay,
            process,
            stalled,
        })
    }
}

impl Worker {
    /// Asks the worker to finish its current op and exit (closes its stdin); kills it after `grace`.
    async fn stop(mut self, grace: Duration) {
        drop(self.child.stdin.take());
        if tokio::time::timeout(grace, self.child.wait())
            .await
            .is_err()
        {
            let _ = self.child.kill().await;
        }
        let _ = self.relay.await;
    }

    fn exited(&mut self) -> bool {
        matches!(self.child.try_wait(), Ok(Some(_)))
    }
}

/// The time now, UTC, as `YYYYmmddTHHMMSS` (run folder names).
pub fn timestamp() -> String {
    let secs = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_secs())
        .unwrap_or(0);
    // UTC, as YYYYmmddTHHMMSS (civil-from-days, no time zone database needed).
    let days = (secs / 86400) as i64;
    let rem = secs % 86400;
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = doy - (153 * mp + 2) / 5 + 1;
    let m = if mp < 10 { mp + 3 } else { mp - 9 };
    let y = yoe + era * 400 + i64::from(m <= 2);
    format!(
        "{y:04}{m:02}{d:02}T{:02}{:02}{:02}",
        rem / 3600,
        (rem % 3600) / 60,
        rem % 60
    )
}

fn io(what: &str, path: &Path) -> impl FnOnce(std::io::Error) -> HarnessError {
    let what = format!("{what} {}", path.display());
    move |e| HarnessError::RunFolder(format!("{what}: {e}"))
}

/// Runs a scenario. `exe` is the `gauntlet` binary (for worker processes).
pub async fn run(
    scenario: &Scenario,
    exe: &Path,
    progress: Progress,
) -> Result<RunOutcome, HarnessError> {
    run_with(scenario, exe, progress, RunOptions::default()).await
}

/// [`run`] with recording options.
pub async fn run_with(
    scenario: &Scenario,
    exe: &Path,
    progress: Progress,
    opts: RunOptions,
) -> Result<RunOutcome, HarnessError> {
    let entered = Instant::now();
    let kind = BrokerKind::from_str(&scenario.broker)?;
    let time = scenario.duration()?;
    let expect = scenario.guarantees()?;
    match scenario.workload.as_str() {
        "queue" | "txn" => {}
        "log" if kind == BrokerKind::Kafka => {}
        "log" => {
            return Err(HarnessError::Scenario(format!(
                "the log workload needs a Kafka-protocol broker, not {}",
                scenario.broker
            )))
        }
        other => {
            return Err(HarnessError::Scenario(format!(
                "workload `{other}` is not available (queue, log and txn are)"
            )))
        }
    }
    if scenario.queue.pipeline > 1 && (kind != BrokerKind::Kafka || scenario.workload != "queue") {
        return Err(HarnessError::Scenario(format!(
            "queue.pipeline = {}: pipelined producers need the queue workload on a \
             Kafka-protocol broker (its client keeps several sends in flight), not the {} \
             workload on {}",
            scenario.queue.pipeline, scenario.workload, scenario.broker
        )));
    }
    let settings = scenario.delivery.resolve();

    let stamp = timestamp();
    let base = scenario.results.join(&scenario.name);
    let dir = base.join(&stamp);
    std::fs::create_dir_all(dir.join("nodes")).map_err(io("creating", &dir))?;
    std::fs::write(dir.join("scenario.toml"), scenario.to_toml()).map_err(io("writing", &dir))?;
    let latest = base.join("latest");
    let _ = std::fs::remove_file(&latest);
    #[cfg(unix)]
    let _ = std::os::unix::fs::symlink(&stamp, &latest);

    let run_id = RunId::from_name(&format!("{}-{stamp}-{}", scenario.name, std::process::id()));
    // Ctrl-C: the containers go, then what was recorded is judged (marked
    // interrupted: no `drained` marker) and the run exits with 130.
    let ctrl_c = {
        let (dir, expect, toml) = (dir.clone(), expect.clone(), scenario.to_toml());
        docker::on_ctrl_c(run_id.clone(), move || {
            judge_interrupted(&dir, &expect, &toml, entered.elapsed())
        })
    };
    let dockerc = docker::connect().await?;
    let mut spec = ClusterSpec::new(kind)
        .run_id(run_id.clone())
        .logs_dir(dir.join("nodes"))
        .build_missing_image(true);
    if let Some(n) = scenario.nodes {
        spec = spec.nodes(n);
    }
    if let Some(img) = &scenario.image {
        spec = spec.image(ImageRef::named(img.clone()));
    }
    if !scenario.storage.is_default() {
        // Only a deployment with a storage node takes `[storage]`.
        let ctx = crate::broker::ClusterContext {
            nodes: Vec::new(),
            host_endpoints: Vec::new(),
            client_endpoints: Vec::new(),
            flavour: spec.image.flavour,
            secret: String::new(),
            image: spec.image.name.clone(),
            storage: None,
        };
        if kind.recipe().storage(&ctx).is_none() {
            return Err(HarnessError::Scenario(format!(
                "[storage] sets the storage node, and {} ({}) has none",
                scenario.broker, spec.image.name
            )));
        }
        spec.storage_env = scenario.storage.env();
    }
    let started = Instant::now();
    let n_nodes = spec.node_count();
    let kinds = fault_kinds(scenario)?;
    // The proxy listens before the nodes exist, so a recipe can advertise its address.
    let client_port = kind
        .recipe()
        .ports()
        .first()
        .map(|p| p.name)
        .unwrap_or("client");
    let proxy = if needs_proxy(&kinds) {
        let names: Vec<String> = (1..=n_nodes).map(|i| format!("n{i}")).collect();
        let proxy = Proxy::bind(&names, scenario.seed).await?;
        let addrs: Vec<std::net::SocketAddr> = proxy.links.iter().map(|l| l.addr()).collect();
        spec = spec.client_endpoints(client_port, &addrs);
        Some(proxy)
    } else {
        None
    };
    progress(&format!("deploying {} ({} node(s))...", kind, n_nodes));
    let deployment = DockerDeployment::launch(&dockerc, spec).await?;
    progress(&format!(
        "{kind} ready after {:.1}s",
        started.elapsed().as_secs_f64()
    ));
    if let Some(p) = &proxy {
        for link in &p.links {
            let up = deployment
                .endpoint(link.node(), client_port)
                .and_then(|e| e.addr().parse::<std::net::SocketAddr>().ok());
            match up {
                Some(a) => link.set_upstream(a),
                None => {
                    let _ = deployment.teardown().await;
                    return Err(HarnessError::Scenario(format!(
                        "the proxy has no node {} with port {client_port} to forward to",
                        link.node()
                    )));
                }
            }
        }
        progress(&format!(
            "clients go through the harness's proxy: {}",
            p.addrs().join(",")
        ));
    }
    let result = if scenario.workload == "txn" {
        txn::drive_txn(
            scenario,
            &deployment,
            proxy.as_ref(),
            &dir,
            time,
            &progress,
            started,
        )
        .await
    } else {
        drive(
            scenario,
            exe,
            &deployment,
            proxy.as_ref(),
            &dir,
            time,
            &settings,
            &progress,
            started,
            entered,
            opts,
        )
        .await
    };
    progress("tearing down...");
    let _ = deployment.collect_logs(&dir.join("nodes")).await;
    let teardown = deployment.teardown().await;
    ctrl_c.abort();
    let Driven {
        sends,
        figures,
        write_failure,
    } = result?;
    match teardown {
        Ok(()) => {}
        // The containers are gone; their logs did not fit where the history did not.
        Err(e) if write_failure.is_some() => progress(&format!("node logs not kept: {e}")),
        Err(e) => return Err(e),
    }

    if opts.discard_history {
        let verdict = gauntlet_checkers::check(
            &gauntlet_history::model::History::default(),
            &CheckOptions {
                expect,
                max_examples: 10,
            },
        );
        return Ok(RunOutcome {
            dir,
            verdict,
            sends,
            figures,
        });
    }
    let incomplete = write_failure.map(|f| {
        progress(&format!("{f}: the verdict is unknown"));
        Incomplete {
            reason: IncompleteReason::HistoryWriteFailed,
            detail: f.to_string(),
        }
    });
    let verdict = judge(&dir, &expect, &scenario.to_toml(), incomplete)?;
    Ok(RunOutcome {
        dir,
        verdict,
        sends,
        figures,
    })
}

/// Reads the run folder's history, checks it against `expect`, marks the verdict
/// when the run did not finish as planned, and writes `verdict.json` and the
/// reports. When the history could not be written whole (a full disk), the
/// reports may not fit either: that is a warning of the verdict, not an error,
/// so the caller still gets the (unknown) verdict to show.
pub fn judge(
    dir: &Path,
    expect: &[Guarantee],
    scenario_toml: &str,
    incomplete: Option<Incomplete>,
) -> Result<Verdict, HarnessError> {
    let history = gauntlet_history::read_path(dir.join("history.jsonl"))
        .map_err(|e| HarnessError::RunFolder(e.to_string()))?;
    let mut verdict = gauntlet_checkers::check(
        &history,
        &CheckOptions {
            expect: expect.to_vec(),
            max_examples: 10,
        },
    );
    let disk_failed = matches!(
        incomplete,
        Some(Incomplete {
            reason: IncompleteReason::HistoryWriteFailed,
            ..
        })
    );
    if let Some(i) = incomplete {
        verdict.mark_incomplete(i);
    }
    let written = std::fs::write(
        dir.join("verdict.json"),
        gauntlet_report::verdict_json(&verdict),
    )
    .map_err(io("writing", dir))
    .and_then(|()| {
        gauntlet_report::write_run_reports(dir, &history, &verdict, Some(scenario_toml))
            .map_err(|e| HarnessError::RunFolder(e.to_string()))
    });
    match written {
        Ok(()) => {}
        Err(e) if disk_failed => verdict
            .warnings
            .push(format!("the verdict and reports were not written: {e}")),
        Err(e) => return Err(e),
    }
    Ok(verdict)
}

/// After Ctrl-C (the containers are gone): judges what the run recorded, marked
/// interrupted, writes `verdict.json` and the reports, prints the summary.
fn judge_interrupted(dir: &Path, expect: &[Guarantee], scenario_toml: &str, after: Duration) {
    let history = dir.join("history.jsonl");
    if !history.exists() {
        eprintln!("gauntlet: nothing was recorded yet; no verdict");
        return;
    }
    let incomplete = Incomplete {
        reason: IncompleteReason::Interrupted,
        detail: format!(
            "stopped by Ctrl-C {:.1} s after the start, before the final drain ended",
            after.as_secs_f64()
        ),
    };
    match judge(dir, expect, scenario_toml, Some(incomplete)) {
        Ok(v) => {
            print!(
                "{}",
                gauntlet_report::terminal::summary(&v, &history.display().to_string())
            );
            println!("run folder: {}", dir.display());
        }
        Err(e) => eprintln!("gauntlet: no verdict of the interrupted run: {e}"),
    }
}

/// Refuses a netem fault up front where the nodes' kernel has no `sch_netem`.
async fn probe_netem(deployment: &DockerDeployment) -> Result<(), HarnessError> {
    let Some(node) = deployment.nodes().into_iter().next() else {
        return Ok(());
    };
    let probe = "tc qdisc add dev eth0 root netem delay 1ms && tc qdisc del dev eth0 root";
    let out = deployment
        .exec(
            &node,
            &crate::broker::Command::shell(probe),
            Duration::from_secs(20),
        )
        .await?;
    if out.success() {
        return Ok(());
    }
    Err(HarnessError::Scenario(format!(
        "netem is not supported on {}: `{probe}` in {node} failed: {} \
         (use the proxy's latency/jitter/loss faults instead)",
        deployment.broker(),
        out.combined().trim()
    )))
}

#[allow(clippy::too_many_arguments)]
async fn drive(
    scenario: &Scenario,
    exe: &Path,
    deployment: &DockerDeployment,
    proxy: Option<&Proxy>,
    dir: &Path,
    time: Duration,
    settings: &gauntlet_workloads::Resolved,
    progress: &Progress,
    started: Instant,
    entered: Instant,
    opts: RunOptions,
) -> Result<Driven, HarnessError> {
    // Faults the deployment cannot do are refused here, before the history exists
    // and before any op.
    let schedule = schedule_for(scenario, deployment, time)?;
    let netem = schedule
        .faults
        .iter()
        .any(|f| matches!(f.kind(), Ok(FaultKind::Netem { .. })));
    if netem {
        probe_netem(deployment).await?;
    }
    std::fs::write(dir.join("schedule.toml"), schedule.to_toml()).map_err(io("writing", dir))?;
    let kind = deployment.broker();
    let port = kind
        .recipe()
        .ports()
        .first()
        .map(|p| p.name)
        .unwrap_or("client");
    let addrs = match proxy {
        Some(p) => p.addrs(),
        None => deployment.addrs(port),
    };
    let mut recorder = if opts.discard_history {
        Recorder::discarding()
    } else {
        Recorder::create(&dir.join("history.jsonl")).map_err(io("creating", dir))?
    };
    if opts.keep_latencies {
        recorder = recorder.keep_latencies();
    }
    let recorder = Arc::new(recorder);
    let driver: Arc<dyn gauntlet_workloads::Driver> = if scenario.workload == "log" {
        Arc::new(
            LogDriver::new(&addrs, settings.clone(), &scenario.log)
                .map_err(|e| HarnessError::Worker(e.to_string()))?,
        )
    } else {
        gauntlet_workloads::driver_for(kind.name(), &addrs, settings.clone(), false)
            .map_err(|e| HarnessError::Worker(e.to_string()))?
    };
    let groups = scenario.queue.groups.clone();
    driver
        .setup(&groups)
        .await
        .map_err(|e| HarnessError::Worker(e.to_string()))?;
    let spec = WorkerSpec {
        exe: exe.to_path_buf(),
        broker: kind.name().to_string(),
        addrs: addrs.clone(),
        delivery_json: serde_json::to_string(&scenario.delivery).unwrap_or_default(),
        cfg: scenario.queue.clone(),
        workload: scenario.workload.clone(),
        log: scenario.log.clone(),
    };
    let _ = recorder.phase("start");
    progress(&format!(
        "first op after {:.1}s; running the {} workload for {:?} at {} sends/s",
        started.elapsed().as_secs_f64(),
        scenario.workload,
        time,
        scenario.rate
    ));

    // Consumers: separate processes, restarted (under a new number) whenever one exits.
    let stop = Arc::new(AtomicBool::new(false));
    let mut initial: Vec<(String, Worker)> = Vec::new();
    for g in &groups {
        for slot in 0..scenario.queue.consumers.max(1) {
            initial.push((g.clone(), spec.spawn_in(&recorder, g, false, slot)?));
        }
    }
    let pool: Pool = Arc::new(tokio::sync::Mutex::new(initial));
    let next_value = Arc::new(AtomicI64::new(0));
    let producers = tokio::spawn(gauntlet_workloads::queue::run_producers(
        driver.clone(),
        recorder.clone(),
        scenario.queue.clone(),
        scenario.rate,
        scenario.seed,
        next_value,
        stop.clone(),
    ));
    let cluster = RunCluster {
        deployment,
        roles: RoleNames::of(scenario),
        pool: pool.clone(),
        proxy,
        netem,
    };
    let t0 = Instant::now();
    let deadline = t0 + time;
    let supervise = async {
        while Instant::now() < deadline && !recorder.failed() {
            tokio::time::sleep(Duration::from_millis(500)).await;
            let mut ws = pool.lock().await;
            let slots = scenario.queue.consumers.max(1);
            for (i, (g, w)) in ws.iter_mut().enumerate() {
                if w.exited() {
                    let fresh = spec.spawn_in(&recorder, g, false, i % slots)?;
                    let old = std::mem::replace(w, fresh);
                    old.stop(Duration::from_millis(10)).await;
                }
            }
            drop(ws);
            let c = recorder.counts();
            progress(&format!(
                "{TICK}{:.1}/{:.1}s  ops {}  ok {}  fail {}  info {}",
                t0.elapsed().as_secs_f64().min(time.as_secs_f64()),
                time.as_secs_f64(),
                c.ops,
                c.ok,
                c.fail,
                c.info
            ));
        }
        Ok::<(), HarnessError>(())
    };
    let faults = async {
        // A failed history write ends the schedule too (the final heal undoes it).
        tokio::select! {
            () = run_schedule(&schedule, &cluster, &recorder, t0, progress) => {}
            () = until_failed(&recorder) => {}
        }
    };
    let (supervised, ()) = tokio::join!(supervise, faults);
    supervised?;
    stop.store(true, Ordering::Relaxed);
    let sends = producers.await.unwrap_or(0);
    let figures = Figures {
        first_op_after: recorder
            .first_op()
            .map(|t| t.saturating_duration_since(entered)),
        workload_time: t0.elapsed(),
        latencies_us: recorder.latencies(),
        counts: recorder.counts(),
    };
    // Final heal: every fault undone, every node up and ready, before the drain.
    final_heal(&cluster, &recorder, progress).await;
    let workers = std::mem::take(&mut *pool.lock().await);
    for (_, w) in workers {
        w.stop(Duration::from_secs(10)).await;
    }

    if let Some(failure) = recorder.write_error() {
        // Nothing more can be recorded: no drain, no `drained` marker.
        progress(&format!("{failure}; the workload stopped, no drain"));
        return Ok(Driven {
            sends,
            figures,
            write_failure: Some(failure),
        });
    }
    // Final drain: fresh consumers per group until a few polls in a row bring nothing.
    let _ = recorder.phase("drain");
    progress("draining with fresh consumers...");
    let mut drains = Vec::new();
    for g in &groups {
        drains.push(spec.spawn(&recorder, g, true)?);
    }
    let mut all_done = true;
    for mut d in drains {
        // `Child::wait` closes the child's stdin first, which a worker reads as "stop":
        // keep stdin open so the drain runs until its own empty polls end it.
        let _stdin = d.child.stdin.take();
        match tokio::time::timeout(Duration::from_secs(120), d.child.wait()).await {
            Ok(Ok(status)) if status.success() => {}
            _ => all_done = false,
        }
        d.stop(Duration::from_secs(1)).await;
    }
    if all_done {
        let _ = recorder.phase("drained");
    } else {
        progress(
            "drain did not finish: no `drained` marker (unacknowledged losses will be `unseen`)",
        );
    }
    Ok(Driven {
        sends,
        figures,
        write_failure: recorder.write_error(),
    })
}

/// What a workload phase left besides the history file.
pub(crate) struct Driven {
    sends: u64,
    figures: Figures,
    /// The recorder's first write error: the history is a prefix of the run.
    write_failure: Option<WriteFailure>,
}

/// Returns once writing the history has failed.
async fn until_failed(recorder: &Recorder) {
    while !recorder.failed() {
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_link_fault_moves_off_a_link_no_client_uses() {
        // The CI failure this prevents: ack-loss scheduled on n3 of a tansu
        // cluster whose clients all bootstrapped on n1 dropped nothing.
        let used = [("n1", 900), ("n2", 0), ("n3", 0)];
        assert_eq!(link_target("n3", &used), "n1");
        // A used scheduled link stays the target, busier ones or not.
        let both = [("n1", 900), ("n2", 10), ("n3", 0)];
        assert_eq!(link_target("n2", &both), "n2");
        // The busiest link wins; the first in node order on a tie.
        assert_eq!(link_target("n3", &[("n1", 5), ("n2", 7), ("n3", 0)]), "n2");
        assert_eq!(link_target("n3", &[("n1", 7), ("n2", 7), ("n3", 0)]), "n1");
        // No traffic anywhere yet: the schedule's node.
        assert_eq!(link_target("n2", &[("n1", 0), ("n2", 0)]), "n2");
        assert_eq!(link_target("n9", &[]), "n9");
    }

    #[test]
    fn durations() {
        assert_eq!(parse_duration("30s").ok(), Some(Duration::from_secs(30)));
        assert_eq!(parse_duration("2m").ok(), Some(Duration::from_secs(120)));
        assert_eq!(
            parse_duration("500ms").ok(),
            Some(Duration::from_millis(500))
        );
        assert_eq!(parse_duration("7").ok(), Some(Duration::from_secs(7)));
        assert!(parse_duration("soon").is_err());
        assert!(parse_duration("5 parsecs").is_err());
    }

    #[test]
    fn storage_settings_parse_and_become_the_storage_nodes_environment() {
        let s = Scenario::from_toml(
            "name = \"x\"\nbroker = \"kafka\"\n[storage]\nfsync = false\nsynchronous-commit = false\n",
        )
        .expect("scenario");
        assert_eq!(
            s.storage.env(),
            vec![
                "GAUNTLET_PG_FSYNC=off".to_string(),
                "GAUNTLET_PG_SYNCHRONOUS_COMMIT=off".to_string()
            ]
        );
        assert!(s.to_toml().contains("[storage]"));
        let d = Scenario::from_toml("name = \"x\"\nbroker = \"kafka\"\n").expect("scenario");
        assert!(d.storage.is_default());
        assert!(
            !d.to_toml().contains("[storage]"),
            "the default is not written"
        );
        assert!(Scenario::from_toml(
            "name = \"x\"\nbroker = \"kafka\"\n[storage]\nfsynk = false\n"
        )
        .is_err());
    }

    #[test]
    fn the_default_scenario_restarts_the_primary_between_two_consumer_kills() {
        let d = Scenario::default_scenario();
        let kinds: Vec<FaultKind> = d
            .nemesis
            .iter()
            .map(|n| FaultKind::from_str(n).expect("a fault"))
            .collect();
        let nodes: Vec<String> = ["n1", "n2", "n3"].iter().map(|n| n.to_string()).collect();
        let gen = |time: &str| {
            Schedule::generate(
                d.seed,
                &kinds,
                &nodes,
                parse_duration(time).expect("time"),
                parse_duration(&d.nemesis_interval).expect("interval"),
                parse_duration(&d.nemesis_duration).expect("duration"),
            )
        };
        let s = gen(&d.time);
        let drawn: Vec<(&str, &str)> = s
            .faults
            .iter()
            .map(|f| (f.fault.as_str(), f.target.as_str()))
            .collect();
        assert_eq!(drawn.len(), 3, "{drawn:?}");
        assert_eq!(drawn[0].0, "kill-consumer:before-ack");
        assert_eq!(drawn[1], ("restart-broker:mid-batch", "n1"));
        assert_eq!(drawn[2].0, "kill-consumer:before-ack");
        // A shorter run (the e2e test's 14 s) keeps the first two.
        assert_eq!(gen("14s").faults, s.faults[..2].to_vec());
    }

    #[test]
    fn the_example_scenario_parses_and_round_trips() {
        let s =
            Scenario::from_toml(include_str!("../../ci/scenario.toml")).expect("ci/scenario.toml");
        assert_eq!(s.broker, "rabbitmq");
        assert_eq!(s.nemesis, vec!["kill-consumer:before-ack".to_string()]);
        assert_eq!(s.delivery.resolve().queue_type, "quorum");
        assert_eq!(s.guarantees().ok().map(|g| g.len()), Some(2));
        let again = Scenario::from_toml(&s.to_toml()).expect("round trip");
        assert_eq!(again.to_toml(), s.to_toml());
        assert!(Scenario::from_toml("name = \"x\"\nbroker = \"redis\"\nbogus = 1\n").is_err());
        let d = Scenario::default_scenario();
        assert_eq!(
            Scenario::from_toml(&d.to_toml())
                .map(|x| x.broker)
                .ok()
                .as_deref(),
            Some("redis")
        );
    }
}
