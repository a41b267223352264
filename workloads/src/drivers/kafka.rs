//! The Kafka protocol (rdkafka; tansu in Gauntlet's image): one topic `gauntlet`
//! with [`PARTITIONS`] partitions, keys mapped to partitions by librdkafka's
//! default partitioner, one consumer group per group.
//!
//! - Producer: `acks`, `retries`, `enable.idempotence` and
//!   `max.in.flight.requests.per.connection` straight from the settings; the
//!   delivery report's partition and offset are recorded (`acks=0` gives no offset).
//!   `partitioner = "pinned"` sends each key to [`pinned_partition`] (its hash modulo
//!   [`PARTITIONS`], the count the topic is created with), so a key keeps its
//!   partition when partitions are added (seed O4); `hash`, the default, leaves
//!   it to librdkafka (`consistent_random`: the key's hash modulo the count of
//!   the moment). `metadata_refresh_ms` sets producers' and consumers'
//!   `topic.metadata.refresh.interval.ms`.
//! - Consumer, manual ack: `enable.auto.commit=false`, and `ack` commits, per
//!   partition, the highest acknowledged offset + 1 (synchronously).
//! - Consumer, auto ack: `enable.auto.commit=true`; the commit may run ahead of
//!   processing (scenario D5), and `ack` does nothing.
//! - Drain: a fresh consumer of the same group that assigns itself every partition
//!   at the group's committed offsets (no rebalance); its `poll` answers "nothing"
//!   only once it has read each partition to its high watermark (or after
//!   [`DRAIN_PATIENCE`]).
//!
//! Transactions are not offered: the queue workload has no consume-transform-produce
//! step, and a one-send transaction would not test what D9 is about.
use crate::client::{
    body, parse_body, ClientError, Consumer, Driver, Outcome, Producer, Received, Stored,
};
use crate::settings::Resolved;
use async_trait::async_trait;
use rdkafka::admin::{AdminClient, AdminOptions, NewTopic, TopicReplication};
use rdkafka::client::DefaultClientContext;
use rdkafka::consumer::{CommitMode, Consumer as _, StreamConsumer};
use rdkafka::error::KafkaError;
use rdkafka::producer::{FutureProducer, FutureRecord};
use rdkafka::types::RDKafkaErrorCode;
use rdkafka::{ClientConfig, Message, Offset, TopicPartitionList};
use std::collections::BTreeMap;
use std::time::{Duration, Instant};

/// The topic every workload but the two-hop one's second hop uses.
pub const TOPIC: &str = "gauntlet";
/// Partitions of the topic.
pub const PARTITIONS: i32 = 3;
/// How long a drain consumer waits for its assignment and the end of its partitions.
pub const DRAIN_PATIENCE: Duration = Duration::from_secs(30);
/// How long librdkafka tries to deliver a message before it reports a timeout.
const MESSAGE_TIMEOUT: Duration = Duration::from_secs(20);

/// The Kafka protocol driver.
pub struct Kafka {
    /// The bootstrap servers: every node's host:port, comma-separated.
    pub bootstrap: String,
    /// The delivery settings.
    pub settings: Resolved,
    /// Replication factor of the topic: min(3, nodes).
    pub replication: i32,
    /// A drain driver: its consumers assign themselves every partition at the group's
    /// committed offsets and read to the high watermarks (see the module docs).
    pub drain: bool,
    /// The topic: [`TOPIC`] unless set ([`Kafka::with_topic`]).
    pub topic: String,
}

