//! The compact, checked form of a history that the checkers and reports read.
//!
//! A history of ten million ops must fit in a few bytes per op, so the reader
//! does not keep ops: it pairs each completion with its invoke as it goes and
//! keeps one [`Send`] per logical message, one [`Delivery`] per message
//! delivered and one [`Poll`] per successful poll, with keys, groups,
//! partitions and broker ids interned to `u32`.
use crate::error::Problem;
use crate::op::{MicroOp, Msg, Op, OpType, Process, Value, F};
use rustc_hash::FxHashMap;
use std::borrow::Cow;

/// "No such thing" for interned `u32` ids.
pub const NONE: u32 = u32::MAX;
/// "No completion" for op indices.
pub const NO_OP: u64 = u64::MAX;
/// "No offset".
pub const NO_OFFSET: i64 = i64::MIN;

/// How a send ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Outcome {
    /// Took effect: ended `ok` (a transaction's send: the transaction committed).
    Ok,
    /// Did not take effect: ended `fail` (a transaction's send: the transaction aborted).
    Fail,
    /// Unknown: ended `info`, or never completed.
    Info,
}

/// One logical message: a send invocation and how it ended.
///
/// A bare send that its process sends again (a retry, history format v1.1) stays
/// one `Send`: placed at its first attempt, `ok` if any attempt ended `ok`,
/// `fail` only if every attempt ended `fail`, else `info`.
#[derive(Debug, Clone)]
pub struct Send {
    /// The value that names the message.
    pub value: i64,
    /// Op index of the (first attempt's) invoke (for a transaction's send: of the transaction's invoke).
    pub invoke: u64,
    /// Op index of the completion that decided the outcome (the first `ok` one), or [`NO_OP`].
    pub complete: u64,
    /// Time of the (first attempt's) invoke, in nanoseconds.
    pub invoke_time: u64,
    /// Time of the completion that decided the outcome, or 0 when there is none.
    pub complete_time: u64,
    /// Where the broker said it stored it, or [`NO_OFFSET`]: the first `ok`
    /// attempt's position; with no `ok` attempt, the position an `info`
    /// completion named (it counts only where a read proves the send written).
    /// A `fail`ed send keeps none.
    pub offset: i64,
    /// The key, as an id of [`History::keys`].
    pub key: u32,
    /// Dense client id (see [`History::process_number`]).
    pub process: u32,
    /// The producer whose order this send is part of: the process itself, or for a
    /// send that names its `producer` (several processes sharing one producer
    /// client), the dense id of the first process that sent for that producer.
    pub producer: u32,
    /// This send's place among its producer's sends of the same key, in invoke order.
    pub position: u32,
    /// This send's place among all its producer's sends, in invoke order.
    pub seq: u32,
    /// The partition, as an id of [`History::partitions`], or [`NONE`].
    pub partition: u32,
    /// The broker message id, as an id of [`History::ids`], or [`NONE`].
    pub id: u32,
    /// How it ended; a transaction's send takes the transaction's outcome.
    pub outcome: Outcome,
    /// Sent inside a `txn`.
    pub in_txn: bool,
    /// How many times it was sent: 1, or more for a retried send (saturating).
    pub attempts: u8,
}

/// A broker position that a message was seen at, beside the ones kept in
/// [`Send`] and [`Delivery`]: another `ok` attempt of a retried send that named
/// a different position, or a message read by a poll or transaction that did
/// not end `ok` (Jepsen: a poll reports the log whatever became of its
/// transaction). Only messages with an offset or an id are kept.
#[derive(Debug, Clone, Copy)]
pub struct Observed {
    /// The value read or sent.
    pub value: i64,
    /// The offset, or [`NO_OFFSET`].
    pub offset: i64,
    /// The partition, as an id of [`History::partitions`], or [`NONE`].
    pub partition: u32,
    /// The broker message id, as an id of [`History::ids`], or [`NONE`].
    pub id: u32,
    /// The op that said so (its completion index).
    pub op: u64,
    /// A send's completion (`true`) or a read (`false`).
    pub sent: bool,
}

/// One message delivered by a poll.
#[derive(Debug, Clone)]
pub struct Delivery {
    /// The value delivered.
    pub value: i64,
    /// The offset, or [`NO_OFFSET`].
    pub offset: i64,
    /// Index into [`History::polls`].
    pub poll: u32,
    /// The key, as an id of [`History::keys`].
    pub key: u32,
    /// The partition, as an id of [`History::partitions`], or [`NONE`].
    pub partition: u32,
    /// The broker message id, as an id of [`History::ids`], or [`NONE`].
    pub id: u32,
    /// Index into [`History::sends`], or [`NONE`] when no send of this value was invoked.
    pub send: u32,
    /// The broker flagged it as a redelivery.
    pub redelivered: bool,
}

/// A successful poll (or the reads of a committed transaction).
#[derive(Debug, Clone)]
pub struct Poll {
    /// Op index of the invoke.
    pub invoke: u64,
    /// Op index of the completion.
    pub complete: u64,
    /// Time of the completion, in nanoseconds.
    pub complete_time: u64,
    /// The consumer: a dense client id.
    pub process: u32,
    /// The group, as an id of [`History::groups`] (0: the default group).
    pub group: u32,
    /// Its deliveries are `deliveries[first..first + count]`.
    pub first: u32,
    /// How many deliveries it has.
    pub count: u32,
}

