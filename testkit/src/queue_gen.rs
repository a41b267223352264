//! A deterministic generator of histories with anomalies injected at known places.
//!
//! [`generate`] writes a v1 history (JSON Lines, through [`HistoryWriter::append_at`])
//! to any [`Write`] in constant memory, and returns the [`Expected`] count of every
//! anomaly type as `docs/checkers.md` defines it. The property tests of the checkers
//! and `gauntlet bench` use it; [`mutate`](crate::mutate) is the byte mutator of the
//! fuzz tests.
//!
//! # How the counts stay exact
//!
//! The *background* is a clean simulation: producers send (some sends fail, some
//! end `info` and are sometimes stored anyway, some are transactions whose commit
//! markers use up offsets), consumers of every group poll in batches, crash and come
//! back under new process numbers, rebalance, commit or ack; nemesis events are
//! sprinkled; the run ends with `drain` (and `drained`, if configured). Every stored
//! message is delivered exactly once to every group, and every consumer receives a
//! subsequence of the order in which the broker stored messages (send completion
//! order). Hence the background has no anomaly at all except `recovered`.
//!
//! Each [`Injection`] is an atomic block of ops (interleaved at a random point of the
//! background) with its own fresh producers, keys, partition (or id space) and
//! consumers (one per group, plus crash replacements), so its effects cannot touch
//! the background or another injection, and its cross-effects (a reorder is also a
//! gap, a key-order, a producer-order and a total-order pair, ...) are computed per
//! injection; see [`Injection`] for each one's exact effects.
use gauntlet_history::rng::Rng;
use gauntlet_history::{Actor, Event, HistoryWriter, OpType};
use serde_json::{json, Map, Value as J};
use std::collections::VecDeque;
use std::io::{self, BufWriter, Write};

/// How deliveries name broker messages.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Mode {
    /// Partitions with offsets (Kafka-like); sends' `ok` completions carry them too.
    Offsets,
    /// One queue per group, messages carry a broker `id` (no partitions, no offsets).
    Ids,
    /// One queue per group, messages carry nothing but key and value.
    Bare,
}

/// An anomaly to inject. Every injection has its own fresh producer(s), key(s),
/// partition (in [`Mode::Offsets`]; an id space in [`Mode::Ids`]) and consumers, and
/// one *target* group chosen at random; the other groups receive its messages cleanly.
/// The effects listed are exact; "lost" means `unseen` when the run has no `drained`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Injection {
    /// The last of 1..4 ok sends of a key never reaches the target group. lost 1 (no gap:
    /// nothing of the key follows it).
    Lost,
    /// The target group gets a value nobody sent. unexpected 1.
    Unexpected,
    /// A send that ended `fail` is delivered to the target group (after the key's ok
    /// sends). aborted-read 1.
    AbortedRead,
    /// One message is stored twice (a second offset or id; no identity in
    /// [`Mode::Bare`]), every group receives both copies. duplicate-write 1.
    DuplicateWrite,
    /// The target consumer crashes (a poll ends `info`); its replacement (a new
    /// process) gets the last `count` messages again, same identities (flagged
    /// `redelivered` in the queue modes). redelivered `count`, nothing else: not a
    /// duplicate, not a loss, not partition-order (a new consumer).
    RedeliverAfterCrash {
        /// How many of the last messages come again.
        count: u32,
    },
    /// The same consumer gets the last `count` messages again, after an `assign`
    /// when `reset`. redelivered `count`; partition-order 1 in [`Mode::Offsets`]
    /// without `reset`.
    RedeliverSameConsumer {
        /// How many of the last messages come again.
        count: u32,
        /// An `assign` before they come again.
        reset: bool,
    },
    /// The target consumer receives two adjacent messages of one producer and key
    /// swapped (`m[i+1]` before `m[i]`; `m[i]` completed before `m[i+1]` was invoked), with a
    /// `seek` between the two polls when `seek` ([`Mode::Offsets`] only). gap 1 (the
    /// jump over `m[i]`), key-order 1, producer-order 1, total-order 1 pair;
    /// partition-order 1 in [`Mode::Offsets`] without `seek`.
    Reorder {
        /// A `seek` between the two polls.
        seek: bool,
    },
    /// The target consumer skips one message of a key, which a second consumer of the
    /// group receives afterwards. gap 1, nothing else.
    Gap,
    /// The target consumer skips one message of a key that nobody in the group ever
    /// receives. gap 1 and lost 1.
    GapLost,
    /// Two concurrent sends of two producers and keys stored at offsets 0 and 1 of one
    /// partition; the target consumer receives offset 1 then 0. partition-order 1 in
    /// [`Mode::Offsets`]; nothing at all in the queue modes (concurrent sends have
    /// no total order).
    PartitionOrder,
    /// Two ok sends claim the same offset (or id); both are delivered, the second at
    /// the next offset. inconsistent-offsets 1 ([`Mode::Offsets`], [`Mode::Ids`]);
    /// nothing in [`Mode::Bare`].
    InconsistentOffset,
    /// Near miss: the target consumer skips `m[1]` while a concurrent poll of a second
    /// consumer (invoked before the first one's poll completed) gets it. Nothing: a
    /// message given to the group by a poll invoked before m's poll completed is not
    /// jumped over.
    GapConcurrent,
    /// Two sends of two producers, keys and partitions (concurrent, or the first
    /// completed before the second was invoked when `realtime`); two consumers of the
    /// target group receive both, in opposite orders (the second one's receipts are
    /// redeliveries). total-order 1 pair (rule (b), or rule (a) at the second consumer
    /// when `realtime`, not both) and redelivered 2.
    TotalOrderCross {
        /// The first send completed before the second was invoked (else they are concurrent).
        realtime: bool,
    },
    /// Two producers send one key, the first completed before the second was invoked
    /// (different partitions); the target consumer receives the second first.
    /// key-order 1 and total-order 1; not producer-order (two producers), not a gap.
    KeyOrderRealtime,
    /// The last message of a key reaches no group at all. lost 1 (distinct values).
    LostEverywhere,
    /// A transaction that aborted wrote a message the target group receives.
    /// aborted-read 1.
    AbortedTxnRead,
    /// Near miss: the target consumer reads the messages inside a transaction that
    /// aborts (delivers nothing), then again inside one that commits. Nothing.
    TxnReads,
}