impl Kafka {
    /// Refuses settings this driver cannot honour, before anything connects.
    pub fn new(addrs: &[String], settings: Resolved, drain: bool) -> Result<Self, ClientError> {
        if settings.transactions {
            return Err(ClientError::Unsupported {
                broker: "kafka",
                what: "transactions in the queue workload (set `transactions = false`, \
                       or use mode `idempotent`)"
                    .into(),
            });
        }
        if !matches!(settings.acks.as_str(), "0" | "1" | "all" | "-1") {
            return Err(ClientError::Setup {
                broker: "kafka",
                reason: format!(
                    "acks = {:?}: expected \"0\", \"1\" or \"all\"",
                    settings.acks
                ),
            });
        }
        if !matches!(
            settings.partitioner.as_str(),
            crate::settings::HASH | crate::settings::PINNED
        ) {
            return Err(ClientError::Setup {
                broker: "kafka",
                reason: format!(
                    "partitioner = {:?}: expected \"hash\" or \"pinned\"",
                    settings.partitioner
                ),
            });
        }
        if settings.idempotence && !matches!(settings.acks.as_str(), "all" | "-1") {
            return Err(ClientError::Setup {
                broker: "kafka",
                reason: format!("idempotence needs acks = \"all\", not {:?}", settings.acks),
            });
        }
        Ok(Kafka {
            bootstrap: addrs.join(","),
            settings,
            replication: addrs.len().clamp(1, 3) as i32,
            drain,
            topic: TOPIC.to_string(),
        })
    }

    /// The same driver on topic `name` (the two-hop workload's second hop).
    pub fn with_topic(mut self, name: &str) -> Self {
        self.topic = name.to_string();
        self
    }

    fn config(&self) -> ClientConfig {
        let mut c = ClientConfig::new();
        c.set("bootstrap.servers", &self.bootstrap)
            .set("socket.timeout.ms", "10000");
        if let Some(ms) = self.settings.metadata_refresh_ms {
            // How soon a client sees partitions added during the run (seed O4).
            c.set("topic.metadata.refresh.interval.ms", ms.max(1).to_string());
        }
        c
    }

    fn create_err(&self, e: KafkaError) -> ClientError {
        ClientError::Connect {
            broker: "kafka",
            addr: self.bootstrap.clone(),
            reason: e.to_string(),
        }
    }
}

/// Creates `topic` (an existing one is fine), retrying for up to 30 s: a fresh
/// broker may not answer at once.
pub(crate) async fn create_topic(
    admin: &AdminClient<DefaultClientContext>,
    topic: &NewTopic<'_>,
) -> Result<(), ClientError> {
    let opts = AdminOptions::new().operation_timeout(Some(Duration::from_secs(10)));
    let start = Instant::now();
    loop {
        let last = match admin.create_topics([topic], &opts).await {
            Ok(results) => match results.into_iter().find_map(Result::err) {
                None | Some((_, RDKafkaErrorCode::TopicAlreadyExists)) => return Ok(()),
                Some((t, code)) => format!("create topic {t}: {code:?}"),
            },
            Err(e) => format!("create topic {}: {e}", topic.name),
        };
        if start.elapsed() >= Duration::from_secs(30) {
            return Err(setup_err("setup", last));
        }
        tokio::time::sleep(Duration::from_millis(500)).await;
    }
}

fn setup_err(what: &str, e: impl std::fmt::Display) -> ClientError {
    ClientError::Setup {
        broker: "kafka",
        reason: format!("{what}: {e}"),
    }
}

