//! The verdict of the v1.1 contract: validity, a status per guarantee, every anomaly type with its count and evidence.
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

pub mod evidence;
pub mod flow;
pub mod processing;
pub use evidence::Example;
pub use flow::{Flow, FlowRow, LagBucket};
use std::fmt;
use std::str::FromStr;

/// A guarantee a run may claim.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Guarantee {
    /// `at-most-once`: no value delivered twice in a group, none stored twice.
    AtMostOnce,
    /// `at-least-once`: no written message missing from a group.
    AtLeastOnce,
    /// `exactly-once`: both of the above, and no `aborted-read`; with transactions, also no
    /// `G0`, `G1b`, `G1c`, `G-single`, `G2` or `precommitted-read`.
    ExactlyOnce,
    /// `producer-order`: no producer-order inversion.
    ProducerOrder,
    /// `key-order`: no key-order inversion.
    KeyOrder,
    /// `partition-order`: no partition went backwards.
    PartitionOrder,
    /// `total-order`: no total-order pair.
    TotalOrder,
    /// `exactly-once-processing` (extension, seed D7): every message delivered to a
    /// group had its effect applied exactly once (no `duplicate-processing`, no
    /// `lost-processing`). In a verdict only when the history has `dedup` or `effect` ops.
    ExactlyOnceProcessing,
}

impl Guarantee {
    /// The seven guarantees, in the order reports list them.
    pub const ALL: [Guarantee; 7] = [
        Guarantee::AtMostOnce,
        Guarantee::AtLeastOnce,
        Guarantee::ExactlyOnce,
        Guarantee::ProducerOrder,
        Guarantee::KeyOrder,
        Guarantee::PartitionOrder,
        Guarantee::TotalOrder,
    ];
    /// The guarantees of the processing of messages (extension): judged only on
    /// histories with `dedup` or `effect` ops.
    pub const PROCESSING: [Guarantee; 1] = [Guarantee::ExactlyOnceProcessing];
    /// The guarantee's name in the verdict (`at-most-once`, ...).
    pub fn name(self) -> &'static str {
        match self {
            Guarantee::AtMostOnce => "at-most-once",
            Guarantee::AtLeastOnce => "at-least-once",
            Guarantee::ExactlyOnce => "exactly-once",
            Guarantee::ProducerOrder => "producer-order",
            Guarantee::KeyOrder => "key-order",
            Guarantee::PartitionOrder => "partition-order",
            Guarantee::TotalOrder => "total-order",
            Guarantee::ExactlyOnceProcessing => "exactly-once-processing",
        }
    }
}

impl fmt::Display for Guarantee {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// A name that is not a guarantee.
#[derive(Debug, Clone, thiserror::Error)]
#[error("unknown guarantee `{0}` (expected one of at-most-once, at-least-once, exactly-once, producer-order, key-order, partition-order, total-order, exactly-once-processing)")]
pub struct UnknownGuarantee(pub String);

impl FromStr for Guarantee {
    type Err = UnknownGuarantee;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        Guarantee::ALL
            .into_iter()
            .chain(Guarantee::PROCESSING)
            .find(|g| g.name() == s.trim())
            .ok_or_else(|| UnknownGuarantee(s.to_string()))
    }
}

/// Whether a guarantee held.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Status {
    /// Nothing in the history breaks it.
    Holds,
    /// Not enough information (no drain, no offsets, nothing delivered).
    Unknown,
    /// An anomaly that breaks it is present.
    Violated,
}

impl Status {
    /// The status's name in the verdict: `holds`, `unknown` or `violated`.
    pub fn name(self) -> &'static str {
        match self {
            Status::Holds => "holds",
            Status::Unknown => "unknown",
            Status::Violated => "violated",
        }
    }
}

/// The verdict's `valid`: `true`, `false` or `"unknown"`; the worst wins (true < unknown < false).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Validity {
    /// `true`: every expected guarantee holds and no integrity anomaly is present.
    True,
    /// `"unknown"`: an expected guarantee is unknown, and none is violated.
    Unknown,
    /// `false`: an expected guarantee is violated, or an integrity anomaly is present.
    False,
}