/// A consumer changed its position: assign, subscribe or seek. Order checks
/// restart after it for the partitions it resets ([`History::resets_partition`]).
#[derive(Debug, Clone, Copy)]
pub struct Reset {
    /// Op index of the invoke (a reset counts from its invoke, whatever its outcome).
    pub index: u64,
    /// The consumer: a dense client id.
    pub process: u32,
    /// Which partitions it starts over.
    pub scope: ResetScope,
    /// Its named partitions are `reset_partitions[first..first + count]` (partition ids).
    pub first: u32,
    /// How many partitions it names.
    pub count: u32,
}

/// Which partitions a [`Reset`] starts over.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ResetScope {
    /// All of them: the op names no partitions.
    All,
    /// All but the named ones: an `assign` or `subscribe` that still covers a
    /// partition keeps the consumer's place in it (as Jepsen's checker).
    AllBut,
    /// Only the named ones: a `seek`, or a rebalance that assigns or revokes them.
    Only,
}

/// One transaction (`f: txn`), kept for the transaction checker only when the history has any.
#[derive(Debug, Clone)]
pub struct TxnRec {
    /// Op index of the invoke.
    pub invoke: u64,
    /// Op index of the completion, or [`NO_OP`].
    pub complete: u64,
    /// Time of the invoke, in nanoseconds.
    pub invoke_time: u64,
    /// Time of the completion, or 0 when there is none.
    pub complete_time: u64,
    /// Dense client id.
    pub process: u32,
    /// `Ok` committed, `Fail` aborted, `Info` unknown (or never completed).
    pub outcome: Outcome,
    /// Its micro-ops are `txn_mops[first..first + count]`, in the order the completion lists them.
    pub first: u32,
    /// How many micro-ops it has.
    pub count: u32,
}

/// One message a transaction sent or read.
#[derive(Debug, Clone, Copy)]
pub struct TxnMop {
    /// The value sent or read.
    pub value: i64,
    /// Offset as the completion gives it, or [`NO_OFFSET`].
    pub offset: i64,
    /// The key, as an id of [`History::keys`].
    pub key: u32,
    /// The partition, as an id of [`History::partitions`], or [`NONE`].
    pub partition: u32,
    /// A send (`true`) or a message polled (`false`).
    pub send: bool,
}

/// A fault event, kept for reports and timelines.
#[derive(Debug, Clone)]
pub struct NemesisEvent {
    /// Op index.
    pub index: u64,
    /// Time, in nanoseconds.
    pub time: u64,
    /// The op's `type`.
    pub kind: OpType,
    /// The fault's name (the op's `f`).
    pub f: String,
    /// The value as raw JSON text (may be empty).
    pub value: String,
}

/// A string interner: dense `u32` ids.
///
/// Names of up to 15 bytes (almost every key, group and partition name) are
/// looked up by their bytes packed into one integer, which hashes and compares
/// in a few instructions; longer names by string.
#[derive(Debug, Default, Clone)]
pub struct Interner {
    small: FxHashMap<u128, u32>,
    ids: FxHashMap<Box<str>, u32>,
    names: Vec<Box<str>>,
}

/// Up to 15 bytes and the length, in one integer (`None` for longer names).
#[inline]
fn pack(s: &str) -> Option<u128> {
    let b = s.as_bytes();
    if b.len() > 15 {
        return None;
    }
    let mut w = [0u8; 16];
    w[..b.len()].copy_from_slice(b);
    w[15] = b.len() as u8;
    Some(u128::from_le_bytes(w))
}

impl Interner {
    /// The id of `s`, interned now if it was not yet (ids count up from 0).
    #[inline]
    pub fn intern(&mut self, s: &str) -> u32 {
        let packed = pack(s);
        let found = match packed {
            Some(k) => self.small.get(&k),
            None => self.ids.get(s),
        };
        if let Some(&id) = found {
            return id;
        }
        let id = u32::try_from(self.names.len()).unwrap_or(NONE - 1);
        self.names.push(s.into());
        match packed {
            Some(k) => self.small.insert(k, id),
            None => self.ids.insert(s.into(), id),
        };
        id
    }
    /// The id of `s`, if it is interned.
    pub fn get(&self, s: &str) -> Option<u32> {
        match pack(s) {
            Some(k) => self.small.get(&k).copied(),
            None => self.ids.get(s).copied(),
        }
    }
    /// The name of an id ("" for an id it never gave).
    pub fn name(&self, id: u32) -> &str {
        self.names.get(id as usize).map(|s| &**s).unwrap_or("")
    }
    /// How many names are interned.
    pub fn len(&self) -> usize {
        self.names.len()
    }
    /// Whether no name is interned.
    pub fn is_empty(&self) -> bool {
        self.names.is_empty()
    }
}

/// Value -> index into `sends`: a table where values are small and dense (as
/// every recorder numbers them: 1, 2, 3, ...), a hash map for the others.
#[derive(Debug, Default, Clone)]
pub struct ValueIndex {
    dense: Vec<u32>,
    sparse: FxHashMap<i64, u32>,
}

impl ValueIndex {
    /// Values below this always go to the table (4 bytes each at most).
    const DENSE_FLOOR: u64 = 1 << 16;

