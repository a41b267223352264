//! Minimal hand-written histories: each anomaly where it must fire, and the near-misses where it must not.
use gauntlet_checkers::{
    check, AnomalyKind as A, CheckOptions, Guarantee as G, Status, Validity, Verdict,
};
use gauntlet_history::read_bytes;
use serde_json::{json, Value};

/// A tiny history builder: indices and times are assigned in call order.
#[derive(Default)]
struct H {
    lines: Vec<String>,
}

/// A message as delivered or stored: key, value, optional partition/offset.
fn m(key: &str, value: i64) -> Value {
    json!({"key": key, "value": value})
}
fn at(mut msg: Value, partition: i64, offset: i64) -> Value {
    msg["partition"] = json!(partition);
    msg["offset"] = json!(offset);
    msg
}

impl H {
    fn op(
        &mut self,
        process: Value,
        kind: &str,
        f: &str,
        group: Option<&str>,
        value: Option<Value>,
    ) -> &mut Self {
        let i = self.lines.len();
        let mut o = json!({"index": i, "time": i * 1000, "process": process, "type": kind, "f": f});
        if let Some(g) = group {
            o["group"] = json!(g);
        }
        if let Some(v) = value {
            o["value"] = v;
        }
        self.lines.push(o.to_string());
        self
    }
    fn invoke_send(&mut self, p: u64, msg: Value) -> &mut Self {
        let v = json!({"key": msg["key"], "value": msg["value"]});
        self.op(json!(p), "invoke", "send", None, Some(v))
    }
    fn end_send(&mut self, p: u64, kind: &str, msg: Value) -> &mut Self {
        self.op(json!(p), kind, "send", None, Some(msg))
    }
    /// A send that completes at once with `kind`.
    fn send(&mut self, p: u64, kind: &str, msg: Value) -> &mut Self {
        self.invoke_send(p, msg.clone()).end_send(p, kind, msg)
    }
    fn poll(&mut self, p: u64, group: Option<&str>, msgs: Vec<Value>) -> &mut Self {
        self.op(json!(p), "invoke", "poll", group, None).op(
            json!(p),
            "ok",
            "poll",
            group,
            Some(Value::Array(msgs)),
        )
    }
    fn assign(&mut self, p: u64) -> &mut Self {
        self.op(json!(p), "invoke", "assign", None, Some(json!([0])))
            .op(json!(p), "ok", "assign", None, Some(json!([0])))
    }
    fn drained(&mut self) -> &mut Self {
        self.op(
            json!("harness"),
            "info",
            "phase",
            None,
            Some(json!("drained")),
        )
    }
    fn check(&self, expect: &[G]) -> Verdict {
        let text = self.lines.join("\n") + "\n";
        let h = read_bytes("t.jsonl", text.as_bytes()).unwrap_or_else(|e| panic!("{e}\n{text}"));
        check(
            &h,
            &CheckOptions {
                expect: expect.to_vec(),
                max_examples: 5,
            },
        )
    }
}

/// Asserts the counts named and that every other anomaly is zero.
fn assert_counts(v: &Verdict, expected: &[(A, u64)]) {
    for kind in A::ALL {
        let want = expected
            .iter()
            .find(|(k, _)| *k == kind)
            .map_or(0, |(_, n)| *n);
        assert_eq!(
            v.count(kind),
            want,
            "{kind}: expected {want}, got {}\n{}",
            v.count(kind),
            serde_json::to_string_pretty(&v.anomalies).unwrap_or_default()
        );
    }
}

#[test]
fn clean_history_is_valid() {
    let mut h = H::default();
    h.send(0, "ok", at(m("k", 1), 0, 0))
        .send(0, "ok", at(m("k", 2), 0, 1));
    h.poll(5, None, vec![at(m("k", 1), 0, 0), at(m("k", 2), 0, 1)])
        .drained();
    let v = h.check(&G::ALL);
    assert_counts(&v, &[]);
    assert_eq!(v.valid, Validity::True);
    for g in G::ALL {
        assert_eq!(v.status(g), Status::Holds, "{g}");
    }
}

