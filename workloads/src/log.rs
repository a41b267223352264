//! The `log` workload: Kafka-style send/poll against a partitioned topic.
//!
//! Producers send keyed values (librdkafka's default partitioner keeps a key on
//! one partition, so per-key order is per-partition order) and record the
//! partition and offset of each `ok`. Consumers run in separate `gauntlet
//! worker` processes and either `subscribe` (group membership: partitions move
//! between members when workers join, leave or are killed) or `assign`
//! themselves a fixed share of the partitions. Every poll records the partition
//! and offset of each message; commits follow the delivery settings:
//!
//! - manual commit after processing (at-least-once): `commit` ops, recorded
//!   with the next offset to read per partition (Kafka's convention);
//! - auto-commit (`manual_ack = false`, at-most-once): librdkafka commits the
//!   offsets handed to the application every second, whether or not they were
//!   processed; its commit callback reports each commit, recorded as a `commit`
//!   op right after the op during which it happened (so its recorded time is late);
//! - manual commit before processing (`ack_point = before-processing`): the
//!   commit happens inside the poll op and is recorded right after it.
//!
//! Assignment changes are recorded as ops: `subscribe` when a worker joins the
//! group, `assign` for an explicit assignment and for each rebalance (value
//! `{"partitions": [...], "rebalance": "assign" | "revoke"}`). The reader treats
//! them as resets, so a consumer that gets a partition back at its committed
//! offset is not a partition-order violation. A rebalance that happens while a
//! poll gathers messages ends that poll before the first message fetched under
//! the new assignment, which opens the next poll, after the `assign` op.
//!
//! The final drain: a fresh consumer per group assigns itself every partition at
//! the group's committed offsets and reads each to its high watermark.
use crate::client::{body, parse_body, ClientError, Consumer, Driver, Outcome, Producer, Stored};
use crate::drivers::kafka::classify;
use crate::queue::WireEvent;
use crate::settings::{AckPoint, Resolved};
use crate::stall::{stall_here, Stall, StallPoint};
use async_trait::async_trait;
use rdkafka::admin::{AdminClient, NewTopic, TopicReplication};
use rdkafka::client::{ClientContext, DefaultClientContext};
use rdkafka::consumer::{
    BaseConsumer, CommitMode, Consumer as _, ConsumerContext, Rebalance, StreamConsumer,
};
use rdkafka::error::{KafkaError, KafkaResult};
use rdkafka::producer::{FutureProducer, FutureRecord};
use rdkafka::{ClientConfig, Message, Offset, TopicPartitionList};
use serde::{Deserialize, Serialize};
use serde_json::{json, Value};
use std::collections::BTreeMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Mutex;
use std::time::{Duration, Instant};

/// The log workload's topic (the queue workload's is `gauntlet`).
pub const TOPIC: &str = "gauntlet-log";
/// How long a drain consumer keeps trying to reach the end of every partition.
pub const DRAIN_PATIENCE: Duration = Duration::from_secs(30);

/// How consumers get their partitions.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Membership {
    /// Group membership: the coordinator spreads partitions and rebalances.
    #[default]
    Subscribe,
    /// Each consumer assigns itself partitions `p` with `p % consumers == its slot`.
    Assign,
}

impl Membership {
    /// Every membership: `subscribe` (the default), then `assign`.
    pub const ALL: [Membership; 2] = [Membership::Subscribe, Membership::Assign];

    /// The name in scenarios and on the command line.
    pub fn name(self) -> &'static str {
        match self {
            Membership::Subscribe => "subscribe",
            Membership::Assign => "assign",
        }
    }
}

impl std::fmt::Display for Membership {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

impl std::str::FromStr for Membership {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        match s {
            "subscribe" => Ok(Membership::Subscribe),
            "assign" => Ok(Membership::Assign),
            other => Err(format!(
                "membership `{other}`: expected subscribe or assign"
            )),
        }
    }
}

/// The `[log]` table of a scenario. Producers, consumers, keys, batch, processing
/// time and groups come from the `[queue]` table.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case", default, deny_unknown_fields)]
pub struct LogConfig {
    /// Partitions of the topic.
    pub partitions: i32,
    /// How consumers get their partitions.
    pub membership: Membership,
}

impl Default for LogConfig {
    fn default() -> Self {
        LogConfig {
            partitions: 4,
            membership: Membership::Subscribe,
        }
    }
}