    /// The index into `sends` of the send of `value`, if one was invoked.
    #[inline]
    pub fn get(&self, value: i64) -> Option<u32> {
        if let Some(&i) = usize::try_from(value).ok().and_then(|v| self.dense.get(v)) {
            return (i != NONE).then_some(i);
        }
        self.sparse.get(&value).copied()
    }

    /// Records `send` for `value` (which has none yet); `entries` is how many values
    /// are recorded so far, to keep the table at most a few times larger than that.
    #[inline]
    fn insert(&mut self, value: i64, send: u32, entries: usize) {
        if let Ok(v) = usize::try_from(value) {
            if v < self.dense.len() {
                self.dense[v] = send;
                return;
            }
            let limit = Self::DENSE_FLOOR.max(4 * entries as u64 + 1024);
            if (v as u64) < limit {
                let new_len = (v + 1).max(self.dense.len() * 2).min(limit as usize);
                self.dense.resize(new_len, NONE);
                self.dense[v] = send;
                return;
            }
        }
        self.sparse.insert(value, send);
    }

    /// Memory held, in bytes (roughly).
    pub fn heap_bytes(&self) -> usize {
        self.dense.capacity() * 4 + self.sparse.capacity() * 16
    }
}

/// Counts of what was read.
#[derive(Debug, Default, Clone)]
pub struct Counts {
    /// Ops read, of every process (nemesis and harness included).
    pub ops: u64,
    /// Ops of type `invoke`.
    pub invokes: u64,
    /// Ops of type `ok`.
    pub oks: u64,
    /// Ops of type `fail`.
    pub fails: u64,
    /// Ops of type `info`.
    pub infos: u64,
    /// `ack` ops that ended `ok`.
    pub acks: u64,
    /// `commit` ops that ended `ok`.
    pub commits: u64,
    /// Transactions that completed (of any type).
    pub txns: u64,
    /// Transactions that committed (ended `ok`).
    pub txns_ok: u64,
    /// Client ops with an `f` this version does not know (kept out of the checks).
    pub unknown_f: u64,
    /// Ops of the nemesis.
    pub nemesis_events: u64,
    /// `time` of the first op.
    pub first_time: u64,
    /// `time` of the last op.
    pub last_time: u64,
}

/// A whole history in checkable form.
#[derive(Debug, Default, Clone)]
pub struct History {
    /// One per logical message (a retried send is one), in the order the reader met them.
    pub sends: Vec<Send>,
    /// Every delivery, poll by poll ([`Poll::first`] and [`Poll::count`] slice it).
    pub deliveries: Vec<Delivery>,
    /// The `ok` polls and the reads of committed transactions, in completion order.
    pub polls: Vec<Poll>,
    /// The assign, subscribe and seek ops, in invoke order.
    pub resets: Vec<Reset>,
    /// The nemesis's ops, in file order.
    pub nemesis: Vec<NemesisEvent>,
    /// Partition ids named by [`History::resets`].
    pub reset_partitions: Vec<u32>,
    /// Positions seen beside the sends' and deliveries' own ([`Observed`]).
    pub observed: Vec<Observed>,
    /// Groups with a poll (or transaction) whose outcome is unknown: it may have
    /// taken messages that no `ok` op shows. Sorted, each once.
    pub unsure_groups: Vec<u32>,
    /// Transactions in invoke order (empty when the history has none).
    pub txns: Vec<TxnRec>,
    /// The micro-ops of [`History::txns`].
    pub txn_mops: Vec<TxnMop>,
    /// Op index of the `drain` phase marker.
    pub drain: Option<u64>,
    /// Op index of the `drained` phase marker.
    pub drained: Option<u64>,
    /// How the drain ended: the `drained` marker's `drain` field (`None`
    /// when it has none, as in histories written before it existed).
    pub drain_end: Option<crate::DrainEnd>,
    /// The keys of messages, interned.
    pub keys: Interner,
    /// Group 0 is the default group (polls without `group`), named "".
    pub groups: Interner,
    /// The topics named by messages and resets, interned.
    pub topics: Interner,
    /// The broker message ids, interned.
    pub ids: Interner,
    /// Partition id -> (topic id or [`NONE`], partition number).
    pub partitions: Vec<(u32, i64)>,
    partition_ids: FxHashMap<(u32, i64), u32>,
    /// Dense client id -> the process number in the file.
    pub processes: Vec<u64>,
    process_ids: FxHashMap<u64, u32>,
    /// Value -> index into `sends`.
    pub send_of_value: ValueIndex,
    /// Extension (the two-hop workload, `docs/twohop.md`): (send index, input
    /// value) of every send that names the `input` it was made from, in invoke
    /// order; empty in every other history.
    pub inputs: Vec<(u32, i64)>,
    /// Counts of what was read.
    pub counts: Counts,
    /// Things worth telling that did not stop the read (a cut-off last line).
    pub warnings: Vec<String>,
    /// Extension: the `dedup` and `effect` ops of idempotent consumers, in
    /// invoke order ([`crate::processing`]); empty in a history without them.
    pub processing: Vec<crate::processing::Processing>,
}