#[test]
fn lost_needs_an_ok_send_and_a_drain() {
    let mut h = H::default();
    h.send(0, "ok", at(m("k", 1), 0, 0))
        .send(0, "ok", at(m("k", 2), 0, 1));
    h.send(1, "info", m("k", 3)).send(2, "fail", m("k", 4));
    h.poll(5, None, vec![at(m("k", 1), 0, 0)]);
    let unseen = h.check(&[G::AtLeastOnce]);
    assert_counts(&unseen, &[(A::Unseen, 1)]);
    assert_eq!(unseen.status(G::AtLeastOnce), Status::Unknown);
    assert_eq!(unseen.valid, Validity::Unknown);
    h.drained();
    let lost = h.check(&[G::AtLeastOnce]);
    assert_counts(&lost, &[(A::Lost, 1)]);
    assert_eq!(lost.valid, Validity::False);
    let ex = &lost.anomalies[&A::Lost].examples[0].to_json();
    assert_eq!(ex["value"], json!(2));
    assert_eq!(ex["send_invoke"], json!(2));
    assert_eq!(ex["send_ok"], json!(3));
    assert_eq!(ex["drained"], json!(10));
    // Judged against at-most-once only, a loss does not make it invalid.
    assert_eq!(h.check(&[G::AtMostOnce]).valid, Validity::True);
}

#[test]
fn a_delivered_info_send_is_recovered_not_unexpected() {
    let mut h = H::default();
    h.invoke_send(0, m("k", 1)); // never completes: info
    h.send(1, "info", m("k", 2));
    h.poll(5, None, vec![m("k", 1), m("k", 2)]).drained();
    let v = h.check(&[]);
    assert_counts(&v, &[(A::Recovered, 2)]);
    assert_eq!(v.valid, Validity::True);
}

#[test]
fn aborted_read_and_unexpected_are_invalid_whatever_is_expected() {
    let mut h = H::default();
    h.send(0, "fail", m("k", 1))
        .poll(5, None, vec![m("k", 1)])
        .drained();
    let v = h.check(&[]);
    assert_counts(&v, &[(A::AbortedRead, 1)]);
    assert_eq!(v.valid, Validity::False);

    let mut h = H::default();
    h.poll(5, None, vec![m("k", 99)]).drained();
    let v = h.check(&[]);
    assert_counts(&v, &[(A::Unexpected, 1)]);
    assert_eq!(v.valid, Validity::False);
}

#[test]
fn duplicate_write_is_one_value_at_two_offsets() {
    let mut h = H::default();
    h.send(0, "ok", at(m("k", 1), 0, 0));
    h.poll(5, None, vec![at(m("k", 1), 0, 0), at(m("k", 1), 0, 1)])
        .drained();
    let v = h.check(&[G::AtMostOnce]);
    assert_counts(&v, &[(A::DuplicateWrite, 1)]);
    assert_eq!(v.status(G::AtMostOnce), Status::Violated);
    assert_eq!(v.status(G::AtLeastOnce), Status::Holds);
    assert_eq!(v.valid, Validity::False);
}

#[test]
fn redelivery_after_a_consumer_crash_is_neither_duplicate_nor_loss() {
    let mut h = H::default();
    h.send(0, "ok", at(m("k", 1), 0, 0))
        .send(0, "ok", at(m("k", 2), 0, 1));
    // Consumer 5 gets both, crashes before committing; consumer 6 starts from the committed offset.
    h.poll(5, Some("g"), vec![at(m("k", 1), 0, 0), at(m("k", 2), 0, 1)]);
    h.poll(6, Some("g"), vec![at(m("k", 1), 0, 0), at(m("k", 2), 0, 1)])
        .drained();
    let v = h.check(&[G::AtLeastOnce, G::KeyOrder, G::PartitionOrder]);
    assert_counts(&v, &[(A::Redelivered, 2)]);
    assert_eq!(v.valid, Validity::True);
    assert_eq!(v.status(G::AtMostOnce), Status::Violated);
    assert_eq!(v.anomalies[&A::Redelivered].by_group["g"], 2);
}