impl Validity {
    /// Exit status of `gauntlet check`: 0 valid, 1 invalid, 2 unknown.
    pub fn exit_code(self) -> i32 {
        match self {
            Validity::True => 0,
            Validity::False => 1,
            Validity::Unknown => 2,
        }
    }
    /// The word for it in summaries: `valid`, `invalid` or `unknown`.
    pub fn name(self) -> &'static str {
        match self {
            Validity::True => "valid",
            Validity::False => "invalid",
            Validity::Unknown => "unknown",
        }
    }
}

impl Serialize for Validity {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        match self {
            Validity::True => s.serialize_bool(true),
            Validity::False => s.serialize_bool(false),
            Validity::Unknown => s.serialize_str("unknown"),
        }
    }
}

impl<'de> Deserialize<'de> for Validity {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        match serde_json::Value::deserialize(d)? {
            serde_json::Value::Bool(true) => Ok(Validity::True),
            serde_json::Value::Bool(false) => Ok(Validity::False),
            serde_json::Value::String(s) if s == "unknown" => Ok(Validity::Unknown),
            other => Err(serde::de::Error::custom(format!(
                "valid must be true, false or \"unknown\", not {other}"
            ))),
        }
    }
}

/// Every anomaly type of the contract.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum AnomalyKind {
    /// `lost`: a written message missing from a judged group, after a `drained` marker or
    /// proven skipped by a higher offset delivered to the group.
    Lost,
    /// `unseen`: a written message missing from some judged group, and not `lost`.
    Unseen,
    /// `unexpected`: a value was delivered but no send of it was ever invoked.
    Unexpected,
    /// `aborted-read`: a value was delivered whose send ended `fail` (for a transaction: aborted).
    AbortedRead,
    /// `recovered`: a value was delivered whose send ended `info` (information, not an error).
    Recovered,
    /// `duplicate-write`: the value was stored at two different broker positions.
    DuplicateWrite,
    /// `redelivered`: one group received the same broker message more than once.
    Redelivered,
    /// `gap`: a consumer skipped producer positions of a (producer, key) and the group had not
    /// been given a written message among them.
    Gap,
    /// `key-order`: keys whose messages a consumer received out of order.
    KeyOrder,
    /// `producer-order`: producers whose messages a consumer received out of producer sequence.
    ProducerOrder,
    /// `partition-order`: partitions where a consumer received an offset not above the last
    /// one it had received there, with no reset between.
    PartitionOrder,
    /// `total-order`: message pairs received in an order that contradicts the sends' realtime
    /// order, or in opposite orders by two consumers of one group.
    TotalOrder,
    /// `inconsistent-offsets`: positions that held two different values.
    InconsistentOffsets,
    // Transaction anomalies (extension): present in a verdict only when the history has `txn` ops.
    /// `G0`: a cycle of ww edges (write cycle).
    #[serde(rename = "G0")]
    G0,
    /// `G1b`: a committed transaction read part of another's writes to a partition and read past the rest.
    #[serde(rename = "G1b")]
    G1b,
    /// `G1c`: a cycle of ww and wr edges with at least one wr.
    #[serde(rename = "G1c")]
    G1c,
    /// `G-single`: a cycle of ww, wr and rw edges with exactly one rw.
    #[serde(rename = "G-single")]
    GSingle,
    /// `G2`: a cycle of ww, wr and rw edges with two or more rw.
    #[serde(rename = "G2")]
    G2,
    /// `G0-realtime`: as `G0`, with a process or realtime edge.
    #[serde(rename = "G0-realtime")]
    G0Realtime,
    /// `G1c-realtime`: as `G1c`, with a process or realtime edge.
    #[serde(rename = "G1c-realtime")]
    G1cRealtime,
    /// `G-single-realtime`: as `G-single`, with a process or realtime edge.
    #[serde(rename = "G-single-realtime")]
    GSingleRealtime,
    /// `G2-realtime`: as `G2`, with a process or realtime edge.
    #[serde(rename = "G2-realtime")]
    G2Realtime,
    /// `precommitted-read`: a transaction read a value it sent itself.
    PrecommittedRead,
    /// `poll-skip`: an op's first read of a partition is more than one version after the same
    /// process's last read of it.
    PollSkip,
    /// `nonmonotonic-poll`: an op's first read of a partition is at or before the same process's
    /// last read of it.
    NonmonotonicPoll,
    /// `nonmonotonic-send`: an op's first send to a partition lands at or before the same
    /// process's last send there.
    NonmonotonicSend,
    /// `int-poll-skip`: within one op, two successive reads of one partition are more than one
    /// version apart.
    IntPollSkip,
    /// `int-nonmonotonic-poll`: within one op, a read of a partition is at or before the
    /// previous read of it.
    IntNonmonotonicPoll,
    /// `int-send-skip`: within one op, two successive sends to one partition are more than one
    /// version apart.
    IntSendSkip,
    /// `int-nonmonotonic-send`: within one op, a send lands at or before the previous send to
    /// the same partition.
    IntNonmonotonicSend,
    // Processing anomalies (extension, seed D7): present in a verdict only when the
    // history has `dedup` or `effect` ops.
    /// `duplicate-processing`: a message's effect applied twice or more in one group.
    DuplicateProcessing,
    /// `lost-processing`: a message delivered to a group whose effect was never applied
    /// (after a `drained` marker).
    LostProcessing,
    /// `parked`: a message its consumer held back (the dedup store did not answer and
    /// the policy is fail-closed): information, not an error.
    Parked,
    /// `repartition-key-order` (extension, present in a verdict only when the history has an
    /// `add-partitions` nemesis event): keys whose messages, sent on either side of a change
    /// of the partition count and stored on different partitions, the group (any of its
    /// consumers) received out of the producer's order.
    RepartitionKeyOrder,
    // Two-hop anomalies (extension, `docs/twohop.md`): present in a verdict only when
    // the history has sends that name their `input`.
    /// `two-hop-lost`: an input that was written and reached no consumer through the
    /// pipeline, after a `drained` marker.
    TwoHopLost,
    /// `two-hop-duplicate`: an input with two or more outputs written.
    TwoHopDuplicate,
    /// `two-hop-order`: outputs a consumer received before the output of an input
    /// sent earlier by the same producer with the same key.
    TwoHopOrder,
}