impl History {
    /// The process number as written in the file.
    pub fn process_number(&self, id: u32) -> u64 {
        self.processes.get(id as usize).copied().unwrap_or(u64::MAX)
    }
    /// The name of a group id ("" for the default group).
    pub fn group_name(&self, id: u32) -> &str {
        self.groups.name(id)
    }
    /// The name of a key id ("" for [`NONE`]).
    pub fn key_name(&self, id: u32) -> &str {
        if id == NONE {
            ""
        } else {
            self.keys.name(id)
        }
    }
    /// (topic, partition) of a partition id; topic is None where the history names none.
    pub fn partition(&self, id: u32) -> Option<(Option<&str>, i64)> {
        let &(t, p) = self.partitions.get(id as usize)?;
        Some(((t != NONE).then(|| self.topics.name(t)), p))
    }
    /// The broker message id of an interned id; `None` for [`NONE`].
    pub fn id_name(&self, id: u32) -> Option<&str> {
        (id != NONE).then(|| self.ids.name(id))
    }
    /// The send of `value`, if one was invoked.
    pub fn send_of(&self, value: i64) -> Option<&Send> {
        self.send_of_value
            .get(value)
            .map(|i| &self.sends[i as usize])
    }
    /// Micro-ops of one transaction.
    pub fn txn_mops_of(&self, t: &TxnRec) -> &[TxnMop] {
        let a = t.first as usize;
        &self.txn_mops[a..a + t.count as usize]
    }
    /// Deliveries of one poll.
    pub fn poll_deliveries(&self, poll: &Poll) -> &[Delivery] {
        let a = poll.first as usize;
        &self.deliveries[a..a + poll.count as usize]
    }
    /// Whether `reset` starts the consumer over in `partition` (a partition id, or [`NONE`]).
    pub fn resets_partition(&self, reset: &Reset, partition: u32) -> bool {
        let a = reset.first as usize;
        let named = || self.reset_partitions[a..a + reset.count as usize].contains(&partition);
        match reset.scope {
            ResetScope::All => true,
            ResetScope::AllBut => partition == NONE || !named(),
            ResetScope::Only => partition != NONE && named(),
        }
    }
    /// Whether a poll of `group` ended with an unknown outcome ([`History::unsure_groups`]).
    pub fn group_is_unsure(&self, group: u32) -> bool {
        self.unsure_groups.binary_search(&group).is_ok()
    }
}

enum PendingKind {
    Send(u32),
    /// A later attempt of the send (a retry).
    Retry(u32),
    /// A poll, with its group id.
    Poll(u32),
    /// Its sends, its index in `History::txns`, and its group id.
    Txn(Vec<u32>, u32, u32),
    /// A `dedup` or `effect` op, its index in `History::processing`.
    Processing(u32),
    Other,
}

struct Pending {
    f: Cow<'static, str>,
    line: u64,
    index: u64,
    kind: PendingKind,
}

/// Builds a [`History`] from ops in file order, checking the contract as it goes.
#[derive(Default)]
pub struct Builder {
    h: History,
    /// By dense process id.
    pending: Vec<Option<Pending>>,
    /// Partition number -> id, for partitions without a topic.
    partition_dense: Vec<u32>,
    /// Process number -> dense id, for numbers below 2^16.
    process_dense: Vec<u32>,
    /// [process]: key -> sends so far. A map per process: the producers at work
    /// keep theirs in cache, where one map for all would be probed at random.
    positions: Vec<FxHashMap<u32, u32>>,
    seqs: Vec<u32>,
    /// A send's `producer` number -> the dense id its order is kept under.
    named_producers: FxHashMap<u64, u32>,
    /// Partitions named by resets, as (topic or NONE, number), matched to ids at the end.
    reset_names: Vec<(u32, i64)>,
    last_index: Option<u64>,
    last_time: u64,
}

fn u32_of(n: usize) -> u32 {
    u32::try_from(n).unwrap_or(NONE - 1)
}

impl Builder {
    /// An empty builder (group 0 is the default group).
    pub fn new() -> Self {
        let mut b = Builder::default();
        b.h.groups.intern("");
        b
    }

    #[inline]
    fn process_id(&mut self, p: u64) -> u32 {
        // Process numbers are small in every recorder's histories: a table first.
        if let Some(&id) = self.process_dense.get(p as usize) {
            if id != NONE {
                return id;
            }
        }
        self.process_id_slow(p)
    }

    fn process_id_slow(&mut self, p: u64) -> u32 {
        let id = match self.h.process_ids.get(&p) {
            Some(&id) => id,
            None => {
                let id = u32_of(self.h.processes.len());
                self.h.processes.push(p);
                self.h.process_ids.insert(p, id);
                self.seqs.push(0);
                self.pending.push(None);
                self.positions.push(FxHashMap::default());
                id
            }
        };
        if p < 1 << 16 {
            let p = p as usize;
            if self.process_dense.len() <= p {
                self.process_dense.resize(p + 1, NONE);
            }
            self.process_dense[p] = id;
        }
        id
    }

    #[inline]
    fn partition_id(&mut self, topic: Option<&str>, partition: Option<i64>) -> u32 {
        let Some(p) = partition else { return NONE };
        // The common case, small partition numbers without a topic: a table.
        if topic.is_none() && (0..4096).contains(&p) {
            if let Some(&id) = self.partition_dense.get(p as usize) {
                if id != NONE {
                    return id;
                }
            }
            let id = self.partition_id_slow(None, p);
            if self.partition_dense.len() <= p as usize {
                self.partition_dense.resize(p as usize + 1, NONE);
            }
            self.partition_dense[p as usize] = id;
            return id;
        }
        self.partition_id_slow(topic, p)
    }

