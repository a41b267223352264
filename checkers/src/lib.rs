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
//! Each pass runs under `catch_unwind`: one that panics leaves its own anomaly
//! types unjudged (the verdict's `unjudged`) and the others' results standing;
//! a history in which nothing completed `ok` is not judged either
//! (`docs/checkers.md`, "Nothing to judge" and "A checker that fails").
//!
//! Of Gauntlet's crates it depends on `gauntlet-history` alone. It must not do I/O or depend
//! on a broker, Docker or any other part of a run.
#![warn(missing_docs)]
mod delivery;
mod flow;
mod found;
mod offsets;
mod order;
mod processing;
mod radix;
mod repartition;
mod resets;
mod sources;
pub mod stats;
mod table;
mod total;
pub mod twohop;
pub mod txn;
pub mod verdict;

use std::collections::BTreeMap;

use gauntlet_history::model::Outcome;
pub use gauntlet_history::History;
use gauntlet_history::OpType;
use gauntlet_history::NO_OFFSET;
pub use verdict::{
    Anomaly, AnomalyKind, Flow, FlowRow, Guarantee, Incomplete, IncompleteReason, LagBucket,
    Latency, SourceLost, Stats, Status, Unjudged, UnjudgedReason, Validity, Verdict,
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
        Guarantee::AtMostOnce => &[A::Redelivered, A::DuplicateWrite, A::TwoHopDuplicate],
        Guarantee::AtLeastOnce => &[A::Lost, A::TwoHopLost],
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
            A::TwoHopLost,
            A::TwoHopDuplicate,
        ],
        Guarantee::ProducerOrder => &[A::ProducerOrder],
        Guarantee::KeyOrder => &[A::KeyOrder, A::RepartitionKeyOrder, A::TwoHopOrder],
        Guarantee::PartitionOrder => &[A::PartitionOrder],
        Guarantee::TotalOrder => &[A::TotalOrder],
        Guarantee::ExactlyOnceProcessing => &[A::DuplicateProcessing, A::LostProcessing],
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
    check_passes(h, opts, txn_budget, &|_| {})
}

/// A checker pass: what a panic leaves unjudged (`docs/checkers.md`, "A checker that fails").
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Pass {
    Txn,
    Delivery,
    Order,
    Total,
    Offsets,
    Stats,
    Flow,
    Processing,
    Repartition,
    TwoHop,
}

impl Pass {
    fn name(self) -> &'static str {
        match self {
            Pass::Txn => "txn",
            Pass::Delivery => "delivery",
            Pass::Order => "order",
            Pass::Total => "total-order",
            Pass::Offsets => "offsets",
            Pass::Stats => "stats",
            Pass::Flow => "flow",
            Pass::Processing => "processing",
            Pass::Repartition => "repartition",
            Pass::TwoHop => "two-hop",
        }
    }
}

const ORDER_KINDS: [AnomalyKind; 4] = [
    AnomalyKind::Gap,
    AnomalyKind::KeyOrder,
    AnomalyKind::ProducerOrder,
    AnomalyKind::PartitionOrder,
];

/// Runs one pass, `before(pass)` first (the tests' way to make a pass panic);
/// a panic in either becomes its message.
fn guarded<T>(pass: Pass, before: &dyn Fn(Pass), f: impl FnOnce() -> T) -> Result<T, String> {
    // A pass only reads the history and builds its own state: one that panics
    // leaves nothing half-written that the others read.
    std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        before(pass);
        f()
    }))
    .map_err(|payload| panic_message(payload.as_ref()))
}

/// The message of a panic: `panic!("literal")` carries a `&str`, a formatted one a `String`.
fn panic_message(payload: &(dyn std::any::Any + Send)) -> String {
    if let Some(s) = payload.downcast_ref::<&str>() {
        (*s).to_string()
    } else if let Some(s) = payload.downcast_ref::<String>() {
        s.clone()
    } else {
        "a panic without a message".to_string()
    }
}

