//! The rules of history format v1.1 and issue 16, one hand-written JSON Lines
//! history where each fires and a near miss where it must not
//! (`docs/checkers.md`, `docs/txn.md`): no rw edge back to a transaction a read
//! stops inside of; Jepsen's Kafka checks on bare polls; the partitions an
//! assign, subscribe or seek names; sends that ended `info` proven written by a
//! read; lost writes proven by offset without a drain; duplicates by position;
//! retried sends. Every count of every anomaly in the verdict is asserted.
//!
//! Already covered elsewhere, not repeated here: `txn.rs` (`poll_skip`: a value
//! skipped by transactional polls is lost by offset; `poll_skip_forgiven_after_assign`:
//! the JSON forms of assign in a transactional history;
//! `without_transactions_only_the_kafka_checks_run`), and `conformance.rs`
//! (Jepsen's own micro-histories, EDN assign/subscribe keys included).
use gauntlet_checkers::{
    check, AnomalyKind as A, CheckOptions, Guarantee as G, Status, Validity, Verdict,
};
use gauntlet_history::{read_bytes, History};
use serde_json::{json, Value};
use std::collections::BTreeMap;

/// A history written op by op; indices and times follow the calls.
#[derive(Default)]
struct H {
    lines: Vec<String>,
}

/// A message: key, value, partition, offset.
fn at(key: &str, value: i64, partition: i64, offset: i64) -> Value {
    json!({"key": key, "value": value, "partition": partition, "offset": offset})
}

/// A message with neither partition nor offset.
fn bare(key: &str, value: i64) -> Value {
    json!({"key": key, "value": value})
}

/// A send micro-op of a transaction.
fn tsend(key: &str, value: i64, partition: i64, offset: i64) -> Value {
    json!({"f": "send", "key": key, "value": value, "partition": partition, "offset": offset})
}

/// A poll micro-op of a transaction.
fn tpoll(msgs: Vec<Value>) -> Value {
    json!({"f": "poll", "messages": msgs})
}

