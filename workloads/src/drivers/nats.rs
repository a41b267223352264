//! NATS JetStream (async-nats): one stream `gauntlet` on `gauntlet.>` with
//! `min(3, nodes)` replicas (or the scenario's `[nats] replicas`, 1 to 5 and at
//! most the nodes: [`Nats::with_replicas`]), publishes to `gauntlet.<key>`, one
//! durable pull consumer per group, whose state has as many replicas as the
//! stream (the server's rule for a consumer that names none).
//!
//! The stream is one ordered log, so every message is recorded at partition 0
//! with its stream sequence as offset (on the PubAck and on delivery): the checker
//! can then judge partition order and inconsistent offsets.
//!
//! A message a consumer received but never acknowledged (a killed worker, a pull
//! request whose worker exited) comes back after [`ACK_WAIT`]. The drain worker
//! therefore does not take an empty fetch at face value: while the consumer
//! still reports acknowledgements pending, its `poll` keeps fetching for up to
//! `ACK_WAIT` plus a margin, so the drain's "3 empty polls" only start counting
//! once nothing is outstanding.
use crate::client::{
    body, parse_body, ClientError, Consumer, Driver, Outcome, Producer, Received, Stored,
};
use crate::settings::Resolved;
use async_nats::jetstream::consumer::{pull, AckPolicy, DeliverPolicy};
use async_nats::jetstream::context::{PublishError, PublishErrorKind};
use async_nats::jetstream::{self, stream};
use async_nats::HeaderMap;
use async_trait::async_trait;
use futures_util::StreamExt;
use std::time::{Duration, Instant};

/// The stream every workload but the two-hop one's second hop uses.
pub const STREAM: &str = "gauntlet";
/// The most replicas a JetStream stream can have.
pub const MAX_REPLICAS: usize = 5;
/// How long a delivered message may stay unacknowledged before it is redelivered.
pub const ACK_WAIT: Duration = Duration::from_secs(5);
/// How long a publish or an ack waits for the server's answer.
const REPLY_TIMEOUT: Duration = Duration::from_secs(5);

/// The NATS JetStream driver.
pub struct Nats {
    /// One `nats://host:port` URL per node.
    pub urls: Vec<String>,
    /// The delivery settings.
    pub settings: Resolved,
    /// Stream replicas: min(3, nodes) unless set ([`Nats::with_replicas`]).
    pub replicas: usize,
    /// A drain consumer waits for unacknowledged messages to come back (see the module docs).
    pub drain: bool,
    /// The stream (and its subjects' prefix): [`STREAM`] unless set ([`Nats::with_stream`]).
    pub stream: String,
}

impl Nats {
    /// A driver for the nodes at `addrs` (host:port); a `drain` driver waits for
    /// unacknowledged messages to come back.
    pub fn new(addrs: &[String], settings: Resolved, drain: bool) -> Self {
        Nats {
            urls: addrs.iter().map(|a| format!("nats://{a}")).collect(),
            settings,
            replicas: addrs.len().clamp(1, 3),
            drain,
            stream: STREAM.to_string(),
        }
    }

    /// The same driver on stream `name`, subjects `name.>` (the two-hop
    /// workload's second hop); `name` must not be a prefix token of another
    /// stream's subjects.
    pub fn with_stream(mut self, name: &str) -> Self {
        self.stream = name.to_string();
        self
    }

    /// The same driver creating its stream with `replicas` (`None`: the
    /// default, `min(3, nodes)`): 1 to [`MAX_REPLICAS`] and at most the nodes,
    /// else an error naming both numbers.
    pub fn with_replicas(mut self, replicas: Option<usize>) -> Result<Self, ClientError> {
        let Some(r) = replicas else {
            return Ok(self);
        };
        let nodes = self.urls.len();
        if r == 0 || r > MAX_REPLICAS || r > nodes {
            return Err(ClientError::Unsupported {
                broker: "nats",
                what: format!(
                    "a stream of {r} replicas on {nodes} node(s) (1 to {MAX_REPLICAS}, \
                     at most one per node)"
                ),
            });
        }
        self.replicas = r;
        Ok(self)
    }

