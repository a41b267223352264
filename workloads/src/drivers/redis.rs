//! Redis Streams: one stream, a consumer group per group, XACK after processing,
//! XAUTOCLAIM to take over what crashed consumers left pending.
use crate::client::{ClientError, Consumer, Driver, Outcome, Producer, Received, Stored};
use crate::settings::Resolved;
use async_trait::async_trait;
use redis::aio::MultiplexedConnection;
use redis::{RedisError, Value};
use std::future::Future;
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
    /// The final drain's driver: a consumer first asks whether the stream and
    /// its group still exist, and a "no" is [`ClientError::Missing`].
    pub drain: bool,
}

impl Redis {
    /// A driver for the node at `addr` (host:port), claiming after [`CLAIM_IDLE`].
    pub fn new(addr: &str, settings: Resolved) -> Self {
        Redis {
            url: format!("redis://{addr}/"),
            settings,
            claim_idle: CLAIM_IDLE,
            drain: false,
        }
    }

    /// For the final drain: whether the stream and `group` still exist. A
    /// primary that lost its data (a power loss of its AOF, a wipe) answers
    /// "no such key", or lists no such group once a producer's XADD made the
    /// stream again; XREADGROUP would fail with NOGROUP until the drain gave up.
    async fn source_exists(
        &self,
        con: &mut MultiplexedConnection,
        group: &str,
    ) -> Result<(), ClientError> {
        let r: Result<redis::streams::StreamInfoGroupsReply, RedisError> = redis::cmd("XINFO")
            .arg("GROUPS")
            .arg(STREAM)
            .query_async(con)
            .await;
        match r {
            Ok(reply) if reply.groups.iter().any(|g| g.name == group) => Ok(()),
            Ok(reply) => Err(ClientError::Missing {
                broker: "redis",
                what: format!("consumer group {group} of stream {STREAM}"),
                answer: format!(
                    "XINFO GROUPS {STREAM} lists {} group(s), not {group}",
                    reply.groups.len()
                ),
            }),
            Err(e)
                if e.kind() == redis::ErrorKind::ResponseError
                    && e.to_string().contains("no such key") =>
            {
                Err(ClientError::Missing {
                    broker: "redis",
                    what: format!("stream {STREAM}"),
                    answer: e.to_string(),
                })
            }
            // Anything else (a timeout, a loading replica): the polls will say.
            Err(_) => Ok(()),
        }
    }

    async fn connect(&self) -> Result<MultiplexedConnection, ClientError> {
        connect(&self.url).await
    }
}

/// A multiplexed connection to the node at `url`.
pub(crate) async fn connect(url: &str) -> Result<MultiplexedConnection, ClientError> {
    let connect_err = |e: RedisError| ClientError::Connect {
        broker: "redis",
        addr: url.to_string(),
        reason: e.to_string(),
    };
    let client = redis::Client::open(url).map_err(connect_err)?;
    client
        .get_multiplexed_async_connection()
        .await
        .map_err(connect_err)
}

/// The one place Redis errors become outcomes.
pub(crate) fn classify<T>(e: RedisError) -> Outcome<T> {
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

pub(crate) async fn timed<T>(
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
            url: self.url.clone(),
            pipe: None,
        }))
    }

    async fn consumer(&self, group: &str, process: u64) -> Result<Box<dyn Consumer>, ClientError> {
        let mut con = self.connect().await?;
        if self.drain {
            self.source_exists(&mut con, group).await?;
        }
        Ok(Box::new(RedisConsumer {
            con,
            group: group.to_string(),
            name: format!("c{process}"),
            manual_ack: self.settings.manual_ack,
            claim_idle: self.claim_idle,
            last_claim: None,
        }))
    }
}

/// How long a send (or a pipeline of them) may wait for Redis's answer before it is
/// unknown.
const REPLY_TIMEOUT: Duration = Duration::from_secs(5);
/// The most XADDs one pipeline carries.
const PIPELINE_MAX: usize = 1024;

/// A send handed to the pipelining task, and where its outcome goes.
type Queued = (String, i64, tokio::sync::oneshot::Sender<Outcome<Stored>>);

struct RedisProducer {
    con: MultiplexedConnection,
    /// For the pipelining task to connect again after a lost connection.
    url: String,
    /// The pipelining task's queue, started by the first `enqueue`.
    pipe: Option<tokio::sync::mpsc::UnboundedSender<Queued>>,
}

fn xadd(key: &str, value: i64) -> redis::Cmd {
    // Built in place: `.to_owned()` after the chain would copy the command once more.
    let mut c = redis::cmd("XADD");
    c.arg(STREAM)
        .arg("*")
        .arg("key")
        .arg(key)
        .arg("value")
        .arg(value);
    c
}

