//! The scenario file: what to deploy, what to run against it, what it should guarantee.
use crate::broker::{AppendFsync, BrokerKind, Durability, RedisDurability, SyncInterval};
use crate::error::HarnessError;
use gauntlet_checkers::Guarantee;
use gauntlet_nemesis::FaultKind;
use gauntlet_workloads::keys::KeyDistribution;
use gauntlet_workloads::log::LogConfig;
use gauntlet_workloads::queue::QueueConfig;
use gauntlet_workloads::twohop::TwoHopConfig;
use gauntlet_workloads::Delivery;
use serde::{Deserialize, Serialize};
use std::path::PathBuf;
use std::str::FromStr;
use std::time::Duration;

/// A scenario: what to deploy, what to run against it, what it should guarantee.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case", deny_unknown_fields)]
pub struct Scenario {
    /// The scenario's name: its run folders go under `<results>/<name>/`.
    pub name: String,
    /// The broker to deploy.
    pub broker: BrokerKind,
    /// Nodes; the broker's default when absent.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub nodes: Option<usize>,
    /// Image by name (e.g. `rabbitmq:4` for users who can pull); Gauntlet's local image when absent.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub image: Option<String>,
    /// What runs against the broker; `queue` by default.
    #[serde(default)]
    pub workload: Workload,
    /// How long producers send, e.g. "30s", "2m", "500ms".
    #[serde(default = "default_time")]
    pub time: String,
    /// Sends per second, all producers together; `"max"` (infinite here): each
    /// producer sends as soon as a send of its window is free.
    #[serde(default = "default_rate", with = "rate_serde")]
    pub rate: f64,
    /// Seeds the fault schedule, the workload's choices and the proxy's jitter and
    /// loss; the same seed gives the same schedule.
    #[serde(default)]
    pub seed: u64,
    /// Guarantees the run claims (`valid` is judged against them).
    #[serde(default = "default_expect")]
    pub expect: Vec<Guarantee>,
    /// The `[delivery]` table: how the clients send, acknowledge and commit.
    #[serde(default)]
    pub delivery: Delivery,
    /// The `[queue]` table: producers, consumers, keys, batches, groups.
    #[serde(default)]
    pub queue: QueueConfig,
    /// The log workload's topic and membership (`workload = "log"`).
    #[serde(default, skip_serializing_if = "is_default_log")]
    pub log: LogConfig,
    /// Faults to inject, e.g. ["kill-consumer:before-ack", "partition"]; none when empty.
    /// Parsed when the scenario is read: an unknown name is an error naming the
    /// entry (its line and column in the file).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub nemesis: Vec<FaultKind>,
    /// Time between faults.
    #[serde(default = "default_interval")]
    pub nemesis_interval: String,
    /// How long a fault lasts before it is healed.
    #[serde(default = "default_fault_duration")]
    pub nemesis_duration: String,
    /// How many drawn faults may be on at once: 1 (the default), one after
    /// the other; above 1, a fault is drawn `nemesis-interval` after the
    /// previous one's start and may overlap it, never on the same node
    /// (docs/nemesis.md, "Overlapping faults").
    #[serde(default = "one", skip_serializing_if = "is_one")]
    pub nemesis_concurrency: usize,
    /// A schedule to replay instead of generating one (`<run>/schedule.toml`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub replay: Option<PathBuf>,
    /// The storage node's settings, where the deployment has one (the Kafka
    /// cluster's PostgreSQL).
    #[serde(default, skip_serializing_if = "StorageConfig::is_default")]
    pub storage: StorageConfig,
    /// The `[redis]` table: Redis's append-only file (`appendonly`, `appendfsync`).
    #[serde(default, skip_serializing_if = "RedisConfig::is_default")]
    pub redis: RedisConfig,
    /// The `[nats]` table: JetStream's `sync-interval` and the stream's `replicas`.
    #[serde(default, skip_serializing_if = "NatsConfig::is_default")]
    pub nats: NatsConfig,
    /// The `[dedup]` table (seed D7): consumers with a dedup store of their own,
    /// deployed beside the broker; plain consumers when absent.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub dedup: Option<super::dedup::DedupConfig>,
    /// The `[two-hop]` table: transformers, consumers, batch, crash rate
    /// (`workload = "two-hop"`, docs/twohop.md).
    #[serde(default, skip_serializing_if = "is_default_two_hop")]
    pub two_hop: TwoHopConfig,
    /// Where run folders go.
    #[serde(default = "default_results", skip_serializing)]
    pub results: PathBuf,
}

fn is_default_two_hop(c: &TwoHopConfig) -> bool {
    *c == TwoHopConfig::default()
}

fn is_default_log(c: &LogConfig) -> bool {
    *c == LogConfig::default()
}
fn default_time() -> String {
    "20s".into()
}
fn default_rate() -> f64 {
    100.0
}

/// `rate` in a scenario: a number of sends per second or `"max"`.
pub fn parse_rate(s: &str) -> Result<f64, String> {
    if s.trim().eq_ignore_ascii_case("max") {
        return Ok(f64::INFINITY);
    }
    match s.trim().parse::<f64>() {
        Ok(r) if r > 0.0 => Ok(r),
        _ => Err(format!(
            "rate {s:?}: sends per second (a number above 0) or \"max\""
        )),
    }
}

