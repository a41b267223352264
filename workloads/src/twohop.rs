//! The `two-hop` workload (seed row O7, `docs/twohop.md`): a pipeline of two
//! streams. Producers send to stream A; transformers consume A, send one
//! output per input to stream B (the send names the input's value in its
//! `input` field) and then acknowledge (or commit) A; consumers read B.
//!
//! Everything runs here, on any two [`Driver`]s of one broker (stream A is
//! the driver's usual stream or topic, B its `-b` twin): [`drivers`] makes
//! them for NATS JetStream and the Kafka protocol. Both hops' polls and acks
//! are recorded in the history group [`GROUP`]: each message, of either
//! stream, is due to reach the pipeline once, so the standard checks judge
//! both hops and the two-hop pass follows each input through them.
//!
//! A transformer crash (`crash-rate`) drops the transformer's clients after
//! it sent a batch's outputs and before it acknowledged its inputs, as a
//! transformer killed between its send and its ack: the inputs come back
//! (after NATS's ack wait, or from Kafka's last commit) to a transformer that
//! comes back under a new process number.
use crate::client::{ClientError, Consumer, Driver, Outcome, Producer, Received, Stored};
use crate::recorder::Recorder;
use crate::settings::Resolved;
use crate::BrokerKind;
use gauntlet_history::rng::Rng;
use gauntlet_history::{Actor, Event, OpType};
use serde::{Deserialize, Serialize};
use serde_json::{json, Value};
use std::sync::atomic::{AtomicBool, AtomicI64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// The history group of both hops' polls and acks.
pub const GROUP: &str = "two-hop";
/// The broker group (NATS durable, Kafka consumer group) of the transformers on A.
pub const TRANSFORM_GROUP: &str = "two-hop-transform";
/// The broker group of the consumers on B.
pub const CONSUME_GROUP: &str = "two-hop-consume";
/// Stream (NATS) or topic (Kafka) B: A's name with this suffix.
pub const B_SUFFIX: &str = "-b";
/// Outputs are numbered from here, apart from the inputs.
pub const OUTPUT_BASE: i64 = 1_000_000_000;
/// A transformer or consumer ends after this long with nothing to read, once
/// the producers (for a consumer: the transformers) are done and the faults healed.
const QUIET: Duration = Duration::from_secs(8);
const POLL_WAIT: Duration = Duration::from_millis(500);

/// Where a kill asked of the transformers ([`Kills`]) takes one.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum KillPoint {
    /// At the first of the points below it reaches, or while it waits for input.
    Any,
    /// After it sent a batch's outputs, before it acknowledged the inputs.
    BeforeAck,
    /// After it acknowledged a batch, before its next poll.
    AfterAck,
}

/// Kills asked of the transformers (the nemesis's `kill-consumer`, which the
/// harness hands here): the chosen transformer, on reaching the point, drops
/// its clients as a killed process would (nothing more is sent or
/// acknowledged) and comes back under a new process number.
#[derive(Default)]
pub struct Kills {
    asked: Mutex<Option<Asked>>,
    transformers: AtomicUsize,
}

struct Asked {
    transformer: usize,
    at: KillPoint,
    done: tokio::sync::oneshot::Sender<u64>,
}

impl Kills {
    /// Kills transformer `pick` (modulo their number) at `at`; the process
    /// number killed, or why none was within `within`.
    pub async fn kill(&self, pick: u64, at: KillPoint, within: Duration) -> Result<u64, String> {
        let n = self.transformers.load(Ordering::Relaxed).max(1);
        let transformer = (pick % n as u64) as usize;
        let (done, answer) = tokio::sync::oneshot::channel();
        if let Ok(mut a) = self.asked.lock() {
            *a = Some(Asked {
                transformer,
                at,
                done,
            });
        }
        let got = tokio::time::timeout(within, answer).await;
        if let Ok(mut a) = self.asked.lock() {
            *a = None;
        }
        match got {
            Ok(Ok(p)) => Ok(p),
            _ => Err(format!(
                "transformer {transformer} did not reach {at:?} within {within:?}"
            )),
        }
    }

