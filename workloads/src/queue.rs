//! The `queue` workload: producers send unique values with keys (in per-key
//! order); consumers poll, process and acknowledge, each in its own OS process
//! (`gauntlet worker`), so a nemesis can SIGKILL one between processing and ack.
use crate::client::{Consumer, Driver, Outcome, Received, Stored};
use crate::keys::{KeyDistribution, KeyPicker};
use crate::recorder::Recorder;
use crate::settings::AckPoint;
use crate::stall::{stall_here, Stall, StallPoint};
use gauntlet_history::{Actor, Event, Message, OpType, Payload};
use serde::{Deserialize, Serialize};
use serde_json::{json, Value};
use std::sync::atomic::{AtomicBool, AtomicI64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// The seeded PRNG the generators share (SplitMix64): the same seed gives the same keys.
pub use gauntlet_history::rng::Rng;

/// Producer side of the workload.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case", default, deny_unknown_fields)]
pub struct QueueConfig {
    /// Producers, each with its own client.
    pub producers: usize,
    /// Consumer worker processes per group.
    pub consumers: usize,
    /// Distinct keys the producers send to (`k0`, `k1`, ...).
    pub keys: usize,
    /// Messages per poll at most.
    pub batch: usize,
    /// Simulated processing time per message, in milliseconds.
    pub processing_ms: u64,
    /// Consumer groups (queues, subscriptions); each gets every message.
    pub groups: Vec<String>,
    /// Sends each producer keeps in flight on its one client (`in-flight`; the
    /// earlier name `pipeline` is still read). 1: each send waits for the one
    /// before. More needs a client that pipelines
    /// ([`BrokerKind::pipelines`](crate::BrokerKind::pipelines)): each in-flight send
    /// is its own process in the history, and every send names its producer, whose
    /// order is the order of its invocations (seed O1).
    #[serde(alias = "pipeline")]
    pub in_flight: usize,
    /// Which keys the sends go to, and how often (`key-distribution`: `uniform`,
    /// `zipf:S`, `hot:SHARE`; seed O6). See [`crate::keys`].
    pub key_distribution: KeyDistribution,
}

impl Default for QueueConfig {
    fn default() -> Self {
        QueueConfig {
            producers: 2,
            consumers: 2,
            keys: 8,
            batch: 16,
            processing_ms: 1,
            groups: vec!["g1".to_string()],
            in_flight: 1,
            key_distribution: KeyDistribution::Uniform,
        }
    }
}

fn stored_json(key: &str, value: i64, s: &Stored) -> Value {
    let mut v = json!({"key": key, "value": value});
    if let Some(p) = s.partition {
        v["partition"] = json!(p);
    }
    if let Some(o) = s.offset {
        v["offset"] = json!(o);
    }
    if let Some(id) = &s.id {
        v["id"] = json!(id);
    }
    v
}

/// Runs `cfg.producers` producers until `stop`, at `rate` sends per second in all.
/// Values come from `next_value` (unique across the run). Each send under way
/// counts in `in_flight` (raised before it, lowered after it), which the run
/// hands the nemesis too (for faults that must hit mid-batch). Returns the
/// sends made.
#[allow(clippy::too_many_arguments)]
pub async fn run_producers(
    driver: Arc<dyn Driver>,
    recorder: Arc<Recorder>,
    cfg: QueueConfig,
    rate: f64,
    seed: u64,
    next_value: Arc<AtomicI64>,
    stop: Arc<AtomicBool>,
    in_flight: Arc<AtomicI64>,
) -> u64 {
    let mut tasks = Vec::new();
    let per_producer = (rate / cfg.producers.max(1) as f64).max(0.1);
    if cfg.in_flight > 1 {
        for p in 0..cfg.producers {
            tasks.push(tokio::spawn(pipelined_producer(
                driver.clone(),
                recorder.clone(),
                p as u64,
                cfg.in_flight,
                KeyPicker::new(cfg.key_distribution, cfg.keys),
                per_producer,
                Rng::new(seed.wrapping_mul(31).wrapping_add(p as u64)),
                next_value.clone(),
                stop.clone(),
                in_flight.clone(),
            )));
        }
    }
    for p in 0..cfg.producers * usize::from(cfg.in_flight <= 1) {
        let (driver, recorder, next_value, stop, in_flight) = (
            driver.clone(),
            recorder.clone(),
            next_value.clone(),
            stop.clone(),
            in_flight.clone(),
        );
        let keys = KeyPicker::new(cfg.key_distribution, cfg.keys);
        tasks.push(tokio::spawn(async move {
            let mut rng = Rng::new(seed.wrapping_mul(31).wrapping_add(p as u64));
            let interval = Duration::from_secs_f64(1.0 / per_producer);
            let mut sent = 0u64;
            let start = Instant::now();
            // A failed history write stops the producer: a send whose invoke was
            // not recorded would be a message the history never heard of.
            'outer: while !stop.load(Ordering::Relaxed) && !recorder.failed() {
                let process = recorder.new_process();
                let mut producer = match driver.producer(process).await {
                    Ok(p) => p,
                    Err(_) => {
                        tokio::time::sleep(Duration::from_millis(500)).await;
                        continue;
                    }
                };
                while !stop.load(Ordering::Relaxed) {
                    // Pace: the n-th send of this producer is due at n * interval.
                    let due = start + interval.mul_f64(sent as f64);
                    let now = Instant::now();
                    if due > now {
                        tokio::time::sleep(due - now).await;
                    }
                    let key = keys.key(&mut rng);
                    let value = next_value.fetch_add(1, Ordering::Relaxed);
                    let actor = Actor::Client(process);
                    if recorder
                        .record(
                            &Event::new(actor.clone(), OpType::Invoke, "send")
                                .message(Message::new(key.as_str(), value)),
                        )
                        .is_err()
                    {
                        break 'outer;
                    }
                    in_flight.fetch_add(1, Ordering::Relaxed);
                    let began = Instant::now();
                    let outcome = producer.send(&key, value).await;
                    recorder.send_latency(began.elapsed());
                    in_flight.fetch_sub(1, Ordering::Relaxed);
                    sent += 1;
                    if recorder
                        .record(&send_end(actor, &key, value, &outcome))
                        .is_err()
                    {
                        break 'outer;
                    }
                    if let Outcome::Info(_) | Outcome::Fail(_) = outcome {
                        // Unknown state: this client comes back under a new process number.
                        // A definite failure too: it may be a dead connection or channel
                        // (lapin's "invalid channel state" after a reset), which the
                        // same client would keep failing on.
                        continue 'outer;
                    }
                }
            }
            sent
        }));
    }
    let mut total = 0;
    for t in tasks {
        total += t.await.unwrap_or(0);
    }
    total
}