impl AnomalyKind {
    /// The transaction anomalies (extension), in the order reports list them.
    pub const TXN: [AnomalyKind; 17] = [
        AnomalyKind::G0,
        AnomalyKind::G1b,
        AnomalyKind::G1c,
        AnomalyKind::GSingle,
        AnomalyKind::G2,
        AnomalyKind::G0Realtime,
        AnomalyKind::G1cRealtime,
        AnomalyKind::GSingleRealtime,
        AnomalyKind::G2Realtime,
        AnomalyKind::PrecommittedRead,
        AnomalyKind::PollSkip,
        AnomalyKind::NonmonotonicPoll,
        AnomalyKind::NonmonotonicSend,
        AnomalyKind::IntPollSkip,
        AnomalyKind::IntNonmonotonicPoll,
        AnomalyKind::IntSendSkip,
        AnomalyKind::IntNonmonotonicSend,
    ];
    /// The processing anomalies (extension, seed D7), in the order reports list
    /// them: in the verdict of a history with `dedup` or `effect` ops.
    pub const PROCESSING: [AnomalyKind; 3] = [
        AnomalyKind::DuplicateProcessing,
        AnomalyKind::LostProcessing,
        AnomalyKind::Parked,
    ];
    /// Jepsen's Kafka checks of how polls and sends move through each
    /// partition: in the verdict of any history whose messages carry offsets.
    pub const KAFKA: [AnomalyKind; 7] = [
        AnomalyKind::PollSkip,
        AnomalyKind::NonmonotonicPoll,
        AnomalyKind::NonmonotonicSend,
        AnomalyKind::IntPollSkip,
        AnomalyKind::IntNonmonotonicPoll,
        AnomalyKind::IntSendSkip,
        AnomalyKind::IntNonmonotonicSend,
    ];
    /// The anomalies of a partition-count change (extension): in the verdict of a
    /// history with an `add-partitions` nemesis event.
    pub const REPARTITION: [AnomalyKind; 1] = [AnomalyKind::RepartitionKeyOrder];
    /// The two-hop pipeline's anomalies (extension, `docs/twohop.md`), in the order
    /// reports list them: in the verdict of a history with outputs only.
    pub const TWO_HOP: [AnomalyKind; 3] = [
        AnomalyKind::TwoHopLost,
        AnomalyKind::TwoHopDuplicate,
        AnomalyKind::TwoHopOrder,
    ];
    /// The thirteen anomaly types of the contract, in the order reports list them.
    pub const ALL: [AnomalyKind; 13] = [
        AnomalyKind::Lost,
        AnomalyKind::Unseen,
        AnomalyKind::Unexpected,
        AnomalyKind::AbortedRead,
        AnomalyKind::Recovered,
        AnomalyKind::DuplicateWrite,
        AnomalyKind::Redelivered,
        AnomalyKind::Gap,
        AnomalyKind::KeyOrder,
        AnomalyKind::ProducerOrder,
        AnomalyKind::PartitionOrder,
        AnomalyKind::TotalOrder,
        AnomalyKind::InconsistentOffsets,
    ];
    /// The anomaly's name in the verdict (`lost`, `G-single`, `poll-skip`, ...).
    pub fn name(self) -> &'static str {
        match self {
            AnomalyKind::Lost => "lost",
            AnomalyKind::Unseen => "unseen",
            AnomalyKind::Unexpected => "unexpected",
            AnomalyKind::AbortedRead => "aborted-read",
            AnomalyKind::Recovered => "recovered",
            AnomalyKind::DuplicateWrite => "duplicate-write",
            AnomalyKind::Redelivered => "redelivered",
            AnomalyKind::Gap => "gap",
            AnomalyKind::KeyOrder => "key-order",
            AnomalyKind::ProducerOrder => "producer-order",
            AnomalyKind::PartitionOrder => "partition-order",
            AnomalyKind::TotalOrder => "total-order",
            AnomalyKind::InconsistentOffsets => "inconsistent-offsets",
            AnomalyKind::G0 => "G0",
            AnomalyKind::G1b => "G1b",
            AnomalyKind::G1c => "G1c",
            AnomalyKind::GSingle => "G-single",
            AnomalyKind::G2 => "G2",
            AnomalyKind::G0Realtime => "G0-realtime",
            AnomalyKind::G1cRealtime => "G1c-realtime",
            AnomalyKind::GSingleRealtime => "G-single-realtime",
            AnomalyKind::G2Realtime => "G2-realtime",
            AnomalyKind::PrecommittedRead => "precommitted-read",
            AnomalyKind::PollSkip => "poll-skip",
            AnomalyKind::NonmonotonicPoll => "nonmonotonic-poll",
            AnomalyKind::NonmonotonicSend => "nonmonotonic-send",
            AnomalyKind::IntPollSkip => "int-poll-skip",
            AnomalyKind::IntNonmonotonicPoll => "int-nonmonotonic-poll",
            AnomalyKind::IntSendSkip => "int-send-skip",
            AnomalyKind::IntNonmonotonicSend => "int-nonmonotonic-send",
            AnomalyKind::DuplicateProcessing => "duplicate-processing",
            AnomalyKind::LostProcessing => "lost-processing",
            AnomalyKind::Parked => "parked",
            AnomalyKind::RepartitionKeyOrder => "repartition-key-order",
            AnomalyKind::TwoHopLost => "two-hop-lost",
            AnomalyKind::TwoHopDuplicate => "two-hop-duplicate",
            AnomalyKind::TwoHopOrder => "two-hop-order",
        }
    }
    /// What `count` counts.
    pub fn unit(self) -> &'static str {
        match self {
            AnomalyKind::Gap => "gaps",
            AnomalyKind::KeyOrder | AnomalyKind::RepartitionKeyOrder => "keys",
            AnomalyKind::ProducerOrder => "producers",
            AnomalyKind::PartitionOrder => "partitions",
            AnomalyKind::TotalOrder => "message pairs",
            AnomalyKind::InconsistentOffsets => "positions",
            AnomalyKind::G0
            | AnomalyKind::G1c
            | AnomalyKind::GSingle
            | AnomalyKind::G2
            | AnomalyKind::G0Realtime
            | AnomalyKind::G1cRealtime
            | AnomalyKind::GSingleRealtime
            | AnomalyKind::G2Realtime => "cycles",
            AnomalyKind::G1b => "reads",
            AnomalyKind::PrecommittedRead => "transactions",
            AnomalyKind::PollSkip
            | AnomalyKind::NonmonotonicPoll
            | AnomalyKind::NonmonotonicSend
            | AnomalyKind::IntPollSkip
            | AnomalyKind::IntNonmonotonicPoll
            | AnomalyKind::IntSendSkip
            | AnomalyKind::IntNonmonotonicSend => "cases",
            _ => "messages",
        }
    }
    /// Anomalies that make a history invalid whatever it declared.
    pub fn is_integrity(self) -> bool {
        matches!(
            self,
            AnomalyKind::Unexpected | AnomalyKind::AbortedRead | AnomalyKind::InconsistentOffsets
        )
    }
    /// Information, not an error.
    pub fn is_informational(self) -> bool {
        matches!(self, AnomalyKind::Recovered | AnomalyKind::Parked)
    }
}