    /// Whether transformer `i`, at `here`, is to die now (and says so, with its process).
    fn take(&self, i: usize, here: KillPoint, process: u64) -> bool {
        let Ok(mut a) = self.asked.lock() else {
            return false;
        };
        let due = a
            .as_ref()
            .is_some_and(|k| k.transformer == i && (k.at == here || k.at == KillPoint::Any));
        if !due {
            return false;
        }
        if let Some(k) = a.take() {
            let _ = k.done.send(process);
        }
        true
    }
}

/// The `[two-hop]` table of a scenario.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case", deny_unknown_fields)]
pub struct TwoHopConfig {
    /// Transformers sharing stream A's one durable consumer (NATS) or
    /// consumer group (Kafka). 1 keeps a key's inputs in one transformer.
    #[serde(default = "one")]
    pub transformers: usize,
    /// Consumers of stream B (one group).
    #[serde(default = "one")]
    pub consumers: usize,
    /// Messages a transformer takes per poll at most.
    #[serde(default = "ten")]
    pub batch: usize,
    /// The share of a transformer's batches after which it crashes: outputs
    /// sent, inputs not acknowledged (0 to 1).
    #[serde(default)]
    pub crash_rate: f64,
    /// Simulated transform time per message, before its output is sent: on
    /// average this many milliseconds, drawn (seeded) from 0 to twice it.
    #[serde(default)]
    pub processing_ms: u64,
    /// Inputs a transformer transforms at once (a worker pool in the
    /// transformer, over one producer client): each output is sent as soon as
    /// its own transform ends, so with `processing-ms` > 0 a later input of a
    /// key can overtake an earlier one (seed O7's unsafe side on any broker).
    /// 1: one at a time, in the order read.
    #[serde(default = "one")]
    pub workers: usize,
}

fn one() -> usize {
    1
}
fn ten() -> usize {
    10
}

impl Default for TwoHopConfig {
    fn default() -> Self {
        TwoHopConfig {
            transformers: 1,
            consumers: 1,
            batch: 10,
            crash_rate: 0.0,
            processing_ms: 0,
            workers: 1,
        }
    }
}

impl TwoHopConfig {
    /// Refuses a setting no broker can honour, naming it.
    pub fn check(&self) -> Result<(), String> {
        if self.transformers == 0 || self.consumers == 0 || self.batch == 0 || self.workers == 0 {
            return Err(format!(
                "[two-hop] transformers = {}, consumers = {}, batch = {}, workers = {}: each \
                 needs at least 1",
                self.transformers, self.consumers, self.batch, self.workers
            ));
        }
        if !(0.0..=1.0).contains(&self.crash_rate) {
            return Err(format!(
                "[two-hop] crash-rate = {}: a share, 0 to 1",
                self.crash_rate
            ));
        }
        Ok(())
    }
}

/// What else the workload needs: the producers and the pace (the scenario's `[queue]`, `rate`, `seed`).
#[derive(Debug, Clone)]
pub struct TwoHopRun {
    /// Producers of stream A.
    pub producers: usize,
    /// Keys of the inputs.
    pub keys: usize,
    /// Inputs per second, all producers together (infinite: as fast as acknowledged).
    pub rate: f64,
    /// How long producers send.
    pub time: Duration,
    /// Seeds the transformers' crashes.
    pub seed: u64,
    /// The stream or topic names (A, B), as recorded in `topic`.
    pub topics: (String, String),
}

/// Counts for the progress line and the run outcome.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct TwoHopSummary {
    /// Inputs whose send ended `ok`.
    pub inputs: u64,
    /// Outputs whose send ended `ok`.
    pub outputs: u64,
    /// Outputs the consumers received (every delivery).
    pub delivered: u64,
    /// Transformer crashes.
    pub crashes: u64,
}