#[async_trait]
impl Driver for Kafka {
    fn name(&self) -> &'static str {
        "kafka"
    }

    async fn setup(&self, _groups: &[String]) -> Result<(), ClientError> {
        let admin: AdminClient<DefaultClientContext> =
            self.config().create().map_err(|e| self.create_err(e))?;
        let topic = NewTopic::new(
            &self.topic,
            PARTITIONS,
            TopicReplication::Fixed(self.replication),
        );
        // Groups need no declaration: they come into being when a member joins.
        create_topic(&admin, &topic).await
    }

    async fn producer(&self, _process: u64) -> Result<Box<dyn Producer>, ClientError> {
        let s = &self.settings;
        let mut c = self.config();
        c.set("acks", &s.acks)
            .set("retries", s.retries.to_string())
            .set("enable.idempotence", s.idempotence.to_string())
            .set(
                "max.in.flight.requests.per.connection",
                s.max_in_flight.max(1).to_string(),
            )
            .set(
                "message.timeout.ms",
                MESSAGE_TIMEOUT.as_millis().to_string(),
            )
            // Send each message as it comes: the workload paces sends one at a time.
            .set("linger.ms", "0");
        let producer: FutureProducer = c.create().map_err(|e| self.create_err(e))?;
        Ok(Box::new(KafkaProducer {
            producer,
            pinned: s.partitioner == crate::settings::PINNED,
            topic: self.topic.clone(),
        }))
    }

    async fn consumer(&self, group: &str, _process: u64) -> Result<Box<dyn Consumer>, ClientError> {
        let manual = self.settings.manual_ack;
        let mut c = self.config();
        c.set("group.id", group)
            .set("auto.offset.reset", "earliest")
            .set("enable.auto.commit", if manual { "false" } else { "true" })
            .set("auto.commit.interval.ms", "1000")
            .set("session.timeout.ms", "6000")
            .set("heartbeat.interval.ms", "1000")
            // Also the JoinGroup rebalance timeout: how long the coordinator waits for
            // old members to rejoin before it hands their partitions to a new one (the
            // drain). The default, 5 minutes, would stall the drain.
            .set("max.poll.interval.ms", "10000")
            .set("isolation.level", "read_committed");
        let consumer: StreamConsumer = c.create().map_err(|e| self.create_err(e))?;
        if self.drain {
            // The drain takes every partition itself, from the group's committed offsets
            // (Offset::Stored), instead of waiting for the group coordinator to hand them
            // over: tansu never assigned partitions to a member joining after the others
            // had left (measured: nothing within 30 s).
            let meta = consumer
                .fetch_metadata(Some(&self.topic), Duration::from_secs(10))
                .map_err(|e| setup_err("metadata", e))?;
            let partitions = meta
                .topics()
                .iter()
                .find(|t| t.name() == self.topic)
                .map(|t| t.partitions().len() as i32)
                .filter(|n| *n > 0)
                .unwrap_or(PARTITIONS);
            let mut tpl = TopicPartitionList::new();
            for p in 0..partitions {
                tpl.add_partition_offset(&self.topic, p, Offset::Stored)
                    .map_err(|e| setup_err("assign", e))?;
            }
            consumer.assign(&tpl).map_err(|e| setup_err("assign", e))?;
        } else {
            consumer
                .subscribe(&[self.topic.as_str()])
                .map_err(|e| setup_err("subscribe", e))?;
        }
        Ok(Box::new(KafkaConsumer {
            consumer,
            manual_ack: manual,
            drain: self.drain,
            topic: self.topic.clone(),
        }))
    }
}

/// The one place Kafka errors become outcomes.
pub(crate) fn classify<T>(e: &KafkaError) -> Outcome<T> {
    let text = e.to_string();
    let code = match e {
        KafkaError::MessageProduction(c) | KafkaError::ConsumerCommit(c) => *c,
        _ => return Outcome::Info(text),
    };
    match code {
        // Definite: librdkafka refused the message before it left the client (its
        // queue was full, the message too big, the topic or partition unknown, a bad argument).
        RDKafkaErrorCode::QueueFull
        | RDKafkaErrorCode::MessageSizeTooLarge
        | RDKafkaErrorCode::UnknownTopic
        | RDKafkaErrorCode::UnknownPartition
        | RDKafkaErrorCode::InvalidArgument => Outcome::Fail(text),
        // Definite: purged from the queue before it was ever sent.
        RDKafkaErrorCode::PurgeQueue => Outcome::Fail(text),
        // Definite for a commit: the group coordinator refused it (rebalance, fenced
        // member), so the offsets stay where they were. For a produce these broker codes
        // can follow a retried attempt whose fate is unknown (cf. KAFKA-13574): not definite.
        RDKafkaErrorCode::RebalanceInProgress
        | RDKafkaErrorCode::IllegalGeneration
        | RDKafkaErrorCode::UnknownMemberId
            if matches!(e, KafkaError::ConsumerCommit(_)) =>
        {
            Outcome::Fail(text)
        }
        // Timeouts, transport errors, broker errors after retries: unknown.
        _ => Outcome::Info(text),
    }
}

struct KafkaProducer {
    producer: FutureProducer,
    /// Each key to [`pinned_partition`] instead of librdkafka's partitioner.
    pinned: bool,
    /// The topic it sends to (the two-hop workload's second stream is another).
    topic: String,
}

