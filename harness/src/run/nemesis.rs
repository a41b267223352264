//! The nemesis side of a run: the schedule played against the deployment
//! (faults that overlap in time run side by side), the final heal, and the
//! capabilities the run hands the nemesis beside the deployment's node control
//! ([`RunCluster`]: the consumer workers, the client proxy, the role probe,
//! readiness, the sends in flight).
use super::events::{EventSink, RunEvent};
use super::faults::{busiest_link, link_state, link_target};
use super::scenario::Scenario;
use super::workers::Pool;
use crate::broker::BrokerExt;
use crate::deployment::Deployment;
use crate::proxy::Proxy;
use futures_util::stream::{FuturesUnordered, StreamExt};
use gauntlet_history::{Actor, Event, OpType};
use gauntlet_nemesis::faults::{heal_network, node_fields, Acts};
use gauntlet_nemesis::{
    Cluster, Consumers, ControlError, Fault, InFlight, KillConsumerAt, LinkFault, Links,
    NemesisError, Readiness, Role, Roles, Schedule, ScheduledFault,
};
use gauntlet_workloads::stall::StallPoint;
use gauntlet_workloads::Recorder;
use serde_json::json;
use std::collections::BTreeMap;
use std::time::{Duration, Instant};
pub(super) fn nemesis_event(kind: OpType, f: &str, value: serde_json::Value) -> Event {
    Event::new(Actor::Nemesis, kind, f.to_string()).value(value)
}

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
/// A fault starts at its time once every earlier fault the schedule ends by then
/// has ended (its heal done), as one after the other always did; faults the
/// schedule makes overlap run side by side.
pub(super) async fn run_schedule(
    schedule: &Schedule,
    cluster: &RunCluster<'_>,
    recorder: &Recorder,
    t0: Instant,
    events: &EventSink,
) {
    let c = cluster.cluster();
    let mut running = FuturesUnordered::new();
    // The scheduled end of each fault under way, by its position.
    let mut ends: BTreeMap<usize, u64> = BTreeMap::new();
    for (id, sf) in schedule.faults.iter().enumerate() {
        while ends.values().any(|&end| end <= sf.at_ms) {
            match running.next().await {
                Some(done) => {
                    ends.remove(&done);
                }
                None => break,
            }
        }
        let at = tokio::time::sleep_until((t0 + Duration::from_millis(sf.at_ms)).into());
        tokio::pin!(at);
        loop {
            tokio::select! {
                () = &mut at => break,
                Some(done) = running.next(), if !running.is_empty() => {
                    ends.remove(&done);
                }
            }
        }
        ends.insert(id, sf.end_ms());
        running.push(play(id, sf, &c, recorder, events));
    }
    while running.next().await.is_some() {}
}

/// The scheduled targets as event fields: `target` (one, as every history so
/// far) or `targets` (several).
fn scheduled_targets(targets: &[String]) -> serde_json::Value {
    match targets {
        [one] => json!({ "target": one }),
        many => json!({ "targets": many }),
    }
}

/// Adds `fields` (an object) to `value` (an object), keeping what is there.
fn merge(value: &mut serde_json::Value, fields: serde_json::Value) {
    if let (Some(v), serde_json::Value::Object(f)) = (value.as_object_mut(), fields) {
        for (k, x) in f {
            v.entry(k).or_insert(x);
        }
    }
}