/// Stream A's driver, stream B's, and their names (A, B).
pub type Hops = (Arc<dyn Driver>, Arc<dyn Driver>, (String, String));

/// The drivers of stream A and stream B for `broker`: NATS JetStream and the
/// Kafka protocol; any other broker is refused, named.
pub fn drivers(
    broker: BrokerKind,
    addrs: &[String],
    settings: Resolved,
    replicas: Option<usize>,
) -> Result<Hops, ClientError> {
    match broker {
        BrokerKind::Nats => {
            let a = crate::drivers::nats::Nats::new(addrs, settings.clone(), false)
                .with_replicas(replicas)?;
            let b_name = format!("{}{B_SUFFIX}", a.stream);
            let names = (a.stream.clone(), b_name.clone());
            let b = crate::drivers::nats::Nats::new(addrs, settings, false)
                .with_replicas(replicas)?
                .with_stream(&b_name);
            Ok((Arc::new(a), Arc::new(b), names))
        }
        BrokerKind::Kafka => {
            let a = crate::drivers::kafka::Kafka::new(addrs, settings.clone(), false)?;
            let b_name = format!("{}{B_SUFFIX}", a.topic);
            let names = (a.topic.clone(), b_name.clone());
            let b = crate::drivers::kafka::Kafka::new(addrs, settings, false)?.with_topic(&b_name);
            Ok((Arc::new(a), Arc::new(b), names))
        }
        other => Err(ClientError::Unsupported {
            broker: other.name(),
            what: "the two-hop workload (NATS JetStream and the Kafka protocol run it)".into(),
        }),
    }
}

fn record(rec: &Recorder, e: Event) {
    let _ = rec.record(&e);
}