/// The rate as a scenario writes it: the number, or `max`.
pub fn rate_text(rate: f64) -> String {
    if rate.is_infinite() {
        "max".into()
    } else {
        format!("{rate}")
    }
}

mod rate_serde {
    use serde::{Deserialize, Deserializer, Serializer};

    pub fn serialize<S: Serializer>(rate: &f64, s: S) -> Result<S::Ok, S::Error> {
        if rate.is_infinite() {
            s.serialize_str("max")
        } else {
            s.serialize_f64(*rate)
        }
    }

    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<f64, D::Error> {
        #[derive(Deserialize)]
        #[serde(untagged)]
        enum Rate {
            Number(f64),
            Text(String),
        }
        match Rate::deserialize(d)? {
            Rate::Number(r) if r > 0.0 => Ok(r),
            Rate::Number(r) => Err(serde::de::Error::custom(format!(
                "rate {r}: sends per second (a number above 0) or \"max\""
            ))),
            Rate::Text(t) => super::parse_rate(&t).map_err(serde::de::Error::custom),
        }
    }
}
fn default_expect() -> Vec<Guarantee> {
    vec![Guarantee::AtLeastOnce]
}
fn default_interval() -> String {
    "5s".into()
}
fn default_fault_duration() -> String {
    "3s".into()
}
fn one() -> usize {
    1
}
fn is_one(n: &usize) -> bool {
    *n == 1
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
    /// Both settings on, as when the scenario has no `[storage]`.
    pub fn is_default(&self) -> bool {
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

/// `[redis]` of a scenario: Redis's append-only file. The default is the
/// recipe's setting from before the table existed (`appendonly yes`,
/// `appendfsync always`); a scenario with it set to the default is written
/// without it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case", deny_unknown_fields)]
pub struct RedisConfig {
    /// `appendonly`: `"yes"` or `"no"` (`true` and `false` are taken too).
    #[serde(default = "yes", with = "yes_no")]
    pub appendonly: bool,
    /// `appendfsync`: `"always"`, `"everysec"` or `"no"`.
    #[serde(default)]
    pub appendfsync: AppendFsync,
}

impl Default for RedisConfig {
    fn default() -> Self {
        let d = RedisDurability::default();
        RedisConfig {
            appendonly: d.appendonly,
            appendfsync: d.appendfsync,
        }
    }
}

impl RedisConfig {
    /// The recipe's setting, as when the scenario has no `[redis]`.
    pub fn is_default(&self) -> bool {
        *self == RedisConfig::default()
    }
}

/// `appendonly` as Redis spells it (`"yes"`, `"no"`), or a TOML boolean.
mod yes_no {
    use serde::de::{self, Visitor};
    use serde::{Deserializer, Serializer};

    pub fn serialize<S: Serializer>(v: &bool, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(if *v { "yes" } else { "no" })
    }

    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<bool, D::Error> {
        struct YesNo;
        impl Visitor<'_> for YesNo {
            type Value = bool;
            fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
                f.write_str("\"yes\" or \"no\"")
            }
            fn visit_bool<E: de::Error>(self, v: bool) -> Result<bool, E> {
                Ok(v)
            }
            fn visit_str<E: de::Error>(self, v: &str) -> Result<bool, E> {
                match v {
                    "yes" => Ok(true),
                    "no" => Ok(false),
                    _ => Err(E::invalid_value(de::Unexpected::Str(v), &self)),
                }
            }
        }
        d.deserialize_any(YesNo)
    }
}

/// The most replicas a JetStream stream can have.
pub const MAX_NATS_REPLICAS: usize = 5;

/// `[nats]` of a scenario: JetStream's sync interval and the stream's replicas.
/// Both absent by default: the server's sync interval (2 minutes) and
/// `min(3, nodes)` replicas, as before the table existed.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case", deny_unknown_fields)]
pub struct NatsConfig {
    /// `sync_interval`: `"always"` (an fsync after every write) or a duration
    /// (`"10s"`, `"2m"`); absent: the server's default.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sync_interval: Option<String>,
    /// The stream's replicas, 1 to 5 and at most the nodes; absent: `min(3, nodes)`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub replicas: Option<usize>,
}

impl NatsConfig {
    /// Neither setting given.
    pub fn is_default(&self) -> bool {
        *self == NatsConfig::default()
    }

    /// `sync-interval`, parsed; `None` when absent. A value that is neither
    /// `always` nor a duration above zero is an error naming the key.
    pub fn sync(&self) -> Result<Option<SyncInterval>, HarnessError> {
        let Some(v) = &self.sync_interval else {
            return Ok(None);
        };
        if v.trim() == "always" {
            return Ok(Some(SyncInterval::Always));
        }
        match parse_duration(v) {
            Ok(d) if !d.is_zero() => Ok(Some(SyncInterval::Every(d))),
            _ => Err(HarnessError::Scenario(format!(
                "[nats] sync-interval = {v:?}: expected \"always\" or a duration above zero \
                 (e.g. \"10s\", \"2m\", \"500ms\")"
            ))),
        }
    }