impl Injection {
    /// One of each kind, with small parameters.
    pub const ALL: [Injection; 21] = [
        Injection::Lost,
        Injection::Unexpected,
        Injection::AbortedRead,
        Injection::DuplicateWrite,
        Injection::RedeliverAfterCrash { count: 1 },
        Injection::RedeliverAfterCrash { count: 3 },
        Injection::RedeliverSameConsumer {
            count: 2,
            reset: false,
        },
        Injection::RedeliverSameConsumer {
            count: 2,
            reset: true,
        },
        Injection::Reorder { seek: false },
        Injection::Reorder { seek: true },
        Injection::Gap,
        Injection::GapLost,
        Injection::PartitionOrder,
        Injection::InconsistentOffset,
        Injection::GapConcurrent,
        Injection::TotalOrderCross { realtime: false },
        Injection::TotalOrderCross { realtime: true },
        Injection::KeyOrderRealtime,
        Injection::LostEverywhere,
        Injection::AbortedTxnRead,
        Injection::TxnReads,
    ];
}

/// The shape of a generated history.
#[derive(Debug, Clone)]
pub struct GenConfig {
    /// Seeds the generator: the same seed and configuration give the same history.
    pub seed: u64,
    /// Background ops to generate before the drain (the history is a little longer:
    /// injections, completions of pending ops, the drain).
    pub ops: u64,
    /// Producers of the background.
    pub producers: u32,
    /// Consumers per group.
    pub consumers: u32,
    /// Consumer groups.
    pub groups: u32,
    /// When true, group 0 is the default group (polls without `group`).
    pub default_group: bool,
    /// Keys of the background.
    pub keys: u32,
    /// Partitions of the background ([`Mode::Offsets`] only).
    pub partitions: u32,
    /// How deliveries name broker messages.
    pub mode: Mode,
    /// Messages per poll: 1..=max_batch.
    pub max_batch: u32,
    /// Probability that a send fails (definitely not stored).
    pub fail_rate: f64,
    /// Probability that a send ends `info` (timeout) or never completes.
    pub info_rate: f64,
    /// Probability that an `info` send was stored anyway (then it is `recovered`).
    pub info_stored_rate: f64,
    /// Probability that a send is a transaction (1..=3 sends); 1 in 5 transactions abort.
    pub txn_rate: f64,
    /// Probability that a poll ends `info` (the consumer crashes and comes back as a new process).
    pub crash_rate: f64,
    /// Probability per step of a nemesis event.
    pub nemesis_rate: f64,
    /// Probability per step of a rebalance of one group ([`Mode::Offsets`], consumers > 1).
    pub rebalance_rate: f64,
    /// Write the `drained` marker at the end (without it, losses are `unseen`).
    pub drained: bool,
    /// The anomalies to inject, each once, at a random point of the background.
    pub injections: Vec<Injection>,
}

impl Default for GenConfig {
    fn default() -> Self {
        GenConfig {
            seed: 0,
            ops: 1000,
            producers: 3,
            consumers: 2,
            groups: 2,
            default_group: false,
            keys: 8,
            partitions: 4,
            mode: Mode::Offsets,
            max_batch: 8,
            fail_rate: 0.03,
            info_rate: 0.03,
            info_stored_rate: 0.5,
            txn_rate: 0.05,
            crash_rate: 0.01,
            nemesis_rate: 0.005,
            rebalance_rate: 0.005,
            drained: true,
            injections: Vec::new(),
        }
    }
}

/// What the checker must find in a generated history (`docs/checkers.md` counts).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Expected {
    /// `lost`.
    pub lost: u64,
    /// `unseen`.
    pub unseen: u64,
    /// `unexpected`.
    pub unexpected: u64,
    /// `aborted-read`.
    pub aborted_read: u64,
    /// `recovered`.
    pub recovered: u64,
    /// `duplicate-write`.
    pub duplicate_write: u64,
    /// `redelivered`.
    pub redelivered: u64,
    /// `gap`.
    pub gap: u64,
    /// `key-order`.
    pub key_order: u64,
    /// `producer-order`.
    pub producer_order: u64,
    /// `partition-order`.
    pub partition_order: u64,
    /// `total-order`.
    pub total_order: u64,
    /// `inconsistent-offsets`.
    pub inconsistent_offsets: u64,
    /// Lines written.
    pub ops: u64,
    /// Messages delivered (every delivery counts).
    pub deliveries: u64,
    /// Whether some delivery carries an offset.
    pub offsets: bool,
    /// The history has the `drained` marker.
    pub drained: bool,
    /// Logical messages sent (the verdict's `stats.sends`).
    pub sends: u64,
    /// Messages whose send ended `ok` (a committed transaction's sends among them).
    pub sends_ok: u64,
}

impl Expected {
    /// (name of the anomaly in the contract, expected count), in contract order.
    pub fn counts(&self) -> [(&'static str, u64); 13] {
        [
            ("lost", self.lost),
            ("unseen", self.unseen),
            ("unexpected", self.unexpected),
            ("aborted-read", self.aborted_read),
            ("recovered", self.recovered),
            ("duplicate-write", self.duplicate_write),
            ("redelivered", self.redelivered),
            ("gap", self.gap),
            ("key-order", self.key_order),
            ("producer-order", self.producer_order),
            ("partition-order", self.partition_order),
            ("total-order", self.total_order),
            ("inconsistent-offsets", self.inconsistent_offsets),
        ]
    }
}

/// Passes writes to a `BufWriter` but ignores the writer's per-line `flush`, so a
/// generated file is written in large blocks; [`generate`] flushes at the end.
struct Buffered<W: Write>(BufWriter<W>);

impl<W: Write> Write for Buffered<W> {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        self.0.write(buf)
    }
    fn write_all(&mut self, buf: &[u8]) -> io::Result<()> {
        self.0.write_all(buf)
    }
    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}

/// Generates the history `cfg` describes into `out`; returns what a checker must find.
pub fn generate<W: Write>(cfg: &GenConfig, out: W) -> io::Result<Expected> {
    let mut g = Gen::new(cfg, out);
    g.run()?;
    let ex = g.ex.clone();
    let mut inner = g.w.into_inner().0;
    inner.flush()?;
    Ok(ex)
}

