//! How the harness starts a consumer worker process (`gauntlet worker ...`): one
//! struct that the harness turns into arguments ([`WorkerCall::to_args`]) and the
//! worker's command line parses back, so the two cannot drift apart.
use crate::broker::BrokerKind;
use crate::log::Membership;
use crate::settings::Delivery;

/// The arguments of one worker.
#[derive(Debug, Clone, PartialEq)]
pub struct WorkerCall {
    /// The broker whose driver the worker uses.
    pub broker: BrokerKind,
    /// `host:port` of each node's client port.
    pub addrs: Vec<String>,
    /// The consumer group.
    pub group: String,
    /// The worker's process number in the history.
    pub process: u64,
    /// The scenario's `[delivery]` table.
    pub delivery: Delivery,
    /// Messages per poll at most.
    pub batch: usize,
    /// Simulated processing time per message, in milliseconds.
    pub processing_ms: u64,
    /// The final drain: take over everything pending, exit after a few empty polls.
    pub drain: bool,
    /// The log workload's share of the partitions; `None` for the queue workload.
    pub log: Option<LogSlot>,
    /// The consumer's dedup store and how it uses it (seed D7); `None`: a plain consumer.
    pub dedup: Option<crate::dedup::DedupCall>,
}

/// A log-workload consumer's membership and slot.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct LogSlot {
    /// How the worker gets its partitions.
    pub membership: Membership,
    /// With `assign`: this worker takes the partitions `p` with `p % slots == slot`.
    pub slot: usize,
    /// The number of slots: the group's consumer workers.
    pub slots: usize,
}

impl WorkerCall {
    /// The arguments after `gauntlet`: `worker --broker ... --process N ...`.
    pub fn to_args(&self) -> Vec<String> {
        let mut a: Vec<String> = vec![
            "worker".into(),
            "--broker".into(),
            self.broker.name().to_string(),
            "--addrs".into(),
            self.addrs.join(","),
            "--group".into(),
            self.group.clone(),
            "--process".into(),
            self.process.to_string(),
            "--delivery".into(),
            serde_json::to_string(&self.delivery).unwrap_or_else(|_| "{}".into()),
            "--batch".into(),
            self.batch.to_string(),
            "--processing-ms".into(),
            self.processing_ms.to_string(),
        ];
        if self.drain {
            a.push("--drain".into());
        }
        if let Some(d) = &self.dedup {
            a.extend([
                "--dedup".into(),
                serde_json::to_string(d).unwrap_or_else(|_| "null".into()),
            ]);
        }
        if let Some(l) = self.log {
            a.extend([
                "--workload".into(),
                "log".into(),
                "--membership".into(),
                l.membership.name().into(),
                "--slot".into(),
                l.slot.to_string(),
                "--slots".into(),
                l.slots.to_string(),
            ]);
        }
        a
    }
}