/// One fault: its start (invoke, info), then, unless it is an instant, its
/// heal after its duration (invoke, info). Returns its position.
async fn play(
    id: usize,
    sf: &ScheduledFault,
    cluster: &Cluster<'_>,
    recorder: &Recorder,
    events: &EventSink,
) -> usize {
    let kind = sf.fault;
    let spec = kind.spec();
    let (start_f, stop_f) = spec.history;
    // The fields every start event carries: the fault's position, whether it is
    // an instant, and the nodes it is aimed at (docs/history-format.md).
    let mut marks = json!({ "fault_id": id });
    if spec.instant() {
        marks["instant"] = json!(true);
    }
    let mut invoke = json!({ "fault": kind.to_string() });
    // The schedule draws a node for every fault; only a fault that acts on
    // nodes or their links names it (a consumer kill picks a process, a
    // partition shape cuts the whole network).
    let aimed = matches!(spec.acts, Acts::Nodes | Acts::ClientProxy);
    if aimed {
        merge(&mut invoke, scheduled_targets(&sf.targets));
    }
    merge(&mut invoke, marks.clone());
    if aimed {
        merge(&mut invoke, node_fields(&sf.targets));
    }
    let _ = recorder.record(&nemesis_event(OpType::Invoke, start_f, invoke));
    let fault = match Fault::start(kind, cluster, &sf.targets, sf.pick).await {
        Ok((fault, mut value)) => {
            events.send(RunEvent::FaultStarted {
                fault: kind.to_string(),
                detail: value.to_string(),
            });
            with_id(&mut value, id);
            merge(&mut value, marks);
            if matches!(spec.acts, Acts::Nodes | Acts::ClientProxy) {
                merge(&mut value, node_fields(&fault.targets));
            }
            let _ = recorder.record(&nemesis_event(OpType::Info, start_f, value));
            fault
        }
        Err(e) => {
            events.send(RunEvent::FaultFailed {
                fault: kind.to_string(),
                error: e.to_string(),
            });
            let mut value = json!({"error": e.to_string(), "fault_id": id, "end": true});
            merge(&mut value, marks);
            let _ = recorder.record(&nemesis_event(OpType::Info, start_f, value));
            return id;
        }
    };
    if spec.instant() {
        return id;
    }
    tokio::time::sleep(Duration::from_millis(sf.duration_ms)).await;
    // The node the fault hit (a leader found at start), or none (a partition shape).
    let mut invoke = json!({ "fault_id": id });
    match fault.targets.as_slice() {
        [] => invoke["target"] = serde_json::Value::Null,
        t => merge(&mut invoke, scheduled_targets(t)),
    }
    let _ = recorder.record(&nemesis_event(OpType::Invoke, stop_f, invoke));
    let mut value = match fault.stop(cluster).await {
        Ok(v) => v,
        Err(e) => json!({"error": e.to_string()}),
    };
    with_id(&mut value, id);
    let _ = recorder.record(&nemesis_event(OpType::Info, stop_f, value));
    events.send(RunEvent::FaultEnded {
        fault: kind.to_string(),
    });
    id
}

/// Heals everything: network rules flushed, nodes resumed and started, cluster ready.
/// Whatever faults were under way, overlapping or not, end here.
pub(super) async fn final_heal(cluster: &RunCluster<'_>, recorder: &Recorder, events: &EventSink) {
    let _ = recorder.record(&nemesis_event(OpType::Invoke, "heal-all", json!({})));
    let c = cluster.cluster();
    let mut notes = Vec::new();
    // The storage node first: the brokers need it to come back.
    let storage = cluster.deployment.storage_node();
    // A storage node that does not come back (after a power loss, say) keeps
    // every broker from being ready: they are started, not waited for.
    let mut storage_down = false;
    // Resumed, and started where it does not answer: one node at a time for
    // the storage node, then every broker at once (a broker that never comes
    // back costs one readiness wait, not one per node).
    let back = |n: String| {
        let c = &c;
        async move {
            let _ = cluster.deployment.unpause(&n).await;
            if cluster
                .deployment
                .wait_ready(&n, Duration::from_secs(2))
                .await
                .is_err()
            {
                if let Err(e) = c.start_node(&n).await {
                    return Some(format!("{n}: {e}"));
                }
            }
            None
        }
    };
    if let Some(s) = &storage {
        if let Some(problem) = back(s.clone()).await {
            notes.push(problem);
            storage_down = true;
        }
    }
    // The dedup store (seed D7) next: the drain's consumers need it.
    if let Some(store) = cluster.deployment.dedup_store() {
        if let Some(problem) = back(store.node).await {
            notes.push(problem);
        }
    }
    if storage_down {
        for n in cluster.deployment.nodes() {
            let _ = cluster.deployment.unpause(&n).await;
            let _ = cluster.deployment.start(&n).await;
        }
    } else {
        let brokers = cluster.deployment.nodes().into_iter().map(back);
        notes.extend(
            futures_util::future::join_all(brokers)
                .await
                .into_iter()
                .flatten(),
        );
    }
    if let Err(e) = heal_network(&c).await {
        notes.push(e.to_string());
    }
    if let Err(e) = c.heal_links().await {
        notes.push(e.to_string());
    }
    if cluster.netem {
        for n in cluster.deployment.nodes() {
            if let Err(e) = c.remove_delay(&n).await {
                notes.push(e.to_string());
            }
        }
    }
    if storage_down {
        notes.push(
            "the brokers were started but not waited for: the storage node did not come back"
                .into(),
        );
    } else if let Err(e) = cluster
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

/// What a run hands the nemesis: the deployment (its node control and
/// readiness), the consumer workers, the client proxy, the role probe and the
/// sends in flight. [`RunCluster::cluster`] makes the nemesis's [`Cluster`].
pub(super) struct RunCluster<'a> {
    pub(super) deployment: &'a dyn Deployment,
    /// What a coordinator's role probe asks about (see [`RoleNames`]).
    pub(super) roles: RoleNames,
    pub(super) pool: Pool,
    /// The clients' proxy, when the run has one.
    pub(super) proxy: Option<&'a Proxy>,
    /// The run may leave a netem qdisc behind (the final heal removes it).
    pub(super) netem: bool,
    /// Sends in flight, counted by the producers (a plan: always one, so
    /// nothing is waited for).
    pub(super) in_flight: InFlight,
    /// The two-hop workload's transformers, which run in this process:
    /// `kill-consumer` kills one of them instead of a worker process.
    pub(super) transformers: Option<std::sync::Arc<gauntlet_workloads::twohop::Kills>>,
}

