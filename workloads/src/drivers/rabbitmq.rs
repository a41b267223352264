//! RabbitMQ (AMQP 0-9-1, lapin): a fanout exchange with one queue per group
//! (classic, quorum or stream), publisher confirms, manual or automatic acks.
use crate::client::{
    body, parse_body, ClientError, Consumer, Driver, Outcome, Producer, Received, Stored,
};
use crate::settings::Resolved;
use async_trait::async_trait;
use futures_util::StreamExt;
use lapin::options::{
    BasicAckOptions, BasicConsumeOptions, BasicNackOptions, BasicPublishOptions, BasicQosOptions,
    ConfirmSelectOptions, ExchangeDeclareOptions, QueueBindOptions, QueueDeclareOptions,
};
use lapin::types::{AMQPValue, FieldTable, ShortString};
use lapin::{BasicProperties, Channel, Connection, ConnectionProperties, ExchangeKind};
use std::time::Duration;

const EXCHANGE: &str = "gauntlet";

/// The RabbitMQ driver.
pub struct RabbitMq {
    /// One AMQP URI per node. A client's home node is `process % nodes`, so the
    /// clients are spread over the cluster and a fault on any node's link hits some
    /// of them, as it would in production; on reconnect a client tries its home
    /// node first, then the others in turn.
    pub uris: Vec<String>,
    /// Where this client connects first (an index into `uris`).
    home: usize,
    /// The delivery settings.
    pub settings: Resolved,
}

impl RabbitMq {
    /// A driver for the nodes at `addrs` (host:port), as user `guest` on the default vhost.
    pub fn new(addrs: &[String], settings: Resolved) -> Self {
        RabbitMq {
            uris: addrs
                .iter()
                .map(|a| format!("amqp://guest:guest@{a}/%2f"))
                .collect(),
            home: 0,
            settings,
        }
    }

    /// The same cluster, for the client with this process number.
    fn for_process(&self, process: u64) -> Self {
        let n = self.uris.len().max(1) as u64;
        RabbitMq {
            uris: self.uris.clone(),
            home: (process % n) as usize,
            settings: self.settings.clone(),
        }
    }

    /// A connection and channel on the home node, or else the first node that answers.
    async fn channel(&self) -> Result<(Connection, Channel), ClientError> {
        let n = self.uris.len();
        let mut last = ClientError::Connect {
            broker: "rabbitmq",
            addr: String::new(),
            reason: "no node address".into(),
        };
        for i in 0..n {
            let uri = &self.uris[(self.home + i) % n];
            let err = |reason: String| ClientError::Connect {
                broker: "rabbitmq",
                addr: uri.clone(),
                reason,
            };
            // A node cut off by a partition drops the handshake: give up on it after a while.
            let connect = Connection::connect(uri, ConnectionProperties::default());
            let conn = match tokio::time::timeout(Duration::from_secs(5), connect).await {
                Ok(Ok(c)) => c,
                Ok(Err(e)) => {
                    last = err(e.to_string());
                    continue;
                }
                Err(_) => {
                    last = err("no answer within 5s".into());
                    continue;
                }
            };
            match conn.create_channel().await {
                Ok(ch) => return Ok((conn, ch)),
                Err(e) => last = err(e.to_string()),
            }
        }
        Err(last)
    }

    /// A channel for publishing, in confirm mode when `confirms` is set.
    async fn producer_channel(&self) -> Result<(Connection, Channel), ClientError> {
        let (conn, ch) = self.channel().await?;
        if self.settings.confirms {
            ch.confirm_select(ConfirmSelectOptions::default())
                .await
                .map_err(|e| setup_err("confirm.select", e))?;
        }
        Ok((conn, ch))
    }

    fn queue_name(group: &str) -> String {
        format!("gauntlet.{group}")
    }
}

fn setup_err(what: &str, e: lapin::Error) -> ClientError {
    ClientError::Setup {
        broker: "rabbitmq",
        reason: format!("{what}: {e}"),
    }
}