fn send_end(actor: Actor, key: &str, value: i64, outcome: &Outcome<Stored>) -> Event {
    match outcome {
        Outcome::Ok(s) => Event::new(actor, OpType::Ok, "send").message(Message {
            partition: s.partition,
            offset: s.offset,
            id: s.id.clone(),
            ..Message::new(key, value)
        }),
        Outcome::Fail(e) => Event::new(actor, OpType::Fail, "send")
            .message(Message::new(key, value))
            .error(e.clone()),
        Outcome::Info(e) => Event::new(actor, OpType::Info, "send")
            .message(Message::new(key, value))
            .error(e.clone()),
    }
}

/// How long a pipelined producer waits for its client to take a send.
const HANDOVER_TIMEOUT: Duration = Duration::from_secs(10);

/// One producer client with up to `depth` sends in flight. Each in-flight send has
/// a slot, and each slot is a process of the history (a slot whose send ended
/// unknown or failed comes back under a new number); every invoke names
/// `producer`, so the checker orders the producer's sends by invocation across
/// its slots. Invoke and hand-over to the client happen in this one task, the
/// invokes recorded first, so the history's invoke order is the client's order.
///
/// Each turn of the loop records, each group in one write: the completions
/// that are ready (a pipeline's answers arrive together), then the invokes of
/// the sends that are due and have a free slot, which are then handed over in
/// that order. Every send keeps its own invoke and its own completion; a
/// group's events carry the time of their write.
#[allow(clippy::too_many_arguments)]
async fn pipelined_producer(
    driver: Arc<dyn Driver>,
    recorder: Arc<Recorder>,
    producer_no: u64,
    depth: usize,
    keys: KeyPicker,
    rate: f64,
    mut rng: Rng,
    next_value: Arc<AtomicI64>,
    stop: Arc<AtomicBool>,
    in_flight_sends: Arc<AtomicI64>,
) -> u64 {
    use futures_util::stream::{FuturesUnordered, StreamExt};
    use futures_util::FutureExt;
    let mut producer = loop {
        if stop.load(Ordering::Relaxed) {
            return 0;
        }
        match driver.producer(recorder.new_process()).await {
            Ok(p) => break p,
            Err(_) => tokio::time::sleep(Duration::from_millis(500)).await,
        }
    };
    let interval = Duration::from_secs_f64(1.0 / rate);
    let start = Instant::now();
    let mut free: Vec<u64> = (0..depth).map(|_| recorder.new_process()).collect();
    type Ended = (u64, String, i64, Instant, Outcome<Stored>);
    let mut in_flight: FuturesUnordered<
        std::pin::Pin<Box<dyn std::future::Future<Output = Ended> + Send>>,
    > = FuturesUnordered::new();
    let mut sent = 0u64;
    let mut ended: Vec<Event> = Vec::with_capacity(depth);
    let mut due_now: Vec<(u64, String, i64)> = Vec::with_capacity(depth);
    let mut invokes: Vec<Event> = Vec::with_capacity(depth);
    // Slot bookkeeping for one completion; its event goes into `ended`.
    let complete = |done: Ended, ended: &mut Vec<Event>, free: &mut Vec<u64>| {
        let (process, key, value, began, outcome) = done;
        recorder.send_latency(Instant::now().saturating_duration_since(began));
        in_flight_sends.fetch_sub(1, Ordering::Relaxed);
        ended.push(send_end(Actor::Client(process), &key, value, &outcome));
        free.push(match outcome {
            Outcome::Ok(_) => process,
            // Unknown or failed: that slot comes back under a new process number.
            _ => recorder.new_process(),
        });
    };
    loop {
        // The completions that are ready now, recorded together.
        while let Some(Some(done)) = in_flight.next().now_or_never() {
            complete(done, &mut ended, &mut free);
        }
        if !ended.is_empty() {
            // Refused after a failed write: `stopping` below ends the loop.
            let _ = recorder.record_all(&ended);
            ended.clear();
        }
        let stopping = stop.load(Ordering::Relaxed) || recorder.failed();
        if stopping && in_flight.is_empty() {
            break;
        }
        // The sends that are due and have a slot: invokes first, in one write,
        // then each handed over in that order.
        if !stopping {
            let now = Instant::now();
            while !free.is_empty() && start + interval.mul_f64(sent as f64) <= now {
                let Some(process) = free.pop() else { break };
                let key = keys.key(&mut rng);
                let value = next_value.fetch_add(1, Ordering::Relaxed);
                invokes.push(
                    Event::new(Actor::Client(process), OpType::Invoke, "send")
                        .producer(producer_no)
                        .message(Message::new(key.as_str(), value)),
                );
                due_now.push((process, key, value));
                sent += 1;
            }
            if !due_now.is_empty() {
                let recorded = recorder.record_all(&invokes).is_ok();
                invokes.clear();
                if !recorded {
                    // Not recorded: not sent either.
                    sent -= due_now.len() as u64;
                    free.extend(due_now.drain(..).map(|(p, _, _)| p));
                    continue;
                }
                for (process, key, value) in due_now.drain(..) {
                    in_flight_sends.fetch_add(1, Ordering::Relaxed);
                    let began = Instant::now();
                    // The hand-over is awaited here, in the order of the invokes; a
                    // client that cannot take the send in time leaves it unknown.
                    let handed =
                        tokio::time::timeout(HANDOVER_TIMEOUT, producer.enqueue(&key, value)).await;
                    let pending: crate::client::PendingSend = match handed {
                        Ok(Some(p)) => p,
                        Ok(None) => {
                            let outcome = Outcome::Fail(format!(
                                "{}'s client does not pipeline sends ([queue] in-flight > 1)",
                                driver.name()
                            ));
                            Box::pin(async move { outcome })
                        }
                        Err(_) => {
                            let outcome = Outcome::Info(format!(
                                "the client did not take the send within {HANDOVER_TIMEOUT:?}"
                            ));
                            Box::pin(async move { outcome })
                        }
                    };
                    in_flight.push(Box::pin(async move {
                        let outcome = pending.await;
                        (process, key, value, began, outcome)
                    }));
                }
                continue;
            }
        }
        // Nothing to do now: wait for a completion, the next due send, or (every
        // 100 ms) the stop check.
        let can_send = !stopping && !free.is_empty();
        let due = start + interval.mul_f64(sent as f64);
        tokio::select! {
            Some(done) = in_flight.next(), if !in_flight.is_empty() => {
                complete(done, &mut ended, &mut free);
            }
            _ = tokio::time::sleep_until(due.into()), if can_send => {}
            _ = tokio::time::sleep(Duration::from_millis(100)) => {}
        }
    }
    sent
}

