//! The evidence of an anomaly as typed values: one type per shape of example.
//!
//! Every example the checkers keep is one [`Example`]. It serializes to the
//! JSON object `verdict.json` has always held for it (its keys in sorted
//! order, as when the examples were built as JSON values), so the verdict's
//! bytes and `docs/verdict.schema.json` do not change. Reading a verdict back
//! types each example by its anomaly kind ([`Example::typed`]); an example
//! that does not fit its kind's type exactly (a verdict of another Gauntlet)
//! stays [`Example::Untyped`], its JSON kept as it was.
//!
//! Op indices (`send_invoke`, `delivered_by`, ...) are the `index` of ops in
//! the history; `consumer`, `producer` and `process` are process numbers.
use super::AnomalyKind;
use serde::{Deserialize, Serialize};
use serde_json::Value;

/// One example of an anomaly.
#[derive(Debug, Clone, PartialEq)]
pub enum Example {
    /// `lost`, `unseen`: a written message missing from groups.
    Missing(Missing),
    /// `unexpected`: a value delivered that no send invoked.
    Unexpected(Unexpected),
    /// `aborted-read`, `recovered`: a value delivered whose send ended `fail` or `info`.
    Outcome(OutcomeRead),
    /// `duplicate-write`, `redelivered`: a value and its deliveries.
    Repeated(Repeated),
    /// `gap`: producer positions a consumer skipped.
    Gap(Gap),
    /// `key-order`: two messages of a key received out of order.
    KeyOrder(KeyOrder),
    /// `producer-order`: two messages of a producer received out of order.
    ProducerOrder(ProducerOrder),
    /// `partition-order`: a partition's offset that went backwards.
    PartitionOrder(PartitionOrder),
    /// `total-order`: one consumer received a message before another that was sent after it.
    TotalOrderPair(TotalOrderPair),
    /// `total-order`: two consumers of a group received two messages in opposite orders.
    TotalOrderSplit(TotalOrderSplit),
    /// `inconsistent-offsets`: one position that held two values.
    Inconsistent(Inconsistent),
    /// `G0`, `G1c`, `G-single`, `G2` and their `-realtime` forms: a dependency cycle.
    Cycle(Cycle),
    /// `G1b`: a read of part of a transaction's writes to a partition.
    G1b(G1b),
    /// `precommitted-read`: a transaction read a value it sent itself.
    Precommitted(Precommitted),
    /// The Kafka checks (`poll-skip`, `nonmonotonic-send`, `int-poll-skip`, ...):
    /// two versions of a partition one op or process read or wrote in a row.
    Versions(Versions),
    /// An example this Gauntlet cannot type (read from another one's verdict), as it was.
    Untyped(Value),
    /// `duplicate-processing`, `lost-processing`, `parked`: a message and what its
    /// idempotent consumers did with it (extension, seed D7).
    Processed(super::processing::Processed),
    /// `repartition-key-order` (extension): two messages of a key, sent on either side of
    /// a change of the partition count, received by the group out of order.
    RepartitionKeyOrder(RepartitionKeyOrder),
    /// `two-hop-lost`: an input that reached no consumer, and where it left the pipeline.
    TwoHopLost(crate::twohop::TwoHopLost),
    /// `two-hop-duplicate`: an input and its outputs.
    TwoHopDuplicate(crate::twohop::TwoHopDuplicate),
    /// `two-hop-order`: F2 received before F1, and where the order broke.
    TwoHopOrder(crate::twohop::TwoHopOrder),
}

/// A delivery of a message to a consumer.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct DeliveryRef {
    /// The consumer's process number.
    pub consumer: u64,
    /// Op index of the poll that delivered it.
    pub delivered_by: u64,
    /// The consumer group ("" is the default group).
    pub group: String,
    /// The broker's message id, where it gives one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub id: Option<String>,
    /// The offset, where known.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub offset: Option<i64>,
    /// The partition, where known.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub partition: Option<i64>,
    /// The consumer says it is a redelivery.
    #[serde(default, skip_serializing_if = "is_false")]
    pub redelivered: bool,
    /// The topic, where named.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub topic: Option<String>,
}

fn is_false(b: &bool) -> bool {
    !*b
}