impl fmt::Display for AnomalyKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// One anomaly type's findings.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Anomaly {
    /// How many: distinct values for message anomalies, else the unit of [`AnomalyKind::unit`].
    pub count: u64,
    /// At most `max_examples`, each naming the ops (by `index`) that prove it.
    /// Read alone, an anomaly's examples are [`Example::Untyped`]; a [`Verdict`]
    /// read back types them by their kind.
    pub examples: Vec<Example>,
    /// Extension: the count per consumer group, where the anomaly is a group's ("" is the default group).
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub by_group: BTreeMap<String, u64>,
    /// Extension (the two-hop anomalies): the count per place, `where` a
    /// `two-hop-lost` input left the pipeline or where a `two-hop-order`
    /// breach happened (`broke_at`), over all of them, not only the examples.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub by_place: BTreeMap<String, u64>,
}

/// Figures about the history.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Stats {
    /// Ops in the history, of every process.
    pub ops: u64,
    /// Logical messages sent (a retried send is one).
    pub sends: u64,
    /// Messages whose send ended `ok`.
    pub sends_ok: u64,
    /// Messages whose send ended `fail`.
    pub sends_fail: u64,
    /// Messages whose send ended `info` or never completed.
    pub sends_info: u64,
    /// Messages delivered, counting every delivery.
    pub delivered: u64,
    /// Distinct values delivered to any group.
    pub delivered_distinct: u64,
    /// Polls that ended `ok`, and reads of committed transactions.
    pub polls: u64,
    /// Groups judged: those with an `ok` poll (or a committed reading transaction), or the default group.
    pub groups: u64,
    /// Distinct keys.
    pub keys: u64,
    /// Distinct client processes.
    pub clients: u64,
    /// Ops of the nemesis.
    pub nemesis_events: u64,
    /// The history has a `drained` marker.
    pub drained: bool,
    /// Nanoseconds from the first op to the last.
    pub duration_ns: u64,
    /// Latency of `ok` sends, invoke to completion.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub send_latency_ns: Option<Latency>,
    /// Sends that completed `ok` per second of the sending window (from the first
    /// send's invoke to the last send's completion; the drain after it is not
    /// counted).
    #[serde(default)]
    pub sends_ok_per_s: f64,
    /// Extension (seed O6): throughput and consumer lag per key and per
    /// partition, and lag over time; absent when no send names a key.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub flow: Option<Flow>,
}

