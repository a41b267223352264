//! The brokers Gauntlet speaks to, by name: the one type the command line, the
//! scenario, the harness's recipes and the drivers share.
use std::fmt;
use std::str::FromStr;

/// A broker Gauntlet can deploy and drive.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, serde::Serialize)]
#[serde(rename_all = "lowercase")]
pub enum BrokerKind {
    /// RabbitMQ (AMQP 0-9-1; classic, quorum and stream queues).
    RabbitMq,
    /// NATS JetStream.
    Nats,
    /// Redis Streams.
    Redis,
    /// A Kafka-protocol broker (tansu in the local image).
    Kafka,
    /// An SQS-compatible server (moto in the local image).
    Sqs,
}

/// A name that is no broker.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("unknown broker {0:?} (known: rabbitmq, nats, redis, kafka, sqs)")]
pub struct UnknownBroker(pub String);

impl BrokerKind {
    /// Every broker, in a stable order.
    pub const ALL: [BrokerKind; 5] = [
        BrokerKind::RabbitMq,
        BrokerKind::Nats,
        BrokerKind::Redis,
        BrokerKind::Kafka,
        BrokerKind::Sqs,
    ];

    /// Whether Gauntlet's client for this broker keeps several sends in flight on one
    /// connection (`[queue] in-flight` > 1): Kafka (librdkafka's queue), Redis
    /// (pipelined XADDs), NATS (asynchronous publish, PubAck futures) and RabbitMQ
    /// (publisher confirms over a window). Not SQS: its client sends one request
    /// per message and nothing orders two of them.
    pub fn pipelines(self) -> bool {
        !matches!(self, BrokerKind::Sqs)
    }

    /// The name used on the command line, in labels and in image names.
    pub fn name(self) -> &'static str {
        match self {
            BrokerKind::RabbitMq => "rabbitmq",
            BrokerKind::Nats => "nats",
            BrokerKind::Redis => "redis",
            BrokerKind::Kafka => "kafka",
            BrokerKind::Sqs => "sqs",
        }
    }
}

impl fmt::Display for BrokerKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

impl FromStr for BrokerKind {
    type Err = UnknownBroker;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s.to_ascii_lowercase().as_str() {
            "rabbitmq" | "rabbit" => Ok(BrokerKind::RabbitMq),
            "nats" | "jetstream" => Ok(BrokerKind::Nats),
            "redis" => Ok(BrokerKind::Redis),
            "kafka" | "tansu" => Ok(BrokerKind::Kafka),
            "sqs" | "moto" => Ok(BrokerKind::Sqs),
            _ => Err(UnknownBroker(s.to_string())),
        }
    }
}

impl<'de> serde::Deserialize<'de> for BrokerKind {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let s = String::deserialize(d)?;
        BrokerKind::from_str(&s).map_err(serde::de::Error::custom)
    }
}