impl H {
    fn op(
        &mut self,
        process: u64,
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
    fn invoke_send(&mut self, p: u64, key: &str, value: i64) -> &mut Self {
        self.op(p, "invoke", "send", None, Some(bare(key, value)))
    }
    fn end_send(&mut self, p: u64, kind: &str, msg: Value) -> &mut Self {
        self.op(p, kind, "send", None, Some(msg))
    }
    /// A send that ends at once with `kind`; `msg` is what the completion says.
    fn send(&mut self, p: u64, kind: &str, msg: Value) -> &mut Self {
        let (k, v) = (
            msg["key"].as_str().unwrap_or("").to_string(),
            msg["value"].as_i64().unwrap_or(0),
        );
        self.invoke_send(p, &k, v).end_send(p, kind, msg)
    }
    /// A poll of `group` (None: the default group) that ends `ok` at once with `msgs`.
    fn poll_in(&mut self, p: u64, group: Option<&str>, msgs: Vec<Value>) -> &mut Self {
        self.op(p, "invoke", "poll", group, None).op(
            p,
            "ok",
            "poll",
            group,
            Some(Value::Array(msgs)),
        )
    }
    fn poll(&mut self, p: u64, msgs: Vec<Value>) -> &mut Self {
        self.poll_in(p, None, msgs)
    }
    /// An `assign`, `subscribe` or `seek` that ends ok (or `kind`).
    fn reset(&mut self, p: u64, f: &str, kind: &str, value: Value) -> &mut Self {
        self.op(p, "invoke", f, None, Some(value.clone()))
            .op(p, kind, f, None, Some(value))
    }
    /// A transaction's invoke: its sends without positions, and a poll if it reads.
    fn txn_invoke(&mut self, p: u64, mops: &[Value]) -> &mut Self {
        let mut inv: Vec<Value> = mops
            .iter()
            .filter(|m| m["f"] == "send")
            .map(|m| json!({"f": "send", "key": m["key"], "value": m["value"]}))
            .collect();
        if mops.iter().any(|m| m["f"] == "poll") {
            inv.push(json!({"f": "poll"}));
        }
        self.op(p, "invoke", "txn", None, Some(Value::Array(inv)))
    }
    fn txn_done(&mut self, p: u64, kind: &str, mops: Vec<Value>) -> &mut Self {
        self.op(p, kind, "txn", None, Some(Value::Array(mops)))
    }
    fn txn(&mut self, p: u64, kind: &str, mops: Vec<Value>) -> &mut Self {
        self.txn_invoke(p, &mops).txn_done(p, kind, mops)
    }
    fn drained(&mut self) -> &mut Self {
        let i = self.lines.len();
        self.lines.push(
            json!({"index": i, "time": i * 1000, "process": "harness", "type": "info", "f": "phase", "value": "drained"})
                .to_string(),
        );
        self
    }
    fn text(&self) -> String {
        self.lines.join("\n") + "\n"
    }
    fn history(&self) -> History {
        let text = self.text();
        read_bytes("v11.jsonl", text.as_bytes()).unwrap_or_else(|e| panic!("{e}\n{text}"))
    }
    fn check(&self, expect: &[G]) -> Verdict {
        check(
            &self.history(),
            &CheckOptions {
                expect: expect.to_vec(),
                max_examples: 10,
            },
        )
    }
    fn verdict(&self) -> Verdict {
        self.check(&[G::AtLeastOnce])
    }
}

/// Asserts every anomaly of the verdict: the ones named with their counts, all others zero.
fn assert_exact(v: &Verdict, want: &[(A, u64)]) {
    let got: BTreeMap<String, u64> = v
        .anomalies
        .iter()
        .filter(|(_, a)| a.count > 0)
        .map(|(k, a)| (k.to_string(), a.count))
        .collect();
    let want: BTreeMap<String, u64> = want.iter().map(|(k, n)| (k.to_string(), *n)).collect();
    assert_eq!(
        got,
        want,
        "\n{}",
        serde_json::to_string_pretty(&v.anomalies).unwrap_or_default()
    );
}

fn examples(v: &Verdict, k: A) -> Vec<Value> {
    v.anomalies.get(&k).map_or(Vec::new(), |a| {
        a.examples.iter().map(|e| e.to_json()).collect()
    })
}

// ---------------------------------------------------------------------------
// 1. G-single: no rw edge back to the transaction a read stops inside of.

/// T1 writes x=1 and x=2 (one block of partition 0); T3 writes x=3 after it
/// and y=4; T2 reads x=1 (stopping inside T1's block) and, when `read_y`, y=4.
/// The three run concurrently (no realtime order among them).
fn stops_inside(read_y: bool) -> H {
    let mut h = H::default();
    let t1 = vec![tsend("x", 1, 0, 0), tsend("x", 2, 0, 1)];
    let t3 = vec![tsend("x", 3, 0, 2), tsend("y", 4, 1, 0)];
    let mut reads = vec![at("x", 1, 0, 0)];
    if read_y {
        reads.push(at("y", 4, 1, 0));
    }
    let t2 = vec![tpoll(reads)];
    h.txn_invoke(1, &t1).txn_invoke(3, &t3).txn_invoke(2, &t2);
    h.txn_done(1, "ok", t1)
        .txn_done(3, "ok", t3)
        .txn_done(2, "ok", t2);
    h
}

#[test]
fn a_read_that_stops_inside_a_transactions_writes_is_no_g_single() {
    // T2 read x=1 of T1 and not x=2: the next version after its read that
    // another transaction wrote is T3's x=3, so the only rw edge is T2 -> T3;
    // wr T1 -> T2 and ww T1 -> T3 close no cycle. (Before v1.1: rw T2 -> T1,
    // a false G-single, as in Jepsen's txn-abort-good.)
    let v = stops_inside(false).verdict();
    // x=2, x=3 and y=4 were never delivered; no drain, no higher offset read.
    assert_exact(&v, &[(A::Unseen, 3)]);
    assert_eq!(v.status(G::ExactlyOnce), Status::Unknown);
}

#[test]
fn a_read_that_stops_inside_one_transaction_and_reads_the_next_writer_is_g_single() {
    // Same, but T2 also read T3's y=4: wr T3 -> T2 and rw T2 -> T3 (T3's x=3
    // is the next version after T1's block): exactly one rw edge, G-single.
    let v = stops_inside(true).verdict();
    assert_exact(&v, &[(A::GSingle, 1), (A::Unseen, 2)]);
    assert_eq!(v.status(G::ExactlyOnce), Status::Violated);
    let ex = &examples(&v, A::GSingle)[0];
    let kinds: Vec<&str> = ex["steps"]
        .as_array()
        .map(|s| s.iter().filter_map(|x| x["type"].as_str()).collect())
        .unwrap_or_default();
    assert_eq!(kinds.iter().filter(|k| **k == "rw").count(), 1, "{ex}");
}

// ---------------------------------------------------------------------------
// 2. Jepsen's Kafka checks on bare polls (a history without transactions).

/// Process 0 sends x=0, 1, 2 at offsets 0, 1, 2 of partition 0.
fn three_sends() -> H {
    let mut h = H::default();
    for i in 0..3 {
        h.send(0, "ok", at("x", i, 0, i));
    }
    h
}

#[test]
fn poll_skip_on_bare_polls() {
    let mut h = three_sends();
    h.poll(5, vec![at("x", 0, 0, 0)])
        .poll(5, vec![at("x", 2, 0, 2)]);
    let v = h.verdict();
    // x=1 was skipped: poll-skip (Jepsen), a gap (the producer's positions),
    // and lost by offset (the group was delivered offset 2, never offset 1).
    assert_exact(&v, &[(A::PollSkip, 1), (A::Gap, 1), (A::Lost, 1)]);
    let ex = &examples(&v, A::PollSkip)[0];
    assert_eq!(
        (ex["delta"].clone(), ex["skipped"].clone()),
        (json!(2), json!([1]))
    );
}

#[test]
fn near_miss_an_offset_no_message_holds_is_not_skipped() {
    // Offset 1 holds nothing any op names (a transaction marker, say): the
    // versions of partition 0 are dense, 0 then 2, and nothing was skipped.
    let mut h = H::default();
    h.send(0, "ok", at("x", 0, 0, 0))
        .send(0, "ok", at("x", 2, 0, 2));
    h.poll(5, vec![at("x", 0, 0, 0)])
        .poll(5, vec![at("x", 2, 0, 2)]);
    assert_exact(&h.verdict(), &[]);
}

#[test]
fn shared_group_consumers_are_not_poll_skips_of_each_other() {
    // Two consumers of group g1 share partition 0 (a NATS pull consumer, a
    // RabbitMQ queue): 5 is handed offsets 0 and 2, 6 offset 1. The group
    // skipped nothing, so 5's step from 0 to 2 is no poll-skip.
    let mut h = three_sends();
    h.poll_in(5, Some("g1"), vec![at("x", 0, 0, 0)])
        .poll_in(6, Some("g1"), vec![at("x", 1, 0, 1)])
        .poll_in(5, Some("g1"), vec![at("x", 2, 0, 2)]);
    assert_exact(&h.verdict(), &[]);
}

#[test]
fn a_shared_group_poll_that_reads_around_another_consumers_message_is_no_int_poll_skip() {
    // One poll of 5 reads offsets 0 and 2 of partition 0; 6, of the same group,
    // was handed offset 1: the group skipped nothing within 5's poll either.
    let mut h = three_sends();
    h.poll_in(6, Some("g1"), vec![at("x", 1, 0, 1)]).poll_in(
        5,
        Some("g1"),
        vec![at("x", 0, 0, 0), at("x", 2, 0, 2)],
    );
    // 6's first message jumps over 0, sent and not yet delivered: a gap (the
    // order checks judge each consumer's own sequence).
    assert_exact(&h.verdict(), &[(A::Gap, 1)]);
}

#[test]
fn near_miss_the_same_poll_without_a_named_group_is_an_int_poll_skip() {
    let mut h = three_sends();
    h.poll(6, vec![at("x", 1, 0, 1)])
        .poll(5, vec![at("x", 0, 0, 0), at("x", 2, 0, 2)]);
    assert_exact(&h.verdict(), &[(A::IntPollSkip, 1), (A::Gap, 1)]);
}

#[test]
fn near_miss_a_version_only_another_group_was_delivered_is_skipped() {
    // The same steps, but offset 1 went to a consumer of another group: g1
    // never had it, so 5 skipped it (and g1 lost it, by offset). Each group is
    // judged on its own: g2 had offset 1 only, so it lost offset 0 (a higher
    // offset reached it), offset 2 is unseen by it, and both groups have a gap.
    let mut h = three_sends();
    h.poll_in(5, Some("g1"), vec![at("x", 0, 0, 0)])
        .poll_in(6, Some("g2"), vec![at("x", 1, 0, 1)])
        .poll_in(5, Some("g1"), vec![at("x", 2, 0, 2)]);
    let v = h.verdict();
    assert_exact(
        &v,
        &[(A::PollSkip, 1), (A::Gap, 2), (A::Lost, 2), (A::Unseen, 1)],
    );
    assert_eq!(examples(&v, A::PollSkip)[0]["skipped"], json!([1]));
}

#[test]
fn near_miss_without_a_named_group_jepsens_rule_stands() {
    // No group named (Jepsen's histories): whether the consumers share the
    // partition or each owns it cannot be told, and Jepsen counts the step.
    let mut h = three_sends();
    h.poll(5, vec![at("x", 0, 0, 0)])
        .poll(6, vec![at("x", 1, 0, 1)])
        .poll(5, vec![at("x", 2, 0, 2)]);
    assert_exact(&h.verdict(), &[(A::PollSkip, 1)]);
}

#[test]
fn near_miss_a_shared_group_skip_lists_only_what_nobody_else_had() {
    // 5 steps from 0 to 3; 6 (same group) had 1, nobody had 2: a poll-skip
    // whose `skipped` names 2 only.
    let mut h = H::default();
    for i in 0..4 {
        h.send(0, "ok", at("x", i, 0, i));
    }
    h.poll_in(5, Some("g1"), vec![at("x", 0, 0, 0)])
        .poll_in(6, Some("g1"), vec![at("x", 1, 0, 1)])
        .poll_in(5, Some("g1"), vec![at("x", 3, 0, 3)]);
    let v = h.verdict();
    assert_exact(&v, &[(A::PollSkip, 1), (A::Gap, 1), (A::Lost, 1)]);
    let ex = &examples(&v, A::PollSkip)[0];
    assert_eq!(
        (ex["delta"].clone(), ex["skipped"].clone()),
        (json!(3), json!([2]))
    );
}

#[test]
fn near_miss_without_offsets_the_kafka_checks_do_not_run() {
    // The same skip with broker ids instead of offsets: no version order, so
    // no Kafka check, and the verdict does not list them at all.
    let mut h = H::default();
    for i in 0..3 {
        h.send(
            0,
            "ok",
            json!({"key": "x", "value": i, "id": format!("m{i}")}),
        );
    }
    h.poll(5, vec![json!({"key": "x", "value": 0, "id": "m0"})]);
    h.poll(5, vec![json!({"key": "x", "value": 2, "id": "m2"})]);
    let v = h.verdict();
    for k in A::KAFKA {
        assert!(!v.anomalies.contains_key(&k), "{k}");
    }
    // Without offsets the skipped x=1 is unseen, not lost.
    assert_exact(&v, &[(A::Gap, 1), (A::Unseen, 1)]);
}

#[test]
fn nonmonotonic_poll_on_bare_polls() {
    let mut h = three_sends();
    h.poll(5, vec![at("x", 0, 0, 0), at("x", 1, 0, 1)]);
    h.poll(5, vec![at("x", 1, 0, 1), at("x", 2, 0, 2)]);
    let v = h.verdict();
    assert_exact(
        &v,
        &[
            (A::NonmonotonicPoll, 1),
            (A::Redelivered, 1),
            (A::PartitionOrder, 1),
        ],
    );
    assert_eq!(examples(&v, A::NonmonotonicPoll)[0]["delta"], json!(0));
}

#[test]
fn near_miss_another_consumer_of_the_group_may_start_over() {
    // The second poll is another process's (a consumer that took over at the
    // committed offset): each process is compared with itself only.
    let mut h = three_sends();
    h.poll(5, vec![at("x", 0, 0, 0), at("x", 1, 0, 1)]);
    h.poll(6, vec![at("x", 1, 0, 1), at("x", 2, 0, 2)]);
    assert_exact(&h.verdict(), &[(A::Redelivered, 1)]);
}

#[test]
fn int_poll_skip_on_a_bare_poll() {
    let mut h = three_sends();
    h.poll(5, vec![at("x", 0, 0, 0), at("x", 2, 0, 2)]);
    h.poll(6, vec![at("x", 1, 0, 1)]);
    // One poll read offsets 0 and 2 of partition 0, skipping x=1 (another
    // consumer of the group got it later: a gap, not a loss).
    let v = h.verdict();
    assert_exact(&v, &[(A::IntPollSkip, 1), (A::Gap, 1)]);
    assert_eq!(examples(&v, A::IntPollSkip)[0]["skipped"], json!([1]));
}

#[test]
fn near_miss_reads_of_two_partitions_interleave_without_a_skip() {
    // y=10's send runs alongside both of x's (no realtime order between them).
    let mut h = H::default();
    h.invoke_send(1, "y", 10);
    h.send(0, "ok", at("x", 0, 0, 0))
        .send(0, "ok", at("x", 1, 0, 1));
    h.end_send(1, "ok", at("y", 10, 1, 0));
    h.poll(
        5,
        vec![at("x", 0, 0, 0), at("y", 10, 1, 0), at("x", 1, 0, 1)],
    );
    assert_exact(&h.verdict(), &[]);
}

#[test]
fn int_nonmonotonic_poll_on_a_bare_poll() {
    let mut h = H::default();
    h.send(0, "ok", at("x", 0, 0, 0))
        .send(0, "ok", at("x", 1, 0, 1));
    h.poll(5, vec![at("x", 1, 0, 1), at("x", 0, 0, 0)]);
    // Offsets went backwards inside one poll: Jepsen's int-nonmonotonic-poll,
    // and the contract's order checks see x=1 before x=0, whose send was acked
    // before x=1's began (x=0 came later in the same poll, so x=1 jumped over
    // it: a gap too).
    assert_exact(
        &h.verdict(),
        &[
            (A::IntNonmonotonicPoll, 1),
            (A::Gap, 1),
            (A::KeyOrder, 1),
            (A::ProducerOrder, 1),
            (A::PartitionOrder, 1),
            (A::TotalOrder, 1),
        ],
    );
}

#[test]
fn near_miss_one_poll_reads_a_lower_offset_of_another_partition() {
    let mut h = H::default();
    h.send(0, "ok", at("x", 0, 0, 5))
        .send(1, "ok", at("y", 1, 1, 0));
    h.poll(5, vec![at("x", 0, 0, 5), at("y", 1, 1, 0)]);
    assert_exact(&h.verdict(), &[]);
}

// ---------------------------------------------------------------------------
// 3. The partitions an assign, subscribe or seek names; nonmonotonic-send.

#[test]
fn a_bare_consumer_keeps_its_place_through_an_assign_that_still_covers_the_partition() {
    for f in ["assign", "subscribe"] {
        let mut h = three_sends();
        h.poll(5, vec![at("x", 0, 0, 0)]);
        h.reset(5, f, "ok", json!([0, 1]));
        h.poll(5, vec![at("x", 2, 0, 2)]);
        assert_exact(&h.verdict(), &[(A::PollSkip, 1), (A::Gap, 1), (A::Lost, 1)]);
    }
}

#[test]
fn near_miss_an_assign_that_no_longer_covers_the_partition_starts_it_over() {
    // Also an assign that failed: it counts from its invoke, whatever its
    // outcome (Jepsen ignores a failed one; docs/checkers.md, "Reset").
    for (f, kind) in [("assign", "ok"), ("subscribe", "ok"), ("assign", "fail")] {
        let mut h = three_sends();
        h.poll(5, vec![at("x", 0, 0, 0)]);
        h.reset(5, f, kind, json!([1]));
        h.poll(5, vec![at("x", 2, 0, 2)]);
        // The skip is still a gap and a lost write: those judge the group, not
        // the consumer's place.
        assert_exact(&h.verdict(), &[(A::Gap, 1), (A::Lost, 1)]);
    }
}

#[test]
fn partition_order_restarts_after_any_reset_the_kafka_check_does_not() {
    let mut h = three_sends();
    h.poll(5, vec![at("x", 0, 0, 0), at("x", 1, 0, 1)]);
    h.reset(5, "assign", "ok", json!([0]));
    h.poll(5, vec![at("x", 1, 0, 1), at("x", 2, 0, 2)]);
    // The assign still covers partition 0: nonmonotonic-poll (as Jepsen); the
    // consumer may restart at its committed offset: no partition-order.
    assert_exact(
        &h.verdict(),
        &[(A::NonmonotonicPoll, 1), (A::Redelivered, 1)],
    );
}

/// Process 1 sends x=1 (stored at offset 1), then x=2 (stored at offset 0),
/// with the reset `between` (f, value) in the middle when given.
fn sends_backwards(between: Option<(&str, Value)>) -> Verdict {
    let mut h = H::default();
    h.send(1, "ok", at("x", 1, 0, 1));
    if let Some((f, value)) = between {
        h.reset(1, f, "ok", value);
    }
    h.send(1, "ok", at("x", 2, 0, 0));
    h.poll(5, vec![at("x", 2, 0, 0), at("x", 1, 0, 1)]);
    h.verdict()
}

#[test]
fn nonmonotonic_send_of_bare_sends_and_the_resets_that_keep_the_place() {
    // The second send began after the first was acked, yet is stored before
    // it; a consumer reads them in offset order, so x=2 comes first.
    let also = [
        (A::KeyOrder, 1),
        (A::ProducerOrder, 1),
        (A::TotalOrder, 1),
        (A::Gap, 1),
    ];
    for between in [
        None,
        Some(("assign", json!([0]))),
        Some(("subscribe", json!([0, 1]))),
        // A seek (or a rebalance) resets only the partitions it names.
        Some(("seek", json!([1]))),
        Some(("assign", json!({"partitions": [1], "rebalance": "revoke"}))),
    ] {
        let v = sends_backwards(between.clone());
        let mut want = vec![(A::NonmonotonicSend, 1)];
        want.extend(also);
        assert_exact(&v, &want);
        assert_eq!(
            examples(&v, A::NonmonotonicSend)[0]["values"],
            json!([1, 2]),
            "{between:?}"
        );
    }
}

#[test]
fn near_miss_a_reset_of_the_partition_forgives_nonmonotonic_send() {
    let also = [
        (A::KeyOrder, 1),
        (A::ProducerOrder, 1),
        (A::TotalOrder, 1),
        (A::Gap, 1),
    ];
    for between in [
        ("assign", json!([1])),
        ("subscribe", json!([])),
        ("seek", json!([0])),
        ("assign", json!({"partitions": [0], "rebalance": "assign"})),
        ("assign", json!({"rebalance": "error"})),
    ] {
        assert_exact(&sends_backwards(Some(between)), &also);
    }
}

// ---------------------------------------------------------------------------
// 4. Sends that ended `info`, proven written by a read (Jepsen's must-have-committed).

/// An unknown transaction of process 1 sent x=1 to partition 0 offset 0 and
/// y=2 to partition 1 offset 0 (its completion says so); process 2's send of
/// x=3 was acked at partition 0 offset `x3_at`. Process 5 polls `reads`.
fn unknown_txn(x3_at: i64, reads: Vec<Value>) -> Verdict {
    let mut h = H::default();
    h.txn(1, "info", vec![tsend("x", 1, 0, 0), tsend("y", 2, 1, 0)]);
    h.send(2, "ok", at("x", 3, 0, x3_at));
    h.poll(5, reads);
    h.verdict()
}

#[test]
fn an_unknown_send_proven_by_a_sibling_read_claims_its_offset() {
    // y=2 was read, so its transaction committed, and x=1 stands at offset 0
    // of partition 0, which x=3 claims too.
    let v = unknown_txn(0, vec![at("y", 2, 1, 0)]);
    assert_exact(
        &v,
        &[
            (A::InconsistentOffsets, 1),
            (A::Recovered, 1),
            (A::Unseen, 2),
        ],
    );
    assert_eq!(v.valid, Validity::False);
    let unseen = examples(&v, A::Unseen);
    assert!(unseen
        .iter()
        .any(|e| e["value"] == json!(1) && e["send_outcome"] == json!("info")));
}

#[test]
fn near_miss_an_unknown_send_nothing_proves_claims_nothing() {
    // Nothing of the transaction was read: its positions are only what a
    // client that timed out was told; x=3 alone claims offset 0. x=1 and y=2
    // are neither unseen nor lost (they may never have been written).
    let v = unknown_txn(0, vec![]);
    assert_exact(&v, &[(A::Unseen, 1)]);
}

#[test]
fn an_unknown_send_proven_by_a_sibling_read_is_lost_below_a_read_offset() {
    // x=3 at offset 1 was read, x=1 (proven by y=2's read) at offset 0 never was.
    let v = unknown_txn(1, vec![at("y", 2, 1, 0), at("x", 3, 0, 1)]);
    assert_exact(&v, &[(A::Lost, 1), (A::Recovered, 1)]);
    let ex = &examples(&v, A::Lost)[0];
    assert_eq!(
        (ex["value"].clone(), ex["send_outcome"].clone()),
        (json!(1), json!("info"))
    );
}

#[test]
fn near_miss_an_unproven_unknown_send_below_a_read_offset_is_not_lost() {
    let v = unknown_txn(1, vec![at("x", 3, 0, 1)]);
    assert_exact(&v, &[]);
    assert_eq!(v.valid, Validity::True);
}

// ---------------------------------------------------------------------------
// 5. Lost without a drain: an acked write below an offset the group was delivered.

#[test]
fn lost_without_a_drain_when_the_group_read_past_it() {
    let mut h = H::default();
    h.send(0, "ok", at("x", 1, 0, 0))
        .send(0, "ok", at("x", 2, 0, 1));
    h.poll_in(5, Some("g"), vec![at("x", 2, 0, 1)]);
    let v = h.verdict();
    assert_exact(&v, &[(A::Lost, 1), (A::Gap, 1)]);
    assert_eq!(v.status(G::AtLeastOnce), Status::Violated);
    assert_eq!(v.valid, Validity::False);
    let ex = &examples(&v, A::Lost)[0];
    assert_eq!(ex["value"], json!(1));
    assert_eq!(ex["offset"], json!(0));
    assert_eq!(ex["higher_offset_delivered"]["offset"], json!(1));
    assert!(ex.get("drained").is_none());
}

#[test]
fn near_miss_not_lost_when_only_another_partition_was_read_past_it() {
    let mut h = H::default();
    h.send(0, "ok", at("x", 1, 0, 0))
        .send(0, "ok", at("y", 2, 1, 5));
    h.poll_in(5, Some("g"), vec![at("y", 2, 1, 5)]);
    let v = h.verdict();
    assert_exact(&v, &[(A::Unseen, 1)]);
    assert_eq!(v.status(G::AtLeastOnce), Status::Unknown);
}

#[test]
fn near_miss_not_lost_when_a_poll_of_the_group_has_an_unknown_outcome() {
    // A poll of group g timed out: it may have taken x=1 (and moved the
    // group's committed offset) without any op showing it.
    let mut h = H::default();
    h.send(0, "ok", at("x", 1, 0, 0))
        .send(0, "ok", at("x", 2, 0, 1));
    h.op(6, "invoke", "poll", Some("g"), None)
        .op(6, "info", "poll", Some("g"), None);
    h.poll_in(5, Some("g"), vec![at("x", 2, 0, 1)]);
    let v = h.verdict();
    assert_exact(&v, &[(A::Unseen, 1), (A::Gap, 1)]);
    assert_eq!(v.status(G::AtLeastOnce), Status::Unknown);
}

#[test]
fn lost_by_offset_is_judged_per_group() {
    // Group a read past x=1 without it, group b read both: lost in a only.
    let mut h = H::default();
    h.send(0, "ok", at("x", 1, 0, 0))
        .send(0, "ok", at("x", 2, 0, 1));
    h.poll_in(5, Some("a"), vec![at("x", 2, 0, 1)]);
    h.poll_in(6, Some("b"), vec![at("x", 1, 0, 0), at("x", 2, 0, 1)]);
    let v = h.verdict();
    assert_exact(&v, &[(A::Lost, 1), (A::Gap, 1)]);
    assert_eq!(v.anomalies[&A::Lost].by_group.get("a"), Some(&1));
    assert_eq!(v.anomalies[&A::Lost].by_group.get("b"), None);
}

// ---------------------------------------------------------------------------
// 6. Duplicate-write by position: one value stored at two offsets.

#[test]
fn duplicate_write_acked_at_one_offset_and_read_at_another() {
    let mut h = H::default();
    h.send(0, "ok", at("x", 1, 0, 0));
    h.poll(5, vec![at("x", 1, 0, 3)]);
    let v = h.check(&[G::AtLeastOnce, G::AtMostOnce]);
    assert_exact(&v, &[(A::DuplicateWrite, 1)]);
    assert_eq!(v.status(G::AtMostOnce), Status::Violated);
    assert_eq!(v.status(G::AtLeastOnce), Status::Holds);
}

#[test]
fn duplicate_write_read_by_an_aborted_transaction() {
    // Jepsen's duplicate-aborted-txns: a transaction that aborted still read
    // the log. (In JSON Lines only a transaction's micro-ops carry the reads
    // of an op that did not end ok; Jepsen's EDN polls too.)
    let mut h = H::default();
    h.send(0, "ok", at("x", 1, 0, 0));
    h.txn(5, "fail", vec![tpoll(vec![at("x", 1, 0, 11)])]);
    // x=1 was never delivered by a committed read: unseen too.
    assert_exact(&h.verdict(), &[(A::DuplicateWrite, 1), (A::Unseen, 1)]);
}

#[test]
fn near_miss_the_same_position_or_an_incomparable_one_is_no_duplicate() {
    // Read again at its own offset, by an aborted transaction and a poll.
    let mut h = H::default();
    h.send(0, "ok", at("x", 1, 0, 0));
    h.txn(5, "fail", vec![tpoll(vec![at("x", 1, 0, 0)])]);
    h.poll(6, vec![at("x", 1, 0, 0)]);
    assert_exact(&h.verdict(), &[]);
    // Acked with an offset, delivered with a broker id only: not comparable.
    let mut h = H::default();
    h.send(0, "ok", at("x", 1, 0, 0));
    h.poll(5, vec![json!({"key": "x", "value": 1, "id": "m1"})]);
    assert_exact(&h.verdict(), &[]);
}

// ---------------------------------------------------------------------------
// Retried sends (v1.1): the same process sends the same value again.

#[test]
fn a_retry_stored_twice_is_a_duplicate_write_without_any_read() {
    let mut h = H::default();
    h.send(0, "ok", at("x", 1, 0, 0))
        .send(0, "ok", at("x", 1, 0, 1));
    let v = h.verdict();
    // One logical message (one send in the stats), stored twice, never read.
    assert_exact(&v, &[(A::DuplicateWrite, 1), (A::Unseen, 1)]);
    assert_eq!(v.stats.sends, 1);
}

#[test]
fn near_miss_an_idempotent_retry_stored_once_is_one_message() {
    let mut h = H::default();
    h.send(0, "info", bare("x", 1))
        .send(0, "ok", at("x", 1, 0, 0))
        .send(0, "ok", at("x", 1, 0, 0));
    h.poll(5, vec![at("x", 1, 0, 0)]);
    let v = h.verdict();
    assert_exact(&v, &[]);
    assert_eq!((v.stats.sends, v.stats.sends_ok), (1, 1));
}

#[test]
fn a_retried_message_is_written_if_any_attempt_was() {
    // info, then ok: an acked message, lost when never delivered by the drain.
    let mut h = H::default();
    h.send(0, "info", bare("x", 1))
        .send(0, "ok", at("x", 1, 0, 0));
    h.poll(5, vec![]).drained();
    assert_exact(&h.verdict(), &[(A::Lost, 1)]);
    // fail, then info: unknown, so a delivery of it is recovered, not an aborted read.
    let mut h = H::default();
    h.send(0, "fail", bare("x", 1))
        .send(0, "info", bare("x", 1));
    h.poll(5, vec![bare("x", 1)]).drained();
    assert_exact(&h.verdict(), &[(A::Recovered, 1)]);
    // fail, then a retry that never completed: unknown as well.
    let mut h = H::default();
    h.send(0, "fail", bare("x", 1)).invoke_send(0, "x", 1);
    h.poll(5, vec![bare("x", 1)]);
    assert_exact(&h.verdict(), &[(A::Recovered, 1)]);
}

#[test]
fn near_miss_a_message_every_attempt_of_which_failed_is_failed() {
    let mut h = H::default();
    h.send(0, "fail", bare("x", 1))
        .send(0, "fail", bare("x", 1));
    h.poll(5, vec![bare("x", 1)]).drained();
    let v = h.verdict();
    assert_exact(&v, &[(A::AbortedRead, 1)]);
    assert_eq!(v.valid, Validity::False);
}

#[test]
fn a_retried_message_keeps_the_place_of_its_first_attempt() {
    // x=1 timed out, x=2 was acked, x=1 was sent again and acked: x=1 is the
    // producer's first message, so receiving x=2 first is out of order.
    let sends = |h: &mut H| {
        h.send(0, "info", bare("x", 1))
            .send(0, "ok", bare("x", 2))
            .send(0, "ok", bare("x", 1));
    };
    let mut h = H::default();
    sends(&mut h);
    h.poll(5, vec![bare("x", 2), bare("x", 1)]).drained();
    assert_exact(
        &h.verdict(),
        &[(A::KeyOrder, 1), (A::ProducerOrder, 1), (A::Gap, 1)],
    );
    // Near miss: received in the order of the first attempts.
    let mut h = H::default();
    sends(&mut h);
    h.poll(5, vec![bare("x", 1), bare("x", 2)]).drained();
    assert_exact(&h.verdict(), &[]);
}

#[test]
fn a_value_sent_again_by_another_process_or_in_a_transaction_is_refused() {
    let mut h = H::default();
    h.send(0, "ok", bare("x", 1)).send(1, "ok", bare("x", 1));
    let err = read_bytes("v11.jsonl", h.text().as_bytes())
        .err()
        .map(|e| e.to_string());
    assert!(
        err.as_deref().is_some_and(|e| e.contains("sent again")),
        "{err:?}"
    );
    let mut h = H::default();
    h.send(0, "ok", bare("x", 1));
    h.txn(0, "ok", vec![tsend("x", 1, 0, 0)]);
    let err = read_bytes("v11.jsonl", h.text().as_bytes())
        .err()
        .map(|e| e.to_string());
    assert!(
        err.as_deref().is_some_and(|e| e.contains("sent again")),
        "{err:?}"
    );
}

// ---------------------------------------------------------------------------
// 8. Issue 23: a history in which nothing completed `ok` is not judged
// (`docs/checkers.md`, "Nothing to judge"); an unexpected value read at an
// offset proves its partition reached it (lost writes below it).

/// The `unjudged` reasons of a verdict, by name.
fn unjudged(v: &Verdict) -> Vec<(String, String)> {
    v.unjudged
        .iter()
        .map(|u| {
            (
                serde_json::to_value(u.reason)
                    .ok()
                    .and_then(|r| r.as_str().map(str::to_string))
                    .unwrap_or_default(),
                u.detail.clone(),
            )
        })
        .collect()
}

fn all_unknown(v: &Verdict) {
    for g in G::ALL {
        assert_eq!(v.status(g), Status::Unknown, "{g}");
    }
}

#[test]
fn an_empty_history_is_unknown_never_valid() {
    let v = H::default().verdict();
    assert_exact(&v, &[]);
    assert_eq!(v.valid, Validity::Unknown);
    assert_eq!(v.valid.exit_code(), 2);
    all_unknown(&v);
    assert_eq!(
        unjudged(&v),
        [(
            "nothing-completed".to_string(),
            "the history has no op".to_string()
        )]
    );
    assert_eq!(
        v.warnings,
        ["not judged: the history has no op; a history in which nothing completed proves nothing held, so no guarantee holds"]
    );
    let json = serde_json::to_value(&v).expect("json");
    assert_eq!(
        json["unjudged"],
        json!([{"reason": "nothing-completed", "detail": "the history has no op"}])
    );
}

#[test]
fn a_single_invoke_is_unknown_never_valid() {
    let mut h = H::default();
    h.invoke_send(0, "x", 1);
    let v = h.check(&[G::AtLeastOnce, G::AtMostOnce]);
    // Never completed: an `info` send nothing proves written, so nothing is missed.
    assert_exact(&v, &[]);
    assert_eq!(v.valid, Validity::Unknown);
    all_unknown(&v);
    assert_eq!(
        unjudged(&v),
        [(
            "nothing-completed".to_string(),
            "no operation completed ok: 1 op(s), 1 send(s) (0 fail, 1 info or never completed), no poll or transaction ended ok".to_string()
        )]
    );
}

#[test]
fn failed_and_unknown_ops_and_an_ok_assign_are_not_something_completed() {
    let mut h = H::default();
    h.send(0, "fail", bare("x", 1))
        .send(0, "info", bare("x", 2));
    h.reset(5, "assign", "ok", json!([0]));
    h.op(5, "invoke", "poll", None, None)
        .op(5, "info", "poll", None, None);
    h.op(6, "invoke", "poll", None, None)
        .op(6, "fail", "poll", None, None);
    h.drained();
    let v = h.verdict();
    assert_exact(&v, &[]);
    assert_eq!(v.valid, Validity::Unknown);
    all_unknown(&v);
    assert_eq!(
        unjudged(&v),
        [(
            "nothing-completed".to_string(),
            "no operation completed ok: 11 op(s), 2 send(s) (1 fail, 1 info or never completed), no poll or transaction ended ok".to_string()
        )]
    );
}

#[test]
fn near_miss_an_ok_read_that_proves_an_unknown_send_is_judged() {
    // No send was acknowledged, but an ok poll read x=1: judged as before
    // (Jepsen's lost-write-atomic-without-poll-a).
    let mut h = H::default();
    h.send(0, "info", bare("x", 1));
    h.poll(5, vec![bare("x", 1)]);
    let v = h.verdict();
    assert_exact(&v, &[(A::Recovered, 1)]);
    assert_eq!(v.valid, Validity::True);
    assert_eq!(v.status(G::AtLeastOnce), Status::Holds);
    assert!(v.unjudged.is_empty());
    assert!(v.warnings.is_empty(), "{:?}", v.warnings);
    assert!(serde_json::to_value(&v)
        .expect("json")
        .get("unjudged")
        .is_none());
}

#[test]
fn near_miss_one_acknowledged_send_is_judged() {
    let mut h = H::default();
    h.send(0, "ok", bare("x", 1));
    let v = h.verdict();
    assert_exact(&v, &[(A::Unseen, 1)]);
    assert_eq!(v.valid, Validity::Unknown);
    assert_eq!(v.status(G::AtMostOnce), Status::Holds);
    assert!(v.unjudged.is_empty());
}

#[test]
fn near_miss_a_committed_transaction_is_judged() {
    let mut h = H::default();
    h.txn(0, "ok", vec![tsend("x", 1, 0, 0)]);
    h.txn(5, "ok", vec![tpoll(vec![at("x", 1, 0, 0)])]);
    let v = h.verdict();
    assert_exact(&v, &[]);
    assert_eq!(v.valid, Validity::True);
    assert!(v.unjudged.is_empty());
}

#[test]
fn an_unexpected_value_read_past_an_acked_send_proves_it_lost() {
    // x=1 acknowledged at 0 of partition 0; the group read 99, which nobody
    // sent, at offset 1: the partition reached 1, so x=1 was skipped.
    let mut h = H::default();
    h.send(0, "ok", at("x", 1, 0, 0));
    h.poll_in(5, Some("g"), vec![at("x", 99, 0, 1)]);
    let v = h.verdict();
    assert_exact(&v, &[(A::Lost, 1), (A::Unexpected, 1)]);
    assert_eq!(v.status(G::AtLeastOnce), Status::Violated);
    let ex = &examples(&v, A::Lost)[0];
    assert_eq!(ex["value"], json!(1));
    assert_eq!(ex["offset"], json!(0));
    assert_eq!(ex["higher_offset_delivered"]["offset"], json!(1));
    assert_eq!(ex["higher_offset_delivered"]["delivered_by"], json!(3));
}

#[test]
fn near_miss_an_unexpected_value_read_below_or_elsewhere_proves_nothing() {
    // 99 read at offset 0 of partition 0, below x=1's offset 1; 98 at 5 of
    // partition 1: neither is past x=1 in its partition.
    let mut h = H::default();
    h.send(0, "ok", at("x", 1, 0, 1));
    h.poll_in(5, Some("g"), vec![at("x", 99, 0, 0), at("y", 98, 1, 5)]);
    let v = h.verdict();
    assert_exact(&v, &[(A::Unseen, 1), (A::Unexpected, 2)]);
    assert_eq!(v.status(G::AtLeastOnce), Status::Unknown);
}