#[test]
fn queue_redelivery_without_offsets_uses_the_redelivered_flag() {
    let mut h = H::default();
    h.send(0, "ok", m("k", 1)).send(0, "ok", m("k", 2));
    let mut again = m("k", 1);
    again["redelivered"] = json!(true);
    h.poll(5, None, vec![m("k", 1)])
        .poll(6, None, vec![again, m("k", 2)]);
    h.poll(6, None, vec![m("k", 2)]).drained();
    let v = h.check(&[]);
    // 1 came back flagged: a redelivery. 2 came twice unflagged: stored twice, as far as we can tell.
    assert_counts(&v, &[(A::Redelivered, 1), (A::DuplicateWrite, 1)]);
}

#[test]
fn a_message_delivered_to_two_groups_is_not_a_duplicate() {
    let mut h = H::default();
    h.send(0, "ok", at(m("k", 1), 0, 0));
    h.poll(5, Some("a"), vec![at(m("k", 1), 0, 0)]);
    h.poll(6, Some("b"), vec![at(m("k", 1), 0, 0)]).drained();
    let v = h.check(&[G::ExactlyOnce]);
    assert_counts(&v, &[]);
    assert_eq!(v.valid, Validity::True);
    assert_eq!(v.stats.groups, 2);
}

#[test]
fn a_group_that_missed_a_message_loses_it_even_if_another_got_it() {
    let mut h = H::default();
    h.send(0, "ok", at(m("k", 1), 0, 0));
    h.poll(5, Some("a"), vec![at(m("k", 1), 0, 0)]);
    h.poll(6, Some("b"), vec![]).drained();
    let v = h.check(&[G::AtLeastOnce]);
    assert_counts(&v, &[(A::Lost, 1)]);
    assert_eq!(v.anomalies[&A::Lost].by_group.get("b"), Some(&1));
    assert_eq!(v.anomalies[&A::Lost].by_group.get("a"), None);
}

#[test]
fn gap_then_loss_and_gap_then_reorder() {
    // Never delivered: a gap and a loss.
    let mut h = H::default();
    for v in 1..=3 {
        h.send(0, "ok", at(m("k", v), 0, v - 1));
    }
    h.poll(5, None, vec![at(m("k", 1), 0, 0), at(m("k", 3), 0, 2)])
        .drained();
    let v = h.check(&[]);
    assert_counts(&v, &[(A::Gap, 1), (A::Lost, 1)]);
    let ex = &v.anomalies[&A::Gap].examples[0].to_json();
    assert_eq!(ex["missing"][0]["value"], json!(2));
    assert_eq!(ex["missing"][0]["later_delivered"], json!(false));

    // Delivered later: a gap and an order violation.
    let mut h = H::default();
    for v in 1..=3 {
        h.send(0, "ok", m("k", v));
    }
    h.poll(5, None, vec![m("k", 1), m("k", 3)])
        .poll(5, None, vec![m("k", 2)])
        .drained();
    let v = h.check(&[G::KeyOrder]);
    assert_counts(
        &v,
        &[
            (A::Gap, 1),
            (A::KeyOrder, 1),
            (A::ProducerOrder, 1),
            (A::TotalOrder, 1),
        ],
    );
    assert_eq!(
        v.anomalies[&A::Gap].examples[0].to_json()["missing"][0]["later_delivered"],
        json!(true)
    );
    assert_eq!(v.valid, Validity::False);
}