/// `lost` and `unseen`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Missing {
    /// Op index of the `drained` marker, when the loss is proven by the drain.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub drained: Option<u64>,
    /// The groups it is missing from.
    pub groups: Vec<String>,
    /// A delivery of a higher offset of its partition, when the loss is proven by one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub higher_offset_delivered: Option<DeliveryRef>,
    /// The message's key.
    pub key: String,
    /// Its offset (with `higher_offset_delivered`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub offset: Option<i64>,
    /// Its partition (with `higher_offset_delivered`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub partition: Option<i64>,
    /// For a send that did not end `ok`: what proves it was written.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub proven_by: Option<String>,
    /// Op index of the send's invoke.
    pub send_invoke: u64,
    /// Op index of the send's `ok` (`None`: it did not end `ok`).
    pub send_ok: Option<u64>,
    /// `info` for a send that did not end `ok`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub send_outcome: Option<String>,
    /// The message's value.
    pub value: i64,
}

/// `unexpected`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Unexpected {
    /// Its first delivery.
    pub delivery: DeliveryRef,
    /// The key it was delivered with.
    pub key: String,
    /// The value.
    pub value: i64,
}

/// `aborted-read` and `recovered`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct OutcomeRead {
    /// Its first delivery.
    pub delivery: DeliveryRef,
    /// The send was part of a transaction.
    pub in_txn: bool,
    /// The message's key.
    pub key: String,
    /// Op index of the send's completion (`None`: never completed).
    pub send_completion: Option<u64>,
    /// Op index of the send's invoke.
    pub send_invoke: u64,
    /// The value.
    pub value: i64,
}

/// `duplicate-write` and `redelivered`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Repeated {
    /// Its deliveries (the first 20).
    pub deliveries: Vec<DeliveryRef>,
    /// The message's key.
    pub key: String,
    /// Op index of the send's completion (`None`: never completed).
    pub send_completion: Option<u64>,
    /// Op index of the send's invoke.
    pub send_invoke: u64,
    /// The value.
    pub value: i64,
}

/// A delivered message, as the order anomalies name it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct MessageRef {
    /// Op index of the poll that delivered it.
    pub delivered_by: u64,
    /// Its offset, where known.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub offset: Option<i64>,
    /// Its position in its producer's sequence for its key.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub position: Option<u32>,
    /// The process that sent it, when a shared producer client sent it for another.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub process: Option<u64>,
    /// The producer (its first process).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub producer: Option<u64>,
    /// Op index of its send's completion.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub send_complete: Option<u64>,
    /// Op index of its send's invoke (`None`: no send of it).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub send_invoke: Option<u64>,
    /// The value.
    pub value: i64,
}

/// A written message a gap skipped.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Skipped {
    /// The group was given it later.
    pub later_delivered: bool,
    /// Its producer position.
    pub position: i64,
    /// Op index of its send's invoke.
    pub send_invoke: u64,
    /// The value.
    pub value: i64,
}

/// `gap`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Gap {
    /// The producer position the consumer had reached (`None`: none yet).
    pub after_position: Option<i64>,
    /// The consumer.
    pub consumer: u64,
    /// Its group.
    pub group: String,
    /// The key.
    pub key: String,
    /// The written messages it skipped (the first 10).
    pub missing: Vec<Skipped>,
    /// How many it skipped.
    pub missing_count: u64,
    /// The producer.
    pub producer: u64,
    /// The message it received after the gap.
    pub received: MessageRef,
}

/// `key-order`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct KeyOrder {
    /// The consumer.
    pub consumer: u64,
    /// Its group.
    pub group: String,
    /// The key.
    pub key: String,
    /// The message it received first, which was sent after the other.
    pub received_first: MessageRef,
    /// The message sent first, received after the other.
    pub sent_first: MessageRef,
}

/// `repartition-key-order` (extension): a key's messages sent on either side of an
/// `add-partitions`, on its old and its new partition, received by the group (by
/// any of its consumers) in the opposite order.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RepartitionKeyOrder {
    /// Op index of the `add-partitions` event (its completion) the two sends straddle.
    pub change: u64,
    /// The group.
    pub group: String,
    /// The key.
    pub key: String,
    /// The partition of the message sent second (the key's new partition).
    pub new_partition: Option<i64>,
    /// The partition of the message sent first (the key's old partition).
    pub old_partition: Option<i64>,
    /// The message the group received first, which was sent after the other.
    pub received_first: MessageRef,
    /// The consumer that received it.
    pub received_first_by: u64,
    /// The message sent first, which the group received only after the other.
    pub sent_first: MessageRef,
    /// The consumer that received it.
    pub sent_first_by: u64,
}

/// `producer-order`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ProducerOrder {
    /// The consumer.
    pub consumer: u64,
    /// Its group.
    pub group: String,
    /// The producer.
    pub producer: u64,
    /// The message it received first, which was sent after the other.
    pub received_first: MessageRef,
    /// The message sent first, received after the other.
    pub sent_first: MessageRef,
}