/// [`generate`] into memory.
pub fn generate_vec(cfg: &GenConfig) -> (Vec<u8>, Expected) {
    let mut buf = Vec::new();
    // Writing to a Vec cannot fail.
    let ex = generate(cfg, &mut buf).unwrap_or_default();
    (buf, ex)
}

/// Injection keys are numbered from here (named `x<n>`; background keys are `k<n>`).
const INJ_KEY: u32 = 1 << 31;
/// Injection values start here; unexpected (never sent) values are negative.
const INJ_VALUE: i64 = 1 << 40;

/// A stored broker message.
#[derive(Debug, Clone, Copy)]
struct Stored {
    value: i64,
    key: u32,
    /// Partition ([`Mode::Offsets`]) or id space ([`Mode::Ids`]).
    q: u32,
    off: i64,
    /// Global storage order.
    seq: u64,
}

#[derive(Debug, Clone, Copy)]
enum Plan {
    Ok,
    Fail,
    Info { stored: bool },
    Abandon { stored: bool },
}

enum PendingSend {
    Send {
        value: i64,
        key: u32,
        plan: Plan,
    },
    Txn {
        sends: Vec<(i64, u32)>,
        commit: bool,
    },
}

struct Producer {
    process: u64,
    pending: Option<PendingSend>,
}

struct Consumer {
    process: u64,
    pending: bool,
    /// Assigned partitions ([`Mode::Offsets`]).
    parts: Vec<u32>,
}

struct Group {
    name: Option<String>,
    /// One queue per partition ([`Mode::Offsets`]) or a single queue.
    queues: Vec<VecDeque<Stored>>,
    consumers: Vec<Consumer>,
}

struct Gen<W: Write> {
    cfg: GenConfig,
    rng: Rng,
    w: HistoryWriter<Buffered<W>>,
    time: u64,
    next_process: u64,
    next_value: i64,
    next_inj_value: i64,
    next_inj_key: u32,
    next_inj_q: u32,
    next_unexpected: i64,
    ex: Expected,
    producers: Vec<Producer>,
    groups: Vec<Group>,
    /// Next offset per background partition ([`Mode::Offsets`]), or next id at index 0.
    next_offset: Vec<i64>,
    seq: u64,
    /// ([`Mode::Offsets`]) (group, partition) -> the highest offset delivered to the group there.
    max_delivered: rustc_hash::FxHashMap<(usize, u32), i64>,
    /// [group]: a poll of the group ended `info` (it may have taken messages).
    unsure: Vec<bool>,
    /// Injected losses: the group that misses the message (`None`: every group).
    /// Without a `drained` marker each is `lost` when a higher offset of its
    /// partition was delivered to such a group (one with no `info` poll), else `unseen`.
    lost_msgs: Vec<(Option<usize>, Stored)>,
}

const NEMESIS: [(&str, &str); 6] = [
    ("kill", "start"),
    ("pause", "resume"),
    ("partition", "heal"),
    ("kill", "start"),
    ("clock-skew", "clock-reset"),
    ("partition", "heal"),
];

impl<W: Write> Gen<W> {
    fn new(cfg: &GenConfig, out: W) -> Self {
        let mut cfg = cfg.clone();
        cfg.producers = cfg.producers.max(1);
        cfg.consumers = cfg.consumers.max(1);
        cfg.groups = cfg.groups.max(1);
        cfg.keys = cfg.keys.clamp(1, INJ_KEY - 1);
        cfg.partitions = cfg.partitions.clamp(1, 1 << 20);
        cfg.max_batch = cfg.max_batch.max(1);
        let nq = if cfg.mode == Mode::Offsets {
            cfg.partitions as usize
        } else {
            1
        };
        let mut next_process = 0;
        let producers = (0..cfg.producers)
            .map(|_| {
                next_process += 1;
                Producer {
                    process: next_process - 1,
                    pending: None,
                }
            })
            .collect();
        let groups = (0..cfg.groups)
            .map(|g| {
                let consumers = (0..cfg.consumers)
                    .map(|c| {
                        next_process += 1;
                        Consumer {
                            process: next_process - 1,
                            pending: false,
                            parts: (0..nq as u32).filter(|p| p % cfg.consumers == c).collect(),
                        }
                    })
                    .collect();
                Group {
                    name: (!(cfg.default_group && g == 0)).then(|| format!("g{g}")),
                    queues: vec![VecDeque::new(); nq],
                    consumers,
                }
            })
            .collect();
        let rng = Rng::new(cfg.seed);
        Gen {
            rng,
            w: HistoryWriter::new(Buffered(BufWriter::with_capacity(1 << 16, out))),
            time: 0,
            next_process,
            next_value: 1,
            next_inj_value: INJ_VALUE,
            next_inj_key: INJ_KEY,
            next_inj_q: if cfg.mode == Mode::Offsets {
                cfg.partitions
            } else {
                1
            },
            next_unexpected: -1,
            ex: Expected {
                drained: cfg.drained,
                ..Expected::default()
            },
            producers,
            groups,
            next_offset: vec![0; nq],
            seq: 0,
            max_delivered: rustc_hash::FxHashMap::default(),
            unsure: vec![false; cfg.groups as usize],
            lost_msgs: Vec::new(),
            cfg,
        }
    }

    // ---- low-level emission -------------------------------------------------------

    fn emit(&mut self, e: Event) -> io::Result<()> {
        self.time += 1 + self.rng.below(2000);
        self.ex.ops += 1;
        self.w.append_at(self.time, &e).map(|_| ())
    }

    fn client(&self, p: u64, kind: OpType, f: &str) -> Event {
        Event::new(Actor::Client(p), kind, f.to_string())
    }

    fn new_process(&mut self) -> u64 {
        self.next_process += 1;
        self.next_process - 1
    }

    fn key_name(key: u32) -> String {
        if key >= INJ_KEY {
            format!("x{}", key - INJ_KEY)
        } else {
            format!("k{key}")
        }
    }