/// The words of the XADD a producer sends for `key` and `value`, as a command
/// line: what `gauntlet bench run`'s `redis-benchmark` reference sends, so that
/// both put the same bytes through Redis (a shorter command fits more of a
/// pipeline into one read of Redis's, and so into one fsync).
pub fn xadd_words(key: &str, value: i64) -> Vec<String> {
    ["XADD", STREAM, "*", "key", key, "value", &value.to_string()]
        .map(String::from)
        .to_vec()
}

/// The outcome of one XADD from its place in a pipeline's answer.
fn xadd_outcome(v: Value) -> Outcome<Stored> {
    match v {
        Value::ServerError(e) => {
            // Definite: Redis answered this command with an error (OOM, READONLY...).
            Outcome::Fail(format!("{}: {}", e.code(), e.details().unwrap_or_default()))
        }
        other => match text(&other) {
            Some(id) => Outcome::Ok(Stored {
                id: Some(id),
                ..Stored::default()
            }),
            None => Outcome::Info(format!("unexpected XADD answer {other:?}")),
        },
    }
}

/// A new connection to `url` for the pipelining task, or why there is none.
async fn reconnect(url: &str) -> Result<MultiplexedConnection, String> {
    match tokio::time::timeout(REPLY_TIMEOUT, connect(url)).await {
        Ok(Ok(c)) => Ok(c),
        Ok(Err(e)) => Err(format!("reconnecting: {e}")),
        Err(_) => Err(format!(
            "reconnecting: no connection within {REPLY_TIMEOUT:?}"
        )),
    }
}

/// The most pipelines of one producer under way on its connection at once.
/// Redis answers a connection's commands in the order they arrive, so a
/// pipeline need not wait for the one before it: the sends queued while one is
/// on the wire go out as the next. With one at a time, the sends a producer
/// queued while the first few of its window were already being written waited
/// a whole round (an fsync under `appendfsync always`) for their own pipeline:
/// 2026-12-07, the pipelines carried 128 sends on average of a 256 window, and
/// the producers reached 0.61 of `redis-benchmark` on one node.
const PIPELINES_MAX: usize = 8;

/// A pipeline's answers: awaited in place, then taken.
type Answers = std::pin::Pin<
    Box<
        futures_util::future::MaybeDone<
            futures_util::future::BoxFuture<'static, Outcome<Vec<Value>>>,
        >,
    >,
>;

/// One pipeline on the wire: its sends' outcome channels and its answers.
struct OnWire {
    sends: Vec<tokio::sync::oneshot::Sender<Outcome<Stored>>>,
    answers: Answers,
}

impl OnWire {
    /// Writes the queued `batch` to `con` as one pipeline. Its future is polled
    /// once here, which hands its bytes to the connection, so pipelines reach
    /// Redis in the order this is called (the connection's queue is FIFO).
    async fn send(con: &MultiplexedConnection, batch: &mut Vec<Queued>) -> OnWire {
        let mut pipe = redis::pipe();
        let mut sends = Vec::with_capacity(batch.len());
        for (key, value, tx) in batch.drain(..) {
            pipe.add_command(xadd(&key, value));
            sends.push(tx);
        }
        let n = sends.len();
        let mut c = con.clone();
        let fut: futures_util::future::BoxFuture<'static, Outcome<Vec<Value>>> = Box::pin(
            async move { timed(REPLY_TIMEOUT, c.send_packed_commands(&pipe, 0, n)).await },
        );
        let mut answers = Box::pin(futures_util::future::maybe_done(fut));
        std::future::poll_fn(|cx| {
            // Ready or not, the pipeline is handed over; its answers are awaited later.
            let _ = answers.as_mut().poll(cx);
            std::task::Poll::Ready(())
        })
        .await;
        OnWire { sends, answers }
    }

    /// Hands each send its own outcome from the answers, which have come; false
    /// when the connection is to be given up (no answer, or an error for the
    /// whole pipeline).
    fn settle(mut self) -> bool {
        let answers = self
            .answers
            .as_mut()
            .take_output()
            .unwrap_or_else(|| Outcome::Info("the pipeline's answer was already taken".into()));
        let n = self.sends.len();
        match answers {
            Outcome::Ok(values) if values.len() == n => {
                for (tx, v) in self.sends.into_iter().zip(values) {
                    let _ = tx.send(xadd_outcome(v));
                }
                true
            }
            Outcome::Ok(values) => {
                let e = format!("{} answers to a pipeline of {n}", values.len());
                end_all(self.sends, Outcome::Info(e));
                true
            }
            Outcome::Fail(e) => {
                end_all(self.sends, Outcome::Fail(e));
                false
            }
            Outcome::Info(e) => {
                end_all(self.sends, Outcome::Info(e));
                false
            }
        }
    }
}