fn config(bootstrap: &str) -> ClientConfig {
    let mut c = ClientConfig::new();
    c.set("bootstrap.servers", bootstrap)
        .set("socket.timeout.ms", "10000");
    c
}

fn setup_err(what: &str, e: impl std::fmt::Display) -> ClientError {
    ClientError::Setup {
        broker: "kafka",
        reason: format!("{what}: {e}"),
    }
}

/// The producer side, behind [`Driver`] so that the queue workload's paced
/// producer loop (`queue::run_producers`) drives it.
pub struct LogDriver {
    /// The bootstrap servers: every node's host:port, comma-separated.
    pub bootstrap: String,
    /// The delivery settings.
    pub settings: Resolved,
    /// Partitions of the topic.
    pub partitions: i32,
    /// Replication factor of the topic: min(3, nodes).
    pub replication: i32,
}

impl LogDriver {
    /// Refuses settings this workload cannot honour (transactions, an unknown `acks`,
    /// idempotence without `acks = "all"`, no partition), before anything connects.
    pub fn new(addrs: &[String], settings: Resolved, cfg: &LogConfig) -> Result<Self, ClientError> {
        if settings.transactions {
            return Err(ClientError::Unsupported {
                broker: "kafka",
                what: "transactions in the log workload (use the txn workload)".into(),
            });
        }
        if !matches!(settings.acks.as_str(), "0" | "1" | "all" | "-1") {
            return Err(setup_err(
                "acks",
                format!("{:?}: expected 0, 1 or all", settings.acks),
            ));
        }
        if settings.idempotence && !matches!(settings.acks.as_str(), "all" | "-1") {
            return Err(setup_err("idempotence", "needs acks = \"all\""));
        }
        if cfg.partitions < 1 {
            return Err(setup_err("partitions", "at least one"));
        }
        Ok(LogDriver {
            bootstrap: addrs.join(","),
            settings,
            partitions: cfg.partitions,
            replication: addrs.len().clamp(1, 3) as i32,
        })
    }
}

#[async_trait]
impl Driver for LogDriver {
    fn name(&self) -> &'static str {
        "kafka"
    }

    /// Creates the topic with the admin API (an existing one is fine).
    async fn setup(&self, _groups: &[String]) -> Result<(), ClientError> {
        let admin: AdminClient<DefaultClientContext> =
            config(&self.bootstrap)
                .create()
                .map_err(|e| ClientError::Connect {
                    broker: "kafka",
                    addr: self.bootstrap.clone(),
                    reason: e.to_string(),
                })?;
        let topic = NewTopic::new(
            TOPIC,
            self.partitions,
            TopicReplication::Fixed(self.replication),
        );
        crate::drivers::kafka::create_topic(&admin, &topic).await
    }

    async fn producer(&self, _process: u64) -> Result<Box<dyn Producer>, ClientError> {
        let s = &self.settings;
        let mut c = config(&self.bootstrap);
        c.set("acks", &s.acks)
            .set("retries", s.retries.to_string())
            .set("enable.idempotence", s.idempotence.to_string())
            .set(
                "max.in.flight.requests.per.connection",
                s.max_in_flight.max(1).to_string(),
            )
            .set("message.timeout.ms", "20000")
            .set("linger.ms", "0");
        let producer: FutureProducer = c.create().map_err(|e| ClientError::Connect {
            broker: "kafka",
            addr: self.bootstrap.clone(),
            reason: e.to_string(),
        })?;
        Ok(Box::new(LogProducer { producer }))
    }

    async fn consumer(
        &self,
        _group: &str,
        _process: u64,
    ) -> Result<Box<dyn Consumer>, ClientError> {
        Err(ClientError::Unsupported {
            broker: "kafka",
            what: "queue-style consumers in the log workload (log workers use `run_log_worker`)"
                .into(),
        })
    }
}

struct LogProducer {
    producer: FutureProducer,
}

#[async_trait]
impl Producer for LogProducer {
    async fn send(&mut self, key: &str, value: i64) -> Outcome<Stored> {
        let payload = body(key, value);
        let record = FutureRecord::to(TOPIC).key(key).payload(&payload);
        match self.producer.send(record, Duration::from_secs(5)).await {
            Ok(d) => Outcome::Ok(Stored {
                partition: Some(i64::from(d.partition)),
                offset: (d.offset >= 0).then_some(d.offset),
                id: None,
            }),
            Err((e, _)) => classify(&e),
        }
    }
}