/// Percentiles of a latency, in nanoseconds.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize)]
pub struct Latency {
    /// The median.
    pub p50: u64,
    /// The 99th percentile.
    pub p99: u64,
    /// The largest.
    pub max: u64,
}

/// The verdict of one history.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Verdict {
    /// `true`, `false` or `"unknown"`, judged against [`Verdict::expected`] and the integrity anomalies.
    pub valid: Validity,
    /// The status of all seven guarantees, claimed or not.
    pub guarantees: BTreeMap<Guarantee, Status>,
    /// Every anomaly type of the contract with its count (0 when none), and the transaction
    /// anomalies where the history has them.
    #[serde(deserialize_with = "typed_anomalies")]
    pub anomalies: BTreeMap<AnomalyKind, Anomaly>,
    /// Figures about the history.
    pub stats: Stats,
    /// Extension: the guarantees `valid` was judged against.
    #[serde(default)]
    pub expected: Vec<Guarantee>,
    /// Extension: notes on the read or the check (cut-off last line, bounds hit).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub warnings: Vec<String>,
    /// Extension: the run that recorded the history did not finish as planned
    /// (interrupted, or its history could not be written whole). Absent otherwise.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub incomplete: Option<Incomplete>,
    /// Extension: what was not judged, and why (nothing completed `ok`, or a
    /// checker pass panicked). Absent when everything was judged.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub unjudged: Vec<Unjudged>,
    /// Extension: the streams, queues or topics the broker lost, by its own
    /// answer to the final drain (the `drained` marker's `drain.missing`).
    /// Absent when there are none.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub sources_lost: Vec<SourceLost>,
}

