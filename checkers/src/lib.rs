//! Gauntlet's checkers: pure functions from a [`History`] to a [`Verdict`].
//!
//! Each anomaly of the v1.1 contract is computed by one module; `docs/checkers.md`
//! is the exact definition of each, and the tests follow it. Nothing here does
//! I/O: checking a stored history never needs a broker or Docker.
//!
//! The delivery pass (`delivery.rs`) builds an index of every group's first
//! delivery of every send; the order (`order.rs`), total-order (`total.rs`) and
//! offset (`offsets.rs`) passes read it. The transactional checker ([`txn`],
//! `docs/txn.md`) builds the dependency graph and runs Jepsen's Kafka checks.
//! Which guarantee each anomaly breaks is the table [`breaks`], not code spread
//! over the checkers.
//!
//! Of Gauntlet's crates it depends on `gauntlet-history` alone. It must not do I/O or depend
//! on a broker, Docker or any other part of a run.
#![warn(missing_docs)]
mod delivery;
mod found;
mod offsets;
mod order;
mod radix;
mod resets;
pub mod stats;
mod table;
mod total;
pub mod txn;
pub mod verdict;

use std::collections::BTreeMap;

pub use gauntlet_history::History;
use gauntlet_history::NO_OFFSET;
pub use verdict::{
    Anomaly, AnomalyKind, Guarantee, Incomplete, IncompleteReason, Latency, Stats, Status,
    Validity, Verdict,
};

/// How to judge a history.
#[derive(Debug, Clone)]
pub struct CheckOptions {
    /// The guarantees the run claims; `valid` is judged against them.
    pub expect: Vec<Guarantee>,
    /// Examples kept per anomaly type.
    pub max_examples: usize,
}

impl Default for CheckOptions {
    fn default() -> Self {
        CheckOptions {
            expect: vec![Guarantee::AtLeastOnce],
            max_examples: 10,
        }
    }
}

/// Which anomalies violate which guarantee.
pub fn breaks(g: Guarantee) -> &'static [AnomalyKind] {
    use AnomalyKind as A;
    match g {
        Guarantee::AtMostOnce => &[A::Redelivered, A::DuplicateWrite],
        Guarantee::AtLeastOnce => &[A::Lost],
        Guarantee::ExactlyOnce => &[
            A::Redelivered,
            A::DuplicateWrite,
            A::Lost,
            A::AbortedRead,
            A::G0,
            A::G1b,
            A::G1c,
            A::GSingle,
            A::G2,
            A::PrecommittedRead,
        ],
        Guarantee::ProducerOrder => &[A::ProducerOrder],
        Guarantee::KeyOrder => &[A::KeyOrder],
        Guarantee::PartitionOrder => &[A::PartitionOrder],
        Guarantee::TotalOrder => &[A::TotalOrder],
    }
}

/// Judges a history.
pub fn check(h: &History, opts: &CheckOptions) -> Verdict {
    check_with_budget(h, opts, txn::DEFAULT_BUDGET)
}

/// Judges a history; the transaction cycle search may take `txn_budget`
/// (past it, what it could not decide is `unknown`).
pub fn check_with_budget(
    h: &History,
    opts: &CheckOptions,
    txn_budget: std::time::Duration,
) -> Verdict {
    let max = opts.max_examples;
    // The transaction analysis first: its graph is gone before the other passes
    // build their indices, so the peak is the larger of the two, not their sum.
    // Without transactions, Jepsen's Kafka checks still judge a history whose
    // messages carry offsets.
    let logged = !h.txns.is_empty()
        || h.sends.iter().any(|s| s.offset != NO_OFFSET)
        || h.deliveries.iter().any(|d| d.offset != NO_OFFSET);
    let txn_found = logged.then(|| txn::check(h, max, txn_budget));
    let (index, del) = delivery::check(h, max);
    let ord = order::check(h, &index, max);
    let tot = total::check(h, &index, max);
    let inconsistent = offsets::check(h, &index.written, max);
    let delivered_distinct =
        index.delivered_any.iter().filter(|&&d| d).count() as u64 + del.unexpected.count;
    let stats = stats::stats(h, index.groups.len(), delivered_distinct);

    let mut warnings = h.warnings.clone();
    if tot.bounded {
        warnings.push(format!(
            "total-order: the cross-consumer search stopped after {} comparisons; its count is a lower bound",
            total::CROSS_BUDGET
        ));
    }
    let mut anomalies = BTreeMap::new();
    for (kind, found) in [
        (AnomalyKind::Lost, del.lost),
        (AnomalyKind::Unseen, del.unseen),
        (AnomalyKind::Unexpected, del.unexpected),
        (AnomalyKind::AbortedRead, del.aborted_read),
        (AnomalyKind::Recovered, del.recovered),
        (AnomalyKind::DuplicateWrite, del.duplicate_write),
        (AnomalyKind::Redelivered, del.redelivered),
        (AnomalyKind::Gap, ord.gap),
        (AnomalyKind::KeyOrder, ord.key_order),
        (AnomalyKind::ProducerOrder, ord.producer_order),
        (AnomalyKind::PartitionOrder, ord.partition_order),
        (AnomalyKind::TotalOrder, tot.total_order),
        (AnomalyKind::InconsistentOffsets, inconsistent),
    ] {
        anomalies.insert(kind, found.into_anomaly());
    }
    let mut txn_unknown = false;
    if let Some(t) = txn_found {
        for (kind, found) in t.found {
            anomalies.insert(kind, found.into_anomaly());
        }
        warnings.extend(t.warnings);
        txn_unknown = t.unknown;
    }
    let count = |k: AnomalyKind| anomalies.get(&k).map_or(0, |a: &Anomaly| a.count);
    let nothing_delivered = h.deliveries.is_empty();
    let mut guarantees = BTreeMap::new();
    for g in Guarantee::ALL {
        let violated = breaks(g).iter().any(|&k| count(k) > 0);
        let unknown = match g {
            Guarantee::AtMostOnce => false,
            Guarantee::AtLeastOnce => count(AnomalyKind::Unseen) > 0,
            Guarantee::ExactlyOnce => count(AnomalyKind::Unseen) > 0 || txn_unknown,
            Guarantee::PartitionOrder => !ord.has_offsets,
            Guarantee::TotalOrder => {
                nothing_delivered || (tot.bounded && count(AnomalyKind::TotalOrder) == 0)
            }
            Guarantee::ProducerOrder | Guarantee::KeyOrder => nothing_delivered,
        };
        let status = if violated {
            Status::Violated
        } else if unknown {
            Status::Unknown
        } else {
            Status::Holds
        };
        guarantees.insert(g, status);
    }
    let integrity = AnomalyKind::ALL
        .iter()
        .any(|&k| k.is_integrity() && count(k) > 0);
    let mut valid = if integrity {
        Validity::False
    } else {
        Validity::True
    };
    for g in &opts.expect {
        valid = valid.max(match guarantees[g] {
            Status::Holds => Validity::True,
            Status::Unknown => Validity::Unknown,
            Status::Violated => Validity::False,
        });
    }
    Verdict {
        valid,
        guarantees,
        anomalies,
        stats,
        expected: opts.expect.clone(),
        warnings,
        incomplete: None,
    }
}