/// What the consumer context saw between two ops.
#[derive(Debug, Clone, PartialEq)]
enum Change {
    Assign(Vec<i32>),
    Revoke(Vec<i32>),
    Error(String),
    /// A commit librdkafka made (auto-commit), or a commit made inside a poll.
    Committed(Vec<(i32, i64)>),
}

#[derive(Default)]
struct Ctx {
    changes: Mutex<Vec<Change>>,
    /// Whether commits are auto-commits (reported by the callback).
    auto_commit: bool,
}

impl Ctx {
    fn push(&self, c: Change) {
        if let Ok(mut v) = self.changes.lock() {
            v.push(c);
        }
    }
    fn take(&self) -> Vec<Change> {
        self.changes
            .lock()
            .map(|mut v| std::mem::take(&mut *v))
            .unwrap_or_default()
    }
    fn has_rebalance(&self) -> bool {
        self.changes
            .lock()
            .map(|v| {
                v.iter()
                    .any(|c| matches!(c, Change::Assign(_) | Change::Revoke(_)))
            })
            .unwrap_or(false)
    }
}

fn partitions_of(tpl: &TopicPartitionList) -> Vec<i32> {
    let mut v: Vec<i32> = tpl.elements().iter().map(|e| e.partition()).collect();
    v.sort_unstable();
    v
}

fn offsets_of(tpl: &TopicPartitionList) -> Vec<(i32, i64)> {
    tpl.elements()
        .iter()
        .filter_map(|e| match e.offset() {
            Offset::Offset(o) => Some((e.partition(), o)),
            _ => None,
        })
        .collect()
}

impl ClientContext for Ctx {}

impl ConsumerContext for Ctx {
    fn post_rebalance(&self, _c: &BaseConsumer<Self>, r: &Rebalance<'_>) {
        self.push(match r {
            Rebalance::Assign(tpl) => Change::Assign(partitions_of(tpl)),
            Rebalance::Revoke(tpl) => Change::Revoke(partitions_of(tpl)),
            Rebalance::Error(e) => Change::Error(e.to_string()),
        });
    }

    fn commit_callback(&self, result: KafkaResult<()>, offsets: &TopicPartitionList) {
        if self.auto_commit && result.is_ok() {
            let o = offsets_of(offsets);
            if !o.is_empty() {
                self.push(Change::Committed(o));
            }
        }
    }
}

/// One message as the log workload records it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LogMsg {
    /// The message's key.
    pub key: String,
    /// The message's value.
    pub value: i64,
    /// The partition it was read from.
    pub partition: i32,
    /// Its offset in the partition.
    pub offset: i64,
}

impl LogMsg {
    fn json(&self) -> Value {
        json!({"key": self.key, "value": self.value, "partition": self.partition, "offset": self.offset})
    }
}

/// The next offset to read per partition after `msgs` (Kafka's commit convention).
pub fn next_offsets(msgs: &[LogMsg]) -> Vec<(i32, i64)> {
    let mut next: BTreeMap<i32, i64> = BTreeMap::new();
    for m in msgs {
        let e = next.entry(m.partition).or_insert(m.offset + 1);
        *e = (*e).max(m.offset + 1);
    }
    next.into_iter().collect()
}

fn positions_json(p: &[(i32, i64)]) -> Value {
    Value::Array(
        p.iter()
            .map(|(p, o)| json!({"partition": p, "offset": o}))
            .collect(),
    )
}

/// How a log worker runs.
#[derive(Debug, Clone)]
pub struct LogWorker {
    /// The bootstrap servers: every node's host:port, comma-separated.
    pub bootstrap: String,
    /// The consumer group.
    pub group: String,
    /// How it gets its partitions.
    pub membership: Membership,
    /// This worker's slot and the number of slots (for `assign`).
    pub slot: usize,
    /// The number of slots: the group's consumer workers.
    pub slots: usize,
    /// Messages a poll takes at most.
    pub batch: usize,
    /// How long a poll waits for its first message.
    pub wait: Duration,
    /// Processing time per message.
    pub processing: Duration,
    /// The final drain: assign every partition at the committed offsets, read to the end, exit.
    pub drain: bool,
}