/// One event a worker reports to the harness, which stamps index, time and process.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct WireEvent {
    /// `type`: `invoke`, `ok`, `fail` or `info`.
    #[serde(rename = "type")]
    pub kind: String,
    /// `f`: what was done (`poll`, `ack`, `commit`, ...).
    pub f: String,
    /// `group`: the consumer group.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub group: Option<String>,
    /// `value`, as the history will hold it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub value: Option<Value>,
    /// `error`: the error text of a `fail` or `info`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
}

impl WireEvent {
    /// The history event for process `process`; `None` if the type is not one of the four.
    pub fn into_event(self, process: u64) -> Option<Event> {
        let kind = match self.kind.as_str() {
            "invoke" => OpType::Invoke,
            "ok" => OpType::Ok,
            "fail" => OpType::Fail,
            "info" => OpType::Info,
            _ => return None,
        };
        Some(Event {
            process: Actor::Client(process),
            kind,
            f: self.f.into(),
            group: self.group,
            producer: None,
            value: self.value.map(Payload::Json),
            error: self.error,
            drain: None,
        })
    }
}

/// How a consumer worker runs.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct ConsumerConfig {
    /// The consumer group.
    pub group: String,
    /// Messages per poll at most.
    pub batch: usize,
    /// How long a poll waits for messages.
    pub wait: Duration,
    /// Simulated processing time per message.
    pub processing: Duration,
    /// When the consumer acknowledges (or commits), relative to processing.
    pub ack_point: AckPoint,
    /// Exit after this many polls in a row brought nothing (the final drain); `None`: run until killed.
    pub drain_after_empty: Option<u32>,
}

