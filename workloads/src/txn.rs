//! The `txn` workload for the Kafka protocol: consume-transform-produce with
//! transactions (scenario D9).
//!
//! A seeder sends values to the input topic (plain `send` ops). Each
//! transformer is a read_committed consumer of the input topic (one group)
//! with a transactional producer (`transactional.id` per transformer): it
//! begins a transaction, polls a batch, sends one output value per input to
//! the output topic, adds its consumer offsets to the transaction
//! (`send_offsets_to_transaction`) and commits. Each transaction is one `txn`
//! op: `ok` = committed, `fail` = aborted (on purpose, at `abort_rate`, or
//! when the broker refused it definitely), `info` = unknown (commit timed
//! out, the client was destroyed mid-transaction at `crash_rate`). After an
//! `info` the transformer comes back under a new process number with the same
//! transactional id (which fences the old producer). At the end a fresh
//! read_committed consumer reads the output topic from the start (plain
//! `poll` ops), so the checker sees which outputs became visible.
use crate::client::{body, parse_body, ClientError};
use crate::recorder::Recorder;
use gauntlet_history::rng::Rng;
use gauntlet_history::{Actor, Event, OpType};
use rdkafka::admin::{AdminClient, AdminOptions, NewTopic, TopicReplication};
use rdkafka::client::DefaultClientContext;
use rdkafka::consumer::{Consumer as _, StreamConsumer};
use rdkafka::producer::{FutureProducer, FutureRecord, Producer as _};
use rdkafka::{ClientConfig, Message, Offset, TopicPartitionList};
use serde_json::{json, Value};
use std::collections::BTreeMap;
use std::sync::atomic::{AtomicBool, AtomicI64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// The input topic the seeder sends to and the transformers read.
pub const INPUT: &str = "gauntlet-txn-in";
/// The output topic the transformers send to and the final drain reads.
pub const OUTPUT: &str = "gauntlet-txn-out";
/// The consumer group of the transformers (the final drain has its own, `gauntlet-txn-drain`).
pub const GROUP: &str = "gauntlet-txn";

/// The transactional id of transformer `id`.
pub fn transactional_id(id: u32) -> String {
    format!("gauntlet-txn-{id}")
}
const OP_TIMEOUT: Duration = Duration::from_secs(10);

/// The workload's settings.
#[derive(Debug, Clone)]
pub struct TxnConfig {
    /// Transformers: each a read_committed consumer with a transactional producer.
    pub transformers: u32,
    /// Partitions of each topic.
    pub partitions: i32,
    /// Inputs sent per second.
    pub rate: u32,
    /// Inputs polled per transaction at most.
    pub batch: usize,
    /// Transactions aborted on purpose.
    pub abort_rate: f64,
    /// Transactions whose client is destroyed before commit (a producer crash mid-transaction).
    pub crash_rate: f64,
    /// Seeds each transformer's PRNG (its aborts and crashes).
    pub seed: u64,
    /// How long the final drain waits for the end of the output topic.
    pub drain_patience: Duration,
}

impl Default for TxnConfig {
    fn default() -> Self {
        TxnConfig {
            transformers: 2,
            partitions: 3,
            rate: 50,
            batch: 5,
            abort_rate: 0.1,
            crash_rate: 0.0,
            seed: 1,
            drain_patience: Duration::from_secs(20),
        }
    }
}

/// Counts for the progress line and the run outcome.
#[derive(Debug, Clone, Copy, Default)]
pub struct TxnSummary {
    /// Seeder sends that ended `ok`.
    pub sends: u64,
    /// Transactions committed.
    pub committed: u64,
    /// Transactions aborted.
    pub aborted: u64,
    /// Transactions whose outcome is unknown.
    pub unknown: u64,
    /// Outputs the final drain read.
    pub drained: u64,
}

fn base(bootstrap: &str) -> ClientConfig {
    let mut c = ClientConfig::new();
    c.set("bootstrap.servers", bootstrap)
        .set("socket.timeout.ms", "10000");
    c
}

fn setup_err(what: &str, e: impl std::fmt::Display) -> ClientError {
    ClientError::Setup {
        broker: "kafka",
        reason: format!("{what}: {e}"),
    }
}

fn record(rec: &Recorder, e: Event) -> u64 {
    rec.record(&e).unwrap_or(0)
}

/// Creates both topics (retrying while a fresh broker starts).
pub async fn setup(bootstrap: &str, partitions: i32) -> Result<(), ClientError> {
    let admin: AdminClient<DefaultClientContext> = base(bootstrap)
        .create()
        .map_err(|e| setup_err("admin", e))?;
    let opts = AdminOptions::new().operation_timeout(Some(OP_TIMEOUT));
    let start = Instant::now();
    for t in [INPUT, OUTPUT] {
        loop {
            let topic = NewTopic::new(t, partitions, TopicReplication::Fixed(1));
            match admin.create_topics(&[topic], &opts).await {
                Ok(rs) => match rs.into_iter().next() {
                    Some(Err((_, rdkafka::types::RDKafkaErrorCode::TopicAlreadyExists)))
                    | Some(Ok(_))
                    | None => break,
                    Some(Err((_, code))) if start.elapsed() > Duration::from_secs(60) => {
                        return Err(setup_err("create topic", code))
                    }
                    Some(Err(_)) => {}
                },
                Err(e) if start.elapsed() > Duration::from_secs(60) => {
                    return Err(setup_err("create topic", e))
                }
                Err(_) => {}
            }
            tokio::time::sleep(Duration::from_millis(500)).await;
        }
    }
    Ok(())
}

/// Sends inputs at `rate` until `stop`.
async fn seeder(
    bootstrap: String,
    rec: Arc<Recorder>,
    rate: u32,
    next: Arc<AtomicI64>,
    stop: Arc<AtomicBool>,
) -> Result<u64, ClientError> {
    let mut c = base(&bootstrap);
    c.set("acks", "all")
        .set("enable.idempotence", "true")
        .set("linger.ms", "0")
        .set("message.timeout.ms", "20000");
    let producer: FutureProducer = c.create().map_err(|e| setup_err("producer", e))?;
    let mut p = rec.new_process();
    let period = Duration::from_secs_f64(1.0 / f64::from(rate.max(1)));
    let mut sent = 0;
    // A failed history write stops the seeder (an unrecorded send is a ghost).
    while !stop.load(Ordering::Relaxed) && !rec.failed() {
        let value = next.fetch_add(1, Ordering::Relaxed);
        let key = format!("k{}", value % 8);
        record(
            &rec,
            Event::new(Actor::Client(p), OpType::Invoke, "send")
                .value(json!({"key": key, "value": value})),
        );
        let payload = body(&key, value);
        let r = producer
            .send(
                FutureRecord::to(INPUT).key(&key).payload(&payload),
                Duration::from_secs(5),
            )
            .await;
        match r {
            Ok(d) => {
                record(
                    &rec,
                    Event::new(Actor::Client(p), OpType::Ok, "send").value(json!({
                        "key": key, "value": value, "topic": INPUT,
                        "partition": d.partition, "offset": d.offset})),
                );
                sent += 1;
            }
            Err((e, _)) => {
                record(
                    &rec,
                    Event::new(Actor::Client(p), OpType::Info, "send").error(e.to_string()),
                );
                p = rec.new_process();
            }
        }
        tokio::time::sleep(period).await;
    }
    Ok(sent)
}

struct Clients {
    consumer: StreamConsumer,
    producer: FutureProducer,
}

fn clients(bootstrap: &str, id: u32) -> Result<Clients, ClientError> {
    let mut c = base(bootstrap);
    c.set("group.id", GROUP)
        .set("auto.offset.reset", "earliest")
        .set("enable.auto.commit", "false")
        .set("isolation.level", "read_committed")
        .set("session.timeout.ms", "6000")
        .set("max.poll.interval.ms", "10000");
    let consumer: StreamConsumer = c.create().map_err(|e| setup_err("consumer", e))?;
    consumer
        .subscribe(&[INPUT])
        .map_err(|e| setup_err("subscribe", e))?;
    let mut p = base(bootstrap);
    p.set("transactional.id", transactional_id(id))
        .set("enable.idempotence", "true")
        .set("acks", "all")
        .set("linger.ms", "0")
        .set("transaction.timeout.ms", "10000")
        .set("message.timeout.ms", "10000");
    let producer: FutureProducer = p.create().map_err(|e| setup_err("producer", e))?;
    producer
        .init_transactions(OP_TIMEOUT)
        .map_err(|e| setup_err("init_transactions", e))?;
    Ok(Clients { consumer, producer })
}

fn msg_json(topic: &str, key: &str, value: i64, partition: i32, offset: i64) -> Value {
    json!({"key": key, "value": value, "topic": topic, "partition": partition, "offset": offset})
}

/// Runs one of librdkafka's blocking transactional calls off the async workers.
async fn blocking<F>(producer: &FutureProducer, f: F) -> rdkafka::error::KafkaResult<()>
where
    F: FnOnce(&FutureProducer) -> rdkafka::error::KafkaResult<()> + Send + 'static,
{
    let p = producer.clone();
    match tokio::task::spawn_blocking(move || f(&p)).await {
        Ok(r) => r,
        Err(_) => Err(rdkafka::error::KafkaError::Canceled),
    }
}

enum End {
    Commit,
    Abort,
    Crash,
}

/// One transformer: transactions until `stop` and the input runs dry.
#[allow(clippy::too_many_arguments)]
async fn transformer(
    bootstrap: String,
    rec: Arc<Recorder>,
    id: u32,
    cfg: TxnConfig,
    next: Arc<AtomicI64>,
    stop: Arc<AtomicBool>,
    summary: Arc<std::sync::Mutex<TxnSummary>>,
) {
    let mut rng = Rng::new(cfg.seed.wrapping_add(u64::from(id) * 7919));
    let mut p = rec.new_process();
    let mut cl: Option<Clients> = None;
    let mut idle = 0u32;
    loop {
        if (stop.load(Ordering::Relaxed) && idle >= 5) || rec.failed() {
            break;
        }
        let c = match cl.take() {
            Some(c) => c,
            None => {
                // Creating the clients blocks (init_transactions): not on an async worker.
                let b = bootstrap.clone();
                let made = tokio::task::spawn_blocking(move || clients(&b, id)).await;
                match made {
                    Ok(Ok(c)) => c,
                    _ => {
                        tokio::time::sleep(Duration::from_millis(500)).await;
                        continue;
                    }
                }
            }
        };
        record(
            &rec,
            Event::new(Actor::Client(p), OpType::Invoke, "txn").value(json!([{"f": "poll"}])),
        );
        if let Err(e) = blocking(&c.producer, |p| p.begin_transaction()).await {
            record(
                &rec,
                Event::new(Actor::Client(p), OpType::Fail, "txn").error(e.to_string()),
            );
            tokio::time::sleep(Duration::from_millis(200)).await;
            continue;
        }
        // Poll a batch.
        let mut reads: Vec<(String, i64, i32, i64)> = Vec::new();
        let mut wait = Duration::from_millis(300);
        while reads.len() < cfg.batch {
            match tokio::time::timeout(wait, c.consumer.recv()).await {
                Ok(Ok(m)) => {
                    if let Ok((k, v)) = parse_body(m.payload().unwrap_or_default()) {
                        reads.push((k, v, m.partition(), m.offset()));
                    }
                    wait = Duration::from_millis(20);
                }
                _ => break,
            }
        }
        idle = if reads.is_empty() { idle + 1 } else { 0 };
        let mut mops = vec![json!({"f": "poll", "messages": reads
            .iter()
            .map(|(k, v, part, off)| msg_json(INPUT, k, *v, *part, *off))
            .collect::<Vec<_>>()})];
        // Transform: one output per input.
        let mut send_error: Option<String> = None;
        for (k, _, _, _) in &reads {
            let value = next.fetch_add(1, Ordering::Relaxed);
            let payload = body(k, value);
            match c
                .producer
                .send(
                    FutureRecord::to(OUTPUT).key(k).payload(&payload),
                    Duration::from_secs(5),
                )
                .await
            {
                Ok(d) => mops.push(json!({"f": "send", "key": k, "value": value,
                    "topic": OUTPUT, "partition": d.partition, "offset": d.offset})),
                Err((e, _)) => {
                    mops.push(json!({"f": "send", "key": k, "value": value}));
                    send_error = Some(e.to_string());
                    break;
                }
            }
        }
        let mut offsets: BTreeMap<i32, i64> = BTreeMap::new();
        for (_, _, part, off) in &reads {
            let e = offsets.entry(*part).or_insert(*off + 1);
            *e = (*e).max(*off + 1);
        }
        let end = if send_error.is_some() || rng.chance(cfg.abort_rate) {
            End::Abort
        } else if rng.chance(cfg.crash_rate) {
            End::Crash
        } else {
            End::Commit
        };
        let mut tpl = TopicPartitionList::new();
        for (&part, &off) in &offsets {
            let _ = tpl.add_partition_offset(INPUT, part, Offset::Offset(off));
        }
        let outcome: (OpType, Option<String>) = match end {
            End::Crash => {
                // The client goes away mid-transaction: nothing is committed or aborted by it.
                // Destroying a client may block (it flushes): not on an async worker.
                tokio::task::spawn_blocking(move || drop(c));
                record(
                    &rec,
                    Event::new(Actor::Client(p), OpType::Info, "txn")
                        .value(Value::Array(mops))
                        .error("client destroyed mid-transaction"),
                );
                summary.lock().map(|mut s| s.unknown += 1).ok();
                p = rec.new_process();
                continue;
            }
            End::Abort => match blocking(&c.producer, |p| p.abort_transaction(OP_TIMEOUT)).await {
                Ok(()) => {
                    // The consumer's position moved past the batch: go back to it.
                    for (part, off) in reads.iter().map(|r| (r.2, r.3)).fold(
                        BTreeMap::<i32, i64>::new(),
                        |mut m, (p2, o)| {
                            let e = m.entry(p2).or_insert(o);
                            *e = (*e).min(o);
                            m
                        },
                    ) {
                        let _ = c
                            .consumer
                            .seek(INPUT, part, Offset::Offset(off), OP_TIMEOUT);
                    }
                    (
                        OpType::Fail,
                        Some(send_error.unwrap_or_else(|| "aborted on purpose".into())),
                    )
                }
                Err(e) => (OpType::Info, Some(format!("abort: {e}"))),
            },
            End::Commit => {
                let meta = c.consumer.group_metadata();
                let sent: Result<(), String> = match (meta, offsets.is_empty()) {
                    (_, true) => Ok(()),
                    (Some(m), false) => blocking(&c.producer, move |p| {
                        p.send_offsets_to_transaction(&tpl, &m, OP_TIMEOUT)
                    })
                    .await
                    .map_err(|e| format!("send_offsets_to_transaction: {e}")),
                    (None, false) => Err("no consumer group metadata".into()),
                };
                let committed = match sent {
                    Ok(()) => blocking(&c.producer, |p| p.commit_transaction(OP_TIMEOUT))
                        .await
                        .map_err(|e| format!("commit: {e}")),
                    Err(e) => Err(e),
                };
                match committed {
                    Ok(()) => (OpType::Ok, None),
                    Err(e) => (OpType::Info, Some(e)),
                }
            }
        };
        let mut ev = Event::new(Actor::Client(p), outcome.0, "txn").value(Value::Array(mops));
        if let Some(err) = outcome.1 {
            ev = ev.error(err);
        }
        record(&rec, ev);
        if let Ok(mut s) = summary.lock() {
            match outcome.0 {
                OpType::Ok => s.committed += 1,
                OpType::Fail => s.aborted += 1,
                _ => s.unknown += 1,
            }
        }
        if outcome.0 == OpType::Info {
            // Destroying a client may block (it flushes): not on an async worker.
            tokio::task::spawn_blocking(move || drop(c));
            p = rec.new_process();
        } else {
            cl = Some(c);
        }
    }
}

/// Reads the output topic from the start with a fresh read_committed consumer.
async fn drain(bootstrap: &str, rec: &Recorder, cfg: &TxnConfig) -> Result<u64, ClientError> {
    let mut c = base(bootstrap);
    c.set("group.id", "gauntlet-txn-drain")
        .set("enable.auto.commit", "false")
        .set("isolation.level", "read_committed");
    let consumer: StreamConsumer = c.create().map_err(|e| setup_err("drain consumer", e))?;
    let mut tpl = TopicPartitionList::new();
    for part in 0..cfg.partitions {
        tpl.add_partition_offset(OUTPUT, part, Offset::Beginning)
            .map_err(|e| setup_err("assign", e))?;
    }
    consumer.assign(&tpl).map_err(|e| setup_err("assign", e))?;
    let p = rec.new_process();
    let start = Instant::now();
    let mut got = 0;
    let mut empty = 0;
    while start.elapsed() < cfg.drain_patience && empty < 10 {
        record(rec, Event::new(Actor::Client(p), OpType::Invoke, "poll"));
        let mut batch = Vec::new();
        let mut wait = Duration::from_millis(500);
        while batch.len() < 100 {
            match tokio::time::timeout(wait, consumer.recv()).await {
                Ok(Ok(m)) => {
                    if let Ok((k, v)) = parse_body(m.payload().unwrap_or_default()) {
                        batch.push(msg_json(OUTPUT, &k, v, m.partition(), m.offset()));
                    }
                    wait = Duration::from_millis(20);
                }
                _ => break,
            }
        }
        empty = if batch.is_empty() { empty + 1 } else { 0 };
        got += batch.len() as u64;
        record(
            rec,
            Event::new(Actor::Client(p), OpType::Ok, "poll").value(Value::Array(batch)),
        );
    }
    Ok(got)
}

/// Runs the workload for `time`, then lets the transformers empty the input
/// and drains the output. `faults` runs alongside (the harness's fault schedule).
pub async fn run<F: std::future::Future<Output = ()>>(
    bootstrap: &str,
    rec: Arc<Recorder>,
    cfg: TxnConfig,
    time: Duration,
    faults: F,
) -> Result<TxnSummary, ClientError> {
    setup(bootstrap, cfg.partitions).await?;
    let stop = Arc::new(AtomicBool::new(false));
    let next = Arc::new(AtomicI64::new(0));
    let summary = Arc::new(std::sync::Mutex::new(TxnSummary::default()));
    let seed = tokio::spawn(seeder(
        bootstrap.to_string(),
        rec.clone(),
        cfg.rate,
        next.clone(),
        stop.clone(),
    ));
    let mut workers = Vec::new();
    for id in 0..cfg.transformers.max(1) {
        workers.push(tokio::spawn(transformer(
            bootstrap.to_string(),
            rec.clone(),
            id,
            cfg.clone(),
            next.clone(),
            stop.clone(),
            summary.clone(),
        )));
    }
    let sleep = async {
        // The workload time, cut short when writing the history fails.
        let end = tokio::time::Instant::now() + time;
        while tokio::time::Instant::now() < end && !rec.failed() {
            tokio::time::sleep(Duration::from_millis(100).min(end - tokio::time::Instant::now()))
                .await;
        }
    };
    tokio::join!(sleep, faults);
    stop.store(true, Ordering::Relaxed);
    let sends = seed.await.ok().and_then(Result::ok).unwrap_or(0);
    for w in workers {
        let _ = w.await;
    }
    if rec.failed() {
        // Nothing more can be recorded: no drain, no `drained` marker.
        let s = summary.lock().map(|s| *s).unwrap_or_default();
        return Ok(TxnSummary { sends, ..s });
    }
    let _ = rec.phase("drain");
    let drained = drain(bootstrap, &rec, &cfg).await?;
    let _ = rec.drained(&gauntlet_history::DrainEnd::caught_up());
    let mut s = summary.lock().map(|s| *s).unwrap_or_default();
    s.sends = sends;
    s.drained = drained;
    Ok(s)
}
