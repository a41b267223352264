//! The one client trait every broker driver implements, and the three outcomes of an op.
use async_trait::async_trait;
use serde::{Deserialize, Serialize};
use std::time::Duration;

/// How an op ended. Drivers map every broker error to `Fail` (definitely did not
/// take effect) or `Info` (unknown) in one place, default to `Info`, and say in a
/// comment why each `Fail` is definite.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Outcome<T> {
    /// Definitely took effect, with what it returned.
    Ok(T),
    /// Definitely did not take effect, with the error text.
    Fail(String),
    /// Unknown (a timeout, a lost connection), with the error text.
    Info(String),
}

/// Where the broker says it stored a message.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Stored {
    /// The partition, where the broker gives one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub partition: Option<i64>,
    /// The offset in the partition, where the broker gives one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub offset: Option<i64>,
    /// The broker's message id, where it gives one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub id: Option<String>,
}

/// A message a consumer received.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Received {
    /// The message's key.
    pub key: String,
    /// The message's value.
    pub value: i64,
    /// Where the broker stored it, as far as it says.
    #[serde(flatten)]
    pub stored: Stored,
    /// The broker flagged it as a redelivery.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub redelivered: bool,
    /// What the driver needs to acknowledge it (a delivery tag, a stream id...); not recorded.
    #[serde(skip)]
    pub ack_token: String,
}

/// Problems setting a client up (connecting, declaring queues). Ops never return these:
/// they return an [`Outcome`].
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ClientError {
    /// The client could not connect.
    #[error("{broker}: cannot connect to {addr}: {reason}")]
    Connect {
        /// The broker's name.
        broker: &'static str,
        /// The address it tried (host:port).
        addr: String,
        /// What the client said.
        reason: String,
    },
    /// Declaring queues, streams, topics or groups failed.
    #[error("{broker}: setup failed: {reason}")]
    Setup {
        /// The broker's name.
        broker: &'static str,
        /// What failed.
        reason: String,
    },
    /// The broker does not support a setting or an operation.
    #[error("{broker} does not support {what}")]
    Unsupported {
        /// The broker's name.
        broker: &'static str,
        /// What it does not support.
        what: String,
    },
    /// The broker answered that the stream, queue or topic does not exist (a
    /// definite answer, not a timeout: the final drain confirms it and counts
    /// what the broker acknowledged there as lost).
    #[error("{broker}: {what} does not exist: {answer}")]
    Missing {
        /// The broker's name.
        broker: &'static str,
        /// What is missing, in words: `stream gauntlet`.
        what: String,
        /// The broker's answer, as its client library gave it.
        answer: String,
    },
    /// A message body is not what [`body`] writes.
    #[error("bad message body {body:?}: {reason}")]
    BadBody {
        /// The body (its first 200 characters).
        body: String,
        /// What the JSON parser said.
        reason: String,
    },
}

/// Sends messages.
#[async_trait]
pub trait Producer: Send {
    /// Sends one message and waits until the broker says how the send ended.
    async fn send(&mut self, key: &str, value: i64) -> Outcome<Stored>;
    /// Hands the message to the client and returns once the client has taken it
    /// (queued it for the wire, in order), with a future that says how the send
    /// ended: several sends in flight on one client, in the order they were handed
    /// over (a pipelined producer). The future ends on its own (the driver's reply
    /// timeout makes a send the broker never answers `Info`). `None`: this client
    /// takes one send at a time ([`BrokerKind::pipelines`](crate::BrokerKind::pipelines)
    /// says which do).
    async fn enqueue(&mut self, _key: &str, _value: i64) -> Option<PendingSend> {
        None
    }
}

/// A send handed to a pipelining client, not yet ended.
pub type PendingSend =
    std::pin::Pin<Box<dyn std::future::Future<Output = Outcome<Stored>> + Send + 'static>>;

/// Receives messages for one group.
#[async_trait]
pub trait Consumer: Send {
    /// Waits up to `wait` for up to `max` messages. An empty `Ok` means none came.
    async fn poll(&mut self, max: usize, wait: Duration) -> Outcome<Vec<Received>>;
    /// Acknowledges (or commits) messages after processing. Drivers in an auto-ack
    /// mode do nothing here and return `Ok`.
    async fn ack(&mut self, msgs: &[Received]) -> Outcome<()>;
    /// Whether `ack` does anything (manual acknowledgement mode).
    fn acks(&self) -> bool;
    /// Hands messages the consumer held back (not processed, not acknowledged)
    /// back to the broker for a later delivery, where the broker needs to be
    /// told (a RabbitMQ `basic.nack` with requeue). By default nothing: the
    /// broker delivers them again on its own (Redis Streams claims what stayed
    /// pending for its claim idle time).
    async fn release(&mut self, _msgs: &[Received]) -> Outcome<()> {
        Outcome::Ok(())
    }
}

/// A broker as the workloads see it: connection details and delivery settings inside.
#[async_trait]
pub trait Driver: Send + Sync {
    /// The broker's name, as [`BrokerKind::name`](crate::BrokerKind::name) spells it (`redis`, `kafka`, ...).
    fn name(&self) -> &'static str;
    /// Declares queues, streams, topics and groups (idempotent).
    async fn setup(&self, groups: &[String]) -> Result<(), ClientError>;
    /// A producer client for history process `process` (a driver may use the number to pick a node).
    async fn producer(&self, process: u64) -> Result<Box<dyn Producer>, ClientError>;
    /// A consumer client of `group` for history process `process`.
    async fn consumer(&self, group: &str, process: u64) -> Result<Box<dyn Consumer>, ClientError>;
}

/// The message body every driver writes: the key and the value, as JSON.
pub fn body(key: &str, value: i64) -> Vec<u8> {
    serde_json::to_vec(&serde_json::json!({"key": key, "value": value})).unwrap_or_default()
}

/// Reads a body written by [`body`].
pub fn parse_body(b: &[u8]) -> Result<(String, i64), ClientError> {
    #[derive(Deserialize)]
    struct Body {
        key: String,
        value: i64,
    }
    serde_json::from_slice::<Body>(b)
        .map(|x| (x.key, x.value))
        .map_err(|e| ClientError::BadBody {
            body: String::from_utf8_lossy(b).chars().take(200).collect(),
            reason: e.to_string(),
        })
}