    /// `replicas` against the deployment's `nodes`: 1 to [`MAX_NATS_REPLICAS`]
    /// and at most `nodes`, or an error naming both numbers.
    pub fn check_replicas(&self, nodes: usize) -> Result<(), HarnessError> {
        match self.replicas {
            None => Ok(()),
            Some(r) if r == 0 || r > MAX_NATS_REPLICAS => Err(HarnessError::Scenario(format!(
                "[nats] replicas = {r}: a JetStream stream has 1 to {MAX_NATS_REPLICAS} replicas"
            ))),
            Some(r) if r > nodes => Err(HarnessError::Scenario(format!(
                "[nats] replicas = {r} on {nodes} node(s): a stream has at most one replica \
                 per node"
            ))),
            Some(_) => Ok(()),
        }
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
            broker: BrokerKind::Redis,
            nodes: None,
            image: None,
            workload: Workload::Queue,
            time: default_time(),
            rate: default_rate(),
            seed: DEFAULT_SEED,
            expect: default_expect(),
            delivery: Delivery::default(),
            queue: QueueConfig::default(),
            log: LogConfig::default(),
            nemesis: DEFAULT_FAULTS
                .iter()
                .filter_map(|f| FaultKind::from_str(f).ok())
                .collect(),
            nemesis_interval: default_interval(),
            nemesis_duration: default_fault_duration(),
            nemesis_concurrency: 1,
            replay: None,
            storage: StorageConfig::default(),
            redis: RedisConfig::default(),
            nats: NatsConfig::default(),
            dedup: None,
            two_hop: TwoHopConfig::default(),
            results: default_results(),
        }
    }

    /// Reads a scenario file; an unknown key is an error, and so is a value of
    /// `[nats]` that can never be right (whatever the broker and nodes).
    pub fn from_toml(text: &str) -> Result<Scenario, HarnessError> {
        let s: Scenario =
            toml::from_str(text).map_err(|e| HarnessError::Scenario(e.to_string()))?;
        s.nats.sync()?;
        s.nats.check_replicas(MAX_NATS_REPLICAS)?;
        Ok(s)
    }

    /// The durability settings the recipe applies (`[redis]`, `[nats]`).
    pub fn durability(&self) -> Result<Durability, HarnessError> {
        Ok(Durability {
            redis: RedisDurability {
                appendonly: self.redis.appendonly,
                appendfsync: self.redis.appendfsync,
            },
            nats_sync: self.nats.sync()?,
        })
    }

    /// The settings of `[redis]`, `[nats]` and `[storage]` that differ from the
    /// default, one `key=value` each (`appendfsync=everysec`), for the line that
    /// says what is deployed; empty when all are the default.
    pub fn settings_line(&self) -> Vec<String> {
        let mut out = Vec::new();
        let d = RedisConfig::default();
        if self.redis.appendonly != d.appendonly {
            out.push(format!(
                "appendonly={}",
                if self.redis.appendonly { "yes" } else { "no" }
            ));
        }
        if self.redis.appendfsync != d.appendfsync {
            out.push(format!("appendfsync={}", self.redis.appendfsync.name()));
        }
        if let Some(v) = &self.nats.sync_interval {
            out.push(format!("sync_interval={v}"));
        }
        if let Some(r) = self.nats.replicas {
            out.push(format!("replicas={r}"));
        }
        let on = |b: bool| if b { "on" } else { "off" };
        if !self.storage.fsync {
            out.push(format!("fsync={}", on(self.storage.fsync)));
        }
        if !self.storage.synchronous_commit {
            out.push(format!(
                "synchronous_commit={}",
                on(self.storage.synchronous_commit)
            ));
        }
        out
    }

    /// The scenario as TOML, as a run writes it to `scenario.toml` (without `results`).
    pub fn to_toml(&self) -> String {
        toml::to_string_pretty(self).unwrap_or_default()
    }

    /// How long producers send: `time`, parsed.
    pub fn duration(&self) -> Result<Duration, HarnessError> {
        parse_duration(&self.time)
    }

    /// The guarantees the run claims (`expect`).
    /// What the report shows of this scenario (its name, broker, delivery mode
    /// and the strongest order it claims).
    pub fn report_info(&self) -> gauntlet_report::scenario::ScenarioInfo {
        let expect: Vec<&str> = self.expect.iter().map(|g| g.name()).collect();
        gauntlet_report::scenario::ScenarioInfo::from_parts(
            &self.name,
            self.broker.name(),
            self.delivery.mode.name(),
            &expect,
        )
    }

    /// The guarantees the run claims.
    pub fn guarantees(&self) -> Result<Vec<Guarantee>, HarnessError> {
        Ok(self.expect.clone())
    }
}

