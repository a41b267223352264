//! The one client trait every broker driver implements, and the three outcomes of an op.
use async_trait::async_trait;
use serde::{Deserialize, Serialize};
use std::time::Duration;

/// How an op ended. Drivers map every broker error to `Fail` (definitely did not
/// take effect) or `Info` (unknown) in one place, default to `Info`, and say in a
/// comment why each `Fail` is definite.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Outcome<T> {
    Ok(T),
    Fail(String),
    Info(String),
}

/// Where the broker says it stored a message.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Stored {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub partition: Option<i64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub offset: Option<i64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub id: Option<String>,
}

/// A message a consumer received.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Received {
    pub key: String,
    pub value: i64,
    #[serde(flatten)]
    pub stored: Stored,
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
    #[error("{broker}: cannot connect to {addr}: {reason}")]
    Connect {
        broker: &'static str,
        addr: String,
        reason: String,
    },
    #[error("{broker}: setup failed: {reason}")]
    Setup {
        broker: &'static str,
        reason: String,
    },
    #[error("{broker} does not support {what}")]
    Unsupported { broker: &'static str, what: String },
    #[error("bad message body {body:?}: {reason}")]
    BadBody { body: String, reason: String },
}

/// Sends messages.
#[async_trait]
pub trait Producer: Send {
    async fn send(&mut self, key: &str, value: i64) -> Outcome<Stored>;
    /// Hands the message to the client and returns at once, with a future that says
    /// how the send ended: several sends in flight on one client, in the order they
    /// were handed over (a pipelined producer). `None`: this client takes one send
    /// at a time.
    fn enqueue(&mut self, _key: &str, _value: i64) -> Option<PendingSend> {
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
}

/// A broker as the workloads see it: connection details and delivery settings inside.
#[async_trait]
pub trait Driver: Send + Sync {
    fn name(&self) -> &'static str;
    /// Declares queues, streams, topics and groups (idempotent).
    async fn setup(&self, groups: &[String]) -> Result<(), ClientError>;
    async fn producer(&self, process: u64) -> Result<Box<dyn Producer>, ClientError>;
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