#[async_trait]
impl Driver for RabbitMq {
    fn name(&self) -> &'static str {
        "rabbitmq"
    }

    async fn setup(&self, groups: &[String]) -> Result<(), ClientError> {
        let (_conn, ch) = self.channel().await?;
        let durable = self.settings.durable || self.settings.queue_type != "classic";
        ch.exchange_declare(
            EXCHANGE,
            ExchangeKind::Fanout,
            ExchangeDeclareOptions {
                durable,
                ..Default::default()
            },
            FieldTable::default(),
        )
        .await
        .map_err(|e| setup_err("exchange.declare", e))?;
        for g in groups {
            let q = Self::queue_name(g);
            let mut args = FieldTable::default();
            args.insert(
                ShortString::from("x-queue-type"),
                AMQPValue::LongString(self.settings.queue_type.clone().into()),
            );
            ch.queue_declare(
                &q,
                QueueDeclareOptions {
                    durable,
                    ..Default::default()
                },
                args,
            )
            .await
            .map_err(|e| setup_err(&format!("queue.declare {q}"), e))?;
            ch.queue_bind(
                &q,
                EXCHANGE,
                "",
                QueueBindOptions::default(),
                FieldTable::default(),
            )
            .await
            .map_err(|e| setup_err(&format!("queue.bind {q}"), e))?;
        }
        Ok(())
    }

    async fn producer(&self, process: u64) -> Result<Box<dyn Producer>, ClientError> {
        let driver = self.for_process(process);
        let (conn, ch) = driver.producer_channel().await?;
        Ok(Box::new(RabbitProducer {
            driver,
            conn,
            ch,
            confirms: self.settings.confirms,
            persistent: self.settings.persistent,
        }))
    }

    async fn consumer(&self, group: &str, process: u64) -> Result<Box<dyn Consumer>, ClientError> {
        let (conn, ch) = self.for_process(process).channel().await?;
        ch.basic_qos(64, BasicQosOptions::default())
            .await
            .map_err(|e| setup_err("basic.qos", e))?;
        let stream = self.settings.queue_type == "stream";
        let mut args = FieldTable::default();
        if stream {
            // Streams need an offset to start from; "first" reads what is there.
            args.insert(
                ShortString::from("x-stream-offset"),
                AMQPValue::LongString("first".into()),
            );
        }
        let consumer = ch
            .basic_consume(
                &Self::queue_name(group),
                &format!("c{process}"),
                BasicConsumeOptions {
                    no_ack: !self.settings.manual_ack,
                    ..Default::default()
                },
                args,
            )
            .await
            .map_err(|e| match &e {
                // 404 NOT_FOUND: the queue does not exist (a definite answer;
                // the final drain asks again before it takes it as final). Not
                // "home node ... is down or inaccessible": that queue exists on
                // a node that is down, and a drain that cannot reach it did not
                // finish.
                lapin::Error::ProtocolError(p)
                    if p.get_id() == 404 && !p.to_string().contains("down or inaccessible") =>
                {
                    ClientError::Missing {
                        broker: "rabbitmq",
                        what: format!("queue {}", Self::queue_name(group)),
                        answer: p.to_string(),
                    }
                }
                _ => setup_err("basic.consume", e),
            })?;
        Ok(Box::new(RabbitConsumer {
            _conn: conn,
            ch,
            consumer,
            manual_ack: self.settings.manual_ack,
        }))
    }
}

/// The one place publish errors become outcomes.
fn classify<T>(e: lapin::Error) -> Outcome<T> {
    match e {
        // Definite: the channel or connection was already closed, so nothing was written.
        lapin::Error::InvalidChannelState(_) | lapin::Error::InvalidConnectionState(_) => {
            Outcome::Fail(e.to_string())
        }
        // Anything else (I/O errors mid-write, protocol errors): unknown.
        other => Outcome::Info(other.to_string()),
    }
}

struct RabbitProducer {
    /// To connect again when the broker closed the connection (a restarted node).
    driver: RabbitMq,
    conn: Connection,
    ch: Channel,
    confirms: bool,
    persistent: bool,
}

impl RabbitProducer {
    /// Publishes on the channel (connecting again first if the broker closed it): the
    /// message is on its way once this returns, and the confirm says how it ended.
    async fn publish(
        &mut self,
        key: &str,
        value: i64,
    ) -> Result<lapin::publisher_confirm::PublisherConfirm, Outcome<Stored>> {
        if !self.conn.status().connected() || !self.ch.status().connected() {
            match self.driver.producer_channel().await {
                Ok((conn, ch)) => (self.conn, self.ch) = (conn, ch),
                // Definite: no connection, so nothing was published.
                Err(e) => return Err(Outcome::Fail(e.to_string())),
            }
        }
        let mut props = BasicProperties::default().with_message_id(value.to_string().into());
        if self.persistent {
            props = props.with_delivery_mode(2);
        }
        let payload = body(key, value);
        let publish = self.ch.basic_publish(
            EXCHANGE,
            key,
            BasicPublishOptions::default(),
            &payload,
            props,
        );
        match tokio::time::timeout(Duration::from_secs(5), publish).await {
            Ok(Ok(c)) => Ok(c),
            Ok(Err(e)) => Err(classify(e)),
            Err(_) => Err(Outcome::Info("publish did not complete within 5s".into())),
        }
    }
}