impl RunCluster<'_> {
    /// The nemesis's view: the deployment's node control, and this run's
    /// capabilities.
    pub(super) fn cluster(&self) -> Cluster<'_> {
        Cluster {
            nodes: self.deployment.nodes(),
            storage: self.deployment.storage_node(),
            dedup_store: self.deployment.dedup_store().map(|e| e.node),
            control: self.deployment,
            ready: self,
            consumers: Some(self),
            links: self.proxy.map(|p| p as &dyn Links),
            roles: Some(self),
            in_flight: self.in_flight.clone(),
        }
    }
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
impl Readiness for RunCluster<'_> {
    async fn wait_ready(&self, node: &str, timeout: Duration) -> Result<(), ControlError> {
        Ok(self.deployment.wait_ready(node, timeout).await?)
    }
}

#[async_trait::async_trait]
impl Consumers for RunCluster<'_> {
    async fn kill_consumer(
        &self,
        pick: u64,
        at: KillConsumerAt,
    ) -> Result<serde_json::Value, NemesisError> {
        if let Some(k) = &self.transformers {
            use gauntlet_workloads::twohop::KillPoint;
            let point = match at {
                KillConsumerAt::Any => KillPoint::Any,
                KillConsumerAt::BeforeAck => KillPoint::BeforeAck,
                KillConsumerAt::AfterAck => KillPoint::AfterAck,
                // Refused before the run: only the idempotent consumer of a
                // [dedup] table has an effect, and the two-hop workload has none.
                KillConsumerAt::BeforeEffect => {
                    return Err(nem_err(
                        "kill-consumer:before-effect",
                        "transformer",
                        "a transformer has no effect to stop before",
                    ))
                }
            };
            let process = k
                .kill(pick, point, Duration::from_secs(15))
                .await
                .map_err(|e| nem_err("kill-consumer", "transformer", e))?;
            return Ok(json!({"process": process, "at": format!("{at:?}"), "transformer": true}));
        }
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
            KillConsumerAt::BeforeEffect => Some(StallPoint::BeforeEffect),
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
}

/// How long a link fault watches the client links to see which ones carry traffic.
const LINK_SAMPLE: Duration = Duration::from_millis(300);

#[async_trait::async_trait]
impl Links for Proxy {
    async fn link(&self, node: &str, fault: LinkFault) -> Result<serde_json::Value, NemesisError> {
        let unsupported = || NemesisError::Unsupported {
            fault: fault.to_string(),
            why: format!("no client proxy in front of {node}"),
        };
        let effect = fault.effect();
        // The consumers' link to their dedup store: aimed at by name only.
        if let Some(store) = self.dedup.as_ref().filter(|l| l.node() == node) {
            store.set(link_state(effect));
            if effect.reset_open {
                store.reset_all();
            }
            return Ok(json!({
                "node": node,
                "fault": fault.to_string(),
                "proxy": store.addr().to_string(),
                "stats": store.stats(),
            }));
        }
        // The client -> broker bytes of each link so far, and over the next
        // moment: where the clients send now.
        let sent = || -> Vec<u64> { self.links.iter().map(|l| l.stats().bytes_up).collect() };
        let before = sent();
        tokio::time::sleep(LINK_SAMPLE).await;
        let after = sent();
        let recent: Vec<(&str, u64)> = self
            .links
            .iter()
            .zip(before.iter().zip(&after))
            .map(|(l, (b, a))| (l.node(), a.saturating_sub(*b)))
            .collect();
        let so_far: Vec<(&str, u64)> = self
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
        let aimed = if effect.busiest_link {
            busiest_link(node, traffic)
        } else {
            link_target(node, traffic)
        };
        let link = self.link(aimed).ok_or_else(unsupported)?;
        link.set(link_state(effect));
        if effect.reset_open {
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
            value["why"] = json!(if effect.busiest_link {
                format!(
                    "{} takes the link clients send the most through: {aimed}'s",
                    fault.name()
                )
            } else {
                format!(
                    "{node}'s link carries under a quarter of the busiest's client bytes now; {aimed}'s carries the most"
                )
            });
        }
        Ok(value)
    }
    async fn heal_links(&self) -> Result<serde_json::Value, NemesisError> {
        self.heal();
        let stats: serde_json::Map<String, serde_json::Value> = self
            .links
            .iter()
            .chain(&self.dedup)
            .map(|l| (l.node().to_string(), json!(l.stats())))
            .collect();
        Ok(json!({"healed": "links", "stats": stats}))
    }
}

#[async_trait::async_trait]
impl Roles for RunCluster<'_> {
    async fn leader(&self, role: Role) -> Result<Option<String>, NemesisError> {
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