#[test]
fn offsets_skipped_by_transaction_markers_are_not_gaps() {
    let mut h = H::default();
    for v in 1..=3 {
        h.send(0, "ok", at(m("k", v), 0, 2 * (v - 1)));
    }
    h.poll(
        5,
        None,
        vec![
            at(m("k", 1), 0, 0),
            at(m("k", 2), 0, 2),
            at(m("k", 3), 0, 4),
        ],
    )
    .drained();
    assert_counts(&h.check(&[]), &[]);
}

#[test]
fn a_consumer_starting_at_a_committed_offset_jumps_over_nothing() {
    let mut h = H::default();
    for v in 1..=4 {
        h.send(0, "ok", at(m("k", v), 0, v - 1));
    }
    h.poll(5, Some("g"), vec![at(m("k", 1), 0, 0), at(m("k", 2), 0, 1)]);
    h.poll(6, Some("g"), vec![at(m("k", 3), 0, 2), at(m("k", 4), 0, 3)])
        .drained();
    assert_counts(&h.check(&[]), &[]);
    // A failed send in between leaves a hole that is not a gap.
    let mut h = H::default();
    h.send(0, "ok", m("k", 1))
        .send(0, "fail", m("k", 2))
        .send(0, "ok", m("k", 3));
    h.poll(5, None, vec![m("k", 1), m("k", 3)]).drained();
    assert_counts(&h.check(&[]), &[]);
}

#[test]
fn key_order_same_producer_pipelined() {
    let mut h = H::default();
    // Producer 0 pipelines: both sends in flight, the second one lands first (retry reorder).
    h.invoke_send(0, m("k", 1)).end_send(0, "ok", m("k", 1));
    h.invoke_send(0, m("k", 2)).end_send(0, "ok", m("k", 2));
    h.poll(5, None, vec![m("k", 2), m("k", 1)]).drained();
    let v = h.check(&[G::KeyOrder]);
    assert_counts(
        &v,
        &[
            (A::KeyOrder, 1),
            (A::ProducerOrder, 1),
            (A::TotalOrder, 1),
            (A::Gap, 1),
        ],
    );
    assert_eq!(v.status(G::KeyOrder), Status::Violated);
}

#[test]
fn key_order_across_producers_is_realtime() {
    // Concurrent sends of two producers may land in either order.
    let mut h = H::default();
    h.invoke_send(0, m("k", 1)).invoke_send(1, m("k", 2));
    h.end_send(0, "ok", m("k", 1)).end_send(1, "ok", m("k", 2));
    h.poll(5, None, vec![m("k", 2), m("k", 1)]).drained();
    assert_counts(&h.check(&[]), &[]);
    // Sequential ones may not.
    let mut h = H::default();
    h.send(0, "ok", m("k", 1)).send(1, "ok", m("k", 2));
    h.poll(5, None, vec![m("k", 2), m("k", 1)]).drained();
    let v = h.check(&[]);
    assert_counts(&v, &[(A::KeyOrder, 1), (A::TotalOrder, 1)]);
    assert_eq!(v.status(G::ProducerOrder), Status::Holds);
}

