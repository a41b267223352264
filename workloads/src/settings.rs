//! Delivery settings as configuration: a mode names a preset, any field overrides it.
//!
//! | mode | producer | consumer |
//! |---|---|---|
//! | at-most-once | no confirms (`acks=0`), no retries | auto-ack / commit before processing |
//! | at-least-once | confirms (`acks=all`), retries | manual ack / commit after processing |
//! | idempotent | as at-least-once, plus idempotence / dedup ids | as at-least-once |
//! | exactly-once | idempotent plus transactions where the broker has them | read committed |
use serde::{Deserialize, Serialize};

/// A delivery mode: the preset the settings start from (the table above).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Mode {
    /// No confirms (`acks=0`), no retries; auto-ack, or commit before processing.
    AtMostOnce,
    /// Confirms (`acks=all`), retries; manual ack, commit after processing.
    #[default]
    AtLeastOnce,
    /// As at-least-once, plus idempotence and deduplication ids.
    Idempotent,
    /// Idempotent, plus transactions where the broker has them; read committed.
    ExactlyOnce,
}

impl Mode {
    /// Every mode, weakest first.
    pub const ALL: [Mode; 4] = [
        Mode::AtMostOnce,
        Mode::AtLeastOnce,
        Mode::Idempotent,
        Mode::ExactlyOnce,
    ];

    /// The name in scenarios and on the command line.
    pub fn name(self) -> &'static str {
        match self {
            Mode::AtMostOnce => "at-most-once",
            Mode::AtLeastOnce => "at-least-once",
            Mode::Idempotent => "idempotent",
            Mode::ExactlyOnce => "exactly-once",
        }
    }
}

impl std::fmt::Display for Mode {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

impl std::str::FromStr for Mode {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        Mode::ALL
            .into_iter()
            .find(|m| m.name() == s.trim())
            .ok_or_else(|| {
                format!(
                    "mode `{s}`: expected at-most-once, at-least-once, idempotent or exactly-once"
                )
            })
    }
}

/// When a consumer acknowledges (or commits) relative to processing.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum AckPoint {
    /// Acknowledge (or commit) first, then process: a crash in between loses the message.
    BeforeProcessing,
    /// Process first, then acknowledge (or commit): a crash in between redelivers it.
    AfterProcessing,
}

/// The `[delivery]` table of a scenario. Unset fields come from `mode`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case", default, deny_unknown_fields)]
pub struct Delivery {
    /// The preset the unset fields come from.
    pub mode: Mode,
    /// The producer waits for the broker's confirmation (publisher confirms, PubAck, acks >= 1).
    pub confirms: Option<bool>,
    /// Kafka `acks`: "0", "1" or "all".
    pub acks: Option<String>,
    /// How many more times the producer tries a send that failed or ended unknown (Kafka `retries`).
    pub retries: Option<u32>,
    /// The idempotent producer (Kafka `enable.idempotence`).
    pub idempotence: Option<bool>,
    /// Requests in flight per connection (Kafka `max.in.flight.requests.per.connection`).
    pub max_in_flight: Option<u32>,
    /// The consumer acknowledges each message itself (false: the broker auto-acks on delivery).
    pub manual_ack: Option<bool>,
    /// When the consumer acknowledges (or commits), relative to processing.
    pub ack_point: Option<AckPoint>,
    /// RabbitMQ queue type: "classic", "quorum" or "stream".
    pub queue_type: Option<String>,
    /// Durable queues and persistent messages.
    pub durable: Option<bool>,
    /// Broker-side deduplication ids (NATS Msg-Id, SQS MessageDeduplicationId).
    pub dedup: Option<bool>,
    /// Transactions with read-committed consumers (Kafka).
    pub transactions: Option<bool>,
    /// Persistent messages (RabbitMQ delivery mode 2); `durable` when unset. A durable
    /// queue of transient messages loses them when its node restarts (seed D3).
    pub persistent: Option<bool>,
    /// Seconds a received, unacknowledged message stays invisible before it is
    /// delivered again (SQS VisibilityTimeout); 5 when unset.
    pub visibility_timeout: Option<u64>,
    /// Kafka: how a producer picks a key's partition: `hash` (librdkafka's default,
    /// the key's hash modulo the partition count of the moment, so a key moves when
    /// partitions are added) or `pinned` (the key's hash modulo the partition count
    /// the topic was created with, so each key keeps its partition; seed O4).
    /// `hash` when unset.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub partitioner: Option<String>,
    /// Kafka: the clients' `topic.metadata.refresh.interval.ms`, how soon producers
    /// and consumers see a new partition count; librdkafka's 5 minutes when unset
    /// (a run with `add-partitions` sets it, `docs/nemesis.md`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub metadata_refresh_ms: Option<u64>,
}

