//! Redis Streams: one stream, a consumer group per group, XACK after processing,
//! XAUTOCLAIM to take over what crashed consumers left pending.
use crate::client::{ClientError, Consumer, Driver, Outcome, Producer, Received, Stored};
use crate::settings::Resolved;
use async_trait::async_trait;
use redis::aio::MultiplexedConnection;
use redis::{RedisError, Value};
use std::time::{Duration, Instant};

const STREAM: &str = "gauntlet";
/// How long a pending message must sit idle before another consumer claims it.
pub const CLAIM_IDLE: Duration = Duration::from_secs(5);

/// The Redis Streams driver.
pub struct Redis {
    /// The `redis://host:port/` URL of the node.
    pub url: String,
    /// The delivery settings.
    pub settings: Resolved,
    /// Claim idle time; 0 for drain consumers, which take over everything pending.
    pub claim_idle: Duration,
}

impl Redis {
    /// A driver for the node at `addr` (host:port), claiming after [`CLAIM_IDLE`].
    pub fn new(addr: &str, settings: Resolved) -> Self {
        Redis {
            url: format!("redis://{addr}/"),
            settings,
            claim_idle: CLAIM_IDLE,
        }
    }

    async fn connect(&self) -> Result<MultiplexedConnection, ClientError> {
        let connect_err = |e: RedisError| ClientError::Connect {
            broker: "redis",
            addr: self.url.clone(),
            reason: e.to_string(),
        };
        let client = redis::Client::open(self.url.as_str()).map_err(connect_err)?;
        client
            .get_multiplexed_async_connection()
            .await
            .map_err(connect_err)
    }
}

/// The one place Redis errors become outcomes.
fn classify<T>(e: RedisError) -> Outcome<T> {
    if e.is_connection_refusal() {
        // Definite: no connection, so the command never reached the server.
        return Outcome::Fail(e.to_string());
    }
    if e.kind() == redis::ErrorKind::ResponseError || e.kind() == redis::ErrorKind::ReadOnly {
        // Definite: the server answered that it refused the command (OOM, READONLY...).
        return Outcome::Fail(e.to_string());
    }
    // Timeouts, dropped connections, anything else: it may or may not have happened.
    Outcome::Info(e.to_string())
}

async fn timed<T>(
    limit: Duration,
    f: impl std::future::Future<Output = Result<T, RedisError>>,
) -> Outcome<T> {
    match tokio::time::timeout(limit, f).await {
        Ok(Ok(v)) => Outcome::Ok(v),
        Ok(Err(e)) => classify(e),
        Err(_) => Outcome::Info(format!("no answer within {limit:?}")),
    }
}

#[async_trait]
impl Driver for Redis {
    fn name(&self) -> &'static str {
        "redis"
    }

    async fn setup(&self, groups: &[String]) -> Result<(), ClientError> {
        let mut con = self.connect().await?;
        for g in groups {
            let r: Result<Value, RedisError> = redis::cmd("XGROUP")
                .arg("CREATE")
                .arg(STREAM)
                .arg(g)
                .arg("0")
                .arg("MKSTREAM")
                .query_async(&mut con)
                .await;
            match r {
                Ok(_) => {}
                Err(e) if e.code() == Some("BUSYGROUP") => {}
                Err(e) => {
                    return Err(ClientError::Setup {
                        broker: "redis",
                        reason: format!("XGROUP CREATE {g}: {e}"),
                    })
                }
            }
        }
        Ok(())
    }

    async fn producer(&self, _process: u64) -> Result<Box<dyn Producer>, ClientError> {
        Ok(Box::new(RedisProducer {
            con: self.connect().await?,
        }))
    }

    async fn consumer(&self, group: &str, process: u64) -> Result<Box<dyn Consumer>, ClientError> {
        Ok(Box::new(RedisConsumer {
            con: self.connect().await?,
            group: group.to_string(),
            name: format!("c{process}"),
            manual_ack: self.settings.manual_ack,
            claim_idle: self.claim_idle,
            last_claim: None,
        }))
    }
}

struct RedisProducer {
    con: MultiplexedConnection,
}

#[async_trait]
impl Producer for RedisProducer {
    async fn send(&mut self, key: &str, value: i64) -> Outcome<Stored> {
        let cmd = redis::cmd("XADD")
            .arg(STREAM)
            .arg("*")
            .arg("key")
            .arg(key)
            .arg("value")
            .arg(value)
            .to_owned();
        match timed(
            Duration::from_secs(5),
            cmd.query_async::<String>(&mut self.con),
        )
        .await
        {
            Outcome::Ok(id) => Outcome::Ok(Stored {
                id: Some(id),
                ..Stored::default()
            }),
            Outcome::Fail(e) => Outcome::Fail(e),
            Outcome::Info(e) => Outcome::Info(e),
        }
    }
}

struct RedisConsumer {
    con: MultiplexedConnection,
    group: String,
    name: String,
    manual_ack: bool,
    claim_idle: Duration,
    last_claim: Option<Instant>,
}