    fn partition_id_slow(&mut self, topic: Option<&str>, p: i64) -> u32 {
        let t = topic.map_or(NONE, |t| self.h.topics.intern(t));
        if let Some(&id) = self.h.partition_ids.get(&(t, p)) {
            return id;
        }
        let id = u32_of(self.h.partitions.len());
        self.h.partitions.push((t, p));
        self.h.partition_ids.insert((t, p), id);
        id
    }

    fn key_id(&mut self, key: Option<&str>) -> u32 {
        self.h.keys.intern(key.unwrap_or(""))
    }

    fn new_send(
        &mut self,
        m: &Msg<'_>,
        op: &Op<'_>,
        process: u32,
        in_txn: bool,
    ) -> Result<u32, Problem> {
        let idx = u32_of(self.h.sends.len());
        if let Some(prev) = self.h.send_of_value.get(m.value) {
            let first = &self.h.sends[prev as usize];
            return Err(Problem::ValueSentTwice {
                value: m.value,
                first_index: first.invoke,
            });
        }
        let key = self.key_id(m.key.as_deref());
        let producer = match op.producer {
            None => process,
            Some(p) => *self.named_producers.entry(p).or_insert(process),
        };
        let pos = self.positions[producer as usize].entry(key).or_insert(0);
        let position = *pos;
        *pos += 1;
        let seq = self.seqs[producer as usize];
        self.seqs[producer as usize] += 1;
        self.h
            .send_of_value
            .insert(m.value, idx, self.h.sends.len());
        self.h.sends.push(Send {
            value: m.value,
            invoke: op.index,
            complete: NO_OP,
            invoke_time: op.time,
            complete_time: 0,
            offset: NO_OFFSET,
            key,
            process,
            producer,
            position,
            seq,
            partition: NONE,
            id: NONE,
            outcome: Outcome::Info,
            in_txn,
            attempts: 1,
        });
        if let Some(input) = m.input {
            self.h.inputs.push((idx, input));
        }
        Ok(idx)
    }

    /// A bare send of a value this process sent before as a bare send: a retry
    /// of the same logical message (v1.1). `None` when it is not one.
    fn retry_of(&mut self, m: &Msg<'_>, process: u32) -> Option<u32> {
        let prev = self.h.send_of_value.get(m.value)?;
        let s = &mut self.h.sends[prev as usize];
        if s.in_txn || s.process != process {
            return None;
        }
        s.attempts = s.attempts.saturating_add(1);
        Some(prev)
    }

    fn position(&mut self, m: Option<&Msg<'_>>) -> (u32, i64, u32) {
        match m {
            Some(m) => {
                let part = self.partition_id(m.topic.as_deref(), m.partition);
                let id = m.id.as_deref().map_or(NONE, |s| self.h.ids.intern(s));
                (part, m.offset.unwrap_or(NO_OFFSET), id)
            }
            None => (NONE, NO_OFFSET, NONE),
        }
    }

    fn complete_send(&mut self, idx: u32, m: Option<&Msg<'_>>, op: &Op<'_>, outcome: Outcome) {
        let (partition, offset, id) = self.position(m);
        let s = &mut self.h.sends[idx as usize];
        s.complete = op.index;
        s.complete_time = op.time;
        s.outcome = outcome;
        if outcome != Outcome::Fail {
            s.partition = partition;
            s.offset = offset;
            s.id = id;
        }
    }

    /// A later attempt of a retried send completed: the message is written if
    /// any attempt was, failed only if every attempt failed.
    fn complete_retry(&mut self, idx: u32, m: Option<&Msg<'_>>, op: &Op<'_>, outcome: Outcome) {
        let (partition, offset, id) = self.position(m);
        let s = &mut self.h.sends[idx as usize];
        let had_position = s.offset != NO_OFFSET || s.id != NONE;
        let decides = match (s.outcome, outcome) {
            (Outcome::Ok, _) => false,
            (_, Outcome::Ok) => true,
            (Outcome::Fail, _) => true,
            (Outcome::Info, _) => false,
        };
        if decides {
            s.complete = op.index;
            s.complete_time = op.time;
            s.outcome = outcome;
            if outcome != Outcome::Fail && (outcome == Outcome::Ok || !had_position) {
                s.partition = partition;
                s.offset = offset;
                s.id = id;
            }
            return;
        }
        let (ok_before, value) = (s.outcome == Outcome::Ok, s.value);
        let same = s.partition == partition && s.offset == offset && s.id == id;
        if outcome == Outcome::Ok && ok_before && !same && (offset != NO_OFFSET || id != NONE) {
            // Stored again at another position: the broker holds it twice.
            self.h.observed.push(Observed {
                value,
                offset,
                partition,
                id,
                op: op.index,
                sent: true,
            });
        } else if s.outcome == Outcome::Info && !had_position && outcome == Outcome::Info {
            s.partition = partition;
            s.offset = offset;
            s.id = id;
        }
    }