    /// The message as JSON: key, value and the identity the mode gives it.
    fn render(&self, m: &Stored, redelivered: bool) -> J {
        let mut o = Map::new();
        o.insert("key".into(), J::from(Self::key_name(m.key)));
        o.insert("value".into(), J::from(m.value));
        match self.cfg.mode {
            Mode::Offsets => {
                o.insert("partition".into(), J::from(m.q));
                o.insert("offset".into(), J::from(m.off));
            }
            Mode::Ids => {
                o.insert("id".into(), J::from(format!("{}-{}", m.q, m.off)));
            }
            Mode::Bare => {}
        }
        if redelivered {
            o.insert("redelivered".into(), J::Bool(true));
        }
        J::Object(o)
    }

    fn plain(value: i64, key: u32) -> J {
        json!({"key": Self::key_name(key), "value": value})
    }

    fn group_event(&self, g: usize, e: Event) -> Event {
        match &self.groups[g].name {
            Some(n) => e.group(n.clone()),
            None => e,
        }
    }

    fn poll_invoke(&mut self, g: usize, p: u64) -> io::Result<()> {
        let e = self.group_event(g, self.client(p, OpType::Invoke, "poll"));
        self.emit(e)
    }

    fn poll_ok(&mut self, g: usize, p: u64, msgs: &[(Stored, bool)]) -> io::Result<()> {
        let list: Vec<J> = msgs.iter().map(|(m, r)| self.render(m, *r)).collect();
        self.ex.deliveries += msgs.len() as u64;
        if !msgs.is_empty() && self.cfg.mode == Mode::Offsets {
            self.ex.offsets = true;
            for (m, _) in msgs {
                let e = self.max_delivered.entry((g, m.q)).or_insert(m.off);
                *e = (*e).max(m.off);
            }
        }
        let e = self.group_event(g, self.client(p, OpType::Ok, "poll").value(J::Array(list)));
        self.emit(e)
    }

    /// A whole poll (invoke and ok) delivering `msgs`.
    fn poll(&mut self, g: usize, p: u64, msgs: &[(Stored, bool)]) -> io::Result<()> {
        self.poll_invoke(g, p)?;
        self.poll_ok(g, p, msgs)
    }

    /// Polls delivering `msgs` in random batches.
    fn poll_batches(&mut self, g: usize, p: u64, msgs: &[(Stored, bool)]) -> io::Result<()> {
        let mut i = 0;
        while i < msgs.len() {
            let n = self.rng.range(1, u64::from(self.cfg.max_batch)) as usize;
            let end = (i + n).min(msgs.len());
            self.poll(g, p, &msgs[i..end])?;
            i = end;
        }
        Ok(())
    }

    fn reset_op(&mut self, p: u64, f: &str, value: J) -> io::Result<()> {
        self.emit(self.client(p, OpType::Invoke, f).value(value.clone()))?;
        self.emit(self.client(p, OpType::Ok, f).value(value))
    }

    fn nemesis(&mut self) -> io::Result<()> {
        let (a, b) = *self.rng.pick(&NEMESIS);
        let node = format!("n{}", self.rng.range(1, 3));
        let f = if self.rng.chance(0.5) { a } else { b };
        self.emit(Event::new(Actor::Nemesis, OpType::Info, f).value(json!({ "node": node })))
    }

    fn phase(&mut self, name: &str) -> io::Result<()> {
        self.emit(Event::new(Actor::Harness, OpType::Info, "phase").value(J::from(name)))
    }

    // ---- the background -----------------------------------------------------------

    /// The broker stores a background message: it gets the next offset (or id) and
    /// joins every group's queue.
    fn store(&mut self, value: i64, key: u32) -> Stored {
        let q = match self.cfg.mode {
            Mode::Offsets => key % self.cfg.partitions,
            _ => 0,
        };
        let off = self.next_offset[q as usize];
        self.next_offset[q as usize] += 1;
        let m = Stored {
            value,
            key,
            q: if self.cfg.mode == Mode::Offsets { q } else { 0 },
            off,
            seq: self.seq,
        };
        self.seq += 1;
        let qi = if self.cfg.mode == Mode::Offsets {
            q as usize
        } else {
            0
        };
        for g in &mut self.groups {
            g.queues[qi].push_back(m);
        }
        m
    }

    fn new_value(&mut self) -> i64 {
        self.next_value += 1;
        self.next_value - 1
    }

    fn producer_step(&mut self, i: usize) -> io::Result<()> {
        let p = self.producers[i].process;
        match self.producers[i].pending.take() {
            None => {
                self.ex.sends += 1;
                if self.rng.chance(self.cfg.txn_rate) {
                    let n = self.rng.range(1, 3);
                    let sends: Vec<(i64, u32)> = (0..n)
                        .map(|_| {
                            let k = self.rng.below(u64::from(self.cfg.keys)) as u32;
                            (self.new_value(), k)
                        })
                        .collect();
                    self.ex.sends += n - 1;
                    let micro: Vec<J> = sends
                        .iter()
                        .map(|&(v, k)| json!({"f": "send", "key": Self::key_name(k), "value": v}))
                        .collect();
                    self.emit(self.client(p, OpType::Invoke, "txn").value(J::Array(micro)))?;
                    let commit = !self.rng.chance(0.2);
                    self.producers[i].pending = Some(PendingSend::Txn { sends, commit });
                } else {
                    let key = self.rng.below(u64::from(self.cfg.keys)) as u32;
                    let value = self.new_value();
                    let plan = if self.rng.chance(self.cfg.fail_rate) {
                        Plan::Fail
                    } else if self.rng.chance(self.cfg.info_rate) {
                        let stored = self.rng.chance(self.cfg.info_stored_rate);
                        if self.rng.chance(0.5) {
                            Plan::Info { stored }
                        } else {
                            Plan::Abandon { stored }
                        }
                    } else {
                        Plan::Ok
                    };
                    self.emit(
                        self.client(p, OpType::Invoke, "send")
                            .value(Self::plain(value, key)),
                    )?;
                    self.producers[i].pending = Some(PendingSend::Send { value, key, plan });
                }
            }
            Some(PendingSend::Send { value, key, plan }) => match plan {
                Plan::Ok => {
                    let m = self.store(value, key);
                    self.ex.sends_ok += 1;
                    let v = self.render(&m, false);
                    self.emit(self.client(p, OpType::Ok, "send").value(v))?;
                }
                Plan::Fail => {
                    self.emit(
                        self.client(p, OpType::Fail, "send")
                            .error("NOT_ENOUGH_REPLICAS"),
                    )?;
                }
                Plan::Info { stored } | Plan::Abandon { stored } => {
                    if stored {
                        self.store(value, key);
                        self.ex.recovered += 1;
                    }
                    if matches!(plan, Plan::Info { .. }) {
                        self.emit(self.client(p, OpType::Info, "send").error("timed out"))?;
                    }
                    // A client that timed out or crashed comes back under a new number.
                    self.producers[i].process = self.new_process();
                }
            },
            Some(PendingSend::Txn { sends, commit }) => {
                let mut touched: Vec<u32> = Vec::new();
                let mut micro = Vec::new();
                for &(v, k) in &sends {
                    if commit {
                        let m = self.store(v, k);
                        self.ex.sends_ok += 1;
                        let mut j = self.render(&m, false);
                        if let J::Object(o) = &mut j {
                            o.insert("f".into(), J::from("send"));
                        }
                        micro.push(j);
                    } else {
                        if self.cfg.mode == Mode::Offsets {
                            // The aborted record still takes an offset.
                            self.next_offset[(k % self.cfg.partitions) as usize] += 1;
                        }
                        micro.push(json!({"f": "send", "key": Self::key_name(k), "value": v}));
                    }
                    let q = k % self.cfg.partitions;
                    if !touched.contains(&q) {
                        touched.push(q);
                    }
                }
                if self.cfg.mode == Mode::Offsets {
                    // The commit or abort marker takes an offset in every partition touched.
                    for q in touched {
                        self.next_offset[q as usize] += 1;
                    }
                }
                let kind = if commit { OpType::Ok } else { OpType::Fail };
                let mut e = self.client(p, kind, "txn").value(J::Array(micro));
                if !commit {
                    e = e.error("transaction aborted");
                }
                self.emit(e)?;
            }
        }
        Ok(())
    }