    async fn connect(&self) -> Result<async_nats::Client, ClientError> {
        let err = |reason: String| ClientError::Connect {
            broker: "nats",
            addr: self.urls.join(","),
            reason,
        };
        let addrs = self
            .urls
            .iter()
            .map(|u| u.parse::<async_nats::ServerAddr>())
            .collect::<Result<Vec<_>, _>>()
            .map_err(|e| err(e.to_string()))?;
        async_nats::ConnectOptions::new()
            .connection_timeout(Duration::from_secs(5))
            .request_timeout(Some(REPLY_TIMEOUT))
            // Only the addresses given: a cluster's INFO lists its nodes' own client
            // URLs, which would let the client bypass the harness's proxy.
            .ignore_discovered_servers()
            .connect(addrs)
            .await
            .map_err(|e| err(e.to_string()))
    }

    fn context(&self, client: async_nats::Client) -> jetstream::Context {
        let mut js = jetstream::new(client);
        js.set_timeout(REPLY_TIMEOUT);
        js
    }

    fn consumer_config(&self, group: &str) -> pull::Config {
        pull::Config {
            durable_name: Some(group.to_string()),
            deliver_policy: DeliverPolicy::All,
            ack_policy: if self.settings.manual_ack {
                AckPolicy::Explicit
            } else {
                AckPolicy::None
            },
            ack_wait: ACK_WAIT,
            // Unlimited redeliveries: a message is never dropped for being delivered often.
            max_deliver: -1,
            // None named (0): the consumer's state has the stream's replicas, so a
            // worker, which does not know the stream's, asks for nothing else.
            num_replicas: 0,
            ..Default::default()
        }
    }
}

fn setup_err(what: &str, e: impl std::fmt::Display) -> ClientError {
    ClientError::Setup {
        broker: "nats",
        reason: format!("{what}: {e}"),
    }
}

/// Retries a setup step for a while: a fresh cluster may still be electing its meta leader.
async fn patiently<T, E: std::fmt::Display, F, Fut>(what: &str, mut f: F) -> Result<T, ClientError>
where
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = Result<T, E>>,
{
    let start = Instant::now();
    loop {
        match f().await {
            Ok(v) => return Ok(v),
            Err(e) if start.elapsed() >= Duration::from_secs(30) => return Err(setup_err(what, e)),
            Err(_) => tokio::time::sleep(Duration::from_millis(500)).await,
        }
    }
}

#[async_trait]
impl Driver for Nats {
    fn name(&self) -> &'static str {
        "nats"
    }

    async fn setup(&self, groups: &[String]) -> Result<(), ClientError> {
        let js = self.context(self.connect().await?);
        let config = stream::Config {
            name: self.stream.clone(),
            subjects: vec![format!("{}.>", self.stream)],
            num_replicas: self.replicas,
            storage: if self.settings.durable {
                stream::StorageType::File
            } else {
                stream::StorageType::Memory
            },
            // The dedup window (Nats-Msg-Id) is the server's default, 2 minutes.
            ..Default::default()
        };
        let stream = patiently(&format!("create stream {}", self.stream), || {
            js.get_or_create_stream(config.clone())
        })
        .await?;
        for g in groups {
            patiently(&format!("create consumer {g}"), || {
                stream.get_or_create_consumer(g, self.consumer_config(g))
            })
            .await?;
        }
        Ok(())
    }

    async fn producer(&self, _process: u64) -> Result<Box<dyn Producer>, ClientError> {
        let client = self.connect().await?;
        Ok(Box::new(NatsProducer {
            js: self.context(client.clone()),
            client,
            confirms: self.settings.confirms,
            dedup: self.settings.dedup,
            retries: self.settings.retries,
            stream: self.stream.clone(),
        }))
    }

    async fn consumer(&self, group: &str, _process: u64) -> Result<Box<dyn Consumer>, ClientError> {
        let client = self.connect().await?;
        let js = self.context(client.clone());
        let stream = js.get_stream(&self.stream).await.map_err(|e| {
            // "stream not found" is the meta leader's answer (a cluster with no
            // leader times out instead): a definite one.
            if let jetstream::context::GetStreamErrorKind::JetStream(j) = e.kind() {
                if j.error_code() == jetstream::ErrorCode::STREAM_NOT_FOUND {
                    return ClientError::Missing {
                        broker: "nats",
                        what: format!("stream {}", self.stream),
                        answer: j.to_string(),
                    };
                }
            }
            setup_err(&format!("get stream {}", self.stream), e)
        })?;
        let consumer = stream
            .get_or_create_consumer(group, self.consumer_config(group))
            .await
            .map_err(|e| setup_err(&format!("get consumer {group}"), e))?;
        Ok(Box::new(NatsConsumer {
            client,
            consumer,
            manual_ack: self.settings.manual_ack,
            drain: self.drain,
        }))
    }
}