    /// Keeps the positions of messages read by an op that did not end `ok`.
    fn observe(&mut self, messages: &[Msg<'_>], op: u64) {
        for m in messages {
            if m.offset.is_none() && m.id.is_none() {
                continue;
            }
            let (partition, offset, id) = self.position(Some(m));
            self.h.observed.push(Observed {
                value: m.value,
                offset,
                partition,
                id,
                op,
                sent: false,
            });
        }
    }

    fn unsure(&mut self, group: u32) {
        self.h.unsure_groups.push(group);
    }

    /// Reads the partitions a reset names: a list of partition numbers (Jepsen's
    /// keys: the consumer's whole assignment), or `{"partitions": [...], "topic":
    /// t, "rebalance": "assign" | "revoke"}` (a rebalance: the named partitions
    /// change hands, and start over at the committed offset).
    fn reset_scope(&mut self, f: &F<'_>, value: &Value<'_>) -> (ResetScope, u32, u32) {
        let first = u32_of(self.reset_names.len());
        let (names, topic, revoke): (Vec<i64>, Option<String>, bool) = match value {
            Value::Partitions(ps) => (ps.clone(), None, false),
            Value::Raw(r) => match serde_json::from_str::<serde_json::Value>(r) {
                Ok(serde_json::Value::Array(xs)) => {
                    (xs.iter().filter_map(|x| x.as_i64()).collect(), None, false)
                }
                Ok(serde_json::Value::Object(o)) => match o.get("partitions") {
                    Some(serde_json::Value::Array(xs)) => (
                        xs.iter().filter_map(|x| x.as_i64()).collect(),
                        o.get("topic").and_then(|t| t.as_str()).map(str::to_string),
                        o.get("rebalance").is_some_and(|r| !r.is_null()),
                    ),
                    _ => (Vec::new(), None, false),
                },
                _ => (Vec::new(), None, false),
            },
            _ => (Vec::new(), None, false),
        };
        if names.is_empty() {
            return (ResetScope::All, first, 0);
        }
        let t = topic.map_or(NONE, |t| self.h.topics.intern(&t));
        for &n in &names {
            self.reset_names.push((t, n));
        }
        let scope = if revoke || matches!(f, F::Seek) {
            ResetScope::Only
        } else {
            ResetScope::AllBut
        };
        (scope, first, u32_of(names.len()))
    }

    fn add_poll(&mut self, op: &Op<'_>, invoke: u64, process: u32, messages: &[Msg<'_>]) {
        let group = self.h.groups.intern(op.group.as_deref().unwrap_or(""));
        let poll = u32_of(self.h.polls.len());
        let first = u32_of(self.h.deliveries.len());
        for m in messages {
            let key = self.key_id(m.key.as_deref());
            let partition = self.partition_id(m.topic.as_deref(), m.partition);
            let id = m.id.as_deref().map_or(NONE, |s| self.h.ids.intern(s));
            self.h.deliveries.push(Delivery {
                value: m.value,
                offset: m.offset.unwrap_or(NO_OFFSET),
                poll,
                key,
                partition,
                id,
                send: NONE,
                redelivered: m.redelivered,
            });
        }
        self.h.polls.push(Poll {
            invoke,
            complete: op.index,
            complete_time: op.time,
            process,
            group,
            first,
            count: u32_of(messages.len()),
        });
    }