    /// Takes up to `n` messages for consumer `c` of group `g`, oldest stored first.
    fn take(&mut self, g: usize, c: usize, n: usize) -> Vec<(Stored, bool)> {
        let group = &mut self.groups[g];
        let mut out = Vec::new();
        if self.cfg.mode != Mode::Offsets {
            while out.len() < n {
                match group.queues[0].pop_front() {
                    Some(m) => out.push((m, false)),
                    None => break,
                }
            }
            return out;
        }
        while out.len() < n {
            let best = group.consumers[c]
                .parts
                .iter()
                .filter_map(|&p| group.queues[p as usize].front().map(|m| (m.seq, p)))
                .min();
            match best {
                Some((_, p)) => {
                    if let Some(m) = group.queues[p as usize].pop_front() {
                        out.push((m, false));
                    }
                }
                None => break,
            }
        }
        out
    }

    fn consumer_step(&mut self, g: usize, c: usize, may_crash: bool) -> io::Result<()> {
        let p = self.groups[g].consumers[c].process;
        if !self.groups[g].consumers[c].pending {
            self.groups[g].consumers[c].pending = true;
            return self.poll_invoke(g, p);
        }
        self.groups[g].consumers[c].pending = false;
        if may_crash && self.rng.chance(self.cfg.crash_rate) {
            self.unsure[g] = true;
            let e = self.group_event(
                g,
                self.client(p, OpType::Info, "poll")
                    .error("connection reset"),
            );
            self.emit(e)?;
            let np = self.new_process();
            self.groups[g].consumers[c].process = np;
            let topics = json!(["t"]);
            return self.reset_op(np, "subscribe", topics);
        }
        let n = self.rng.range(1, u64::from(self.cfg.max_batch)) as usize;
        let msgs = self.take(g, c, n);
        self.poll_ok(g, p, &msgs)?;
        if !msgs.is_empty() && self.rng.chance(0.3) {
            match self.cfg.mode {
                Mode::Offsets => {
                    let mut pos: Vec<(u32, i64)> = Vec::new();
                    for (m, _) in &msgs {
                        match pos.iter_mut().find(|(q, _)| *q == m.q) {
                            Some(e) => e.1 = m.off + 1,
                            None => pos.push((m.q, m.off + 1)),
                        }
                    }
                    let v: Vec<J> = pos
                        .iter()
                        .map(|&(q, o)| json!({"partition": q, "offset": o}))
                        .collect();
                    let e = self.group_event(g, self.client(p, OpType::Invoke, "commit"));
                    self.emit(e.value(J::Array(v.clone())))?;
                    let e = self.group_event(g, self.client(p, OpType::Ok, "commit"));
                    self.emit(e.value(J::Array(v)))?;
                }
                _ => {
                    let v: Vec<J> = msgs.iter().map(|(m, _)| J::from(m.value)).collect();
                    let e = self.group_event(g, self.client(p, OpType::Invoke, "ack"));
                    self.emit(e.value(J::Array(v.clone())))?;
                    let e = self.group_event(g, self.client(p, OpType::Ok, "ack"));
                    self.emit(e.value(J::Array(v)))?;
                }
            }
        }
        Ok(())
    }

    /// Reassigns partitions of one group; a partition moves only when the group has
    /// nothing of it waiting, so the new owner never gets older messages than it has.
    fn rebalance(&mut self, g: usize) -> io::Result<()> {
        let nc = self.cfg.consumers as usize;
        if self.cfg.mode != Mode::Offsets || nc < 2 {
            return Ok(());
        }
        if self.groups[g].consumers.iter().any(|c| c.pending) {
            return Ok(());
        }
        let mut owner = vec![0usize; self.cfg.partitions as usize];
        for (ci, c) in self.groups[g].consumers.iter().enumerate() {
            for &p in &c.parts {
                owner[p as usize] = ci;
            }
        }
        for (p, o) in owner.iter_mut().enumerate() {
            let to = self.rng.below(nc as u64) as usize;
            if self.groups[g].queues[p].is_empty() {
                *o = to;
            }
        }
        for ci in 0..nc {
            let parts: Vec<u32> = (0..owner.len())
                .filter(|&p| owner[p] == ci)
                .map(|p| p as u32)
                .collect();
            let p = self.groups[g].consumers[ci].process;
            let v = J::Array(parts.iter().map(|&q| J::from(q)).collect());
            self.reset_op(p, "assign", v)?;
            self.groups[g].consumers[ci].parts = parts;
        }
        Ok(())
    }

