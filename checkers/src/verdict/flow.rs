//! The verdict's `stats.flow` (extension, seed O6): throughput and consumer lag
//! per key and per partition, and lag over time. Information, not a violation:
//! a user holds these figures against their own.
use super::Latency;
use serde::{Deserialize, Serialize};

/// Rows kept per table (keys, partitions), the hottest first; the rest are counted.
pub const FLOW_ROWS: usize = 32;

/// Throughput and consumer lag per key and per partition (`stats.flow`).
///
/// Lag is a message's consumer lag: from its send's invoke to the completion of
/// the poll that first delivered it to any group. It is measured from the
/// invoke, not the acknowledgement, so it stays positive when sends are
/// pipelined. Messages never delivered have no lag and are not in it.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Flow {
    /// Seconds of the sending window the rates are taken over (the first send's
    /// invoke to the last send's completion, as `stats.sends_ok_per_s`).
    pub window_s: f64,
    /// One row per key, the hottest (most sends) first, at most [`FLOW_ROWS`].
    pub keys: Vec<FlowRow>,
    /// Keys beyond [`FLOW_ROWS`], not listed.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub keys_not_listed: u64,
    /// One row per partition the messages were stored in (where the broker names
    /// one), the hottest first, at most [`FLOW_ROWS`].
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub partitions: Vec<FlowRow>,
    /// Partitions beyond [`FLOW_ROWS`], not listed.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub partitions_not_listed: u64,
    /// The sending window cut into at most 60 equal buckets (whole seconds), each
    /// with the lag of the messages whose send was invoked in it.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub lag_over_time: Vec<LagBucket>,
}

fn is_zero(n: &u64) -> bool {
    *n == 0
}

/// One key's or one partition's figures.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct FlowRow {
    /// The key, or the partition (`topic/number`, or the number alone).
    pub name: String,
    /// Logical messages sent to it (a retried send is one).
    pub sends: u64,
    /// Of those, the ones acknowledged (`ok`).
    pub sends_ok: u64,
    /// `sends` over all the sends of the table.
    pub share: f64,
    /// `sends_ok` per second of the sending window.
    pub sends_ok_per_s: f64,
    /// Distinct messages delivered to some group.
    pub delivered: u64,
    /// Their consumer lag, in nanoseconds (p50, p99, max); absent when none was delivered.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub lag_ns: Option<Latency>,
}

/// The lag of the messages sent in one stretch of the sending window.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct LagBucket {
    /// Milliseconds from the start of the sending window to the bucket's start.
    pub start_ms: u64,
    /// Messages whose send was invoked in the bucket.
    pub sent: u64,
    /// Of those, the ones delivered.
    pub delivered: u64,
    /// Their lag, in nanoseconds; absent when none was delivered.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub lag_ns: Option<Latency>,
    /// The lag of the hottest key's messages among them, where it has some.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub hottest_key_lag_ns: Option<Latency>,
}