fn stored_json(key: &str, value: i64, topic: &str, s: &Stored) -> Value {
    let mut v = json!({"key": key, "value": value, "topic": topic});
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

fn received_json(m: &Received, topic: &str) -> Value {
    let mut v = stored_json(&m.key, m.value, topic, &m.stored);
    if m.redelivered {
        v["redelivered"] = json!(true);
    }
    v
}

/// One send, recorded: invoke, then its end. `input`: a transformer's send.
async fn send_one(
    rec: &Recorder,
    p: u64,
    producer: &mut dyn Producer,
    key: &str,
    value: i64,
    input: Option<i64>,
    topic: &str,
) -> Outcome<Stored> {
    let mut invoke = json!({"key": key, "value": value});
    if let Some(i) = input {
        invoke["input"] = json!(i);
    }
    record(
        rec,
        Event::new(Actor::Client(p), OpType::Invoke, "send").value(invoke.clone()),
    );
    let out = producer.send(key, value).await;
    match &out {
        Outcome::Ok(s) => {
            let mut v = stored_json(key, value, topic, s);
            if let Some(i) = input {
                v["input"] = json!(i);
            }
            record(
                rec,
                Event::new(Actor::Client(p), OpType::Ok, "send").value(v),
            );
        }
        Outcome::Fail(e) => record(
            rec,
            Event::new(Actor::Client(p), OpType::Fail, "send")
                .value(invoke)
                .error(e.clone()),
        ),
        Outcome::Info(e) => record(
            rec,
            Event::new(Actor::Client(p), OpType::Info, "send")
                .value(invoke)
                .error(e.clone()),
        ),
    }
    out
}

/// One poll, recorded; `None` when it did not end `ok` (the consumer is then replaced).
async fn poll_one(
    rec: &Recorder,
    p: u64,
    consumer: &mut dyn Consumer,
    max: usize,
    topic: &str,
) -> Option<Vec<Received>> {
    record(
        rec,
        Event::new(Actor::Client(p), OpType::Invoke, "poll").group(GROUP),
    );
    match consumer.poll(max, POLL_WAIT).await {
        Outcome::Ok(ms) => {
            let v: Vec<Value> = ms.iter().map(|m| received_json(m, topic)).collect();
            record(
                rec,
                Event::new(Actor::Client(p), OpType::Ok, "poll")
                    .group(GROUP)
                    .value(Value::Array(v)),
            );
            Some(ms)
        }
        Outcome::Fail(e) => {
            record(
                rec,
                Event::new(Actor::Client(p), OpType::Fail, "poll")
                    .group(GROUP)
                    .error(e),
            );
            None
        }
        Outcome::Info(e) => {
            record(
                rec,
                Event::new(Actor::Client(p), OpType::Info, "poll")
                    .group(GROUP)
                    .error(e),
            );
            None
        }
    }
}

/// Acknowledges what was polled, recorded; whether it ended `ok`.
async fn ack_all(rec: &Recorder, p: u64, consumer: &mut dyn Consumer, ms: &[Received]) -> bool {
    if ms.is_empty() || !consumer.acks() {
        return true;
    }
    let values: Vec<i64> = ms.iter().map(|m| m.value).collect();
    record(
        rec,
        Event::new(Actor::Client(p), OpType::Invoke, "ack")
            .group(GROUP)
            .value(json!(values)),
    );
    let (kind, err) = match consumer.ack(ms).await {
        Outcome::Ok(()) => (OpType::Ok, None),
        Outcome::Fail(e) => (OpType::Fail, Some(e)),
        Outcome::Info(e) => (OpType::Info, Some(e)),
    };
    let mut e = Event::new(Actor::Client(p), kind, "ack")
        .group(GROUP)
        .value(json!(values));
    if let Some(err) = err {
        e = e.error(err);
    }
    record(rec, e);
    kind == OpType::Ok
}

struct Shared {
    rec: Arc<Recorder>,
    next_input: AtomicI64,
    next_output: AtomicI64,
    /// Producers stopped and the faults healed.
    producers_done: AtomicBool,
    /// Transformers still running.
    transformers_left: AtomicUsize,
    summary: Mutex<TwoHopSummary>,
    topics: (String, String),
}

impl Shared {
    fn add(&self, f: impl FnOnce(&mut TwoHopSummary)) {
        if let Ok(mut s) = self.summary.lock() {
            f(&mut s);
        }
    }
}

async fn producer_task(
    a: Arc<dyn Driver>,
    sh: Arc<Shared>,
    keys: usize,
    period: Option<Duration>,
    stop: Arc<AtomicBool>,
) {
    let mut p = sh.rec.new_process();
    let mut client: Option<Box<dyn Producer>> = None;
    while !stop.load(Ordering::Relaxed) && !sh.rec.failed() {
        let c = match client.as_mut() {
            Some(c) => c,
            None => match a.producer(p).await {
                Ok(c) => client.insert(c),
                Err(_) => {
                    tokio::time::sleep(Duration::from_millis(300)).await;
                    continue;
                }
            },
        };
        let value = sh.next_input.fetch_add(1, Ordering::Relaxed);
        let key = format!("k{}", value % keys.max(1) as i64);
        match send_one(&sh.rec, p, c.as_mut(), &key, value, None, &sh.topics.0).await {
            Outcome::Ok(_) => sh.add(|s| s.inputs += 1),
            Outcome::Fail(_) => {}
            Outcome::Info(_) => {
                // Unknown: this client comes back under a new process number.
                p = sh.rec.new_process();
                client = None;
            }
        }
        if let Some(period) = period {
            tokio::time::sleep(period).await;
        }
    }
}

async fn transformer_task(
    a: Arc<dyn Driver>,
    b: Arc<dyn Driver>,
    sh: Arc<Shared>,
    cfg: TwoHopConfig,
    mut rng: Rng,
    me: usize,
    kills: Arc<Kills>,
) {
    let mut p = sh.rec.new_process();
    let mut clients: Option<(Box<dyn Consumer>, Box<dyn Producer>)> = None;
    let mut last_read = Instant::now();
    loop {
        if sh.rec.failed()
            || (sh.producers_done.load(Ordering::Relaxed) && last_read.elapsed() >= QUIET)
        {
            break;
        }
        let (consumer, producer) = match clients.as_mut() {
            Some(c) => c,
            None => {
                let made = match a.consumer(TRANSFORM_GROUP, p).await {
                    Ok(c) => match b.producer(p).await {
                        Ok(pr) => Some((c, pr)),
                        Err(_) => None,
                    },
                    Err(_) => None,
                };
                match made {
                    Some(c) => clients.insert(c),
                    None => {
                        tokio::time::sleep(Duration::from_millis(300)).await;
                        continue;
                    }
                }
            }
        };
        let Some(ms) = poll_one(&sh.rec, p, consumer.as_mut(), cfg.batch, &sh.topics.0).await
        else {
            p = sh.rec.new_process();
            clients = None;
            continue;
        };
        if ms.is_empty() {
            if kills.take(me, KillPoint::Any, p) {
                clients = None;
                p = sh.rec.new_process();
            }
            continue;
        }
        last_read = Instant::now();
        // Transform: one output per input, one send at a time; in the order read,
        // or, with a worker pool, in the order the transforms end.
        let mut unknown = false;
        let plan = transform_plan(&mut rng, ms.len(), cfg.processing_ms, cfg.workers);
        let began = Instant::now();
        for &(i, done_ms) in &plan {
            let m = &ms[i];
            if cfg.workers <= 1 {
                if done_ms > 0 {
                    tokio::time::sleep(Duration::from_millis(done_ms)).await;
                }
            } else {
                let due = began + Duration::from_millis(done_ms);
                tokio::time::sleep_until(due.into()).await;
            }
            let value = OUTPUT_BASE + sh.next_output.fetch_add(1, Ordering::Relaxed);
            match send_one(
                &sh.rec,
                p,
                producer.as_mut(),
                &m.key,
                value,
                Some(m.value),
                &sh.topics.1,
            )
            .await
            {
                Outcome::Ok(_) => sh.add(|s| s.outputs += 1),
                Outcome::Fail(_) => {}
                Outcome::Info(_) => {
                    unknown = true;
                    break;
                }
            }
        }
        let killed = kills.take(me, KillPoint::BeforeAck, p);
        if unknown || killed || (cfg.crash_rate > 0.0 && rng.chance(cfg.crash_rate)) {
            // Killed between the sends and the ack (or a send's end unknown):
            // the clients go without acknowledging; the inputs come back.
            if !unknown && !killed {
                sh.add(|s| s.crashes += 1);
            }
            clients = None;
            p = sh.rec.new_process();
            continue;
        }
        if !ack_all(&sh.rec, p, consumer.as_mut(), &ms).await
            || kills.take(me, KillPoint::AfterAck, p)
        {
            clients = None;
            p = sh.rec.new_process();
        }
    }
    sh.transformers_left.fetch_sub(1, Ordering::Relaxed);
}

/// The order a batch of `n` inputs is transformed in, each with when its output
/// is due. One worker: the inputs in the order read, each after its own
/// transform time (milliseconds to wait before its send). `workers` > 1: a pool
/// that takes the inputs in the order read, each as a worker comes free; the
/// outputs are sent in the order the transforms end (a time from the batch's
/// start), ties in the order read. Transform times are drawn (seeded) from 0 to
/// twice `processing_ms`, one per input, in the order read.
fn transform_plan(
    rng: &mut Rng,
    n: usize,
    processing_ms: u64,
    workers: usize,
) -> Vec<(usize, u64)> {
    let times: Vec<u64> = (0..n)
        .map(|_| {
            if processing_ms > 0 {
                rng.below(2 * processing_ms + 1)
            } else {
                0
            }
        })
        .collect();
    if workers <= 1 {
        return times.into_iter().enumerate().collect();
    }
    let mut free = vec![0u64; workers];
    let mut done: Vec<(usize, u64)> = times
        .iter()
        .enumerate()
        .map(|(i, t)| {
            let w = (0..workers).min_by_key(|&w| (free[w], w)).unwrap_or(0);
            free[w] += t;
            (i, free[w])
        })
        .collect();
    done.sort_by_key(|&(i, at)| (at, i));
    done
}

async fn consumer_task(b: Arc<dyn Driver>, sh: Arc<Shared>) {
    let mut p = sh.rec.new_process();
    let mut client: Option<Box<dyn Consumer>> = None;
    let mut last_read = Instant::now();
    loop {
        let upstream_done = sh.producers_done.load(Ordering::Relaxed)
            && sh.transformers_left.load(Ordering::Relaxed) == 0;
        if sh.rec.failed() || (upstream_done && last_read.elapsed() >= QUIET) {
            break;
        }
        let c = match client.as_mut() {
            Some(c) => c,
            None => match b.consumer(CONSUME_GROUP, p).await {
                Ok(c) => client.insert(c),
                Err(_) => {
                    tokio::time::sleep(Duration::from_millis(300)).await;
                    continue;
                }
            },
        };
        let Some(ms) = poll_one(&sh.rec, p, c.as_mut(), 50, &sh.topics.1).await else {
            p = sh.rec.new_process();
            client = None;
            continue;
        };
        if ms.is_empty() {
            continue;
        }
        last_read = Instant::now();
        sh.add(|s| s.delivered += ms.len() as u64);
        if !ack_all(&sh.rec, p, c.as_mut(), &ms).await {
            p = sh.rec.new_process();
            client = None;
        }
    }
}

/// Runs the pipeline: producers for `run.time` (alongside `faults`, the
/// harness's schedule and final heal), then transformers and consumers until
/// both streams stay quiet; then the `drained` marker.
/// `kills`: where the harness's `kill-consumer` reaches the transformers.
pub async fn run<F: std::future::Future<Output = ()>>(
    a: Arc<dyn Driver>,
    b: Arc<dyn Driver>,
    rec: Arc<Recorder>,
    cfg: TwoHopConfig,
    run: TwoHopRun,
    kills: Arc<Kills>,
    faults: F,
) -> Result<TwoHopSummary, ClientError> {
    kills
        .transformers
        .store(cfg.transformers.max(1), Ordering::Relaxed);
    a.setup(&[TRANSFORM_GROUP.to_string()]).await?;
    b.setup(&[CONSUME_GROUP.to_string()]).await?;
    let sh = Arc::new(Shared {
        rec: rec.clone(),
        next_input: AtomicI64::new(0),
        next_output: AtomicI64::new(0),
        producers_done: AtomicBool::new(false),
        transformers_left: AtomicUsize::new(cfg.transformers.max(1)),
        summary: Mutex::new(TwoHopSummary::default()),
        topics: run.topics.clone(),
    });
    let producers = run.producers.max(1);
    let period = run
        .rate
        .is_finite()
        .then(|| Duration::from_secs_f64(producers as f64 / run.rate.max(0.001)));
    let stop = Arc::new(AtomicBool::new(false));
    let mut ps = Vec::new();
    for _ in 0..producers {
        ps.push(tokio::spawn(producer_task(
            a.clone(),
            sh.clone(),
            run.keys,
            period,
            stop.clone(),
        )));
    }
    let mut ts = Vec::new();
    for i in 0..cfg.transformers.max(1) {
        let rng = Rng::new(run.seed.wrapping_add(7919 * (i as u64 + 1)));
        ts.push(tokio::spawn(transformer_task(
            a.clone(),
            b.clone(),
            sh.clone(),
            cfg.clone(),
            rng,
            i,
            kills.clone(),
        )));
    }
    let mut cs = Vec::new();
    for _ in 0..cfg.consumers.max(1) {
        cs.push(tokio::spawn(consumer_task(b.clone(), sh.clone())));
    }
    let sleep = async {
        tokio::time::sleep(run.time).await;
        stop.store(true, Ordering::Relaxed);
    };
    tokio::join!(sleep, faults);
    stop.store(true, Ordering::Relaxed);
    for p in ps {
        let _ = p.await;
    }
    let _ = rec.phase("drain");
    sh.producers_done.store(true, Ordering::Relaxed);
    for t in ts {
        let _ = t.await;
    }
    for c in cs {
        let _ = c.await;
    }
    if !rec.failed() {
        let _ = rec.drained(&gauntlet_history::DrainEnd::caught_up());
    }
    let s = sh.summary.lock().map(|s| *s).unwrap_or_default();
    Ok(s)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_table_reads_with_defaults_and_refuses_what_cannot_run() {
        let c: TwoHopConfig = serde_json::from_str(r#"{"transformers": 3}"#).expect("table");
        assert_eq!(c.transformers, 3);
        assert_eq!(c.consumers, 1);
        assert!(c.check().is_ok());
        for (bad, name) in [
            (r#"{"transformers": 0}"#, "transformers = 0"),
            (r#"{"batch": 0}"#, "batch = 0"),
            (r#"{"crash-rate": 1.5}"#, "crash-rate = 1.5"),
            (r#"{"workers": 0}"#, "workers = 0"),
        ] {
            let c: TwoHopConfig = serde_json::from_str(bad).expect(bad);
            let e = c.check().expect_err(bad);
            assert!(e.contains(name), "{e}");
        }
        assert!(serde_json::from_str::<TwoHopConfig>(r#"{"transformer": 2}"#).is_err());
    }

    #[test]
    fn only_nats_and_kafka_run_it() {
        let s = crate::settings::Delivery::default().resolve();
        let addrs = vec!["127.0.0.1:1".to_string()];
        let (_, _, names) = drivers(BrokerKind::Nats, &addrs, s.clone(), None).expect("nats");
        assert_eq!(names, ("gauntlet".to_string(), "gauntlet-b".to_string()));
        let e = drivers(BrokerKind::Redis, &addrs, s, None)
            .err()
            .map(|e| e.to_string())
            .unwrap_or_default();
        assert!(e.contains("redis") && e.contains("two-hop"), "{e}");
    }

    #[test]
    fn a_worker_pool_sends_in_the_order_the_transforms_end() {
        // One worker: the order read, each with its own wait.
        let mut a = Rng::new(4);
        let one = transform_plan(&mut a, 5, 20, 1);
        assert_eq!(one.iter().map(|p| p.0).collect::<Vec<_>>(), [0, 1, 2, 3, 4]);
        let mut b = Rng::new(4);
        let times: Vec<u64> = (0..5).map(|_| b.below(41)).collect();
        assert_eq!(one.iter().map(|p| p.1).collect::<Vec<_>>(), times);
        // Three workers over the same times: each input starts when a worker is
        // free, and the outputs go in the order the transforms end.
        let pool = transform_plan(&mut Rng::new(4), 5, 20, 3);
        let mut free = [0u64; 3];
        let mut want: Vec<(usize, u64)> = Vec::new();
        for (i, t) in times.iter().enumerate() {
            let w = (0..3).min_by_key(|&w| (free[w], w)).expect("a worker");
            free[w] += t;
            want.push((i, free[w]));
        }
        want.sort_by_key(|&(i, at)| (at, i));
        assert_eq!(pool, want);
        assert!(pool.windows(2).all(|w| w[0].1 <= w[1].1));
        // No transform time: the order read, whatever the pool.
        let flat = transform_plan(&mut Rng::new(4), 4, 0, 3);
        assert_eq!(flat, [(0, 0), (1, 0), (2, 0), (3, 0)]);
    }
}