    /// Adds the op read from 1-based `line`.
    pub fn push(&mut self, op: &Op<'_>, line: u64) -> Result<(), Problem> {
        if let Some(prev) = self.last_index {
            if op.index <= prev {
                return Err(Problem::IndexNotIncreasing {
                    index: op.index,
                    previous: prev,
                });
            }
        } else {
            self.h.counts.first_time = op.time;
        }
        if op.time < self.last_time {
            return Err(Problem::TimeWentBack {
                time: op.time,
                previous: self.last_time,
            });
        }
        self.last_index = Some(op.index);
        self.last_time = op.time;
        let c = &mut self.h.counts;
        c.ops += 1;
        c.last_time = op.time;
        match op.kind {
            OpType::Invoke => c.invokes += 1,
            OpType::Ok => c.oks += 1,
            OpType::Fail => c.fails += 1,
            OpType::Info => c.infos += 1,
        }
        let pnum = match op.process {
            Process::Client(p) => p,
            Process::Harness => {
                if op.f == F::Phase {
                    if let Value::Phase(p) = &op.value {
                        match &**p {
                            "drain" => self.h.drain = self.h.drain.or(Some(op.index)),
                            "drained" => {
                                self.h.drained = Some(op.index);
                                if let Some(raw) = op.drain {
                                    let end = serde_json::from_str::<crate::DrainEnd>(raw)
                                        .map_err(|e| Problem::bad("drain", e))?;
                                    self.h.drain_end = Some(end);
                                }
                            }
                            _ => {}
                        }
                    }
                }
                return Ok(());
            }
            Process::Nemesis | Process::Other(_) => {
                if matches!(op.process, Process::Nemesis) {
                    self.h.counts.nemesis_events += 1;
                    self.h.nemesis.push(NemesisEvent {
                        index: op.index,
                        time: op.time,
                        kind: op.kind,
                        f: op.f.name().to_string(),
                        value: match &op.value {
                            Value::Raw(r) => (*r).to_string(),
                            _ => String::new(),
                        },
                    });
                }
                return Ok(());
            }
        };
        let process = self.process_id(pnum);
        if op.kind == OpType::Invoke {
            if let Some(p) = &self.pending[process as usize] {
                return Err(Problem::InvokeWhilePending {
                    process: pnum,
                    f: op.f.name().to_string(),
                    pending: p.f.to_string(),
                    pending_line: p.line,
                });
            }
            let kind = match (&op.f, &op.value) {
                (F::Send, Value::Send(m)) => match self.retry_of(m, process) {
                    Some(idx) => PendingKind::Retry(idx),
                    None => PendingKind::Send(self.new_send(m, op, process, false)?),
                },
                (F::Send, _) => {
                    return Err(Problem::bad("value", "a send needs {\"key\",\"value\"}"))
                }
                (F::Poll, _) => {
                    PendingKind::Poll(self.h.groups.intern(op.group.as_deref().unwrap_or("")))
                }
                (F::Txn, Value::Txn(micro)) => {
                    let mut sends = Vec::new();
                    for mo in micro {
                        if let MicroOp::Send(m) = mo {
                            sends.push(self.new_send(m, op, process, true)?);
                        }
                    }
                    let txn = u32_of(self.h.txns.len());
                    self.h.txns.push(TxnRec {
                        invoke: op.index,
                        complete: NO_OP,
                        invoke_time: op.time,
                        complete_time: 0,
                        process,
                        outcome: Outcome::Info,
                        first: 0,
                        count: 0,
                    });
                    // Only a transaction that reads can take messages no `ok` op shows.
                    let reads = micro.iter().any(|m| matches!(m, MicroOp::Poll(_)));
                    let group = if reads {
                        self.h.groups.intern(op.group.as_deref().unwrap_or(""))
                    } else {
                        NONE
                    };
                    PendingKind::Txn(sends, txn, group)
                }
                (F::Txn, _) => {
                    return Err(Problem::bad("value", "a txn needs a list of micro-ops"))
                }
                (F::Assign | F::Subscribe | F::Seek, v) => {
                    let (scope, first, count) = self.reset_scope(&op.f, v);
                    self.h.resets.push(Reset {
                        index: op.index,
                        process,
                        scope,
                        first,
                        count,
                    });
                    PendingKind::Other
                }
                (F::Ack | F::Commit, _) => PendingKind::Other,
                (f, v) if crate::processing::is_processing(f) => {
                    let group = self.h.groups.intern(op.group.as_deref().unwrap_or(""));
                    let rec = crate::processing::invoked(f, v, group, process, op.index)
                        .map_err(|e| Problem::bad("value", e))?;
                    self.h.processing.push(rec);
                    PendingKind::Processing(u32_of(self.h.processing.len() - 1))
                }
                _ => {
                    self.h.counts.unknown_f += 1;
                    PendingKind::Other
                }
            };
            self.pending[process as usize] = Some(Pending {
                f: match op.f.static_name() {
                    Some(n) => Cow::Borrowed(n),
                    None => Cow::Owned(op.f.name().to_string()),
                },
                line,
                index: op.index,
                kind,
            });
            return Ok(());
        }
        // A completion.
        let Some(p) = self.pending[process as usize].take() else {
            return Err(Problem::CompletionWithoutInvoke {
                kind: op.kind.as_str(),
                f: op.f.name().to_string(),
                process: pnum,
            });
        };
        if p.f != op.f.name() {
            return Err(Problem::CompletionMismatch {
                kind: op.kind.as_str(),
                f: op.f.name().to_string(),
                process: pnum,
                pending: p.f.into_owned(),
                pending_line: p.line,
            });
        }
        let outcome = match op.kind {
            OpType::Ok => Outcome::Ok,
            OpType::Fail => Outcome::Fail,
            _ => Outcome::Info,
        };
        match p.kind {
            PendingKind::Send(idx) | PendingKind::Retry(idx) => {
                let m = match &op.value {
                    Value::Send(m) => Some(m),
                    _ => None,
                };
                if matches!(p.kind, PendingKind::Retry(_)) {
                    self.complete_retry(idx, m, op, outcome);
                } else {
                    self.complete_send(idx, m, op, outcome);
                }
            }
            PendingKind::Poll(group) => match (op.kind, &op.value) {
                (OpType::Ok, Value::Messages(ms)) => self.add_poll(op, p.index, process, ms),
                (OpType::Ok, _) => {}
                (kind, value) => {
                    if kind == OpType::Info {
                        self.unsure(group);
                    }
                    if let Value::Messages(ms) = value {
                        self.observe(ms, op.index);
                    }
                }
            },
            PendingKind::Txn(sends, txn, reading) => {
                self.h.counts.txns += 1;
                self.record_txn_mops(txn, &sends, &op.value);
                let t = &mut self.h.txns[txn as usize];
                t.complete = op.index;
                t.complete_time = op.time;
                t.outcome = outcome;
                if op.kind == OpType::Ok {
                    self.h.counts.txns_ok += 1;
                }
                let mut done = vec![false; sends.len()];
                let mut reads: Vec<Msg<'_>> = Vec::new();
                if let Value::Txn(micro) = &op.value {
                    for mo in micro {
                        match mo {
                            MicroOp::Send(m) => {
                                let known = sends
                                    .iter()
                                    .position(|&s| self.h.sends[s as usize].value == m.value);
                                let idx = match known {
                                    Some(i) => {
                                        done[i] = true;
                                        sends[i]
                                    }
                                    None => {
                                        // A send decided inside the transaction (consume-transform-produce).
                                        let mut inv = op.clone();
                                        inv.index = p.index;
                                        self.new_send(m, &inv, process, true)?
                                    }
                                };
                                self.complete_send(idx, Some(m), op, outcome);
                            }
                            MicroOp::Poll(ms) if op.kind == OpType::Ok => {
                                reads.extend(ms.iter().cloned())
                            }
                            MicroOp::Poll(ms) => self.observe(ms, op.index),
                        }
                    }
                }
                for (i, &s) in sends.iter().enumerate() {
                    if !done[i] {
                        self.complete_send(s, None, op, outcome);
                    }
                }
                if op.kind == OpType::Ok && !reads.is_empty() {
                    self.add_poll(op, p.index, process, &reads);
                }
                let reads_now = matches!(&op.value, Value::Txn(micro)
                    if micro.iter().any(|m| matches!(m, MicroOp::Poll(_))));
                if op.kind == OpType::Info && (reading != NONE || reads_now) {
                    let g = self.h.groups.intern(op.group.as_deref().unwrap_or(""));
                    self.unsure(g);
                }
            }
            PendingKind::Processing(i) => {
                if let Some(p) = self.h.processing.get_mut(i as usize) {
                    crate::processing::completed(p, outcome, op.index, &op.value);
                }
            }
            PendingKind::Other => {
                if op.kind == OpType::Ok {
                    match op.f {
                        F::Ack => self.h.counts.acks += 1,
                        F::Commit => self.h.counts.commits += 1,
                        _ => {}
                    }
                }
            }
        }
        Ok(())
    }