impl Scenario {
    /// Refuses `[redis]` and `[nats]` on a broker they are not for, and `[nats]
    /// replicas` the deployment's `nodes` cannot hold, before anything is deployed.
    pub fn check_settings(&self, nodes: usize) -> Result<(), HarnessError> {
        if !self.redis.is_default() && self.broker != BrokerKind::Redis {
            return Err(HarnessError::Scenario(format!(
                "[redis] sets Redis's append-only file, and the broker is {}",
                self.broker
            )));
        }
        if !self.nats.is_default() && self.broker != BrokerKind::Nats {
            return Err(HarnessError::Scenario(format!(
                "[nats] sets NATS JetStream, and the broker is {}",
                self.broker
            )));
        }
        self.nats.sync()?;
        self.nats.check_replicas(nodes)
    }

    /// Refuses a workload the broker cannot run, before anything is deployed.
    pub fn check_workload(&self, kind: BrokerKind) -> Result<(), HarnessError> {
        if self.workload == Workload::Log && kind != BrokerKind::Kafka {
            return Err(HarnessError::Scenario(format!(
                "the log workload needs a Kafka-protocol broker, not {}",
                self.broker
            )));
        }
        self.check_two_hop(kind)?;
        if self.queue.in_flight == 0 {
            return Err(HarnessError::Scenario(
                "[queue] in-flight = 0: each producer needs at least one send in flight".into(),
            ));
        }
        if self.queue.in_flight > 1 && !kind.pipelines() {
            return Err(HarnessError::Scenario(format!(
                "[queue] in-flight = {}: {} cannot keep several sends in flight on one \
                 client (its client sends one request per message, and nothing orders \
                 two of them); use in-flight = 1",
                self.queue.in_flight, self.broker
            )));
        }
        if self.queue.in_flight > 1 && self.workload != Workload::Queue {
            return Err(HarnessError::Scenario(format!(
                "[queue] in-flight = {}: pipelined producers run the queue workload, not \
                 the {} workload",
                self.queue.in_flight, self.workload
            )));
        }
        if self.queue.key_distribution != KeyDistribution::Uniform
            && self.workload != Workload::Queue
        {
            return Err(HarnessError::Scenario(format!(
                "[queue] key-distribution = \"{}\": the queue workload draws keys, the {} \
                 workload does not",
                self.queue.key_distribution, self.workload
            )));
        }
        if let Some(d) = &self.dedup {
            d.check(kind, &self.workload.to_string(), &self.delivery)?;
        }
        let before_effect = FaultKind::KillConsumer(gauntlet_nemesis::KillConsumerAt::BeforeEffect);
        if self.dedup.is_none() && self.nemesis.contains(&before_effect) {
            return Err(HarnessError::Scenario(format!(
                "{before_effect} on {}: only the idempotent consumer of a [dedup] table \
                 has an effect to stop before",
                self.broker
            )));
        }
        self.check_partitions(kind)
    }
}

/// Metadata refresh interval of the Kafka clients of a run that adds partitions,
/// when its `[delivery]` names none: producers and consumers see the new count
/// within a second or two (seed O4, `docs/nemesis.md`, "add-partitions").
pub const REPARTITION_REFRESH_MS: u64 = 1000;

/// Partitions added during a run (seed O4).
impl Scenario {
    /// Whether the nemesis adds partitions (`add-partitions`).
    pub fn adds_partitions(&self) -> bool {
        self.nemesis
            .iter()
            .any(|f| matches!(f, FaultKind::AddPartitions { .. }))
    }

    /// The `[delivery]` the run's clients use: the scenario's, with the Kafka
    /// clients' metadata refresh at [`REPARTITION_REFRESH_MS`] when the nemesis
    /// adds partitions and the scenario sets no `metadata-refresh-ms`.
    pub fn run_delivery(&self) -> Delivery {
        let mut d = self.delivery.clone();
        if self.adds_partitions() && self.broker == BrokerKind::Kafka {
            d.metadata_refresh_ms.get_or_insert(REPARTITION_REFRESH_MS);
        }
        d
    }

    /// The partition settings and `add-partitions` are the Kafka protocol's, and
    /// not of tansu's memory build.
    fn check_partitions(&self, kind: BrokerKind) -> Result<(), HarnessError> {
        let broker = &self.broker;
        let refuse = |what: String| Err(HarnessError::Scenario(what));
        if kind != BrokerKind::Kafka {
            if let Some(p) = &self.delivery.partitioner {
                return refuse(format!(
                    "[delivery] partitioner = {p:?}: {broker} has no partitions to pick; \
                     only the Kafka protocol honours it"
                ));
            }
            if let Some(ms) = self.delivery.metadata_refresh_ms {
                return refuse(format!(
                    "[delivery] metadata-refresh-ms = {ms}: {broker} has no topic metadata \
                     to refresh; only the Kafka protocol honours it"
                ));
            }
            if self.adds_partitions() {
                return refuse(format!(
                    "add-partitions on {broker}: only a Kafka-protocol broker has partitions to add"
                ));
            }
            return Ok(());
        }
        if let Some(p) = &self.delivery.partitioner {
            if !matches!(
                p.as_str(),
                gauntlet_workloads::settings::HASH | gauntlet_workloads::settings::PINNED
            ) {
                return refuse(format!(
                    "[delivery] partitioner = {p:?}: {broker} takes \"hash\" (librdkafka's \
                     default) or \"pinned\""
                ));
            }
        }
        if self.adds_partitions() {
            if let Some(image) = self.image.as_deref().filter(|i| i.contains("tansu-memory")) {
                return refuse(format!(
                    "add-partitions on {broker} with image {image}: tansu has no \
                     CreatePartitions, and its memory build keeps partition counts where \
                     nothing else can change them; use the PostgreSQL cluster (the default \
                     image) or an official image (apache/kafka, Redpanda)"
                ));
            }
            if self.workload == Workload::Txn {
                return refuse(format!(
                    "add-partitions on {broker}: the txn workload's topics are not the \
                     queue's; add-partitions runs with the queue or log workload"
                ));
            }
        }
        Ok(())
    }
}