pub(crate) fn received_json(m: &Received) -> Value {
    let mut v = stored_json(&m.key, m.value, &m.stored);
    if m.redelivered {
        v["redelivered"] = json!(true);
    }
    v
}

pub(crate) fn wire(
    kind: &str,
    f: &str,
    group: &str,
    value: Option<Value>,
    error: Option<String>,
) -> WireEvent {
    WireEvent {
        kind: kind.into(),
        f: f.into(),
        group: Some(group.into()),
        value,
        error,
    }
}

pub(crate) async fn ack(
    consumer: &mut dyn Consumer,
    cfg: &ConsumerConfig,
    msgs: &[Received],
    emit: &mut dyn FnMut(WireEvent),
) -> bool {
    if !consumer.acks() || msgs.is_empty() {
        return true;
    }
    let values: Vec<i64> = msgs.iter().map(|m| m.value).collect();
    emit(wire("invoke", "ack", &cfg.group, Some(json!(values)), None));
    match consumer.ack(msgs).await {
        Outcome::Ok(()) => {
            emit(wire("ok", "ack", &cfg.group, Some(json!(values)), None));
            true
        }
        Outcome::Fail(e) => {
            emit(wire(
                "fail",
                "ack",
                &cfg.group,
                Some(json!(values)),
                Some(e),
            ));
            true
        }
        Outcome::Info(e) => {
            emit(wire(
                "info",
                "ack",
                &cfg.group,
                Some(json!(values)),
                Some(e),
            ));
            false
        }
    }
}

/// A poll's `ok` completion with the messages it delivered.
pub(crate) fn poll_ok(cfg: &ConsumerConfig, msgs: &[Received]) -> WireEvent {
    wire(
        "ok",
        "poll",
        &cfg.group,
        Some(Value::Array(msgs.iter().map(received_json).collect())),
        None,
    )
}

/// What one recorded poll gave a consumer loop.
pub(crate) enum Polled {
    /// It ended `ok` with these messages (its completion not yet recorded).
    Got(Vec<Received>),
    /// It ended `fail` (recorded, after a short pause): poll again.
    Again,
    /// Its end is unknown (recorded): the worker ends, and comes back under a new number.
    Gone,
}

