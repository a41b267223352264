//! The scenario file: what to deploy, what to run against it, what it should guarantee.
use crate::broker::BrokerKind;
use crate::error::HarnessError;
use gauntlet_checkers::Guarantee;
use gauntlet_nemesis::FaultKind;
use gauntlet_workloads::log::LogConfig;
use gauntlet_workloads::queue::QueueConfig;
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
    /// Sends per second, all producers together.
    #[serde(default = "default_rate")]
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
    /// Where run folders go.
    #[serde(default = "default_results", skip_serializing)]
    pub results: PathBuf,
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
            results: default_results(),
        }
    }

    /// Reads a scenario file; an unknown key is an error.
    pub fn from_toml(text: &str) -> Result<Scenario, HarnessError> {
        toml::from_str(text).map_err(|e| HarnessError::Scenario(e.to_string()))
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
    /// Refuses a workload the broker cannot run, before anything is deployed.
    pub fn check_workload(&self, kind: BrokerKind) -> Result<(), HarnessError> {
        if self.workload == Workload::Log && kind != BrokerKind::Kafka {
            return Err(HarnessError::Scenario(format!(
                "the log workload needs a Kafka-protocol broker, not {}",
                self.broker
            )));
        }
        if self.queue.pipeline > 1
            && (kind != BrokerKind::Kafka || self.workload != Workload::Queue)
        {
            return Err(HarnessError::Scenario(format!(
                "queue.pipeline = {}: pipelined producers need the queue workload on a \
                 Kafka-protocol broker (its client keeps several sends in flight), not the {} \
                 workload on {}",
                self.queue.pipeline, self.workload, self.broker
            )));
        }
        Ok(())
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
}

impl Workload {
    /// Every workload.
    pub const ALL: [Workload; 3] = [Workload::Queue, Workload::Log, Workload::Txn];

    /// The name in scenarios and on the command line.
    pub fn name(self) -> &'static str {
        match self {
            Workload::Queue => "queue",
            Workload::Log => "log",
            Workload::Txn => "txn",
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
                    "workload `{s}` is not available (queue, log and txn are)"
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
}