/// The partition `partitioner = "pinned"` sends `key` to: its FNV-1a hash modulo
/// [`PARTITIONS`], the count the topic is created with, whatever the count is now.
pub fn pinned_partition(key: &str) -> i32 {
    let mut h: u32 = 0x811c_9dc5;
    for b in key.bytes() {
        h ^= u32::from(b);
        h = h.wrapping_mul(0x0100_0193);
    }
    (h % PARTITIONS as u32) as i32
}

impl KafkaProducer {
    fn record<'a>(&'a self, key: &'a str, payload: &'a [u8]) -> FutureRecord<'a, str, [u8]> {
        let record = FutureRecord::to(&self.topic).key(key).payload(payload);
        if self.pinned {
            record.partition(pinned_partition(key))
        } else {
            record
        }
    }
}

#[async_trait]
impl Producer for KafkaProducer {
    async fn send(&mut self, key: &str, value: i64) -> Outcome<Stored> {
        let payload = body(key, value);
        let record = self.record(key, &payload);
        // The queue timeout: how long to wait for room in librdkafka's queue.
        match self.producer.send(record, Duration::from_secs(5)).await {
            Ok(d) => Outcome::Ok(stored(&d)),
            Err((e, _)) => classify(&e),
        }
    }

    async fn enqueue(&mut self, key: &str, value: i64) -> Option<crate::client::PendingSend> {
        let payload = body(key, value);
        let record = self.record(key, &payload);
        // `send_result` puts the record in librdkafka's queue now, so sends enter the
        // client in the order they were invoked; librdkafka then keeps up to
        // `max.in.flight` requests per connection under way.
        Some(match self.producer.send_result(record) {
            Ok(delivery) => Box::pin(async move {
                match delivery.await {
                    Ok(Ok(d)) => Outcome::Ok(stored(&d)),
                    Ok(Err((e, _))) => classify(&e),
                    // The client went away with the send in its queue: unknown.
                    Err(_) => Outcome::Info("the producer was dropped with the send queued".into()),
                }
            }),
            Err((e, _)) => {
                let outcome = classify(&e);
                Box::pin(async move { outcome })
            }
        })
    }
}

/// Where librdkafka says a send was stored.
fn stored(d: &rdkafka::producer::future_producer::Delivery) -> Stored {
    Stored {
        partition: Some(i64::from(d.partition)),
        // acks=0: librdkafka knows no offset (-1).
        offset: (d.offset >= 0).then_some(d.offset),
        id: None,
    }
}

struct KafkaConsumer {
    consumer: StreamConsumer,
    manual_ack: bool,
    drain: bool,
    topic: String,
}

impl KafkaConsumer {
    /// Gathers up to `max` messages: waits up to `wait` for the first, then takes what is there.
    async fn gather(&self, max: usize, wait: Duration) -> Outcome<Vec<Received>> {
        let mut out = Vec::new();
        let mut limit = wait;
        while out.len() < max {
            match tokio::time::timeout(limit, self.consumer.recv()).await {
                Err(_) => break,
                Ok(Err(e)) => {
                    if out.is_empty() {
                        // Fetch errors carry no messages; a poll that saw nothing yet is
                        // retried by the worker (unknown: the broker may have moved on).
                        return Outcome::Info(e.to_string());
                    }
                    break;
                }
                Ok(Ok(m)) => {
                    let Ok((key, value)) = parse_body(m.payload().unwrap_or_default()) else {
                        continue;
                    };
                    out.push(Received {
                        key,
                        value,
                        stored: Stored {
                            partition: Some(i64::from(m.partition())),
                            offset: Some(m.offset()),
                            id: None,
                        },
                        redelivered: false,
                        ack_token: format!("{}:{}", m.partition(), m.offset()),
                    });
                    limit = Duration::from_millis(5);
                }
            }
        }
        Outcome::Ok(out)
    }

    /// Whether this member has partitions and has read every one to its end.
    fn at_end(&self) -> bool {
        read_to_end(&self.consumer, &self.topic)
    }
}