/// Every setting decided.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub struct Resolved {
    /// The mode the settings started from.
    pub mode: Mode,
    /// The producer waits for the broker's confirmation (publisher confirms, PubAck, acks >= 1).
    pub confirms: bool,
    /// Kafka `acks`: "0", "1" or "all".
    pub acks: String,
    /// How many more times the producer tries a send that failed or ended unknown.
    pub retries: u32,
    /// The idempotent producer (Kafka `enable.idempotence`).
    pub idempotence: bool,
    /// Requests in flight per connection (Kafka `max.in.flight.requests.per.connection`).
    pub max_in_flight: u32,
    /// The consumer acknowledges each message itself (false: the broker auto-acks on delivery).
    pub manual_ack: bool,
    /// When the consumer acknowledges (or commits), relative to processing.
    pub ack_point: AckPoint,
    /// RabbitMQ queue type: "classic", "quorum" or "stream".
    pub queue_type: String,
    /// Durable queues and persistent messages.
    pub durable: bool,
    /// Broker-side deduplication ids (NATS Msg-Id, SQS MessageDeduplicationId).
    pub dedup: bool,
    /// Transactions with read-committed consumers (Kafka).
    pub transactions: bool,
    /// Persistent messages (RabbitMQ delivery mode 2).
    pub persistent: bool,
    /// Seconds a received, unacknowledged message stays invisible before it is
    /// delivered again (SQS VisibilityTimeout).
    pub visibility_timeout: u64,
    /// Kafka: `hash` or `pinned` (see [`Delivery::partitioner`]).
    #[serde(skip_serializing_if = "is_hash")]
    pub partitioner: String,
    /// Kafka: the clients' metadata refresh interval, where set.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub metadata_refresh_ms: Option<u64>,
}

/// The default partitioner's name.
pub const HASH: &str = "hash";
/// The partitioner that keeps each key on the partition it had at the topic's creation.
pub const PINNED: &str = "pinned";

fn is_hash(p: &String) -> bool {
    p == HASH
}

impl Delivery {
    /// Every setting decided: each unset field takes the value of `mode`'s preset.
    pub fn resolve(&self) -> Resolved {
        let safe = self.mode != Mode::AtMostOnce;
        let idem = matches!(self.mode, Mode::Idempotent | Mode::ExactlyOnce);
        Resolved {
            mode: self.mode,
            confirms: self.confirms.unwrap_or(safe),
            acks: self
                .acks
                .clone()
                .unwrap_or_else(|| if safe { "all" } else { "0" }.to_string()),
            retries: self.retries.unwrap_or(if safe { 10 } else { 0 }),
            idempotence: self.idempotence.unwrap_or(idem),
            max_in_flight: self.max_in_flight.unwrap_or(5),
            manual_ack: self.manual_ack.unwrap_or(safe),
            ack_point: self.ack_point.unwrap_or(if safe {
                AckPoint::AfterProcessing
            } else {
                AckPoint::BeforeProcessing
            }),
            queue_type: self
                .queue_type
                .clone()
                .unwrap_or_else(|| if safe { "quorum" } else { "classic" }.to_string()),
            durable: self.durable.unwrap_or(safe),
            dedup: self.dedup.unwrap_or(idem),
            transactions: self.transactions.unwrap_or(self.mode == Mode::ExactlyOnce),
            persistent: self.persistent.or(self.durable).unwrap_or(safe),
            visibility_timeout: self.visibility_timeout.unwrap_or(5),
            partitioner: self.partitioner.clone().unwrap_or_else(|| HASH.to_string()),
            metadata_refresh_ms: self.metadata_refresh_ms,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn presets_and_overrides() {
        let amo = Delivery {
            mode: Mode::AtMostOnce,
            ..Default::default()
        }
        .resolve();
        assert!(!amo.confirms && !amo.manual_ack && amo.acks == "0");
        assert_eq!(amo.ack_point, AckPoint::BeforeProcessing);
        let alo = Delivery::default().resolve();
        assert!(alo.confirms && alo.manual_ack && alo.acks == "all" && !alo.idempotence);
        let over = Delivery {
            manual_ack: Some(false),
            ..Default::default()
        }
        .resolve();
        assert!(over.confirms && !over.manual_ack);
        assert!(over.persistent && over.durable && over.visibility_timeout == 5);
        let transient = Delivery {
            durable: Some(true),
            persistent: Some(false),
            visibility_timeout: Some(1),
            ..Default::default()
        }
        .resolve();
        assert!(transient.durable && !transient.persistent && transient.visibility_timeout == 1);
        assert!(
            Delivery {
                mode: Mode::ExactlyOnce,
                ..Default::default()
            }
            .resolve()
            .transactions
        );
    }
}