fn panicked(
    unjudged: &mut Vec<Unjudged>,
    pass: Pass,
    anomalies: &[AnomalyKind],
    message: &str,
    also: &str,
) {
    unjudged.push(Unjudged {
        reason: UnjudgedReason::CheckerPanicked,
        pass: Some(pass.name().to_string()),
        anomalies: anomalies.to_vec(),
        detail: format!("the {} pass panicked: {message}{also}", pass.name()),
    });
}

/// Runs one pass under [`guarded`]; when it panics, records it in `unjudged`
/// (the `kinds` it would have found, `also` added to the detail) and gives `None`.
fn run_pass<T>(
    unjudged: &mut Vec<Unjudged>,
    before: &dyn Fn(Pass),
    pass: Pass,
    kinds: &[AnomalyKind],
    also: &str,
    f: impl FnOnce() -> T,
) -> Option<T> {
    guarded(pass, before, f)
        .map_err(|m| panicked(unjudged, pass, kinds, &m, also))
        .ok()
}

/// Whether any operation completed `ok`: an acknowledged send, an `ok` poll
/// (`polls` holds the `ok` ones and committed reads), a committed transaction.
fn something_completed(h: &History) -> bool {
    !h.polls.is_empty()
        || h.sends.iter().any(|s| s.outcome == Outcome::Ok)
        || h.txns.iter().any(|t| t.outcome == Outcome::Ok)
}

/// `unjudged`'s detail for a history in which nothing completed `ok`.
fn nothing_completed(h: &History) -> String {
    if h.counts.ops == 0 {
        return "the history has no op".to_string();
    }
    let fail = h
        .sends
        .iter()
        .filter(|s| s.outcome == Outcome::Fail)
        .count();
    let info = h.sends.len() - fail;
    format!(
        "no operation completed ok: {} op(s), {} send(s) ({fail} fail, {info} info or never completed), no poll or transaction ended ok",
        h.counts.ops,
        h.sends.len(),
    )
}