fn text(v: &Value) -> Option<String> {
    match v {
        Value::BulkString(b) => Some(String::from_utf8_lossy(b).into_owned()),
        Value::SimpleString(s) => Some(s.clone()),
        Value::Int(i) => Some(i.to_string()),
        _ => None,
    }
}

/// One stream entry `[id, [field, value, ...]]`.
fn entry(v: &Value, redelivered: bool) -> Option<Received> {
    let Value::Array(parts) = v else { return None };
    let id = text(parts.first()?)?;
    let Value::Array(fields) = parts.get(1)? else {
        return None;
    };
    let (mut key, mut value) = (None, None);
    for kv in fields.chunks(2) {
        match (kv.first().and_then(text).as_deref(), kv.get(1)) {
            (Some("key"), Some(v)) => key = text(v),
            (Some("value"), Some(v)) => value = text(v).and_then(|s| s.parse::<i64>().ok()),
            _ => {}
        }
    }
    Some(Received {
        key: key?,
        value: value?,
        stored: Stored {
            id: Some(id.clone()),
            ..Stored::default()
        },
        redelivered,
        ack_token: id,
    })
}

impl RedisConsumer {
    /// XAUTOCLAIM: take over entries other consumers left pending for `claim_idle`.
    async fn claim(&mut self, max: usize) -> Outcome<Vec<Received>> {
        let cmd = redis::cmd("XAUTOCLAIM")
            .arg(STREAM)
            .arg(&self.group)
            .arg(&self.name)
            .arg(self.claim_idle.as_millis() as u64)
            .arg("0-0")
            .arg("COUNT")
            .arg(max)
            .to_owned();
        match timed(
            Duration::from_secs(5),
            cmd.query_async::<Value>(&mut self.con),
        )
        .await
        {
            Outcome::Ok(Value::Array(parts)) => {
                let list = match parts.get(1) {
                    Some(Value::Array(entries)) => {
                        entries.iter().filter_map(|e| entry(e, true)).collect()
                    }
                    _ => Vec::new(),
                };
                Outcome::Ok(list)
            }
            Outcome::Ok(other) => Outcome::Info(format!("unexpected XAUTOCLAIM reply {other:?}")),
            Outcome::Fail(e) => Outcome::Fail(e),
            Outcome::Info(e) => Outcome::Info(e),
        }
    }
}

#[async_trait]
impl Consumer for RedisConsumer {
    async fn poll(&mut self, max: usize, wait: Duration) -> Outcome<Vec<Received>> {
        // Claims only matter with manual acks (NOACK reads leave nothing pending).
        let claim_due = self
            .last_claim
            .is_none_or(|t| t.elapsed() >= Duration::from_secs(1));
        if self.manual_ack && claim_due {
            self.last_claim = Some(Instant::now());
            match self.claim(max).await {
                Outcome::Ok(list) if !list.is_empty() => return Outcome::Ok(list),
                Outcome::Ok(_) => {}
                other => return other,
            }
        }
        let mut cmd = redis::cmd("XREADGROUP");
        cmd.arg("GROUP")
            .arg(&self.group)
            .arg(&self.name)
            .arg("COUNT")
            .arg(max)
            .arg("BLOCK")
            .arg(wait.as_millis().max(1) as u64);
        if !self.manual_ack {
            cmd.arg("NOACK");
        }
        cmd.arg("STREAMS").arg(STREAM).arg(">");
        match timed(
            wait + Duration::from_secs(5),
            cmd.query_async::<Value>(&mut self.con),
        )
        .await
        {
            Outcome::Ok(Value::Nil) => Outcome::Ok(Vec::new()),
            Outcome::Ok(Value::Array(streams)) => {
                let mut out = Vec::new();
                for s in &streams {
                    if let Value::Array(kv) = s {
                        if let Some(Value::Array(entries)) = kv.get(1) {
                            out.extend(entries.iter().filter_map(|e| entry(e, false)));
                        }
                    }
                }
                Outcome::Ok(out)
            }
            Outcome::Ok(Value::Map(m)) => {
                let mut out = Vec::new();
                for (_, v) in &m {
                    if let Value::Array(entries) = v {
                        out.extend(entries.iter().filter_map(|e| entry(e, false)));
                    }
                }
                Outcome::Ok(out)
            }
            Outcome::Ok(other) => Outcome::Info(format!("unexpected XREADGROUP reply {other:?}")),
            Outcome::Fail(e) => Outcome::Fail(e),
            Outcome::Info(e) => Outcome::Info(e),
        }
    }

    async fn ack(&mut self, msgs: &[Received]) -> Outcome<()> {
        if !self.manual_ack || msgs.is_empty() {
            return Outcome::Ok(());
        }
        let mut cmd = redis::cmd("XACK");
        cmd.arg(STREAM).arg(&self.group);
        for m in msgs {
            cmd.arg(&m.ack_token);
        }
        match timed(
            Duration::from_secs(5),
            cmd.query_async::<i64>(&mut self.con),
        )
        .await
        {
            Outcome::Ok(_) => Outcome::Ok(()),
            Outcome::Fail(e) => Outcome::Fail(e),
            Outcome::Info(e) => Outcome::Info(e),
        }
    }

    fn acks(&self) -> bool {
        self.manual_ack
    }
}