/// Records a poll's invoke, polls, and records a `fail` or `info` end; an `ok`
/// end is the caller's to record (after processing, or with what it did).
pub(crate) async fn poll_recorded(
    consumer: &mut dyn Consumer,
    cfg: &ConsumerConfig,
    emit: &mut dyn FnMut(WireEvent),
) -> Polled {
    emit(wire("invoke", "poll", &cfg.group, None, None));
    match consumer.poll(cfg.batch, cfg.wait).await {
        Outcome::Ok(msgs) => Polled::Got(msgs),
        Outcome::Fail(e) => {
            emit(wire("fail", "poll", &cfg.group, None, Some(e)));
            tokio::time::sleep(Duration::from_millis(200)).await;
            Polled::Again
        }
        Outcome::Info(e) => {
            emit(wire("info", "poll", &cfg.group, None, Some(e)));
            Polled::Gone
        }
    }
}

/// The consumer loop of a worker, reporting every op through `emit`.
///
/// A poll's `ok` is recorded once its batch has been processed: a delivery in
/// the history means "handed to the application and processed". With
/// acknowledgement after processing: poll, process, record the poll, ack (recorded).
/// With acknowledgement before processing (the at-most-once hazard of the
/// seed's D5): poll, ack (not recorded: it happens inside the poll op), process,
/// record the poll; a consumer killed while processing leaves its poll without
/// completion, and its acknowledged messages are lost.
///
/// Returns when the drain found nothing more, when `stop` is set, or when an op's
/// outcome is unknown (the harness then starts a fresh worker under a new number).
pub async fn run_consumer(
    consumer: &mut dyn Consumer,
    cfg: &ConsumerConfig,
    stop: &AtomicBool,
    stall: &Stall,
    emit: &mut dyn FnMut(WireEvent),
) {
    let mut empty = 0u32;
    while !stop.load(Ordering::Relaxed) {
        let msgs = match poll_recorded(consumer, cfg, emit).await {
            Polled::Got(msgs) => msgs,
            Polled::Again => continue,
            Polled::Gone => return,
        };
        let record = |emit: &mut dyn FnMut(WireEvent), msgs: &[Received]| emit(poll_ok(cfg, msgs));
        if msgs.is_empty() {
            record(emit, &msgs);
            empty += 1;
            if cfg.drain_after_empty.is_some_and(|n| empty >= n) {
                return;
            }
            continue;
        }
        empty = 0;
        let before = cfg.ack_point == AckPoint::BeforeProcessing;
        if before {
            if let Outcome::Info(e) = consumer.ack(&msgs).await {
                emit(wire(
                    "info",
                    "poll",
                    &cfg.group,
                    None,
                    Some(format!("ack: {e}")),
                ));
                return;
            }
            stall_here(stall, StallPoint::AfterAck, emit).await;
        }
        if !cfg.processing.is_zero() {
            tokio::time::sleep(cfg.processing * msgs.len() as u32).await;
        }
        record(emit, &msgs);
        if !before {
            stall_here(stall, StallPoint::BeforeAck, emit).await;
            if !ack(consumer, cfg, &msgs, emit).await {
                return;
            }
        }
    }
}

/// The `type` of the line a drain worker writes when the broker answered, and
/// still answered [`MISSING_CONFIRM`] later, that its stream, queue or topic
/// does not exist (`f` is `drain`; the value is [`MissingAnswer`]).
pub const MISSING: &str = "missing";

/// How long a drain worker keeps asking after the first "does not exist"
/// before it takes the answer as final: a cluster that is still recovering can
/// answer so for a moment.
pub const MISSING_CONFIRM: Duration = Duration::from_secs(10);

/// The value of a drain worker's [`MISSING`] line.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct MissingAnswer {
    /// What is missing, in words: `stream gauntlet`.
    pub what: String,
    /// The broker's last answer.
    pub answer: String,
    /// Milliseconds from the first such answer to the last.
    pub confirmed_after_ms: u64,
}

/// What the final drain's consumer found.
pub enum DrainSource {
    /// A consumer, ready to read to the end.
    Ready(Box<dyn Consumer>),
    /// The broker answered that the source does not exist, and still did
    /// [`MISSING_CONFIRM`] later.
    Missing(MissingAnswer),
}