fn wire(
    kind: &str,
    f: &str,
    group: &str,
    value: Option<Value>,
    error: Option<String>,
) -> WireEvent {
    WireEvent {
        kind: kind.into(),
        f: f.into(),
        group: Some(group.into()),
        value,
        error,
    }
}

struct Worker<'a> {
    w: &'a LogWorker,
    consumer: StreamConsumer<Ctx>,
    manual: bool,
    ack_point: AckPoint,
    /// A message fetched under a new assignment, held for the next poll.
    carried: Option<LogMsg>,
}

enum Gathered {
    Msgs(Vec<LogMsg>),
    Unknown(String),
}

impl Worker<'_> {
    /// Up to `batch` messages: waits up to `wait` for the first, then takes what is
    /// there; stops before a message fetched after a rebalance.
    async fn gather(&mut self) -> Gathered {
        let mut out: Vec<LogMsg> = self.carried.take().into_iter().collect();
        let mut limit = if out.is_empty() {
            self.w.wait
        } else {
            Duration::from_millis(5)
        };
        while out.len() < self.w.batch.max(1) {
            let had_rebalance = self.consumer.context().has_rebalance();
            match tokio::time::timeout(limit, self.consumer.recv()).await {
                Err(_) => break,
                Ok(Err(e)) => {
                    if out.is_empty() {
                        return Gathered::Unknown(e.to_string());
                    }
                    break;
                }
                Ok(Ok(m)) => {
                    let Ok((key, value)) = parse_body(m.payload().unwrap_or_default()) else {
                        continue;
                    };
                    let msg = LogMsg {
                        key,
                        value,
                        partition: m.partition(),
                        offset: m.offset(),
                    };
                    if !had_rebalance && self.consumer.context().has_rebalance() {
                        // Fetched under the new assignment: it opens the next poll.
                        self.carried = Some(msg);
                        break;
                    }
                    out.push(msg);
                    limit = Duration::from_millis(5);
                }
            }
            if self.consumer.context().has_rebalance() && !had_rebalance {
                break;
            }
        }
        Gathered::Msgs(out)
    }

    /// Records what the context saw since the last op: rebalances and auto-commits.
    fn report_changes(&self, emit: &mut dyn FnMut(WireEvent)) {
        let g = &self.w.group;
        for c in self.consumer.context().take() {
            match c {
                Change::Assign(ref p) | Change::Revoke(ref p) => {
                    let how = if matches!(c, Change::Assign(_)) {
                        "assign"
                    } else {
                        "revoke"
                    };
                    let v = json!({"topic": TOPIC, "partitions": p, "rebalance": how});
                    emit(wire("invoke", "assign", g, Some(v.clone()), None));
                    emit(wire("ok", "assign", g, Some(v), None));
                }
                Change::Error(e) => {
                    let v = json!({"topic": TOPIC, "rebalance": "error"});
                    emit(wire("invoke", "assign", g, Some(v.clone()), None));
                    emit(wire("info", "assign", g, Some(v), Some(e)));
                }
                Change::Committed(o) => {
                    let v = positions_json(&o);
                    emit(wire("invoke", "commit", g, Some(v.clone()), None));
                    emit(wire("ok", "commit", g, Some(v), None));
                }
            }
        }
    }

    fn commit_sync(&self, next: &[(i32, i64)]) -> Outcome<()> {
        let mut tpl = TopicPartitionList::new();
        for (p, o) in next {
            if let Err(e) = tpl.add_partition_offset(TOPIC, *p, Offset::Offset(*o)) {
                return Outcome::Fail(format!("offset {o} of partition {p}: {e}"));
            }
        }
        match self.consumer.commit(&tpl, CommitMode::Sync) {
            Ok(()) => Outcome::Ok(()),
            Err(e) => classify(&e),
        }
    }

    /// Waits (up to 3 s) until an auto-commit covered `next`, for a kill right after it.
    async fn await_auto_commit(&self, next: &[(i32, i64)]) {
        let until = Instant::now() + Duration::from_secs(3);
        while Instant::now() < until {
            if let Ok(c) = self.consumer.committed(Duration::from_secs(1)) {
                let done = next.iter().all(|(p, o)| {
                    matches!(c.find_partition(TOPIC, *p).map(|e| e.offset()), Some(Offset::Offset(x)) if x >= *o)
                });
                if done {
                    return;
                }
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    }

    /// Whether this consumer has partitions and has read every one to its high watermark.
    fn at_end(&self) -> bool {
        crate::drivers::kafka::read_to_end(&self.consumer, TOPIC)
    }

    /// Every partition of the topic (from the broker's metadata).
    fn all_partitions(&self) -> Result<Vec<i32>, ClientError> {
        let meta = self
            .consumer
            .fetch_metadata(Some(TOPIC), Duration::from_secs(10))
            .map_err(|e| setup_err("metadata", e))?;
        let n = meta
            .topics()
            .iter()
            .find(|t| t.name() == TOPIC)
            .map(|t| t.partitions().len() as i32)
            .unwrap_or(0);
        if n == 0 {
            return Err(setup_err(
                "metadata",
                format!("topic {TOPIC} has no partitions"),
            ));
        }
        Ok((0..n).collect())
    }

    /// Joins: subscribe, or assign this worker's partitions (every one for the drain).
    fn join(&self, emit: &mut dyn FnMut(WireEvent)) -> Result<(), ClientError> {
        let g = &self.w.group;
        if self.w.membership == Membership::Subscribe && !self.w.drain {
            let v = json!({"topics": [TOPIC]});
            emit(wire("invoke", "subscribe", g, Some(v.clone()), None));
            return match self.consumer.subscribe(&[TOPIC]) {
                Ok(()) => {
                    emit(wire("ok", "subscribe", g, Some(v), None));
                    Ok(())
                }
                Err(e) => {
                    emit(wire("fail", "subscribe", g, Some(v), Some(e.to_string())));
                    Err(setup_err("subscribe", e))
                }
            };
        }
        let all = self.all_partitions()?;
        let mine: Vec<i32> = if self.w.drain {
            all
        } else {
            let slots = self.w.slots.max(1);
            all.into_iter()
                .filter(|p| *p as usize % slots == self.w.slot % slots)
                .collect()
        };
        let v = json!({"topic": TOPIC, "partitions": mine});
        emit(wire("invoke", "assign", g, Some(v.clone()), None));
        let mut tpl = TopicPartitionList::new();
        for p in &mine {
            tpl.add_partition_offset(TOPIC, *p, Offset::Stored)
                .map_err(|e| setup_err("assign", e))?;
        }
        match self.consumer.assign(&tpl) {
            Ok(()) => {
                emit(wire("ok", "assign", g, Some(v), None));
                Ok(())
            }
            Err(e) => {
                emit(wire("fail", "assign", g, Some(v), Some(e.to_string())));
                Err(setup_err("assign", e))
            }
        }
    }
}

/// Runs one log consumer until `stop` (or, for the drain, until every partition
/// was read to its end), reporting every op through `emit`. Returns early when an
/// op's outcome is unknown: the harness starts a fresh worker under a new number.
pub async fn run_log_worker(
    w: &LogWorker,
    settings: &Resolved,
    stop: &AtomicBool,
    stall: &Stall,
    emit: &mut dyn FnMut(WireEvent),
) -> Result<(), ClientError> {
    let manual = settings.manual_ack || w.drain;
    let mut c = config(&w.bootstrap);
    c.set("group.id", &w.group)
        .set("auto.offset.reset", "earliest")
        .set("enable.auto.commit", if manual { "false" } else { "true" })
        .set("auto.commit.interval.ms", "1000")
        .set("session.timeout.ms", "6000")
        .set("heartbeat.interval.ms", "1000")
        .set("max.poll.interval.ms", "10000")
        .set("isolation.level", "read_committed");
    let ctx = Ctx {
        changes: Mutex::new(Vec::new()),
        auto_commit: !manual,
    };
    let consumer: StreamConsumer<Ctx> =
        c.create_with_context(ctx)
            .map_err(|e: KafkaError| ClientError::Connect {
                broker: "kafka",
                addr: w.bootstrap.clone(),
                reason: e.to_string(),
            })?;
    let mut me = Worker {
        w,
        consumer,
        manual,
        ack_point: settings.ack_point,
        carried: None,
    };
    me.join(emit)?;
    let g = w.group.clone();
    let started = Instant::now();
    let mut empty = 0u32;
    while !stop.load(Ordering::Relaxed) {
        emit(wire("invoke", "poll", &g, None, None));
        let msgs = match me.gather().await {
            Gathered::Msgs(m) => m,
            Gathered::Unknown(e) => {
                emit(wire("info", "poll", &g, None, Some(e)));
                return Ok(());
            }
        };
        let next = next_offsets(&msgs);
        let poll_ok = |emit: &mut dyn FnMut(WireEvent), msgs: &[LogMsg]| {
            emit(wire(
                "ok",
                "poll",
                &g,
                Some(Value::Array(msgs.iter().map(LogMsg::json).collect())),
                None,
            ))
        };
        if msgs.is_empty() {
            poll_ok(emit, &msgs);
            me.report_changes(emit);
            if w.drain {
                empty += 1;
                if (empty >= 3 && me.at_end()) || started.elapsed() >= DRAIN_PATIENCE {
                    return Ok(());
                }
            }
            continue;
        }
        empty = 0;
        let before = me.ack_point == AckPoint::BeforeProcessing && !w.drain;
        let mut committed_inside: Option<Vec<(i32, i64)>> = None;
        if before {
            if me.manual {
                match me.commit_sync(&next) {
                    Outcome::Ok(()) => committed_inside = Some(next.clone()),
                    Outcome::Fail(_) => {}
                    Outcome::Info(e) => {
                        emit(wire("info", "poll", &g, None, Some(format!("commit: {e}"))));
                        return Ok(());
                    }
                }
            } else if stall.is_at(StallPoint::AfterAck) {
                me.await_auto_commit(&next).await;
            }
            stall_here(stall, StallPoint::AfterAck, emit).await;
        }
        if !w.processing.is_zero() {
            tokio::time::sleep(w.processing * msgs.len() as u32).await;
        }
        poll_ok(emit, &msgs);
        if let Some(o) = committed_inside {
            let v = positions_json(&o);
            emit(wire("invoke", "commit", &g, Some(v.clone()), None));
            emit(wire("ok", "commit", &g, Some(v), None));
        }
        if !before && me.manual {
            stall_here(stall, StallPoint::BeforeAck, emit).await;
            let v = positions_json(&next);
            emit(wire("invoke", "commit", &g, Some(v.clone()), None));
            match me.commit_sync(&next) {
                Outcome::Ok(()) => emit(wire("ok", "commit", &g, Some(v), None)),
                Outcome::Fail(e) => emit(wire("fail", "commit", &g, Some(v), Some(e))),
                Outcome::Info(e) => {
                    emit(wire("info", "commit", &g, Some(v), Some(e)));
                    return Ok(());
                }
            }
        }
        me.report_changes(emit);
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn m(p: i32, o: i64) -> LogMsg {
        LogMsg {
            key: "k".into(),
            value: o,
            partition: p,
            offset: o,
        }
    }

    #[test]
    fn commits_name_the_next_offset_per_partition() {
        let msgs = [m(0, 4), m(1, 9), m(0, 5), m(0, 3)];
        assert_eq!(next_offsets(&msgs), vec![(0, 6), (1, 10)]);
        assert!(next_offsets(&[]).is_empty());
        assert_eq!(
            positions_json(&[(2, 7)]),
            json!([{"partition": 2, "offset": 7}])
        );
    }

    #[test]
    fn config_and_membership_parse() {
        let c: LogConfig = serde_json::from_value(json!({"membership": "assign"})).expect("cfg");
        assert_eq!(c.partitions, 4);
        assert_eq!(c.membership, Membership::Assign);
        assert!(serde_json::from_value::<LogConfig>(json!({"bogus": 1})).is_err());
        assert_eq!("subscribe".parse::<Membership>(), Ok(Membership::Subscribe));
        assert!("both".parse::<Membership>().is_err());
    }

    #[test]
    fn rebalances_are_kept_in_order_and_taken_once() {
        let ctx = Ctx::default();
        assert!(!ctx.has_rebalance());
        ctx.push(Change::Committed(vec![(0, 3)]));
        assert!(!ctx.has_rebalance());
        ctx.push(Change::Revoke(vec![0, 1]));
        ctx.push(Change::Assign(vec![1]));
        assert!(ctx.has_rebalance());
        let got = ctx.take();
        assert_eq!(got.len(), 3);
        assert_eq!(got[1], Change::Revoke(vec![0, 1]));
        assert!(ctx.take().is_empty() && !ctx.has_rebalance());
    }
}