/// Ends each of `sends` with the same outcome (a pipeline that failed as a whole).
fn end_all(
    sends: impl IntoIterator<Item = tokio::sync::oneshot::Sender<Outcome<Stored>>>,
    o: Outcome<Stored>,
) {
    for tx in sends {
        let _ = tx.send(o.clone());
    }
}

/// The pipelining task of one producer: takes the queued sends in order and
/// writes what has queued as one pipeline (at most [`PIPELINE_MAX`] sends),
/// with up to [`PIPELINES_MAX`] pipelines on the connection at once; each
/// send gets its own outcome from its place in its pipeline's answer. All on
/// one connection, so Redis appends the sends in the order they were handed
/// over. A pipeline Redis does not answer within [`REPLY_TIMEOUT`] ends each
/// of its sends unknown (`Info`); a refused connection fails them (nothing
/// reached the server). After either, the connection is given up: once every
/// pipeline still on it has its answer or its error, the next pipeline goes
/// over a new connection (a restarted node closed the old one), so no send on
/// the new connection overtakes one on the old.
async fn pipeline_task(
    con: MultiplexedConnection,
    url: String,
    mut rx: tokio::sync::mpsc::UnboundedReceiver<Queued>,
) {
    let mut con = Some(con);
    let mut batch: Vec<Queued> = Vec::with_capacity(PIPELINE_MAX);
    let mut on_wire: std::collections::VecDeque<OnWire> = std::collections::VecDeque::new();
    let mut closed = false;
    loop {
        if closed && on_wire.is_empty() {
            return;
        }
        // Take sends while a pipeline may go out (a new connection only once
        // the old one has none on it); else wait for the oldest's answer. One
        // branch is always on: `may_send` is false only with a pipeline on the wire.
        let may_send =
            !closed && on_wire.len() < PIPELINES_MAX && (con.is_some() || on_wire.is_empty());
        tokio::select! {
            biased;
            q = rx.recv(), if may_send => match q {
                Some(q) => batch.push(q),
                None => closed = true,
            },
            ok = settle_front(&mut on_wire), if !on_wire.is_empty() => {
                if !ok {
                    con = None;
                }
            }
        }
        if batch.is_empty() {
            continue;
        }
        while batch.len() < PIPELINE_MAX {
            match rx.try_recv() {
                Ok(q) => batch.push(q),
                Err(_) => break,
            }
        }
        if con.is_none() {
            match reconnect(&url).await {
                Ok(c) => con = Some(c),
                Err(e) => {
                    // Definite: no connection, nothing of this pipeline was written.
                    end_all(batch.drain(..).map(|(_, _, tx)| tx), Outcome::Fail(e));
                    continue;
                }
            }
        }
        if let Some(c) = con.as_ref() {
            on_wire.push_back(OnWire::send(c, &mut batch).await);
        }
    }
}

/// Settles the oldest pipeline on the wire; false when its connection is to be
/// given up (true when there was none).
async fn settle_front(on_wire: &mut std::collections::VecDeque<OnWire>) -> bool {
    match on_wire.front_mut() {
        Some(front) => {
            // Cancel-safe: the answers stay in `front` until it is popped, with
            // no await between the pop and the outcomes handed out.
            (&mut front.answers).await;
            on_wire.pop_front().is_none_or(OnWire::settle)
        }
        None => true,
    }
}

#[async_trait]
impl Producer for RedisProducer {
    async fn enqueue(&mut self, key: &str, value: i64) -> Option<crate::client::PendingSend> {
        let pipe = self.pipe.get_or_insert_with(|| {
            let (tx, rx) = tokio::sync::mpsc::unbounded_channel();
            tokio::spawn(pipeline_task(self.con.clone(), self.url.clone(), rx));
            tx
        });
        let (tx, rx) = tokio::sync::oneshot::channel();
        let queued = pipe.send((key.to_string(), value, tx)).is_ok();
        Some(Box::pin(async move {
            if !queued {
                // Definite: the pipelining task is gone, nothing was written.
                return Outcome::Fail("the pipelining task has ended".into());
            }
            rx.await.unwrap_or_else(|_| {
                // The task dropped the send after taking it: it may have been written.
                Outcome::Info("the pipelining task ended with the send taken".into())
            })
        }))
    }

    async fn send(&mut self, key: &str, value: i64) -> Outcome<Stored> {
        let cmd = xadd(key, value);
        match timed(REPLY_TIMEOUT, cmd.query_async::<String>(&mut self.con)).await {
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_benchmark_s_command_is_byte_for_byte_the_producers_xadd() {
        for (key, value) in [("k1", 0), ("k12", 1_234_567), ("k0", -5)] {
            let mut words = redis::cmd("XADD");
            for w in &xadd_words(key, value)[1..] {
                words.arg(w);
            }
            assert_eq!(
                words.get_packed_command(),
                xadd(key, value).get_packed_command()
            );
        }
    }
}