/// One entry of the verdict's `sources_lost` extension: a stream, queue or
/// topic the broker answered the drain does not exist, and from when the run
/// could tell (times in nanoseconds since the run started).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct SourceLost {
    /// The group whose drain got the answer.
    pub group: String,
    /// What was missing, in words: `stream gauntlet`.
    pub what: String,
    /// The broker's answer.
    pub answer: String,
    /// When the drain got the answer first.
    pub answered_at: u64,
    /// When it got it last, confirming it.
    pub confirmed_at: u64,
    /// The last acknowledged send or non-empty read before the drain: the
    /// stream was there then.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_ok: Option<u64>,
    /// The first send after [`SourceLost::last_ok`] that failed or ended
    /// unknown: from when the loss showed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub failing_since: Option<u64>,
}

/// Why part or all of a history was not judged (the verdict's `unjudged`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum UnjudgedReason {
    /// No operation completed `ok` (no acknowledged send, no `ok` read): every
    /// guarantee that nothing violates is `unknown`.
    NothingCompleted,
    /// A checker pass panicked: its anomaly types are not judged.
    CheckerPanicked,
}

/// One entry of the verdict's `unjudged` extension.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Unjudged {
    /// Why.
    pub reason: UnjudgedReason,
    /// The checker pass that panicked (`delivery`, `order`, `total-order`,
    /// `offsets`, `txn`, `stats`); absent when the whole history is not judged.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pass: Option<String>,
    /// The anomaly types left unjudged: their count is 0 and means nothing.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub anomalies: Vec<AnomalyKind>,
    /// What happened, in words (for a panic: its message).
    pub detail: String,
}

/// Reads the anomalies and types each example by its kind ([`Example::typed`]).
fn typed_anomalies<'de, D: serde::Deserializer<'de>>(
    d: D,
) -> Result<BTreeMap<AnomalyKind, Anomaly>, D::Error> {
    let mut map = BTreeMap::<AnomalyKind, Anomaly>::deserialize(d)?;
    for (kind, a) in map.iter_mut() {
        for e in a.examples.iter_mut() {
            if let Example::Untyped(json) = e {
                *e = Example::typed(*kind, std::mem::take(json));
            }
        }
    }
    Ok(map)
}

/// Why a run's history is not the whole run (the verdict's `incomplete`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum IncompleteReason {
    /// Stopped before its end (Ctrl-C, SIGTERM): what was recorded is whole up to
    /// the stop, with no `drained` marker.
    Interrupted,
    /// Writing the history failed (a full disk): the file is a prefix of the run,
    /// and what it lacks can forge anomalies, so nothing is judged.
    HistoryWriteFailed,
}

/// The verdict's `incomplete` extension: why, and what happened, in words.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Incomplete {
    /// Why.
    pub reason: IncompleteReason,
    /// What happened, in words.
    pub detail: String,
}

impl Verdict {
    /// Marks the verdict of a run that did not finish as planned.
    ///
    /// - [`IncompleteReason::Interrupted`]: the judgement stands (the history is
    ///   whole up to the stop; without a `drained` marker at-least-once is already
    ///   `unknown` unless a loss is proven by offsets); a warning says so.
    /// - [`IncompleteReason::HistoryWriteFailed`]: the history lost its tail, and a
    ///   delivery that was never written can make a message look lost, an order
    ///   broken or a guarantee held. So every guarantee becomes `unknown` and so does
    ///   `valid`, never `false`; the anomalies stay, as what the prefix shows.
    pub fn mark_incomplete(&mut self, incomplete: Incomplete) {
        match incomplete.reason {
            IncompleteReason::Interrupted => self
                .warnings
                .push(format!("run interrupted: {}", incomplete.detail)),
            IncompleteReason::HistoryWriteFailed => {
                for s in self.guarantees.values_mut() {
                    *s = Status::Unknown;
                }
                self.valid = Validity::Unknown;
                self.warnings.push(format!(
                    "not judged: {}; the history is a prefix of the run, and what it \
                     lacks can forge anomalies, so every guarantee is unknown",
                    incomplete.detail
                ));
            }
        }
        self.incomplete = Some(incomplete);
    }