#[async_trait]
impl Consumer for KafkaConsumer {
    async fn poll(&mut self, max: usize, wait: Duration) -> Outcome<Vec<Received>> {
        let start = Instant::now();
        loop {
            match self.gather(max, wait).await {
                Outcome::Ok(v) if v.is_empty() && self.drain => {
                    if start.elapsed() >= DRAIN_PATIENCE || self.at_end() {
                        return Outcome::Ok(v);
                    }
                }
                other => return other,
            }
        }
    }

    async fn ack(&mut self, msgs: &[Received]) -> Outcome<()> {
        if !self.manual_ack || msgs.is_empty() {
            return Outcome::Ok(());
        }
        let mut next: BTreeMap<i64, i64> = BTreeMap::new();
        for m in msgs {
            if let (Some(p), Some(o)) = (m.stored.partition, m.stored.offset) {
                let e = next.entry(p).or_insert(o + 1);
                *e = (*e).max(o + 1);
            }
        }
        let mut tpl = TopicPartitionList::new();
        for (p, o) in &next {
            let Ok(p) = i32::try_from(*p) else {
                return Outcome::Fail(format!("partition {p} out of range"));
            };
            if let Err(e) = tpl.add_partition_offset(&self.topic, p, Offset::Offset(*o)) {
                return Outcome::Fail(format!("offset {o} of partition {p}: {e}"));
            }
        }
        match self.consumer.commit(&tpl, CommitMode::Sync) {
            Ok(()) => Outcome::Ok(()),
            Err(e) => classify(&e),
        }
    }

    fn acks(&self) -> bool {
        self.manual_ack
    }
}

/// Whether `consumer` has partitions of `topic` and has read every one to its high
/// watermark (its position, else its committed offset, else the low watermark).
pub(crate) fn read_to_end<C, X>(consumer: &C, topic: &str) -> bool
where
    C: rdkafka::consumer::Consumer<X>,
    X: rdkafka::consumer::ConsumerContext,
{
    let Ok(assigned) = consumer.assignment() else {
        return false;
    };
    if assigned.count() == 0 {
        return false;
    }
    let position = consumer.position().ok();
    let committed = consumer.committed(Duration::from_secs(2)).ok();
    let offset_in = |tpl: &Option<TopicPartitionList>, p: i32| match tpl
        .as_ref()
        .and_then(|t| t.find_partition(topic, p))
        .map(|e| e.offset())
    {
        Some(Offset::Offset(o)) => Some(o),
        _ => None,
    };
    assigned.elements().iter().all(|e| {
        let p = e.partition();
        let Ok((low, high)) = consumer.fetch_watermarks(topic, p, Duration::from_secs(2)) else {
            return false;
        };
        let next = offset_in(&position, p)
            .or_else(|| offset_in(&committed, p))
            .unwrap_or(low);
        next >= high
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Delivery;

    #[test]
    fn a_pinned_key_keeps_one_partition_among_those_the_topic_was_created_with() {
        let keys: Vec<String> = (0..64).map(|i| format!("k{i}")).collect();
        let parts: Vec<i32> = keys.iter().map(|k| pinned_partition(k)).collect();
        assert!(parts.iter().all(|p| (0..PARTITIONS).contains(p)));
        // The same key, the same partition, every time.
        assert_eq!(
            parts,
            keys.iter().map(|k| pinned_partition(k)).collect::<Vec<_>>()
        );
        // And the keys are spread over every partition.
        for p in 0..PARTITIONS {
            assert!(parts.contains(&p), "no key on partition {p}");
        }
    }

    #[test]
    fn a_partitioner_it_does_not_know_is_refused_naming_the_setting() {
        let addrs = vec!["127.0.0.1:9092".to_string()];
        let bad = Delivery {
            partitioner: Some("sticky".into()),
            ..Default::default()
        }
        .resolve();
        let e = Kafka::new(&addrs, bad, false).err().expect("refused");
        let text = e.to_string();
        assert!(
            text.contains("partitioner") && text.contains("kafka"),
            "{text}"
        );
        for ok in ["hash", "pinned"] {
            let d = Delivery {
                partitioner: Some(ok.into()),
                metadata_refresh_ms: Some(1000),
                ..Default::default()
            };
            assert!(Kafka::new(&addrs, d.resolve(), false).is_ok(), "{ok}");
        }
    }
}