/// The final drain's consumer: as [`connect_consumer`], except that a broker
/// answering that the stream, queue or topic does not exist is asked again
/// until `confirm` has passed since its first such answer (`patience` is
/// stretched for that); if every answer from then on says the same, that is
/// the drain's result. Any other error in between leaves the first answer's
/// time as it was, but a consumer made at last wins.
pub async fn connect_drain_consumer(
    driver: &dyn Driver,
    group: &str,
    process: u64,
    patience: Duration,
    confirm: Duration,
) -> Result<DrainSource, crate::client::ClientError> {
    use crate::client::ClientError;
    let start = Instant::now();
    let mut first_missing: Option<Instant> = None;
    loop {
        match driver.consumer(group, process).await {
            Ok(c) => return Ok(DrainSource::Ready(c)),
            Err(ClientError::Missing { what, answer, .. }) => {
                let first = *first_missing.get_or_insert_with(Instant::now);
                if first.elapsed() >= confirm {
                    return Ok(DrainSource::Missing(MissingAnswer {
                        what,
                        answer,
                        confirmed_after_ms: first.elapsed().as_millis() as u64,
                    }));
                }
            }
            Err(e) if start.elapsed() >= patience && first_missing.is_none() => return Err(e),
            Err(e) if first_missing.is_some_and(|f| f.elapsed() >= patience + confirm) => {
                return Err(e)
            }
            Err(_) => {}
        }
        tokio::time::sleep(Duration::from_millis(500)).await;
    }
}

/// Makes a consumer for a worker, retrying the connection for a while (a broker may be restarting).
pub async fn connect_consumer(
    driver: &dyn Driver,
    group: &str,
    process: u64,
    patience: Duration,
) -> Result<Box<dyn Consumer>, crate::client::ClientError> {
    let start = Instant::now();
    loop {
        match driver.consumer(group, process).await {
            Ok(c) => return Ok(c),
            Err(e) if start.elapsed() >= patience => return Err(e),
            Err(_) => tokio::time::sleep(Duration::from_millis(500)).await,
        }
    }
}

/// The reference loop of `gauntlet bench run` for a broker whose image has no
/// benchmark tool of its own: `producers` clients of the same driver, each with
/// up to `in_flight` sends under way (handed over with the driver's `enqueue` as
/// the workload's producers do, or one `send` at a time when `in_flight` is 1),
/// sending back to back for `time` and waiting for every acknowledgement. No
/// event is formatted or recorded. Returns the sends acknowledged (`Ok`) and how
/// long the loop ran (the last acknowledgement included).
pub async fn bare_producers(
    driver: Arc<dyn Driver>,
    producers: usize,
    in_flight: usize,
    time: Duration,
) -> (u64, Duration) {
    use futures_util::stream::{FuturesUnordered, StreamExt};
    let start = Instant::now();
    let deadline = start + time;
    let next_value = Arc::new(AtomicI64::new(0));
    let mut tasks = Vec::new();
    for p in 0..producers.max(1) {
        let (driver, next_value) = (driver.clone(), next_value.clone());
        tasks.push(tokio::spawn(async move {
            let mut producer = loop {
                if Instant::now() >= deadline {
                    return 0u64;
                }
                match driver.producer(p as u64).await {
                    Ok(c) => break c,
                    Err(_) => tokio::time::sleep(Duration::from_millis(200)).await,
                }
            };
            let mut acked = 0u64;
            let mut pending: FuturesUnordered<crate::client::PendingSend> = FuturesUnordered::new();
            let mut n = 0u64;
            loop {
                let sending = Instant::now() < deadline;
                if !sending && pending.is_empty() {
                    break;
                }
                let key = format!("k{}", n % 8);
                n += 1;
                if sending && in_flight <= 1 {
                    let value = next_value.fetch_add(1, Ordering::Relaxed);
                    if let Outcome::Ok(_) = producer.send(&key, value).await {
                        acked += 1;
                    }
                    continue;
                }
                if sending && pending.len() < in_flight {
                    let value = next_value.fetch_add(1, Ordering::Relaxed);
                    match producer.enqueue(&key, value).await {
                        Some(f) => pending.push(f),
                        None => break,
                    }
                    continue;
                }
                if let Some(Outcome::Ok(_)) = pending.next().await {
                    acked += 1;
                }
            }
            acked
        }));
    }
    let mut total = 0;
    for t in tasks {
        total += t.await.unwrap_or(0);
    }
    (total, start.elapsed())
}