    /// Keeps a transaction's micro-ops: the completion's where it lists any, else its invoke's sends.
    fn record_txn_mops(&mut self, txn: u32, sends: &[u32], value: &Value<'_>) {
        let first = u32_of(self.h.txn_mops.len());
        match value {
            Value::Txn(micro) if !micro.is_empty() => {
                for mo in micro {
                    let (ms, send) = match mo {
                        MicroOp::Send(m) => (std::slice::from_ref(m), true),
                        MicroOp::Poll(ms) => (&ms[..], false),
                    };
                    for m in ms {
                        let key = self.key_id(m.key.as_deref());
                        let partition = self.partition_id(m.topic.as_deref(), m.partition);
                        self.h.txn_mops.push(TxnMop {
                            value: m.value,
                            offset: m.offset.unwrap_or(NO_OFFSET),
                            key,
                            partition,
                            send,
                        });
                    }
                }
            }
            _ => {
                for &s in sends {
                    let s = &self.h.sends[s as usize];
                    self.h.txn_mops.push(TxnMop {
                        value: s.value,
                        offset: NO_OFFSET,
                        key: s.key,
                        partition: NONE,
                        send: true,
                    });
                }
            }
        }
        let t = &mut self.h.txns[txn as usize];
        t.first = first;
        t.count = u32_of(self.h.txn_mops.len()) - first;
    }

    /// Ends the read: pending invokes count as `info`, deliveries are joined to their sends.
    pub fn finish(mut self) -> History {
        // Pending sends simply stay Outcome::Info with no completion; a pending
        // transaction keeps the sends of its invoke.
        // A pending retry of a send whose attempts all failed so far leaves it unknown.
        let mut pending: Vec<_> = self.pending.drain(..).flatten().map(|p| p.kind).collect();
        for kind in pending.drain(..) {
            match kind {
                PendingKind::Txn(sends, txn, group) => {
                    self.record_txn_mops(txn, &sends, &Value::None);
                    if group != NONE {
                        self.unsure(group);
                    }
                }
                PendingKind::Poll(group) => self.unsure(group),
                PendingKind::Retry(idx) => {
                    let s = &mut self.h.sends[idx as usize];
                    if s.outcome == Outcome::Fail {
                        s.outcome = Outcome::Info;
                        s.complete = NO_OP;
                    }
                }
                PendingKind::Send(_) | PendingKind::Processing(_) | PendingKind::Other => {}
            }
        }
        self.h.unsure_groups.sort_unstable();
        self.h.unsure_groups.dedup();
        // Partitions named by resets, as ids: a name without a topic is that number in any topic.
        if !self.reset_names.is_empty() {
            let mut ids: Vec<u32> = Vec::new();
            for r in &mut self.h.resets {
                let first = u32_of(ids.len());
                let names = &self.reset_names[r.first as usize..(r.first + r.count) as usize];
                for (pid, &(t, n)) in self.h.partitions.iter().enumerate() {
                    if names
                        .iter()
                        .any(|&(nt, nn)| nn == n && (nt == NONE || nt == t))
                    {
                        ids.push(u32_of(pid));
                    }
                }
                r.first = first;
                r.count = u32_of(ids.len()) - first;
            }
            self.h.reset_partitions = ids;
        }
        let map = &self.h.send_of_value;
        for d in &mut self.h.deliveries {
            d.send = map.get(d.value).unwrap_or(NONE);
        }
        self.h
    }
}