/// Where a publish error happened: before the message left the client, or while
/// waiting for the PubAck.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Stage {
    Send,
    Ack,
}

/// The one place NATS errors become outcomes.
fn classify<T>(stage: Stage, e: &PublishError) -> Outcome<T> {
    let text = format!("{e}");
    match (stage, e.kind()) {
        // Definite: the command never got into the client's outgoing queue (the
        // connection task is gone, or the queue stayed full for the whole timeout).
        (Stage::Send, _) => Outcome::Fail(text),
        // Definite: "no responders" - no stream listens on the subject, so nothing stored it.
        (Stage::Ack, PublishErrorKind::StreamNotFound) => Outcome::Fail(text),
        // Definite: the stream refused the expected-last-* precondition (unused here).
        (
            Stage::Ack,
            PublishErrorKind::WrongLastMessageId | PublishErrorKind::WrongLastSequence,
        ) => Outcome::Fail(text),
        // Definite: the stream leader answered with a JetStream API error (limits,
        // insufficient resources, ...); an error reply means it did not store the message.
        (Stage::Ack, PublishErrorKind::Other) if api_error(e) => Outcome::Fail(text),
        // Timeouts, a connection lost while waiting, an unreadable reply: unknown.
        _ => Outcome::Info(text),
    }
}

fn api_error(e: &PublishError) -> bool {
    std::error::Error::source(e).is_some_and(|s| s.is::<async_nats::jetstream::Error>())
}

struct NatsProducer {
    client: async_nats::Client,
    js: jetstream::Context,
    confirms: bool,
    dedup: bool,
    retries: u32,
    stream: String,
}

impl NatsProducer {
    /// A send's subject (the key's), headers (`Nats-Msg-Id` = the value with
    /// `dedup`) and body.
    fn message(&self, key: &str, value: i64) -> (String, HeaderMap, Vec<u8>) {
        let mut headers = HeaderMap::new();
        if self.dedup {
            headers.insert(
                async_nats::header::NATS_MESSAGE_ID,
                value.to_string().as_str(),
            );
        }
        (format!("{}.{key}", self.stream), headers, body(key, value))
    }

    async fn attempt(&self, subject: &str, headers: &HeaderMap, payload: &[u8]) -> Outcome<Stored> {
        if !self.confirms {
            // Fire and forget: a core publish the stream captures, no PubAck asked for.
            return match self
                .client
                .publish_with_headers(
                    subject.to_string(),
                    headers.clone(),
                    payload.to_vec().into(),
                )
                .await
            {
                Ok(()) => Outcome::Ok(Stored::default()),
                // Definite: the client could not queue the message (connection task gone).
                Err(e) => Outcome::Fail(e.to_string()),
            };
        }
        let publish = jetstream::context::Publish::build()
            .payload(payload.to_vec().into())
            .headers(headers.clone());
        let ack = match self.js.send_publish(subject.to_string(), publish).await {
            Ok(ack) => ack,
            Err(e) => return classify(Stage::Send, &e),
        };
        acked(ack.await)
    }
}

/// The end of one PubAck.
fn acked(r: Result<jetstream::publish::PublishAck, PublishError>) -> Outcome<Stored> {
    match r {
        Ok(a) => Outcome::Ok(Stored {
            partition: Some(0),
            offset: i64::try_from(a.sequence).ok(),
            id: None,
        }),
        Err(e) => classify(Stage::Ack, &e),
    }
}