    fn run(&mut self) -> io::Result<()> {
        let mut triggers: Vec<(u64, Injection)> = self
            .cfg
            .injections
            .clone()
            .into_iter()
            .map(|inj| (self.rng.below(self.cfg.ops.max(1)), inj))
            .collect();
        triggers.sort_by_key(|t| t.0);
        let mut triggers = triggers.into_iter().peekable();
        let np = self.cfg.producers as usize;
        let ng = self.cfg.groups as usize;
        let nc = self.cfg.consumers as usize;
        let actors = (np + ng * nc) as u64;
        while self.ex.ops < self.cfg.ops {
            while let Some(&(at, inj)) = triggers.peek() {
                if at > self.ex.ops {
                    break;
                }
                triggers.next();
                self.inject(inj)?;
            }
            if self.rng.chance(self.cfg.nemesis_rate) {
                self.nemesis()?;
                continue;
            }
            if self.rng.chance(self.cfg.rebalance_rate) {
                let g = self.rng.below(ng as u64) as usize;
                self.rebalance(g)?;
                continue;
            }
            let a = self.rng.below(actors) as usize;
            if a < np {
                self.producer_step(a)?;
            } else {
                let a = a - np;
                self.consumer_step(a / nc, a % nc, true)?;
            }
        }
        for (_, inj) in triggers {
            self.inject(inj)?;
        }
        // Finish what is pending, heal, drain.
        for i in 0..np {
            if self.producers[i].pending.is_some() {
                self.producer_step(i)?;
            }
        }
        for g in 0..ng {
            for c in 0..nc {
                if self.groups[g].consumers[c].pending {
                    self.consumer_step(g, c, false)?;
                }
            }
        }
        self.emit(Event::new(Actor::Nemesis, OpType::Info, "heal").value(json!({"node": "all"})))?;
        self.phase("drain")?;
        for g in 0..ng {
            while self.groups[g].queues.iter().any(|q| !q.is_empty()) {
                for c in 0..nc {
                    self.consumer_step(g, c, false)?;
                    self.consumer_step(g, c, false)?;
                }
            }
            // One empty poll per consumer: the end was reached.
            for c in 0..nc {
                self.consumer_step(g, c, false)?;
                self.consumer_step(g, c, false)?;
            }
        }
        if self.cfg.drained {
            self.phase("drained")?;
        }
        self.count_lost();
        Ok(())
    }

    // ---- injections ---------------------------------------------------------------

    fn inj_key(&mut self) -> u32 {
        self.next_inj_key += 1;
        self.next_inj_key - 1
    }

    fn inj_q(&mut self) -> u32 {
        self.next_inj_q += 1;
        self.next_inj_q - 1
    }

    fn inj_value(&mut self) -> i64 {
        self.next_inj_value += 1;
        self.next_inj_value - 1
    }

    fn send_invoke(&mut self, p: u64, value: i64, key: u32) -> io::Result<()> {
        self.ex.sends += 1;
        self.emit(
            self.client(p, OpType::Invoke, "send")
                .value(Self::plain(value, key)),
        )
    }

    fn send_ok(&mut self, p: u64, m: &Stored) -> io::Result<()> {
        self.ex.sends_ok += 1;
        let v = self.render(m, false);
        self.emit(self.client(p, OpType::Ok, "send").value(v))
    }

    /// One fresh producer sends `n` messages of one fresh key, one after the other,
    /// stored at offsets 0.. of partition `q`.
    fn produce(&mut self, n: usize, q: u32) -> io::Result<Vec<Stored>> {
        let p = self.new_process();
        let key = self.inj_key();
        let mut out = Vec::new();
        for i in 0..n {
            let value = self.inj_value();
            self.send_invoke(p, value, key)?;
            let m = Stored {
                value,
                key,
                q,
                off: i as i64,
                seq: 0,
            };
            self.send_ok(p, &m)?;
            out.push(m);
        }
        Ok(out)
    }

    fn plain_list(ms: &[Stored]) -> Vec<(Stored, bool)> {
        ms.iter().map(|&m| (m, false)).collect()
    }

    /// Every group but `target` gets `ms` cleanly, each through a fresh consumer.
    fn deliver_others(&mut self, target: usize, ms: &[Stored]) -> io::Result<()> {
        for g in 0..self.groups.len() {
            if g != target {
                let c = self.new_process();
                self.poll_batches(g, c, &Self::plain_list(ms))?;
            }
        }
        Ok(())
    }

    /// An injected loss of `m` in group `g` (`None`: in every group); counted at the end.
    fn lost(&mut self, g: Option<usize>, m: Stored) {
        self.lost_msgs.push((g, m));
    }

    /// Counts the injected losses as `lost` or `unseen` (docs/checkers.md).
    fn count_lost(&mut self) {
        for (g, m) in std::mem::take(&mut self.lost_msgs) {
            let proven = |g: usize| {
                self.cfg.mode == Mode::Offsets
                    && !self.unsure[g]
                    && self
                        .max_delivered
                        .get(&(g, m.q))
                        .is_some_and(|&o| o > m.off)
            };
            let by_offset = match g {
                Some(g) => proven(g),
                None => (0..self.groups.len()).any(proven),
            };
            if self.cfg.drained || by_offset {
                self.ex.lost += 1;
            } else {
                self.ex.unseen += 1;
            }
        }
    }