impl Scenario {
    /// Refuses what the two-hop workload cannot run: another broker than NATS
    /// JetStream or the Kafka protocol, a `[two-hop]` table on another workload,
    /// a setting out of range.
    fn check_two_hop(&self, kind: BrokerKind) -> Result<(), HarnessError> {
        if self.workload != Workload::TwoHop {
            if !is_default_two_hop(&self.two_hop) {
                return Err(HarnessError::Scenario(format!(
                    "[two-hop] sets the two-hop workload, and the workload is {}",
                    self.workload
                )));
            }
            return Ok(());
        }
        if !matches!(kind, BrokerKind::Nats | BrokerKind::Kafka) {
            return Err(HarnessError::Scenario(format!(
                "the two-hop workload needs NATS JetStream or a Kafka-protocol broker, not {}",
                self.broker
            )));
        }
        self.two_hop
            .check()
            .map_err(|e| HarnessError::Scenario(format!("{e} (broker {})", self.broker)))
    }
}

/// What a run does against the broker.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Workload {
    /// Producers and consumer groups on a queue or stream (every broker).
    #[default]
    Queue,
    /// The Kafka protocol's partitions, offsets and consumer groups.
    Log,
    /// Consume-transform-produce in Kafka transactions (exactly-once).
    Txn,
    /// A two-hop pipeline, stream A -> transformers -> stream B (docs/twohop.md).
    TwoHop,
}

impl Workload {
    /// Every workload.
    pub const ALL: [Workload; 4] = [
        Workload::Queue,
        Workload::Log,
        Workload::Txn,
        Workload::TwoHop,
    ];

    /// The name in scenarios and on the command line.
    pub fn name(self) -> &'static str {
        match self {
            Workload::Queue => "queue",
            Workload::Log => "log",
            Workload::Txn => "txn",
            Workload::TwoHop => "two-hop",
        }
    }
}