/// `partition-order`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PartitionOrder {
    /// The consumer.
    pub consumer: u64,
    /// The message received first.
    pub earlier: MessageRef,
    /// Its group.
    pub group: String,
    /// The message received next, at an offset not above the first's.
    pub later: MessageRef,
    /// The partition.
    pub partition: Option<i64>,
    /// The topic.
    pub topic: Option<String>,
}

/// The first message of a [`TotalOrderPair`].
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PairFirst {
    /// Op index of the poll that delivered it.
    pub delivered_by: u64,
    /// Op index of its send's `ok`.
    pub send_ok: u64,
    /// The value.
    pub value: i64,
}

/// The second message of a [`TotalOrderPair`].
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PairSecond {
    /// Op index of the poll that delivered it.
    pub delivered_by: u64,
    /// Op index of its send's invoke.
    pub send_invoke: u64,
    /// The value.
    pub value: i64,
}

/// `total-order`, within one consumer: `second` received before `first`, yet
/// sent after `first`'s send completed.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TotalOrderPair {
    /// The consumer.
    pub consumer: u64,
    /// The message sent first.
    pub first: PairFirst,
    /// Its group.
    pub group: String,
    /// How many pairs this delivery of `first` makes.
    pub pairs_here: i64,
    /// The message sent after `first` completed, and received before it.
    pub second: PairSecond,
}

/// `total-order`, across consumers: two consumers of one group received two
/// concurrent messages in opposite orders.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TotalOrderSplit {
    /// The two consumers.
    pub consumers: [u64; 2],
    /// Their group.
    pub group: String,
    /// The order each consumer received the values in.
    pub orders: [[i64; 2]; 2],
    /// Op indices of the two sends' invokes.
    pub send_invokes: [u64; 2],
    /// The two values.
    pub values: [i64; 2],
}

/// A broker position: a partition's offset, or a message id.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(untagged)]
pub enum Position {
    /// A partition's offset.
    Offset(OffsetPosition),
    /// A broker message id.
    Id(IdPosition),
}

/// A partition's offset.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct OffsetPosition {
    /// The offset.
    pub offset: i64,
    /// The partition (`None`: not named).
    pub partition: Option<i64>,
    /// The topic (`None`: not named).
    pub topic: Option<String>,
}

/// A broker message id.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct IdPosition {
    /// The id.
    pub id: Option<String>,
}

/// `inconsistent-offsets`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Inconsistent {
    /// The op index of each claim.
    pub ops: Vec<u64>,
    /// The position.
    pub position: Position,
    /// The values claimed there (the first two that disagree).
    pub values: Vec<i64>,
}

/// A partition of the transaction checks.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TxnObject {
    /// The partition.
    pub partition: i64,
    /// The topic, where named.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub topic: Option<String>,
}

/// An op of the transaction checks: a transaction, a send or a poll.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TxnOp {
    /// Op index of its completion (`None`: never completed).
    pub complete: Option<u64>,
    /// `txn`, `send` or `poll`.
    pub f: String,
    /// Op index of its invoke.
    pub invoke: u64,
    /// Its name in a cycle's explanation (`T1`, ...).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    /// Its process.
    pub process: u64,
    /// How it ended: `ok`, `fail` or `info`.
    #[serde(rename = "type")]
    pub outcome: String,
}

/// One edge of a cycle.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Step {
    /// A realtime edge: op index of the first op's completion.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub completed: Option<u64>,
    /// The op the edge leaves.
    pub from: String,
    /// A realtime edge: op index of the second op's invoke.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub invoked: Option<u64>,
    /// The partition a ww, wr or rw edge is about.
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        deserialize_with = "present"
    )]
    pub object: Option<Option<TxnObject>>,
    /// A process edge: the process.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub process: Option<u64>,
    /// The op the edge reaches.
    pub to: String,
    /// The edge: `ww`, `wr`, `rw`, `process` or `realtime`.
    #[serde(rename = "type")]
    pub edge: String,
    /// The version the edge is about.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub value: Option<i64>,
    /// The next version, for ww and rw.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub value_next: Option<i64>,
}

/// A field that is present, even as `null`.
fn present<'de, D, T>(d: D) -> Result<Option<T>, D::Error>
where
    D: serde::Deserializer<'de>,
    T: Deserialize<'de>,
{
    T::deserialize(d).map(Some)
}

/// A dependency cycle, with its proof in words.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Cycle {
    /// Its ops, named `T1`, `T2`, ...
    pub cycle: Vec<TxnOp>,
    /// The proof, in Jepsen's words.
    pub explanation: String,
    /// Op index of each op (its completion, or its invoke when it never completed).
    pub ops: Vec<u64>,
    /// Its edges.
    pub steps: Vec<Step>,
}