#[test]
fn key_order_of_a_shared_producer_client() {
    // Processes 0 and 1 are two in-flight slots of one producer client (`producer`: 7):
    // the order that counts is the order of the client's send invocations, even though
    // the two sends overlap in time. 1 is invoked first, so 2 before 1 is a reorder.
    let named = |h: &mut H, p: u64, msg: Value| {
        let v = json!({"key": msg["key"], "value": msg["value"]});
        let i = h.lines.len();
        h.lines.push(
            json!({"index": i, "time": i * 1000, "process": p, "type": "invoke",
                   "f": "send", "producer": 7, "value": v})
            .to_string(),
        );
    };
    let mut h = H::default();
    named(&mut h, 0, m("k", 1));
    named(&mut h, 1, m("k", 2));
    h.end_send(1, "ok", m("k", 2)).end_send(0, "ok", m("k", 1));
    h.poll(5, None, vec![m("k", 2), m("k", 1)]).drained();
    let v = h.check(&[G::KeyOrder]);
    assert_counts(&v, &[(A::KeyOrder, 1), (A::ProducerOrder, 1), (A::Gap, 1)]);
    assert_eq!(v.status(G::KeyOrder), Status::Violated);
    let ex = &v.anomalies[&A::KeyOrder].examples[0].to_json();
    assert_eq!(ex["sent_first"]["producer"], json!(0), "{ex}");
    assert_eq!(ex["received_first"]["producer"], json!(0), "{ex}");
    assert_eq!(ex["received_first"]["process"], json!(1), "{ex}");
    // Delivered in invoke order: clean.
    let mut h = H::default();
    named(&mut h, 0, m("k", 1));
    named(&mut h, 1, m("k", 2));
    h.end_send(1, "ok", m("k", 2)).end_send(0, "ok", m("k", 1));
    h.poll(5, None, vec![m("k", 1), m("k", 2)]).drained();
    assert_counts(&h.check(&[G::KeyOrder]), &[]);
}

#[test]
fn producer_order_across_keys() {
    let mut h = H::default();
    h.send(0, "ok", m("a", 1)).send(0, "ok", m("b", 2));
    h.poll(5, None, vec![m("b", 2), m("a", 1)]).drained();
    let v = h.check(&[G::KeyOrder]);
    assert_counts(&v, &[(A::ProducerOrder, 1), (A::TotalOrder, 1)]);
    assert_eq!(v.status(G::KeyOrder), Status::Holds);
    assert_eq!(v.status(G::ProducerOrder), Status::Violated);
    assert_eq!(v.valid, Validity::True);
}

#[test]
fn partition_order_and_its_near_misses() {
    let hist = |reset: bool| {
        let mut h = H::default();
        h.send(0, "ok", at(m("a", 1), 0, 0))
            .send(1, "ok", at(m("b", 2), 0, 1));
        h.poll(5, None, vec![at(m("a", 1), 0, 0), at(m("b", 2), 0, 1)]);
        if reset {
            h.assign(5);
        }
        h.poll(5, None, vec![at(m("a", 1), 0, 0)]).drained();
        h.check(&[G::PartitionOrder])
    };
    let v = hist(false);
    assert_counts(&v, &[(A::PartitionOrder, 1), (A::Redelivered, 1)]);
    assert_eq!(v.status(G::PartitionOrder), Status::Violated);
    let v = hist(true);
    assert_counts(&v, &[(A::Redelivered, 1)]);
    assert_eq!(v.status(G::PartitionOrder), Status::Holds);

    // No offsets: unknown.
    let mut h = H::default();
    h.send(0, "ok", m("a", 1))
        .poll(5, None, vec![m("a", 1)])
        .drained();
    let v = h.check(&[G::PartitionOrder]);
    assert_eq!(v.status(G::PartitionOrder), Status::Unknown);
    assert_eq!(v.valid, Validity::Unknown);
}

#[test]
fn total_order_two_consumers_in_opposite_orders() {
    let mut h = H::default();
    h.invoke_send(0, m("a", 1)).invoke_send(1, m("b", 2));
    h.end_send(0, "ok", m("a", 1)).end_send(1, "ok", m("b", 2));
    h.poll(5, None, vec![m("a", 1), m("b", 2)]);
    let mut r1 = m("a", 1);
    r1["redelivered"] = json!(true);
    let mut r2 = m("b", 2);
    r2["redelivered"] = json!(true);
    h.poll(6, None, vec![r2, r1]).drained();
    let v = h.check(&[G::TotalOrder]);
    assert_counts(&v, &[(A::TotalOrder, 1), (A::Redelivered, 2)]);
    assert_eq!(v.valid, Validity::False);
}