impl std::fmt::Display for Workload {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

impl FromStr for Workload {
    type Err = HarnessError;
    fn from_str(s: &str) -> Result<Self, HarnessError> {
        Workload::ALL
            .into_iter()
            .find(|w| w.name() == s.trim())
            .ok_or_else(|| {
                HarnessError::Scenario(format!(
                    "workload `{s}` is not available (queue, log, txn and two-hop are)"
                ))
            })
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

#[cfg(test)]
mod tests {
    use super::*;
    use gauntlet_nemesis::Schedule;

    #[test]
    fn rate_is_a_number_or_max_and_max_is_written_back_as_max() {
        let s = Scenario::from_toml("name = \"x\"\nbroker = \"redis\"\nrate = \"max\"\n")
            .expect("rate max");
        assert!(s.rate.is_infinite());
        assert!(s.to_toml().contains("rate = \"max\""), "{}", s.to_toml());
        let back = Scenario::from_toml(&s.to_toml()).expect("written back");
        assert!(back.rate.is_infinite());
        let n = Scenario::from_toml("name = \"x\"\nbroker = \"redis\"\nrate = 250\n").expect("250");
        assert_eq!(n.rate, 250.0);
        for bad in ["rate = 0", "rate = -3", "rate = \"fast\""] {
            let e = Scenario::from_toml(&format!("name = \"x\"\nbroker = \"redis\"\n{bad}\n"));
            assert!(e.is_err(), "{bad} accepted");
        }
        assert_eq!(parse_rate("MAX"), Ok(f64::INFINITY));
        assert_eq!(parse_rate("1e4"), Ok(10_000.0));
        assert!(parse_rate("0").is_err());
        assert_eq!(rate_text(f64::INFINITY), "max");
        assert_eq!(rate_text(100.0), "100");
    }

    #[test]
    fn in_flight_is_refused_with_the_broker_named_where_the_client_cannot_pipeline() {
        let toml = |broker: &str, queue: &str| {
            Scenario::from_toml(&format!(
                "name = \"x\"\nbroker = \"{broker}\"\n[queue]\n{queue}\n"
            ))
            .expect("scenario")
        };
        for broker in ["redis", "nats", "rabbitmq", "kafka"] {
            let s = toml(broker, "in-flight = 64");
            assert_eq!(s.queue.in_flight, 64);
            s.check_workload(s.broker).expect("pipelines");
        }
        let sqs = toml("sqs", "in-flight = 8");
        let e = sqs
            .check_workload(sqs.broker)
            .expect_err("sqs refused")
            .to_string();
        assert!(e.contains("in-flight = 8") && e.contains("sqs"), "{e}");
        toml("sqs", "in-flight = 1")
            .check_workload(BrokerKind::Sqs)
            .expect("one at a time is fine");
        let none = toml("redis", "in-flight = 0");
        assert!(none.check_workload(none.broker).is_err());
        // The earlier name is still read.
        assert_eq!(toml("kafka", "pipeline = 16").queue.in_flight, 16);
    }

    #[test]
    fn key_distribution_is_read_and_refused_where_no_keys_are_drawn() {
        let s = Scenario::from_toml(
            "name = \"x\"\nbroker = \"kafka\"\n[queue]\nkey-distribution = \"hot:0.9\"\n",
        )
        .expect("scenario");
        assert_eq!(s.queue.key_distribution, KeyDistribution::Hot(0.9));
        s.check_workload(s.broker)
            .expect("the queue workload draws keys");
        let back = Scenario::from_toml(&s.to_toml()).expect("written back");
        assert_eq!(back.queue.key_distribution, KeyDistribution::Hot(0.9));
        let e = Scenario::from_toml(
            "name = \"x\"\nbroker = \"redis\"\n[queue]\nkey-distribution = \"zipf:0\"\n",
        )
        .expect_err("a zero exponent")
        .to_string();
        assert!(e.contains("zipf:0"), "{e}");
        let mut log = s.clone();
        log.workload = Workload::Log;
        let e = log
            .check_workload(log.broker)
            .expect_err("refused")
            .to_string();
        assert!(e.contains("key-distribution") && e.contains("log"), "{e}");
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
    fn fsync_and_synchronous_commit_are_set_apart() {
        // fsync off with synchronous_commit on: only the disk can lose a commit.
        for (table, fsync, commit) in [
            ("fsync = false", "off", "on"),
            ("synchronous-commit = false", "on", "off"),
        ] {
            let s = Scenario::from_toml(&format!(
                "name = \"x\"\nbroker = \"kafka\"\n[storage]\n{table}\n"
            ))
            .expect("scenario");
            assert_eq!(
                s.storage.env(),
                vec![
                    format!("GAUNTLET_PG_FSYNC={fsync}"),
                    format!("GAUNTLET_PG_SYNCHRONOUS_COMMIT={commit}")
                ]
            );
            let again = Scenario::from_toml(&s.to_toml()).expect("round trip");
            assert_eq!(again.storage, s.storage);
        }
    }

    fn redis(table: &str) -> Result<Scenario, HarnessError> {
        Scenario::from_toml(&format!(
            "name = \"x\"\nbroker = \"redis\"\n[redis]\n{table}\n"
        ))
    }

    fn nats(table: &str) -> Result<Scenario, HarnessError> {
        Scenario::from_toml(&format!(
            "name = \"x\"\nbroker = \"nats\"\n[nats]\n{table}\n"
        ))
    }

    #[test]
    fn the_redis_table_sets_the_append_only_file() {
        for (table, appendonly, appendfsync) in [
            ("appendfsync = \"everysec\"", true, AppendFsync::Everysec),
            ("appendfsync = \"no\"", true, AppendFsync::No),
            ("appendfsync = \"always\"", true, AppendFsync::Always),
            ("appendonly = \"no\"", false, AppendFsync::Always),
            ("appendonly = false", false, AppendFsync::Always),
            (
                "appendonly = \"yes\"\nappendfsync = \"everysec\"",
                true,
                AppendFsync::Everysec,
            ),
        ] {
            let s = redis(table).expect(table);
            let d = s.durability().expect("durability");
            assert_eq!(
                d.redis,
                RedisDurability {
                    appendonly,
                    appendfsync
                },
                "{table}"
            );
            assert_eq!(d.nats_sync, None);
            assert!(s.check_settings(3).is_ok(), "{table}");
            // The run folder's scenario.toml has the table unless it is the default.
            let toml = s.to_toml();
            assert_eq!(toml.contains("[redis]"), !s.redis.is_default(), "{toml}");
            let again = Scenario::from_toml(&toml).expect("round trip");
            assert_eq!(again.redis, s.redis);
            assert_eq!(again.to_toml(), toml);
        }
        let s = redis("appendonly = \"no\"\nappendfsync = \"everysec\"").expect("scenario");
        assert!(s
            .to_toml()
            .contains("[redis]\nappendonly = \"no\"\nappendfsync = \"everysec\"\n"));
        assert_eq!(
            s.settings_line(),
            vec![
                "appendonly=no".to_string(),
                "appendfsync=everysec".to_string()
            ]
        );
    }

    #[test]
    fn a_bad_key_or_value_is_an_error_naming_the_key() {
        for (table, names) in [
            ("appendfsynk = \"always\"", ["appendfsynk", "appendfsync"]),
            ("appendfsync = \"sometimes\"", ["appendfsync", "sometimes"]),
            ("appendfsync = true", ["appendfsync", "always"]),
            ("appendonly = \"maybe\"", ["appendonly", "maybe"]),
            ("appendonly = 1", ["appendonly", "yes"]),
        ] {
            let e = redis(table).expect_err(table).to_string();
            assert!(names.iter().all(|n| e.contains(n)), "{table}: {e}");
        }
        for (table, names) in [
            ("sync = \"always\"", ["sync", "sync-interval"]),
            ("sync-interval = \"soon\"", ["sync-interval", "soon"]),
            ("sync-interval = \"0s\"", ["sync-interval", "0s"]),
            (
                "sync-interval = \"10 parsecs\"",
                ["sync-interval", "parsecs"],
            ),
            ("replicas = 0", ["replicas = 0", "1 to 5"]),
            ("replicas = 6", ["replicas = 6", "1 to 5"]),
            ("replicas = \"three\"", ["replicas", "three"]),
        ] {
            let e = nats(table).expect_err(table).to_string();
            assert!(names.iter().all(|n| e.contains(n)), "{table}: {e}");
        }
    }

    #[test]
    fn the_nats_table_sets_the_sync_interval_and_the_replicas() {
        for (table, sync) in [
            ("sync-interval = \"always\"", Some(SyncInterval::Always)),
            (
                "sync-interval = \"2m\"",
                Some(SyncInterval::Every(Duration::from_secs(120))),
            ),
            (
                "sync-interval = \"10s\"",
                Some(SyncInterval::Every(Duration::from_secs(10))),
            ),
            ("replicas = 5", None),
        ] {
            let s = nats(table).expect(table);
            let d = s.durability().expect("durability");
            assert_eq!(d.nats_sync, sync, "{table}");
            assert_eq!(d.redis, RedisDurability::default());
            let toml = s.to_toml();
            assert!(toml.contains(&format!("[nats]\n{table}\n")), "{toml}");
            assert_eq!(
                Scenario::from_toml(&toml).expect("round trip").to_toml(),
                toml
            );
        }
        let s = nats("sync-interval = \"always\"\nreplicas = 5").expect("scenario");
        assert_eq!(
            s.settings_line(),
            vec!["sync_interval=always".to_string(), "replicas=5".to_string()]
        );
        assert!(s.check_settings(5).is_ok());
        let e = s
            .check_settings(3)
            .expect_err("5 replicas on 3 nodes")
            .to_string();
        assert!(e.contains("replicas = 5 on 3 node(s)"), "{e}");
        assert!(nats("replicas = 1").expect("R1").check_settings(1).is_ok());
    }

    #[test]
    fn a_table_for_another_broker_is_refused() {
        let mut s = redis("appendfsync = \"everysec\"").expect("scenario");
        s.broker = BrokerKind::Nats;
        let e = s.check_settings(3).expect_err("redis on nats").to_string();
        assert!(e.contains("[redis]") && e.contains("nats"), "{e}");
        let mut s = nats("replicas = 3").expect("scenario");
        s.broker = BrokerKind::RabbitMq;
        let e = s
            .check_settings(3)
            .expect_err("nats on rabbitmq")
            .to_string();
        assert!(e.contains("[nats]") && e.contains("rabbitmq"), "{e}");
    }

    #[test]
    fn scenarios_without_the_tables_are_written_as_before() {
        let d = Scenario::default_scenario();
        assert!(d.durability().expect("durability").is_default());
        assert!(d.settings_line().is_empty());
        for text in [
            include_str!("../../../ci/scenario.toml"),
            include_str!("../../../ci/scenarios/kafka-acks1-inflight5.toml"),
            include_str!("../../../ci/scenarios/nats-r3-dedup.toml"),
            include_str!("../../../ci/scenarios/kafka-storage-unsafe-kill.toml"),
        ] {
            let s = Scenario::from_toml(text).expect("scenario");
            let toml = s.to_toml();
            assert!(
                !toml.contains("[redis]") && !toml.contains("[nats]"),
                "{toml}"
            );
            assert!(s.durability().expect("durability").is_default());
        }
        let toml = d.to_toml();
        assert!(
            !toml.contains("[redis]") && !toml.contains("[nats]"),
            "{toml}"
        );
    }

    #[test]
    fn the_default_scenario_restarts_the_primary_between_two_consumer_kills() {
        let d = Scenario::default_scenario();
        let kinds: Vec<FaultKind> = d.nemesis.clone();
        assert_eq!(kinds.len(), DEFAULT_FAULTS.len());
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
        let drawn: Vec<(String, String)> = s
            .faults
            .iter()
            .map(|f| (f.fault.to_string(), f.targets_line()))
            .collect();
        assert_eq!(drawn.len(), 3, "{drawn:?}");
        assert_eq!(drawn[0].0, "kill-consumer:before-ack");
        assert_eq!(
            drawn[1],
            ("restart-broker:mid-batch".to_string(), "n1".to_string())
        );
        assert_eq!(drawn[2].0, "kill-consumer:before-ack");
        // A shorter run (the e2e test's 14 s) keeps the first two.
        assert_eq!(gen("14s").faults, s.faults[..2].to_vec());
    }

    #[test]
    fn the_report_reads_from_the_typed_scenario_what_it_reads_from_its_file() {
        for text in [
            include_str!("../../../ci/scenario.toml"),
            include_str!("../../../ci/scenarios/kafka-acks1-inflight5.toml"),
        ] {
            let s = Scenario::from_toml(text).expect("scenario");
            assert_eq!(
                s.report_info(),
                gauntlet_report::scenario::parse(&s.to_toml()),
                "{text}"
            );
        }
        let d = Scenario::default_scenario();
        assert_eq!(d.report_info().delivery, Some("at-least-once"));
    }

    #[test]
    fn a_dedup_table_is_checked_and_kill_consumer_before_effect_needs_one() {
        let plain =
            "name = \"x\"\nbroker = \"redis\"\nnemesis = [\"kill-consumer:before-effect\"]\n";
        let s = Scenario::from_toml(plain).expect("parses");
        let e = s
            .check_workload(BrokerKind::Redis)
            .expect_err("no [dedup]")
            .to_string();
        assert!(
            e.contains("kill-consumer:before-effect") && e.contains("[dedup]"),
            "{e}"
        );
        let with = format!("{plain}\n[dedup]\nmark = \"before\"\npolicy = \"fail-open\"\n");
        let s = Scenario::from_toml(&with).expect("parses");
        assert!(s.check_workload(BrokerKind::Redis).is_ok());
        let back = Scenario::from_toml(&toml::to_string(&s).expect("writes")).expect("reads back");
        assert_eq!(back.dedup, s.dedup);
        let e = s
            .check_workload(BrokerKind::Kafka)
            .expect_err("kafka")
            .to_string();
        assert!(e.contains("[dedup]") && e.contains("kafka"), "{e}");
    }

    #[test]
    fn the_example_scenario_parses_and_round_trips() {
        let s = Scenario::from_toml(include_str!("../../../ci/scenario.toml"))
            .expect("ci/scenario.toml");
        assert_eq!(s.broker, BrokerKind::RabbitMq);
        assert_eq!(
            s.nemesis,
            vec![FaultKind::KillConsumer(
                gauntlet_nemesis::KillConsumerAt::BeforeAck
            )]
        );
        let e = Scenario::from_toml(
            "name = \"x\"\nbroker = \"redis\"\nnemesis = [\"pause\", \"meteor\"]\n",
        )
        .expect_err("an unknown fault");
        let e = e.to_string();
        assert!(
            e.contains("unknown fault `meteor`") && e.contains("line 3"),
            "the entry is named: {e}"
        );
        assert_eq!(s.delivery.resolve().queue_type, "quorum");
        assert_eq!(s.guarantees().ok().map(|g| g.len()), Some(2));
        let again = Scenario::from_toml(&s.to_toml()).expect("round trip");
        assert_eq!(again.to_toml(), s.to_toml());
        assert!(Scenario::from_toml("name = \"x\"\nbroker = \"redis\"\nbogus = 1\n").is_err());
        let d = Scenario::default_scenario();
        assert_eq!(
            Scenario::from_toml(&d.to_toml()).map(|x| x.broker).ok(),
            Some(BrokerKind::Redis)
        );
    }

    #[test]
    fn add_partitions_and_the_partitioner_are_refused_where_a_broker_cannot_honour_them() {
        let mut s = Scenario::default_scenario();
        s.nemesis = vec![FaultKind::from_str("add-partitions:2").expect("fault")];
        // Not a Kafka-protocol broker: refused, naming the fault and the broker.
        let e = s.check_workload(BrokerKind::Redis).expect_err("redis");
        assert!(e.to_string().contains("add-partitions on redis"), "{e}");
        s.broker = BrokerKind::Kafka;
        s.check_workload(BrokerKind::Kafka)
            .expect("the PostgreSQL cluster");
        // The run's clients refresh their metadata every second, unless the scenario says.
        assert_eq!(
            s.run_delivery().metadata_refresh_ms,
            Some(REPARTITION_REFRESH_MS)
        );
        s.delivery.metadata_refresh_ms = Some(250);
        assert_eq!(s.run_delivery().metadata_refresh_ms, Some(250));
        // tansu's memory build: refused, naming the image.
        s.image = Some("gauntlet/kafka:tansu-memory-0.6.0-510f3e2".into());
        let e = s.check_workload(BrokerKind::Kafka).expect_err("memory");
        assert!(e.to_string().contains("tansu-memory"), "{e}");
        s.image = None;
        s.delivery.partitioner = Some("sticky".into());
        let e = s
            .check_workload(BrokerKind::Kafka)
            .expect_err("partitioner");
        assert!(e.to_string().contains("partitioner = \"sticky\""), "{e}");
        s.delivery.partitioner = Some("pinned".into());
        s.check_workload(BrokerKind::Kafka).expect("pinned");
        // The settings alone, on a broker without partitions.
        let mut r = Scenario::default_scenario();
        r.delivery.partitioner = Some("pinned".into());
        let e = r
            .check_workload(BrokerKind::Redis)
            .expect_err("partitioner on redis");
        assert!(
            e.to_string().contains("partitioner") && e.to_string().contains("redis"),
            "{e}"
        );
        // Without add-partitions nothing changes.
        let plain = Scenario::default_scenario();
        assert_eq!(plain.run_delivery(), plain.delivery);
    }
}