/// How a published message ended: its publisher confirm (or, without confirms,
/// the publish itself).
async fn confirmed(
    confirm: lapin::publisher_confirm::PublisherConfirm,
    confirms: bool,
) -> Outcome<Stored> {
    if !confirms {
        return Outcome::Ok(Stored::default());
    }
    match tokio::time::timeout(Duration::from_secs(10), confirm).await {
        Ok(Ok(c)) if c.is_ack() => Outcome::Ok(Stored::default()),
        // A nack says the broker could not take responsibility for the message; with
        // quorum queues it may still have been enqueued on some replicas: unknown.
        Ok(Ok(_)) => Outcome::Info("publisher confirm: nack".into()),
        Ok(Err(e)) => Outcome::Info(e.to_string()),
        Err(_) => Outcome::Info("no publisher confirm within 10s".into()),
    }
}

#[async_trait]
impl Producer for RabbitProducer {
    async fn send(&mut self, key: &str, value: i64) -> Outcome<Stored> {
        match self.publish(key, value).await {
            Ok(confirm) => confirmed(confirm, self.confirms).await,
            Err(outcome) => outcome,
        }
    }

    /// Publisher confirms over a window: the publish goes out now, in the order of
    /// the invokes, and the confirm is awaited by the returned future.
    async fn enqueue(&mut self, key: &str, value: i64) -> Option<crate::client::PendingSend> {
        let published = self.publish(key, value).await;
        let confirms = self.confirms;
        Some(Box::pin(async move {
            match published {
                Ok(confirm) => confirmed(confirm, confirms).await,
                Err(outcome) => outcome,
            }
        }))
    }
}

struct RabbitConsumer {
    _conn: Connection,
    ch: Channel,
    consumer: lapin::Consumer,
    manual_ack: bool,
}

#[async_trait]
impl Consumer for RabbitConsumer {
    async fn poll(&mut self, max: usize, wait: Duration) -> Outcome<Vec<Received>> {
        let mut out = Vec::new();
        let mut limit = wait;
        while out.len() < max {
            match tokio::time::timeout(limit, self.consumer.next()).await {
                Err(_) => break,
                Ok(None) => {
                    if out.is_empty() {
                        return Outcome::Info("consumer cancelled".into());
                    }
                    break;
                }
                Ok(Some(Err(e))) => {
                    if out.is_empty() {
                        return Outcome::Info(e.to_string());
                    }
                    break;
                }
                Ok(Some(Ok(d))) => {
                    let Ok((key, value)) = parse_body(&d.data) else {
                        continue;
                    };
                    out.push(Received {
                        key,
                        value,
                        stored: Stored::default(),
                        redelivered: d.redelivered,
                        ack_token: d.delivery_tag.to_string(),
                    });
                    // After the first message, take only what is already here.
                    limit = Duration::from_millis(5);
                }
            }
        }
        Outcome::Ok(out)
    }

    async fn ack(&mut self, msgs: &[Received]) -> Outcome<()> {
        if !self.manual_ack {
            return Outcome::Ok(());
        }
        for m in msgs {
            let Ok(tag) = m.ack_token.parse::<u64>() else {
                return Outcome::Fail(format!("bad delivery tag {}", m.ack_token));
            };
            match self.ch.basic_ack(tag, BasicAckOptions::default()).await {
                Ok(()) => {}
                Err(e) => return Outcome::Info(e.to_string()),
            }
        }
        Outcome::Ok(())
    }

    fn acks(&self) -> bool {
        self.manual_ack
    }

    /// `basic.nack` with requeue: the queue delivers them again (seed D7's
    /// fail-closed consumer, which neither processed nor acknowledged them).
    async fn release(&mut self, msgs: &[Received]) -> Outcome<()> {
        if !self.manual_ack {
            return Outcome::Ok(());
        }
        for m in msgs {
            let Ok(tag) = m.ack_token.parse::<u64>() else {
                return Outcome::Fail(format!("bad delivery tag {}", m.ack_token));
            };
            let requeue = BasicNackOptions {
                multiple: false,
                requeue: true,
            };
            if let Err(e) = self.ch.basic_nack(tag, requeue).await {
                return Outcome::Info(e.to_string());
            }
        }
        Outcome::Ok(())
    }
}