/// [`check_with_budget`], with each pass guarded and `before` called as it starts.
fn check_passes(
    h: &History,
    opts: &CheckOptions,
    txn_budget: std::time::Duration,
    before: &dyn Fn(Pass),
) -> Verdict {
    let max = opts.max_examples;
    let mut unjudged: Vec<Unjudged> = Vec::new();
    // The transaction analysis first: its graph is gone before the other passes
    // build their indices, so the peak is the larger of the two, not their sum.
    // Without transactions, Jepsen's Kafka checks still judge a history whose
    // messages carry offsets.
    let logged = !h.txns.is_empty()
        || h.sends.iter().any(|s| s.offset != NO_OFFSET)
        || h.deliveries.iter().any(|d| d.offset != NO_OFFSET);
    let txn_kinds: &[AnomalyKind] = if h.txns.is_empty() {
        &AnomalyKind::KAFKA
    } else {
        &AnomalyKind::TXN
    };
    let txn_found = if logged {
        run_pass(&mut unjudged, before, Pass::Txn, txn_kinds, "", || {
            txn::check(h, max, txn_budget)
        })
    } else {
        None
    };
    // The flow figures (seed O6) before the delivery index exists, for the same reason.
    let flow = run_pass(
        &mut unjudged,
        before,
        Pass::Flow,
        &[],
        "; stats.flow is absent",
        || flow::flow(h),
    )
    .flatten();
    let delivered = run_pass(
        &mut unjudged,
        before,
        Pass::Delivery,
        &AnomalyKind::ALL,
        "; the order, total-order and offsets passes read its index and did not run",
        || delivery::check(h, max),
    );
    let (index, del) = match delivered {
        Some((index, del)) => (Some(index), Some(del)),
        None => (None, None),
    };
    let ord = index.as_ref().and_then(|index| {
        run_pass(&mut unjudged, before, Pass::Order, &ORDER_KINDS, "", || {
            order::check(h, index, max)
        })
    });
    // Judged only where the history changed a partition count (`add-partitions`).
    let repartitioned = repartition::has_change(h);
    let reord = index.as_ref().filter(|_| repartitioned).and_then(|index| {
        run_pass(
            &mut unjudged,
            before,
            Pass::Repartition,
            &AnomalyKind::REPARTITION,
            "",
            || repartition::check(h, index, max),
        )
    });
    let tot = index.as_ref().and_then(|index| {
        run_pass(
            &mut unjudged,
            before,
            Pass::Total,
            &[AnomalyKind::TotalOrder],
            "",
            || total::check(h, index, max),
        )
    });
    let inconsistent = index.as_ref().and_then(|index| {
        run_pass(
            &mut unjudged,
            before,
            Pass::Offsets,
            &[AnomalyKind::InconsistentOffsets],
            "",
            || offsets::check(h, &index.written, max),
        )
    });
    let two_hop = if twohop::applies(h) {
        run_pass(
            &mut unjudged,
            before,
            Pass::TwoHop,
            &AnomalyKind::TWO_HOP,
            "",
            || twohop::check(h, max),
        )
    } else {
        None
    };
    let (groups, delivered_distinct) = match (&index, &del) {
        (Some(index), Some(del)) => (
            index.groups.len(),
            index.delivered_any.iter().filter(|&&d| d).count() as u64 + del.unexpected.count,
        ),
        _ => (0, 0),
    };
    let stats = run_pass(
        &mut unjudged,
        before,
        Pass::Stats,
        &[],
        "; every figure of stats is 0",
        || stats::stats(h, groups, delivered_distinct),
    )
    .map(|s| Stats { flow, ..s })
    .unwrap_or_default();

    let has_offsets = ord.as_ref().is_none_or(|o| o.has_offsets);
    let bounded = tot.as_ref().is_some_and(|t| t.bounded);
    let mut warnings = h.warnings.clone();
    warnings.extend(heal_failures(h));
    let sources_lost = sources::lost(h);
    warnings.extend(sources_lost.iter().map(sources::sentence));
    if bounded {
        warnings.push(format!(
            "total-order: the cross-consumer search stopped after {} comparisons; its count is a lower bound",
            total::CROSS_BUDGET
        ));
    }
    // Every anomaly type is listed; a pass that panicked leaves its own at 0.
    let mut anomalies: BTreeMap<AnomalyKind, Anomaly> = AnomalyKind::ALL
        .iter()
        .map(|&k| (k, Anomaly::default()))
        .collect();
    let mut found = Vec::new();
    if let Some(del) = del {
        found.extend([
            (AnomalyKind::Lost, del.lost),
            (AnomalyKind::Unseen, del.unseen),
            (AnomalyKind::Unexpected, del.unexpected),
            (AnomalyKind::AbortedRead, del.aborted_read),
            (AnomalyKind::Recovered, del.recovered),
            (AnomalyKind::DuplicateWrite, del.duplicate_write),
            (AnomalyKind::Redelivered, del.redelivered),
        ]);
    }
    if let Some(ord) = ord {
        found.extend([
            (AnomalyKind::Gap, ord.gap),
            (AnomalyKind::KeyOrder, ord.key_order),
            (AnomalyKind::ProducerOrder, ord.producer_order),
            (AnomalyKind::PartitionOrder, ord.partition_order),
        ]);
    }
    if let Some(tot) = tot {
        found.push((AnomalyKind::TotalOrder, tot.total_order));
    }
    if repartitioned {
        anomalies.insert(AnomalyKind::RepartitionKeyOrder, Anomaly::default());
    }
    if let Some(reord) = reord {
        found.push((AnomalyKind::RepartitionKeyOrder, reord));
    }
    if let Some(inconsistent) = inconsistent {
        found.push((AnomalyKind::InconsistentOffsets, inconsistent));
    }
    for (kind, found) in found {
        anomalies.insert(kind, found.into_anomaly());
    }
    // The processing pass (seed D7): only for a history with `dedup` or `effect` ops.
    if !h.processing.is_empty() {
        for kind in AnomalyKind::PROCESSING {
            anomalies.insert(kind, Anomaly::default());
        }
        if let Some(p) = run_pass(
            &mut unjudged,
            before,
            Pass::Processing,
            &AnomalyKind::PROCESSING,
            "",
            || processing::check(h, max),
        ) {
            anomalies.insert(AnomalyKind::DuplicateProcessing, p.duplicate.into_anomaly());
            anomalies.insert(AnomalyKind::LostProcessing, p.lost.into_anomaly());
            anomalies.insert(AnomalyKind::Parked, p.parked.into_anomaly());
        }
    }
    if let Some(t) = two_hop {
        for (kind, found) in [
            (AnomalyKind::TwoHopLost, t.lost),
            (AnomalyKind::TwoHopDuplicate, t.duplicate),
            (AnomalyKind::TwoHopOrder, t.order),
        ] {
            anomalies.insert(kind, found.into_anomaly());
        }
    } else if twohop::applies(h) {
        for kind in AnomalyKind::TWO_HOP {
            anomalies.insert(kind, Anomaly::default());
        }
    }
    let mut txn_unknown = false;
    if let Some(t) = txn_found {
        for (kind, found) in t.found {
            anomalies.insert(kind, found.into_anomaly());
        }
        warnings.extend(t.warnings);
        txn_unknown = t.unknown;
    } else if logged {
        for &kind in txn_kinds {
            anomalies.insert(kind, Anomaly::default());
        }
    }
    let count = |k: AnomalyKind| anomalies.get(&k).map_or(0, |a: &Anomaly| a.count);
    let not_judged: std::collections::BTreeSet<AnomalyKind> = unjudged
        .iter()
        .flat_map(|u| u.anomalies.iter().copied())
        .collect();
    let nothing_delivered = h.deliveries.is_empty();
    let mut guarantees = BTreeMap::new();
    let processing: &[Guarantee] = if h.processing.is_empty() {
        &[]
    } else {
        &Guarantee::PROCESSING
    };
    for &g in Guarantee::ALL.iter().chain(processing) {
        let violated = breaks(g).iter().any(|&k| count(k) > 0);
        let unknown = match g {
            Guarantee::AtMostOnce => false,
            Guarantee::AtLeastOnce => count(AnomalyKind::Unseen) > 0,
            Guarantee::ExactlyOnce => count(AnomalyKind::Unseen) > 0 || txn_unknown,
            Guarantee::PartitionOrder => !has_offsets,
            Guarantee::TotalOrder => {
                nothing_delivered || (bounded && count(AnomalyKind::TotalOrder) == 0)
            }
            Guarantee::ProducerOrder | Guarantee::KeyOrder => nothing_delivered,
            Guarantee::ExactlyOnceProcessing => h.drained.is_none(),
        };
        // A guarantee an unjudged anomaly type could break is not known to hold.
        let missed = breaks(g).iter().any(|k| not_judged.contains(k))
            || (matches!(g, Guarantee::AtLeastOnce | Guarantee::ExactlyOnce)
                && not_judged.contains(&AnomalyKind::Unseen));
        let status = if violated {
            Status::Violated
        } else if unknown || missed {
            Status::Unknown
        } else {
            Status::Holds
        };
        guarantees.insert(g, status);
    }
    // Nothing completed `ok`: nothing is known to hold.
    if !something_completed(h) {
        for s in guarantees.values_mut() {
            if *s == Status::Holds {
                *s = Status::Unknown;
            }
        }
        unjudged.insert(
            0,
            Unjudged {
                reason: UnjudgedReason::NothingCompleted,
                pass: None,
                anomalies: Vec::new(),
                detail: nothing_completed(h),
            },
        );
    }
    let integrity = AnomalyKind::ALL
        .iter()
        .any(|&k| k.is_integrity() && count(k) > 0);
    let mut valid = if integrity {
        Validity::False
    } else if AnomalyKind::ALL
        .iter()
        .any(|&k| k.is_integrity() && not_judged.contains(&k))
    {
        Validity::Unknown
    } else {
        Validity::True
    };
    for g in &opts.expect {
        // A guarantee the history cannot speak to (exactly-once-processing without
        // processing ops) is unknown.
        valid = valid.max(
            match guarantees.get(g).copied().unwrap_or(Status::Unknown) {
                Status::Holds => Validity::True,
                Status::Unknown => Validity::Unknown,
                Status::Violated => Validity::False,
            },
        );
    }
    for u in &unjudged {
        warnings.push(match u.reason {
            UnjudgedReason::NothingCompleted => format!(
                "not judged: {}; a history in which nothing completed proves nothing held, so no guarantee holds",
                u.detail
            ),
            UnjudgedReason::CheckerPanicked if u.anomalies.is_empty() => {
                format!("not judged: {}", u.detail)
            }
            UnjudgedReason::CheckerPanicked => format!(
                "not judged: {}; unknown: {}",
                u.detail,
                u.anomalies
                    .iter()
                    .map(|k| k.name())
                    .collect::<Vec<_>>()
                    .join(", ")
            ),
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
        unjudged,
        sources_lost,
    }
}

/// What Gauntlet's runs recorded of a heal that failed: a node that did not
/// come back after a fault (a power loss, a corruption, a kill: the heal's
/// error says which node, how long it was waited for and the end of its log),
/// and the final heal's problems. Only Gauntlet's own events count (a JSON
/// object with a `fault_id`, or the `heal-all` info); a failed start of a fault
/// (`"end": true`) is not a heal.
fn heal_failures(h: &History) -> Vec<String> {
    let mut out = Vec::new();
    for e in h.nemesis.iter().filter(|e| e.kind == OpType::Info) {
        let Ok(serde_json::Value::Object(v)) = serde_json::from_str(&e.value) else {
            continue;
        };
        if e.f == "heal-all" {
            let problems: Vec<&str> = v
                .get("problems")
                .and_then(|p| p.as_array())
                .into_iter()
                .flatten()
                .filter_map(|p| p.as_str())
                .collect();
            if !problems.is_empty() {
                out.push(format!(
                    "the final heal (op {}) found problems: {}",
                    e.index,
                    problems.join("; ")
                ));
            }
            continue;
        }
        let is_heal = v.contains_key("fault_id") && v.get("end").is_none();
        if let (true, Some(err)) = (is_heal, v.get("error").and_then(|x| x.as_str())) {
            out.push(format!(
                "a node did not come back: the heal `{}` (op {}) failed: {err}",
                e.f, e.index
            ));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use gauntlet_history::read_bytes;
    use std::time::Duration;

    /// x=1 acknowledged at offset 0 and never read, x=2 at 1 and read, x=3 at 2
    /// and read before x=2 by one consumer: `lost` 1, `gap`, `key-order`,
    /// `producer-order`, `partition-order`, `total-order`, and Jepsen's
    /// `nonmonotonic-poll` (offsets: the Kafka checks run).
    fn history() -> History {
        let mut text = String::new();
        let mut i = 0;
        let mut line = |l: String| {
            text.push_str(&l);
            text.push('\n');
        };
        for (v, o) in [(1, 0), (2, 1), (3, 2)] {
            line(format!(
                r#"{{"index":{i},"time":{i},"process":0,"type":"invoke","f":"send","value":{{"key":"x","value":{v}}}}}"#
            ));
            i += 1;
            line(format!(
                r#"{{"index":{i},"time":{i},"process":0,"type":"ok","f":"send","value":{{"key":"x","value":{v},"partition":0,"offset":{o}}}}}"#
            ));
            i += 1;
        }
        line(format!(
            r#"{{"index":{i},"time":{i},"process":1,"type":"invoke","f":"poll"}}"#
        ));
        i += 1;
        line(format!(
            r#"{{"index":{i},"time":{i},"process":1,"type":"ok","f":"poll","value":[{{"key":"x","value":3,"partition":0,"offset":2}},{{"key":"x","value":2,"partition":0,"offset":1}}]}}"#
        ));
        read_bytes("h.jsonl", text.as_bytes()).expect("history")
    }

    fn opts() -> CheckOptions {
        CheckOptions {
            expect: vec![Guarantee::AtLeastOnce, Guarantee::KeyOrder],
            max_examples: 10,
        }
    }

    /// The verdict with `pass` made to panic with `message`.
    fn panicking(pass: Pass, message: &'static str) -> Verdict {
        check_passes(&history(), &opts(), Duration::from_secs(10), &|p| {
            if p == pass {
                panic!("{message} (in {})", p.name());
            }
        })
    }

    fn counts(v: &Verdict) -> BTreeMap<AnomalyKind, u64> {
        v.anomalies
            .iter()
            .filter(|(_, a)| a.count > 0)
            .map(|(k, a)| (*k, a.count))
            .collect()
    }

    fn whole() -> Verdict {
        check(&history(), &opts())
    }

    #[test]
    fn the_history_without_a_panic() {
        use AnomalyKind as A;
        let v = whole();
        assert_eq!(
            counts(&v),
            BTreeMap::from([
                (A::Lost, 1),
                (A::Gap, 1),
                (A::KeyOrder, 1),
                (A::ProducerOrder, 1),
                (A::PartitionOrder, 1),
                (A::TotalOrder, 1),
                (A::IntNonmonotonicPoll, 1),
            ])
        );
        assert!(v.unjudged.is_empty());
        assert_eq!(v.valid, Validity::False);
    }

    #[test]
    fn a_panicking_order_pass_leaves_its_checks_unknown_and_the_others_standing() {
        use AnomalyKind as A;
        let v = panicking(Pass::Order, "injected");
        let mut want = counts(&whole());
        for k in ORDER_KINDS {
            want.remove(&k);
        }
        assert_eq!(counts(&v), want);
        for k in ORDER_KINDS {
            assert_eq!(v.anomalies[&k], Anomaly::default(), "{k}");
        }
        assert_eq!(
            v.unjudged,
            [Unjudged {
                reason: UnjudgedReason::CheckerPanicked,
                pass: Some("order".into()),
                anomalies: ORDER_KINDS.to_vec(),
                detail: "the order pass panicked: injected (in order)".into(),
            }]
        );
        assert_eq!(
            v.warnings,
            ["not judged: the order pass panicked: injected (in order); unknown: gap, key-order, producer-order, partition-order"]
        );
        // Its guarantees are unknown; the lost write (delivery) still violates at-least-once.
        assert_eq!(v.status(Guarantee::KeyOrder), Status::Unknown);
        assert_eq!(v.status(Guarantee::ProducerOrder), Status::Unknown);
        assert_eq!(v.status(Guarantee::PartitionOrder), Status::Unknown);
        assert_eq!(v.status(Guarantee::AtLeastOnce), Status::Violated);
        assert_eq!(v.status(Guarantee::TotalOrder), Status::Violated);
        assert_eq!(v.count(A::Lost), 1);
        assert_eq!(v.valid, Validity::False);
        let json = serde_json::to_value(&v).expect("json");
        assert_eq!(json["unjudged"][0]["reason"], "checker-panicked");
        assert_eq!(json["unjudged"][0]["anomalies"][1], "key-order");
        let back: Verdict = serde_json::from_value(json).expect("round trip");
        assert_eq!(back, v);
    }

    #[test]
    fn a_panicking_delivery_pass_leaves_the_passes_that_read_it_unrun_and_txn_standing() {
        use AnomalyKind as A;
        let v = panicking(Pass::Delivery, "index out of bounds");
        // Jepsen's Kafka checks (the txn pass) stand.
        assert_eq!(counts(&v), BTreeMap::from([(A::IntNonmonotonicPoll, 1)]));
        assert_eq!(v.unjudged.len(), 1);
        assert_eq!(v.unjudged[0].pass.as_deref(), Some("delivery"));
        assert_eq!(v.unjudged[0].anomalies, AnomalyKind::ALL.to_vec());
        assert_eq!(
            v.unjudged[0].detail,
            "the delivery pass panicked: index out of bounds (in delivery); the order, total-order and offsets passes read its index and did not run"
        );
        for g in Guarantee::ALL {
            assert_eq!(v.status(g), Status::Unknown, "{g}");
        }
        assert_eq!(v.valid, Validity::Unknown);
        assert_eq!((v.stats.groups, v.stats.delivered_distinct), (0, 0));
        assert_eq!(v.stats.sends, 3);
    }

    #[test]
    fn a_panicking_txn_pass_leaves_only_the_kafka_checks_unjudged() {
        let v = panicking(Pass::Txn, "boom");
        let mut want = counts(&whole());
        want.remove(&AnomalyKind::IntNonmonotonicPoll);
        assert_eq!(counts(&v), want);
        for k in AnomalyKind::KAFKA {
            assert_eq!(v.anomalies[&k], Anomaly::default(), "{k}");
        }
        assert_eq!(v.unjudged[0].anomalies, AnomalyKind::KAFKA.to_vec());
        // The Kafka checks judge no guarantee.
        assert_eq!(v.guarantees, whole().guarantees);
        assert_eq!(v.valid, Validity::False);
    }

    #[test]
    fn a_panicking_offsets_pass_makes_valid_at_least_unknown() {
        // The history's only guarantee-breaking anomalies are order ones; with
        // at-least-once and at-most-once expected and the integrity check unjudged,
        // `valid` cannot be true.
        let h = read_bytes(
            "h.jsonl",
            br#"{"index":0,"time":0,"process":0,"type":"invoke","f":"send","value":{"key":"x","value":1}}
{"index":1,"time":1,"process":0,"type":"ok","f":"send","value":{"key":"x","value":1,"partition":0,"offset":0}}
{"index":2,"time":2,"process":1,"type":"invoke","f":"poll"}
{"index":3,"time":3,"process":1,"type":"ok","f":"poll","value":[{"key":"x","value":1,"partition":0,"offset":0}]}
"#,
        )
        .expect("history");
        let o = CheckOptions {
            expect: vec![Guarantee::AtLeastOnce, Guarantee::AtMostOnce],
            max_examples: 10,
        };
        assert_eq!(check(&h, &o).valid, Validity::True);
        let v = check_passes(&h, &o, Duration::from_secs(10), &|p| {
            if p == Pass::Offsets {
                panic!("offsets");
            }
        });
        assert_eq!(v.valid, Validity::Unknown);
        assert_eq!(v.status(Guarantee::AtLeastOnce), Status::Holds);
        assert_eq!(v.unjudged[0].anomalies, [AnomalyKind::InconsistentOffsets]);
    }

    #[test]
    fn a_panicking_flow_pass_leaves_everything_else() {
        let v = panicking(Pass::Flow, "flow");
        assert!(whole().stats.flow.is_some());
        assert_eq!(counts(&v), counts(&whole()));
        assert_eq!(
            v.stats,
            Stats {
                flow: None,
                ..whole().stats
            }
        );
        assert_eq!(
            v.unjudged[0].detail,
            "the flow pass panicked: flow (in flow); stats.flow is absent"
        );
    }

    #[test]
    fn a_panicking_stats_pass_leaves_the_judgement_and_zero_figures() {
        let v = panicking(Pass::Stats, "stats");
        assert_eq!(counts(&v), counts(&whole()));
        assert_eq!(v.guarantees, whole().guarantees);
        assert_eq!(v.stats, Stats::default());
        assert_eq!(
            v.unjudged[0].detail,
            "the stats pass panicked: stats (in stats); every figure of stats is 0"
        );
        assert!(v.unjudged[0].anomalies.is_empty());
        assert_eq!(
            v.warnings,
            ["not judged: the stats pass panicked: stats (in stats); every figure of stats is 0"]
        );
    }

    #[test]
    fn a_panic_message_is_kept_whatever_its_payload() {
        let literal = std::panic::catch_unwind(|| panic!("literal")).expect_err("panics");
        assert_eq!(panic_message(literal.as_ref()), "literal");
        let n = 7;
        let formatted = std::panic::catch_unwind(|| panic!("index {n}")).expect_err("panics");
        assert_eq!(panic_message(formatted.as_ref()), "index 7");
        let other = std::panic::catch_unwind(|| std::panic::panic_any(5u8)).expect_err("panics");
        assert_eq!(panic_message(other.as_ref()), "a panic without a message");
    }
}