/// `G1b`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct G1b {
    /// The writer's later version, which the reader did not read.
    pub missed: i64,
    /// The partition.
    pub object: Option<TxnObject>,
    /// The version the reader read first.
    pub read: i64,
    /// The reading transaction.
    pub reader: TxnOp,
    /// The version past `missed` it read then.
    pub then_read: i64,
    /// The writing transaction.
    pub writer: TxnOp,
}

/// `precommitted-read`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Precommitted {
    /// The partition.
    pub object: Option<TxnObject>,
    /// The transaction.
    pub op: TxnOp,
    /// The value it read.
    pub value: i64,
}

/// The Kafka checks: two versions of a partition read or written in a row,
/// `delta` versions apart.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Versions {
    /// How many versions apart (1 is the next one).
    pub delta: i64,
    /// The partition.
    pub object: Option<TxnObject>,
    /// Within one op (`int-*`): the op.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub op: Option<TxnOp>,
    /// Across ops of one process: the earlier op and the later one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ops: Option<[TxnOp; 2]>,
    /// For a skip: the versions skipped (the first 20).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub skipped: Option<Vec<i64>>,
    /// The two versions.
    pub values: [i64; 2],
}

impl Example {
    /// The JSON object `verdict.json` holds for this example.
    pub fn to_json(&self) -> Value {
        fn v<T: Serialize>(x: &T) -> Value {
            // Plain structs of numbers, strings and lists: they always serialize.
            serde_json::to_value(x).unwrap_or(Value::Null)
        }
        match self {
            Example::Missing(x) => v(x),
            Example::Unexpected(x) => v(x),
            Example::Outcome(x) => v(x),
            Example::Repeated(x) => v(x),
            Example::Gap(x) => v(x),
            Example::KeyOrder(x) => v(x),
            Example::ProducerOrder(x) => v(x),
            Example::PartitionOrder(x) => v(x),
            Example::TotalOrderPair(x) => v(x),
            Example::TotalOrderSplit(x) => v(x),
            Example::Inconsistent(x) => v(x),
            Example::Cycle(x) => v(x),
            Example::G1b(x) => v(x),
            Example::Precommitted(x) => v(x),
            Example::Versions(x) => v(x),
            Example::Untyped(x) => x.clone(),
            Example::Processed(x) => v(x),
            Example::RepartitionKeyOrder(x) => v(x),
            Example::TwoHopLost(x) => v(x),
            Example::TwoHopDuplicate(x) => v(x),
            Example::TwoHopOrder(x) => v(x),
        }
    }

    /// Types the JSON of an example of `kind`; what does not fit the kind's type
    /// exactly (a field more or less, or one that would not serialize back the
    /// same) stays [`Example::Untyped`].
    pub fn typed(kind: AnomalyKind, json: Value) -> Example {
        use AnomalyKind as A;
        fn as_<T: serde::de::DeserializeOwned>(
            json: &Value,
            wrap: fn(T) -> Example,
        ) -> Option<Example> {
            let e = wrap(T::deserialize(json).ok()?);
            (e.to_json() == *json).then_some(e)
        }
        let typed = match kind {
            A::Lost | A::Unseen => as_(&json, Example::Missing),
            A::Unexpected => as_(&json, Example::Unexpected),
            A::AbortedRead | A::Recovered => as_(&json, Example::Outcome),
            A::DuplicateWrite | A::Redelivered => as_(&json, Example::Repeated),
            A::Gap => as_(&json, Example::Gap),
            A::KeyOrder => as_(&json, Example::KeyOrder),
            A::ProducerOrder => as_(&json, Example::ProducerOrder),
            A::PartitionOrder => as_(&json, Example::PartitionOrder),
            A::TotalOrder => {
                as_(&json, Example::TotalOrderPair).or_else(|| as_(&json, Example::TotalOrderSplit))
            }
            A::InconsistentOffsets => as_(&json, Example::Inconsistent),
            A::G0
            | A::G1c
            | A::GSingle
            | A::G2
            | A::G0Realtime
            | A::G1cRealtime
            | A::GSingleRealtime
            | A::G2Realtime => as_(&json, Example::Cycle),
            A::G1b => as_(&json, Example::G1b),
            A::PrecommittedRead => as_(&json, Example::Precommitted),
            A::PollSkip
            | A::NonmonotonicPoll
            | A::NonmonotonicSend
            | A::IntPollSkip
            | A::IntNonmonotonicPoll
            | A::IntSendSkip
            | A::IntNonmonotonicSend => as_(&json, Example::Versions),
            A::DuplicateProcessing | A::LostProcessing | A::Parked => {
                as_(&json, Example::Processed)
            }
            A::RepartitionKeyOrder => as_(&json, Example::RepartitionKeyOrder),
            A::TwoHopLost => as_(&json, Example::TwoHopLost),
            A::TwoHopDuplicate => as_(&json, Example::TwoHopDuplicate),
            A::TwoHopOrder => as_(&json, Example::TwoHopOrder),
        };
        typed.unwrap_or(Example::Untyped(json))
    }