    fn inject(&mut self, inj: Injection) -> io::Result<()> {
        let offsets = self.cfg.mode == Mode::Offsets;
        let queue_flag = !offsets;
        let t = self.rng.below(self.groups.len() as u64) as usize;
        let q = self.inj_q();
        match inj {
            Injection::Lost => {
                let n = self.rng.range(1, 4) as usize;
                let ms = self.produce(n, q)?;
                let c = self.new_process();
                self.poll_batches(t, c, &Self::plain_list(&ms[..n - 1]))?;
                self.deliver_others(t, &ms)?;
                self.lost(Some(t), ms[n - 1]);
            }
            Injection::Unexpected => {
                let n = self.rng.range(1, 3) as usize;
                let ms = self.produce(n, q)?;
                let mut got = Self::plain_list(&ms);
                let u = Stored {
                    value: self.next_unexpected,
                    key: ms[0].key,
                    q,
                    off: n as i64,
                    seq: 0,
                };
                self.next_unexpected -= 1;
                got.push((u, false));
                let c = self.new_process();
                self.poll_batches(t, c, &got)?;
                self.deliver_others(t, &ms)?;
                self.ex.unexpected += 1;
            }
            Injection::AbortedRead => {
                let n = self.rng.range(1, 3) as usize;
                let ms = self.produce(n, q)?;
                let p = self.new_process();
                let value = self.inj_value();
                let key = ms[0].key;
                // A different producer of the same key: its failed send is the key's last.
                self.send_invoke(p, value, key)?;
                self.emit(self.client(p, OpType::Fail, "send").error("NOT_LEADER"))?;
                let a = Stored {
                    value,
                    key,
                    q,
                    off: n as i64,
                    seq: 0,
                };
                let mut got = Self::plain_list(&ms);
                got.push((a, false));
                let c = self.new_process();
                self.poll_batches(t, c, &got)?;
                self.deliver_others(t, &ms)?;
                self.ex.aborted_read += 1;
            }
            Injection::DuplicateWrite => {
                let n = self.rng.range(1, 3) as usize;
                let ms = self.produce(n, q)?;
                let d = self.rng.below(n as u64) as usize;
                let dup = Stored {
                    off: n as i64,
                    ..ms[d]
                };
                let mut all = ms.clone();
                all.push(dup);
                for g in 0..self.groups.len() {
                    let c = self.new_process();
                    self.poll_batches(g, c, &Self::plain_list(&all))?;
                }
                self.ex.duplicate_write += 1;
            }
            Injection::RedeliverAfterCrash { count } => {
                let r = count.max(1) as usize;
                let n = r + self.rng.below(3) as usize;
                let ms = self.produce(n, q)?;
                let a = self.new_process();
                self.poll_batches(t, a, &Self::plain_list(&ms))?;
                self.poll_invoke(t, a)?;
                self.unsure[t] = true;
                let e = self.group_event(t, self.client(a, OpType::Info, "poll").error("killed"));
                self.emit(e)?;
                let b = self.new_process();
                let again: Vec<(Stored, bool)> =
                    ms[n - r..].iter().map(|&m| (m, queue_flag)).collect();
                self.poll_batches(t, b, &again)?;
                self.deliver_others(t, &ms)?;
                self.ex.redelivered += r as u64;
            }
            Injection::RedeliverSameConsumer { count, reset } => {
                let r = count.max(1) as usize;
                let n = r + self.rng.below(3) as usize;
                let ms = self.produce(n, q)?;
                let a = self.new_process();
                self.poll_batches(t, a, &Self::plain_list(&ms))?;
                if reset {
                    self.reset_op(a, "assign", json!([q]))?;
                }
                let again: Vec<(Stored, bool)> =
                    ms[n - r..].iter().map(|&m| (m, queue_flag)).collect();
                self.poll_batches(t, a, &again)?;
                self.deliver_others(t, &ms)?;
                self.ex.redelivered += r as u64;
                if offsets && !reset {
                    self.ex.partition_order += 1;
                }
            }
            Injection::Reorder { seek } => {
                let n = self.rng.range(2, 5) as usize;
                let i = self.rng.below(n as u64 - 1) as usize;
                let ms = self.produce(n, q)?;
                let a = self.new_process();
                let mut first = Self::plain_list(&ms[..i]);
                first.push((ms[i + 1], false));
                let mut second = vec![(ms[i], false)];
                second.extend(Self::plain_list(&ms[i + 2..]));
                self.poll(t, a, &first)?;
                if seek && offsets {
                    self.reset_op(a, "seek", json!({"partition": q, "offset": i}))?;
                }
                self.poll(t, a, &second)?;
                self.deliver_others(t, &ms)?;
                self.ex.gap += 1;
                self.ex.key_order += 1;
                self.ex.producer_order += 1;
                self.ex.total_order += 1;
                if offsets && !seek {
                    self.ex.partition_order += 1;
                }
            }
            Injection::Gap | Injection::GapLost => {
                let n = self.rng.range(2, 5) as usize;
                let s = self.rng.below(n as u64 - 1) as usize;
                let ms = self.produce(n, q)?;
                let mut rest = ms.clone();
                let skipped = rest.remove(s);
                let a = self.new_process();
                self.poll_batches(t, a, &Self::plain_list(&rest))?;
                if inj == Injection::Gap {
                    let b = self.new_process();
                    self.poll(t, b, &[(skipped, false)])?;
                } else {
                    self.lost(Some(t), skipped);
                }
                self.deliver_others(t, &ms)?;
                self.ex.gap += 1;
            }
            Injection::PartitionOrder => {
                let (p1, p2) = (self.new_process(), self.new_process());
                let (k1, k2) = (self.inj_key(), self.inj_key());
                let (v1, v2) = (self.inj_value(), self.inj_value());
                self.send_invoke(p1, v1, k1)?;
                self.send_invoke(p2, v2, k2)?;
                let a = Stored {
                    value: v1,
                    key: k1,
                    q,
                    off: 0,
                    seq: 0,
                };
                let b = Stored {
                    value: v2,
                    key: k2,
                    q,
                    off: 1,
                    seq: 0,
                };
                self.send_ok(p1, &a)?;
                self.send_ok(p2, &b)?;
                let c = self.new_process();
                self.poll(t, c, &[(b, false), (a, false)])?;
                self.deliver_others(t, &[a, b])?;
                if offsets {
                    self.ex.partition_order += 1;
                }
            }
            Injection::InconsistentOffset => {
                let p = self.new_process();
                let key = self.inj_key();
                let (v1, v2) = (self.inj_value(), self.inj_value());
                let a = Stored {
                    value: v1,
                    key,
                    q,
                    off: 0,
                    seq: 0,
                };
                self.send_invoke(p, v1, key)?;
                self.send_ok(p, &a)?;
                self.send_invoke(p, v2, key)?;
                // The broker acknowledges the second at the first one's offset...
                self.send_ok(p, &Stored { value: v2, ..a })?;
                // ...but delivers it at the next one.
                let b = Stored {
                    value: v2,
                    off: 1,
                    ..a
                };
                for g in 0..self.groups.len() {
                    let c = self.new_process();
                    self.poll_batches(g, c, &[(a, false), (b, false)])?;
                }
                if self.cfg.mode != Mode::Bare {
                    self.ex.inconsistent_offsets += 1;
                    // Acknowledged at one position, delivered at another: stored twice (v1.1).
                    self.ex.duplicate_write += 1;
                }
            }
            Injection::GapConcurrent => {
                let ms = self.produce(3, q)?;
                let (a, b) = (self.new_process(), self.new_process());
                self.poll(t, a, &[(ms[0], false)])?;
                self.poll_invoke(t, b)?;
                self.poll(t, a, &[(ms[2], false)])?;
                self.poll_ok(t, b, &[(ms[1], false)])?;
                self.deliver_others(t, &ms)?;
            }
            Injection::TotalOrderCross { realtime } => {
                let q2 = self.inj_q();
                let (p1, p2) = (self.new_process(), self.new_process());
                let (k1, k2) = (self.inj_key(), self.inj_key());
                let (v1, v2) = (self.inj_value(), self.inj_value());
                let a = Stored {
                    value: v1,
                    key: k1,
                    q,
                    off: 0,
                    seq: 0,
                };
                let b = Stored {
                    value: v2,
                    key: k2,
                    q: q2,
                    off: 0,
                    seq: 0,
                };
                if realtime {
                    self.send_invoke(p1, v1, k1)?;
                    self.send_ok(p1, &a)?;
                    self.send_invoke(p2, v2, k2)?;
                    self.send_ok(p2, &b)?;
                } else {
                    self.send_invoke(p1, v1, k1)?;
                    self.send_invoke(p2, v2, k2)?;
                    self.send_ok(p1, &a)?;
                    self.send_ok(p2, &b)?;
                }
                let (c1, c2) = (self.new_process(), self.new_process());
                self.poll(t, c1, &[(a, false), (b, false)])?;
                self.poll(t, c2, &[(b, queue_flag), (a, queue_flag)])?;
                self.deliver_others(t, &[a, b])?;
                self.ex.total_order += 1;
                self.ex.redelivered += 2;
            }
            Injection::KeyOrderRealtime => {
                let q2 = self.inj_q();
                let (p1, p2) = (self.new_process(), self.new_process());
                let key = self.inj_key();
                let (v1, v2) = (self.inj_value(), self.inj_value());
                let a = Stored {
                    value: v1,
                    key,
                    q,
                    off: 0,
                    seq: 0,
                };
                let b = Stored {
                    value: v2,
                    key,
                    q: q2,
                    off: 0,
                    seq: 0,
                };
                self.send_invoke(p1, v1, key)?;
                self.send_ok(p1, &a)?;
                self.send_invoke(p2, v2, key)?;
                self.send_ok(p2, &b)?;
                let c = self.new_process();
                self.poll(t, c, &[(b, false), (a, false)])?;
                self.deliver_others(t, &[a, b])?;
                self.ex.key_order += 1;
                self.ex.total_order += 1;
            }
            Injection::LostEverywhere => {
                let n = self.rng.range(1, 4) as usize;
                let ms = self.produce(n, q)?;
                for g in 0..self.groups.len() {
                    let c = self.new_process();
                    self.poll_batches(g, c, &Self::plain_list(&ms[..n - 1]))?;
                }
                self.lost(None, ms[n - 1]);
            }
            Injection::AbortedTxnRead => {
                let n = self.rng.range(1, 3) as usize;
                let ms = self.produce(n, q)?;
                let p = self.new_process();
                let value = self.inj_value();
                let key = ms[0].key;
                self.ex.sends += 1;
                let micro = json!([{"f": "send", "key": Self::key_name(key), "value": value}]);
                self.emit(self.client(p, OpType::Invoke, "txn").value(micro.clone()))?;
                self.emit(
                    self.client(p, OpType::Fail, "txn")
                        .value(micro)
                        .error("transaction aborted"),
                )?;
                let x = Stored {
                    value,
                    key,
                    q,
                    off: n as i64,
                    seq: 0,
                };
                let mut got = Self::plain_list(&ms);
                got.push((x, false));
                let c = self.new_process();
                self.poll_batches(t, c, &got)?;
                self.deliver_others(t, &ms)?;
                self.ex.aborted_read += 1;
            }
            Injection::TxnReads => {
                let n = self.rng.range(1, 4) as usize;
                let ms = self.produce(n, q)?;
                let c = self.new_process();
                let read: Vec<J> = ms.iter().map(|m| self.render(m, false)).collect();
                let inv = json!([{"f": "poll"}]);
                let done = json!([{"f": "poll", "messages": read}]);
                for (kind, err) in [(OpType::Fail, true), (OpType::Ok, false)] {
                    let e = self.group_event(t, self.client(c, OpType::Invoke, "txn"));
                    self.emit(e.value(inv.clone()))?;
                    let mut e =
                        self.group_event(t, self.client(c, kind, "txn").value(done.clone()));
                    if err {
                        e = e.error("transaction aborted");
                    }
                    self.emit(e)?;
                }
                self.ex.deliveries += n as u64;
                if self.cfg.mode == Mode::Offsets {
                    self.ex.offsets = true;
                }
                self.deliver_others(t, &ms)?;
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use gauntlet_history::read_bytes;

    #[test]
    fn generated_histories_read_back() {
        for mode in [Mode::Offsets, Mode::Ids, Mode::Bare] {
            for seed in 0..20 {
                let cfg = GenConfig {
                    seed,
                    mode,
                    ops: 400,
                    injections: Injection::ALL.to_vec(),
                    ..GenConfig::default()
                };
                let (bytes, ex) = generate_vec(&cfg);
                let h = match read_bytes("gen.jsonl", &bytes) {
                    Ok(h) => h,
                    Err(e) => panic!("{mode:?} seed {seed}: {e}"),
                };
                assert_eq!(h.counts.ops, ex.ops);
                assert_eq!(h.deliveries.len() as u64, ex.deliveries);
                assert_eq!(h.sends.len() as u64, ex.sends);
                assert!(h.drained.is_some());
                let again = generate_vec(&cfg);
                assert_eq!(again.0, bytes, "deterministic");
            }
        }
    }
}