/// How the retries of a pipelined send end, given the outcome of its first attempt:
/// a retry is published again after the sends handed over since (as a client that
/// retries with several sends in flight does: the seed's O1), and an earlier
/// unknown attempt keeps the whole send unknown.
async fn retried(
    js: jetstream::Context,
    subject: String,
    headers: HeaderMap,
    payload: Vec<u8>,
    first: Outcome<Stored>,
    retries: u32,
) -> Outcome<Stored> {
    let mut outcome = first;
    let mut unknown: Option<String> = None;
    for _ in 0..retries {
        match outcome {
            Outcome::Ok(_) => return outcome,
            Outcome::Fail(_) => {}
            Outcome::Info(ref e) => unknown = Some(e.clone()),
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
        let publish = jetstream::context::Publish::build()
            .payload(payload.clone().into())
            .headers(headers.clone());
        outcome = match js.send_publish(subject.clone(), publish).await {
            Ok(ack) => acked(ack.await),
            Err(e) => classify(Stage::Send, &e),
        };
    }
    match (outcome, unknown) {
        (Outcome::Fail(e), Some(u)) => Outcome::Info(format!("{u}; last retry: {e}")),
        (o, _) => o,
    }
}

#[async_trait]
impl Producer for NatsProducer {
    async fn enqueue(&mut self, key: &str, value: i64) -> Option<crate::client::PendingSend> {
        let (subject, headers, payload) = self.message(key, value);
        if !self.confirms {
            // Fire and forget: the publish is queued in the client, and that is all.
            let outcome = self.attempt(&subject, &headers, &payload).await;
            return Some(Box::pin(async move { outcome }));
        }
        // The publish enters the client's outgoing queue here, in the order of the
        // invokes; the PubAck is awaited by the returned future.
        let publish = jetstream::context::Publish::build()
            .payload(payload.clone().into())
            .headers(headers.clone());
        let handed = self.js.send_publish(subject.clone(), publish).await;
        let (js, retries) = (self.js.clone(), self.retries);
        Some(Box::pin(async move {
            let first = match handed {
                Ok(ack) => acked(ack.await),
                Err(e) => classify(Stage::Send, &e),
            };
            retried(js, subject, headers, payload, first, retries).await
        }))
    }

    async fn send(&mut self, key: &str, value: i64) -> Outcome<Stored> {
        let (subject, headers, payload) = self.message(key, value);
        // The client does not retry publishes; `retries` is done here. A retry after an
        // unknown outcome may store the message twice unless `dedup` sets Nats-Msg-Id.
        let mut unknown: Option<String> = None;
        for attempt in 0..=self.retries {
            match self.attempt(&subject, &headers, &payload).await {
                Outcome::Ok(s) => return Outcome::Ok(s),
                Outcome::Fail(e) if attempt == self.retries => {
                    // An earlier unknown attempt may have been stored: still unknown.
                    return match unknown {
                        Some(u) => Outcome::Info(format!("{u}; last retry: {e}")),
                        None => Outcome::Fail(e),
                    };
                }
                Outcome::Info(e) if attempt == self.retries => return Outcome::Info(e),
                Outcome::Fail(_) => {}
                Outcome::Info(e) => unknown = Some(e),
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
        Outcome::Info(unknown.unwrap_or_else(|| "no attempt made".into()))
    }
}

impl Drop for NatsProducer {
    /// Fire-and-forget publishes sit in the client's buffer for a moment: flush them
    /// before the connection goes, or the last sends of a run are lost by the client.
    fn drop(&mut self) {
        if let Ok(rt) = tokio::runtime::Handle::try_current() {
            let client = self.client.clone();
            rt.spawn(async move {
                let _ = tokio::time::timeout(REPLY_TIMEOUT, client.flush()).await;
            });
        }
    }
}

struct NatsConsumer {
    client: async_nats::Client,
    consumer: jetstream::consumer::Consumer<pull::Config>,
    manual_ack: bool,
    drain: bool,
}

impl NatsConsumer {
    /// One fetch: waits up to `wait` for the first message, then takes what is there.
    async fn fetch(&self, max: usize, wait: Duration) -> Result<Vec<Received>, String> {
        let mut batch = self
            .consumer
            .fetch()
            .max_messages(max.max(1))
            .expires(wait.max(Duration::from_millis(100)))
            .messages()
            .await
            .map_err(|e| e.to_string())?;
        let mut out = Vec::new();
        // The batch ends on the server's own expiry; the local limit is a safety net.
        let deadline = tokio::time::Instant::now() + wait + REPLY_TIMEOUT;
        loop {
            match tokio::time::timeout_at(deadline, batch.next()).await {
                Err(_) | Ok(None) => break,
                Ok(Some(Err(e))) => {
                    if out.is_empty() {
                        return Err(e.to_string());
                    }
                    break;
                }
                Ok(Some(Ok(m))) => {
                    let (seq, delivered) = match m.info() {
                        Ok(i) => (i64::try_from(i.stream_sequence).ok(), i.delivered),
                        Err(_) => (None, 1),
                    };
                    let Ok((key, value)) = parse_body(&m.payload) else {
                        continue;
                    };
                    out.push(Received {
                        key,
                        value,
                        stored: Stored {
                            partition: seq.map(|_| 0),
                            offset: seq,
                            id: None,
                        },
                        redelivered: delivered > 1,
                        ack_token: m.reply.as_ref().map(|r| r.to_string()).unwrap_or_default(),
                    });
                }
            }
        }
        Ok(out)
    }

    /// Messages delivered to someone and not yet acknowledged (they will come back).
    async fn outstanding(&mut self) -> usize {
        match self.consumer.info().await {
            Ok(i) => i.num_ack_pending,
            Err(_) => 0,
        }
    }
}

#[async_trait]
impl Consumer for NatsConsumer {
    async fn poll(&mut self, max: usize, wait: Duration) -> Outcome<Vec<Received>> {
        let start = Instant::now();
        loop {
            // A failed fetch request or a broken subscription: the pull may have
            // been served and the messages lost on the way; unknown.
            let got = match self.fetch(max, wait).await {
                Ok(v) => v,
                Err(e) => return Outcome::Info(e),
            };
            if !got.is_empty() || !self.drain || !self.manual_ack {
                return Outcome::Ok(got);
            }
            // Drain: keep waiting while unacknowledged messages are due to come back.
            if start.elapsed() >= ACK_WAIT + Duration::from_secs(2) || self.outstanding().await == 0
            {
                return Outcome::Ok(got);
            }
        }
    }

    async fn ack(&mut self, msgs: &[Received]) -> Outcome<()> {
        if !self.manual_ack || msgs.is_empty() {
            return Outcome::Ok(());
        }
        // Double acks (the server confirms each), all at once.
        let acks = msgs.iter().map(|m| {
            let reply = m.ack_token.clone();
            let client = self.client.clone();
            async move {
                if reply.is_empty() {
                    return Err("message has no reply subject to ack".to_string());
                }
                client
                    .request(reply, "+ACK".into())
                    .await
                    .map(|_| ())
                    .map_err(|e| e.to_string())
            }
        });
        let results = futures_util::future::join_all(acks).await;
        match results.into_iter().find_map(Result::err) {
            None => Outcome::Ok(()),
            // Some acks may have landed, others not: unknown.
            Some(e) => Outcome::Info(e),
        }
    }

    fn acks(&self) -> bool {
        self.manual_ack
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::settings::Delivery;

    fn nats(nodes: usize) -> Nats {
        let addrs: Vec<String> = (0..nodes)
            .map(|i| format!("127.0.0.1:{}", 4222 + i))
            .collect();
        Nats::new(&addrs, Delivery::default().resolve(), false)
    }

    #[test]
    fn replicas_default_to_three_at_most_and_may_be_set_from_one_to_five_within_the_nodes() {
        assert_eq!(nats(1).replicas, 1);
        assert_eq!(nats(3).replicas, 3);
        assert_eq!(nats(5).replicas, 3);
        assert_eq!(
            nats(5).with_replicas(None).map(|n| n.replicas).ok(),
            Some(3)
        );
        for r in 1..=5 {
            assert_eq!(
                nats(5).with_replicas(Some(r)).map(|n| n.replicas).ok(),
                Some(r)
            );
        }
        for (nodes, r) in [(5, 0), (5, 6), (9, 7), (3, 5), (1, 2)] {
            let e = nats(nodes)
                .with_replicas(Some(r))
                .err()
                .map(|e| e.to_string())
                .unwrap_or_default();
            assert!(
                e.contains(&format!("{r} replicas on {nodes} node(s)")),
                "{nodes} nodes, {r} replicas: {e}"
            );
        }
    }

    #[test]
    fn the_stream_takes_the_replicas_and_the_consumer_follows_the_stream() {
        let n = nats(5).with_replicas(Some(5)).expect("5 on 5");
        assert_eq!(n.replicas, 5);
        let c = n.consumer_config("g");
        assert_eq!(c.num_replicas, 0, "the consumer names no count of its own");
        assert_eq!(c.durable_name.as_deref(), Some("g"));
    }
}