    /// The key the example is about, where it names one.
    pub fn key(&self) -> Option<&str> {
        match self {
            Example::Missing(x) => Some(&x.key),
            Example::Unexpected(x) => Some(&x.key),
            Example::Outcome(x) => Some(&x.key),
            Example::Repeated(x) => Some(&x.key),
            Example::Gap(x) => Some(&x.key),
            Example::KeyOrder(x) => Some(&x.key),
            Example::RepartitionKeyOrder(x) => Some(&x.key),
            Example::TwoHopLost(x) => Some(&x.key),
            Example::TwoHopDuplicate(x) => Some(&x.key),
            Example::TwoHopOrder(x) => Some(&x.key),
            Example::Untyped(v) => v.get("key").and_then(Value::as_str),
            _ => None,
        }
    }

    /// The consumer group the example is about, where it names one (the first,
    /// for `lost`; none for `duplicate-write` and `redelivered`, whose
    /// deliveries may be to several groups).
    pub fn group(&self) -> Option<&str> {
        match self {
            Example::Missing(x) => x.groups.first().map(String::as_str),
            Example::Unexpected(x) => Some(&x.delivery.group),
            Example::Outcome(x) => Some(&x.delivery.group),
            Example::Gap(x) => Some(&x.group),
            Example::KeyOrder(x) => Some(&x.group),
            Example::ProducerOrder(x) => Some(&x.group),
            Example::PartitionOrder(x) => Some(&x.group),
            Example::TotalOrderPair(x) => Some(&x.group),
            Example::TotalOrderSplit(x) => Some(&x.group),
            Example::Processed(x) => Some(&x.group),
            Example::RepartitionKeyOrder(x) => Some(&x.group),
            Example::Untyped(v) => v
                .get("group")
                .and_then(Value::as_str)
                .or_else(|| {
                    v.get("groups")
                        .and_then(|g| g.get(0))
                        .and_then(Value::as_str)
                })
                .or_else(|| {
                    v.get("delivery")
                        .and_then(|d| d.get("group"))
                        .and_then(Value::as_str)
                }),
            _ => None,
        }
    }
}

/// Written as the JSON object it stands for, keys in sorted order.
impl Serialize for Example {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        self.to_json().serialize(s)
    }
}

/// Read as [`Example::Untyped`]: only its anomaly kind says which type it is,
/// and [`super::Verdict`]'s reader types it with [`Example::typed`].
impl<'de> Deserialize<'de> for Example {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        Value::deserialize(d).map(Example::Untyped)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn an_example_that_fits_its_kind_is_typed_and_writes_back_the_same() {
        let j = json!({"delivery": {"consumer": 4, "delivered_by": 9, "group": "", "offset": 3,
                       "partition": 0}, "key": "k1", "value": 7});
        let e = Example::typed(AnomalyKind::Unexpected, j.clone());
        assert!(
            matches!(&e, Example::Unexpected(u) if u.value == 7 && u.delivery.offset == Some(3))
        );
        assert_eq!(e.to_json(), j);
        assert_eq!(
            serde_json::to_string(&e).expect("json"),
            serde_json::to_string(&j).expect("json")
        );
    }

    #[test]
    fn an_example_with_a_field_more_stays_untyped() {
        let j = json!({"delivery": {"consumer": 4, "delivered_by": 9, "group": ""},
                       "key": "k1", "value": 7, "note": "from another Gauntlet"});
        assert_eq!(
            Example::typed(AnomalyKind::Unexpected, j.clone()),
            Example::Untyped(j.clone())
        );
        // Of another kind's shape: untyped too.
        assert_eq!(
            Example::typed(AnomalyKind::Gap, json!({"x": 1})),
            Example::Untyped(json!({"x": 1}))
        );
    }

    #[test]
    fn a_step_keeps_a_null_object() {
        let j = json!({"from": "T1", "to": "T2", "type": "ww", "object": null});
        let s: Step = serde_json::from_value(j.clone()).expect("step");
        assert_eq!(s.object, Some(None));
        assert_eq!(serde_json::to_value(&s).expect("json"), j);
    }
}