#[test]
fn inconsistent_offsets() {
    let mut h = H::default();
    h.send(0, "ok", at(m("k", 1), 0, 0))
        .send(0, "ok", at(m("k", 2), 0, 1));
    h.poll(5, None, vec![at(m("k", 2), 0, 0), at(m("k", 1), 0, 1)])
        .drained();
    let v = h.check(&[]);
    assert_eq!(v.count(A::InconsistentOffsets), 2);
    assert_eq!(v.valid, Validity::False);
}

#[test]
fn transactions_commit_or_abort_their_sends_and_reads() {
    let mut h = H::default();
    h.send(0, "ok", at(m("in", 1), 0, 0));
    let read = json!({"f": "poll", "messages": [at(m("in", 1), 0, 0)]});
    h.op(
        json!(1),
        "invoke",
        "txn",
        None,
        Some(json!([{"f": "poll"}, {"f": "send", "key": "out", "value": 10}])),
    );
    h.op(
        json!(1),
        "fail",
        "txn",
        None,
        Some(json!([read, {"f": "send", "key": "out", "value": 10}])),
    );
    h.op(
        json!(2),
        "invoke",
        "txn",
        None,
        Some(json!([{"f": "poll"}, {"f": "send", "key": "out", "value": 11}])),
    );
    h.op(
        json!(2),
        "ok",
        "txn",
        None,
        Some(json!([
            read,
            at(json!({"f": "send", "key": "out", "value": 11}), 1, 0)
        ])),
    );
    h.poll(5, Some("out"), vec![at(m("out", 11), 1, 0)])
        .drained();
    let v = h.check(&[G::ExactlyOnce]);
    // Group "out" reads topic out; the default group read "in" inside the committed transaction.
    assert_eq!(v.count(A::AbortedRead), 0);
    assert_eq!(v.stats.sends_fail, 1);
    assert_eq!(v.stats.sends_ok, 2);
}

/// A node that did not come back after a fault is said in the verdict's
/// warnings (which heal, which node, what it waited for); a fault that failed
/// to start (`"end": true`) and a clean final heal are not.
#[test]
fn a_node_that_did_not_come_back_is_a_warning_of_the_verdict() {
    let mut h = H::default();
    h.send(0, "ok", at(m("k", 1), 0, 0));
    let nem = |h: &mut H, kind: &str, f: &str, v: Value| {
        h.op(json!("nemesis"), kind, f, None, Some(v));
    };
    nem(
        &mut h,
        "invoke",
        "power-loss",
        json!({"fault": "power-loss", "fault_id": 0, "node": "n1"}),
    );
    nem(
        &mut h,
        "info",
        "power-loss",
        json!({"fault_id": 0, "node": "n1", "disk": {"fault": "power-loss"}}),
    );
    nem(
        &mut h,
        "invoke",
        "power-on",
        json!({"fault_id": 0, "target": "n1"}),
    );
    nem(
        &mut h,
        "info",
        "power-on",
        json!({"fault_id": 0, "error": "start on n1: node n1 not ready after 90.0s"}),
    );
    nem(
        &mut h,
        "info",
        "pause",
        json!({"fault_id": 1, "error": "no", "end": true}),
    );
    nem(&mut h, "info", "heal-all", json!({"problems": []}));
    h.poll(5, None, vec![at(m("k", 1), 0, 0)]).drained();
    let v = h.check(&[G::AtLeastOnce]);
    assert_eq!(
        v.warnings,
        ["a node did not come back: the heal `power-on` (op 5) failed: start on n1: node n1 not ready after 90.0s"]
    );
    nem(
        &mut h,
        "info",
        "heal-all",
        json!({"problems": ["n2: not ready"]}),
    );
    let v = h.check(&[G::AtLeastOnce]);
    assert_eq!(v.warnings.len(), 2, "{:?}", v.warnings);
    assert!(
        v.warnings[1].contains("found problems: n2: not ready"),
        "{:?}",
        v.warnings
    );
}