    /// The count of one anomaly type (0 when the verdict lacks it).
    pub fn count(&self, kind: AnomalyKind) -> u64 {
        self.anomalies.get(&kind).map_or(0, |a| a.count)
    }
    /// The status of one guarantee (`unknown` when the verdict lacks it).
    pub fn status(&self, g: Guarantee) -> Status {
        self.guarantees.get(&g).copied().unwrap_or(Status::Unknown)
    }
    /// The anomaly types to show: the thirteen of the contract, then the
    /// transaction anomalies and the partition-count change's where the verdict has them.
    /// transaction and two-hop anomalies where the verdict has them.
    pub fn kinds(&self) -> Vec<AnomalyKind> {
        let mut out = AnomalyKind::ALL.to_vec();
        out.extend(
            AnomalyKind::TXN
                .iter()
                .chain(&AnomalyKind::PROCESSING)
                .chain(AnomalyKind::REPARTITION.iter())
                .filter(|k| self.anomalies.contains_key(k)),
        );
        out.extend(
            AnomalyKind::TWO_HOP
                .iter()
                .filter(|k| self.anomalies.contains_key(k)),
        );
        out
    }

    /// The guarantees the verdict lists: the seven of the contract, then the
    /// processing guarantee where the history had processing ops.
    pub fn guarantee_list(&self) -> Vec<Guarantee> {
        let mut out = Guarantee::ALL.to_vec();
        out.extend(
            Guarantee::PROCESSING
                .iter()
                .filter(|g| self.guarantees.contains_key(g)),
        );
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use gauntlet_history::read_bytes;

    /// A drained, empty history's verdict, then made to look as if a loss was found.
    fn lost_one() -> Verdict {
        let text = br#"{"index":0,"time":0,"process":"harness","type":"info","f":"phase","value":"drained"}
"#;
        let h = read_bytes("x.jsonl", text).expect("history");
        let mut v = crate::check(
            &h,
            &crate::CheckOptions {
                expect: vec![Guarantee::AtLeastOnce, Guarantee::AtMostOnce],
                max_examples: 10,
            },
        );
        // Judged as if a loss had been found, to see what marking does to `false`.
        v.guarantees
            .insert(Guarantee::AtLeastOnce, Status::Violated);
        v.valid = Validity::False;
        v
    }

    #[test]
    fn a_failed_history_write_makes_every_guarantee_unknown_never_violated() {
        let mut v = lost_one();
        v.mark_incomplete(Incomplete {
            reason: IncompleteReason::HistoryWriteFailed,
            detail: "writing the history failed after index 41: No space left on device".into(),
        });
        assert_eq!(v.valid, Validity::Unknown);
        assert!(v.guarantees.values().all(|s| *s == Status::Unknown));
        assert!(v.warnings.iter().any(|w| w.contains("No space left")));
        let json = serde_json::to_value(&v).expect("json");
        assert_eq!(json["incomplete"]["reason"], "history-write-failed");
        let back: Verdict = serde_json::from_value(json).expect("round trip");
        assert_eq!(back, v);
    }

    #[test]
    fn an_interrupted_run_keeps_its_judgement() {
        let mut v = lost_one();
        v.mark_incomplete(Incomplete {
            reason: IncompleteReason::Interrupted,
            detail: "Ctrl-C after 7.2 s".into(),
        });
        assert_eq!(v.valid, Validity::False);
        assert_eq!(v.status(Guarantee::AtLeastOnce), Status::Violated);
        assert_eq!(
            serde_json::to_value(&v).expect("json")["incomplete"]["reason"],
            "interrupted"
        );
    }

    #[test]
    fn a_whole_run_has_no_incomplete_field() {
        let json = serde_json::to_value(lost_one()).expect("json");
        assert!(json.get("incomplete").is_none());
    }
}
