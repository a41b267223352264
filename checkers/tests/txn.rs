//! The transaction checker (`docs/txn.md`): a hand-written micro-history for
//! every anomaly with its exact expected counts; generated strict serializable
//! histories that must come out clean; and cycles injected into them that
//! must be found.
use gauntlet_checkers::{
    check, check_with_budget, AnomalyKind, CheckOptions, Guarantee, Status, Verdict,
};
use gauntlet_history::read_bytes;
use gauntlet_testkit::txn_gen::{generate_txns_vec, TxnGenConfig};
use proptest::prelude::*;
use serde_json::{json, Value};
use std::time::Duration;

/// Writes a history line by line with increasing indices.
#[derive(Default)]
struct H {
    lines: Vec<String>,
    index: u64,
}

fn send(key: &str, value: i64, partition: i64, offset: i64) -> Value {
    json!({"f": "send", "key": key, "value": value, "partition": partition, "offset": offset})
}

fn msg(key: &str, value: i64, partition: i64, offset: i64) -> Value {
    json!({"key": key, "value": value, "partition": partition, "offset": offset})
}

fn poll(msgs: Vec<Value>) -> Value {
    json!({"f": "poll", "messages": msgs})
}

impl H {
    fn push(&mut self, process: u64, kind: &str, f: &str, value: Option<Value>) {
        let mut o = json!({"index": self.index, "time": self.index * 10_000, "process": process, "type": kind, "f": f});
        if let Some(v) = value {
            o["value"] = v;
        }
        self.lines.push(o.to_string());
        self.index += 1;
    }
    /// A transaction's invoke: the sends of its completion without offsets, and a poll.
    fn txn_invoke(&mut self, p: u64, mops: &[Value]) {
        let inv: Vec<Value> = mops
            .iter()
            .filter(|m| m["f"] == "send")
            .map(|m| json!({"f": "send", "key": m["key"], "value": m["value"]}))
            .chain(std::iter::once(json!({"f": "poll"})))
            .collect();
        self.push(p, "invoke", "txn", Some(Value::Array(inv)));
    }
    fn txn_done(&mut self, p: u64, kind: &str, mops: Vec<Value>) {
        self.push(p, kind, "txn", Some(Value::Array(mops)));
    }
    fn txn(&mut self, p: u64, kind: &str, mops: Vec<Value>) {
        self.txn_invoke(p, &mops);
        self.txn_done(p, kind, mops);
    }
    fn send(&mut self, p: u64, key: &str, value: i64, partition: i64, offset: i64) {
        self.push(
            p,
            "invoke",
            "send",
            Some(json!({"key": key, "value": value})),
        );
        self.push(p, "ok", "send", Some(msg(key, value, partition, offset)));
    }
    fn poll(&mut self, p: u64, msgs: Vec<Value>) {
        self.push(p, "invoke", "poll", None);
        self.push(p, "ok", "poll", Some(Value::Array(msgs)));
    }
    fn verdict(&self) -> Verdict {
        let text = self.lines.join("\n") + "\n";
        let h = read_bytes("micro.jsonl", text.as_bytes()).expect("history reads");
        check(&h, &CheckOptions::default())
    }
}

/// The counts of every transaction anomaly; all must match.
fn assert_txn(v: &Verdict, want: &[(AnomalyKind, u64)]) {
    for k in AnomalyKind::TXN {
        let expected = want.iter().find(|(x, _)| *x == k).map_or(0, |x| x.1);
        assert_eq!(
            v.count(k),
            expected,
            "{k}: expected {expected}, got {}; anomalies: {}",
            v.count(k),
            serde_json::to_string_pretty(&v.anomalies).unwrap_or_default()
        );
    }
}

fn explanation(v: &Verdict, k: AnomalyKind) -> String {
    v.anomalies[&k].examples[0].to_json()["explanation"]
        .as_str()
        .unwrap_or("")
        .to_string()
}

#[test]
fn g0_write_cycle() {
    // T1 and T2 run concurrently; p0 has T1's write before T2's, p1 the other way round.
    let mut h = H::default();
    let t1 = vec![send("x", 1, 0, 0), send("y", 2, 1, 1)];
    let t2 = vec![send("x", 3, 0, 1), send("y", 4, 1, 0)];
    h.txn_invoke(1, &t1);
    h.txn_invoke(2, &t2);
    h.txn_done(1, "ok", t1);
    h.txn_done(2, "ok", t2);
    let v = h.verdict();
    assert_txn(&v, &[(AnomalyKind::G0, 1)]);
    assert_eq!(v.status(Guarantee::ExactlyOnce), Status::Violated);
    let e = &v.anomalies[&AnomalyKind::G0].examples[0].to_json();
    assert_eq!(e["steps"].as_array().map(Vec::len), Some(2));
    assert_eq!(e["steps"][0]["type"], "ww");
    let text = explanation(&v, AnomalyKind::G0);
    assert!(text.starts_with("Let:\n  T1 = txn of process"), "{text}");
    assert!(text.contains("However, T2 < T1"), "{text}");
    assert!(text.ends_with("a contradiction!"), "{text}");
}

#[test]
fn g1c_circular_information_flow() {
    // T1 reads T2's write and T2 reads T1's.
    let mut h = H::default();
    let t1 = vec![send("x", 1, 0, 0), poll(vec![msg("y", 2, 1, 0)])];
    let t2 = vec![send("y", 2, 1, 0), poll(vec![msg("x", 1, 0, 0)])];
    h.txn_invoke(1, &t1);
    h.txn_invoke(2, &t2);
    h.txn_done(1, "ok", t1);
    h.txn_done(2, "ok", t2);
    let v = h.verdict();
    assert_txn(&v, &[(AnomalyKind::G1c, 1)]);
    assert_eq!(v.status(Guarantee::ExactlyOnce), Status::Violated);
    let e = &v.anomalies[&AnomalyKind::G1c].examples[0].to_json();
    let kinds: Vec<&str> = e["steps"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|s| s["type"].as_str())
        .collect();
    assert_eq!(kinds, ["wr", "wr"]);
    assert!(explanation(&v, AnomalyKind::G1c).contains("which T2 read (wr)"));
}

#[test]
fn g_single_read_skew() {
    // T1 read x0 on p0 (not T2's x1 after it) but read T2's y1 on p1.
    let mut h = H::default();
    h.send(9, "x", 10, 0, 0);
    let t1 = vec![poll(vec![msg("x", 10, 0, 0), msg("y", 21, 1, 0)])];
    let t2 = vec![send("x", 11, 0, 1), send("y", 21, 1, 0)];
    h.txn_invoke(1, &t1);
    h.txn_invoke(2, &t2);
    h.txn_done(2, "ok", t2);
    h.txn_done(1, "ok", t1);
    let v = h.verdict();
    assert_txn(&v, &[(AnomalyKind::GSingle, 1)]);
    assert_eq!(v.status(Guarantee::ExactlyOnce), Status::Violated);
    let e = &v.anomalies[&AnomalyKind::GSingle].examples[0].to_json();
    let kinds: Vec<&str> = e["steps"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|s| s["type"].as_str())
        .collect();
    assert_eq!(kinds.iter().filter(|k| **k == "rw").count(), 1);
    assert!(explanation(&v, AnomalyKind::GSingle).contains("last read of partition 0 was 10"));
}

#[test]
fn g2_write_skew() {
    // Each transaction read one partition and wrote the next version of the other.
    let mut h = H::default();
    h.send(8, "x", 10, 0, 0);
    h.send(9, "y", 20, 1, 0);
    let t1 = vec![poll(vec![msg("x", 10, 0, 0)]), send("y", 21, 1, 1)];
    let t2 = vec![poll(vec![msg("y", 20, 1, 0)]), send("x", 11, 0, 1)];
    h.txn_invoke(1, &t1);
    h.txn_invoke(2, &t2);
    h.txn_done(1, "ok", t1);
    h.txn_done(2, "ok", t2);
    let v = h.verdict();
    assert_txn(&v, &[(AnomalyKind::G2, 1)]);
    assert_eq!(v.status(Guarantee::ExactlyOnce), Status::Violated);
}

#[test]
fn g1a_is_aborted_read() {
    // An aborted transaction's record polled by a committed reader.
    let mut h = H::default();
    h.txn(1, "fail", vec![send("x", 1, 0, 0)]);
    h.txn(2, "ok", vec![poll(vec![msg("x", 1, 0, 0)])]);
    let v = h.verdict();
    assert_txn(&v, &[]);
    assert_eq!(v.count(AnomalyKind::AbortedRead), 1);
    assert_eq!(v.status(Guarantee::ExactlyOnce), Status::Violated);
}

#[test]
fn g1b_intermediate_read() {
    // T1 wrote 1 and 2 to p0; T2 read 1, then 3 after them, but never 2.
    let mut h = H::default();
    h.txn(1, "ok", vec![send("x", 1, 0, 0), send("x", 2, 0, 1)]);
    h.send(3, "x", 3, 0, 2);
    h.txn(
        2,
        "ok",
        vec![poll(vec![msg("x", 1, 0, 0), msg("x", 3, 0, 2)])],
    );
    let v = h.verdict();
    assert_txn(&v, &[(AnomalyKind::G1b, 1), (AnomalyKind::IntPollSkip, 1)]);
    assert_eq!(v.status(Guarantee::ExactlyOnce), Status::Violated);
    let e = &v.anomalies[&AnomalyKind::G1b].examples[0].to_json();
    assert_eq!(
        (e["read"].as_i64(), e["missed"].as_i64()),
        (Some(1), Some(2))
    );
}

#[test]
fn precommitted_read() {
    let mut h = H::default();
    h.txn(
        1,
        "ok",
        vec![send("x", 1, 0, 0), poll(vec![msg("x", 1, 0, 0)])],
    );
    let v = h.verdict();
    assert_txn(&v, &[(AnomalyKind::PrecommittedRead, 1)]);
    assert_eq!(v.status(Guarantee::ExactlyOnce), Status::Violated);
}

/// Sends 0, 1, 2 to partition 0 and a committed transaction elsewhere (so the history has transactions).
fn three_sends() -> H {
    let mut h = H::default();
    h.txn(7, "ok", vec![send("z", 100, 9, 0)]);
    for i in 0..3 {
        h.send(8, "x", i, 0, i);
    }
    h
}

#[test]
fn poll_skip() {
    let mut h = three_sends();
    h.txn(5, "ok", vec![poll(vec![msg("x", 0, 0, 0)])]);
    h.txn(5, "ok", vec![poll(vec![msg("x", 2, 0, 2)])]);
    let v = h.verdict();
    // The first poll read 0 though 1 and 2 were committed before it began: a stale read too.
    assert_txn(
        &v,
        &[
            (AnomalyKind::PollSkip, 1),
            (AnomalyKind::GSingleRealtime, 1),
        ],
    );
    assert_eq!(
        v.anomalies[&AnomalyKind::PollSkip].examples[0].to_json()["skipped"],
        json!([1])
    );
    // Kafka-style anomalies are evidence; they judge no guarantee by themselves.
    // The value skipped is lost all the same: the group was delivered offset 2
    // of its partition, never offset 1 (a lost write by offset, v1.1).
    assert_eq!(v.count(AnomalyKind::Lost), 1);
    assert_eq!(v.status(Guarantee::ExactlyOnce), Status::Violated);
}

#[test]
fn poll_skip_forgiven_after_assign() {
    // An assign that no longer covers the partition starts the consumer over in it.
    for value in [
        json!([1]),
        json!({"partitions": [0], "rebalance": "revoke"}),
        json!({"partitions": [0], "rebalance": "assign"}),
        json!({}),
    ] {
        let mut h = three_sends();
        h.txn(5, "ok", vec![poll(vec![msg("x", 0, 0, 0)])]);
        h.push(5, "invoke", "assign", Some(value.clone()));
        h.push(5, "ok", "assign", Some(value));
        h.txn(5, "ok", vec![poll(vec![msg("x", 2, 0, 2)])]);
        assert_txn(&h.verdict(), &[(AnomalyKind::GSingleRealtime, 1)]);
    }
    // Near miss: one that still covers it keeps the consumer's place (as Jepsen).
    for value in [json!([0, 1]), json!({"partitions": [0, 1]})] {
        let mut h = three_sends();
        h.txn(5, "ok", vec![poll(vec![msg("x", 0, 0, 0)])]);
        h.push(5, "invoke", "assign", Some(value.clone()));
        h.push(5, "ok", "assign", Some(value));
        h.txn(5, "ok", vec![poll(vec![msg("x", 2, 0, 2)])]);
        assert_txn(
            &h.verdict(),
            &[
                (AnomalyKind::PollSkip, 1),
                (AnomalyKind::GSingleRealtime, 1),
            ],
        );
    }
}

#[test]
fn nonmonotonic_poll() {
    let mut h = three_sends();
    h.txn(5, "ok", vec![poll(vec![msg("x", 1, 0, 1)])]);
    h.txn(5, "ok", vec![poll(vec![msg("x", 0, 0, 0)])]);
    // Both polls are stale reads; they form one strongly connected component.
    assert_txn(
        &h.verdict(),
        &[
            (AnomalyKind::NonmonotonicPoll, 1),
            (AnomalyKind::GSingleRealtime, 1),
        ],
    );
}

#[test]
fn nonmonotonic_send() {
    let mut h = H::default();
    h.txn(7, "ok", vec![send("z", 100, 9, 0)]);
    h.send(1, "x", 1, 0, 1);
    h.send(1, "x", 2, 0, 0);
    // The second send began after the first completed, yet is stored before it.
    assert_txn(
        &h.verdict(),
        &[
            (AnomalyKind::NonmonotonicSend, 1),
            (AnomalyKind::G0Realtime, 1),
        ],
    );
}

#[test]
fn int_nonmonotonic_poll() {
    let mut h = three_sends();
    h.txn(
        5,
        "ok",
        vec![poll(vec![msg("x", 1, 0, 1), msg("x", 0, 0, 0)])],
    );
    // Its last read of partition 0 is 1, though 2 was committed before it began: a stale read.
    assert_txn(
        &h.verdict(),
        &[
            (AnomalyKind::IntNonmonotonicPoll, 1),
            (AnomalyKind::GSingleRealtime, 1),
        ],
    );
}

#[test]
fn int_poll_skip() {
    let mut h = three_sends();
    h.txn(
        5,
        "ok",
        vec![poll(vec![msg("x", 0, 0, 0), msg("x", 2, 0, 2)])],
    );
    assert_txn(&h.verdict(), &[(AnomalyKind::IntPollSkip, 1)]);
}

#[test]
fn int_send_skip_is_also_a_write_cycle() {
    // T1's two sends to p0 have another producer's record between them: Jepsen
    // calls it int-send-skip, and the version order makes it a ww cycle.
    let mut h = H::default();
    let t1 = vec![send("x", 1, 0, 0), send("x", 3, 0, 2)];
    h.txn_invoke(1, &t1);
    h.send(2, "x", 2, 0, 1);
    h.txn_done(1, "ok", t1);
    assert_txn(
        &h.verdict(),
        &[(AnomalyKind::IntSendSkip, 1), (AnomalyKind::G0, 1)],
    );
}

#[test]
fn int_nonmonotonic_send() {
    let mut h = H::default();
    h.txn(1, "ok", vec![send("x", 1, 0, 1), send("x", 2, 0, 0)]);
    assert_txn(&h.verdict(), &[(AnomalyKind::IntNonmonotonicSend, 1)]);
}

#[test]
fn g0_realtime() {
    // T1 committed before T2 began, yet T2's record sits before T1's.
    let mut h = H::default();
    h.txn(1, "ok", vec![send("x", 1, 0, 1)]);
    h.txn(2, "ok", vec![send("x", 2, 0, 0)]);
    let v = h.verdict();
    assert_txn(&v, &[(AnomalyKind::G0Realtime, 1)]);
    // Strict serializability is not claimed by exactly-once (unknown: nothing was polled).
    assert_eq!(v.status(Guarantee::ExactlyOnce), Status::Unknown);
    assert!(explanation(&v, AnomalyKind::G0Realtime).contains("(realtime)"));
}

#[test]
fn g_single_realtime_stale_read() {
    // T2 began after T1 committed x1, yet read only x0.
    let mut h = H::default();
    h.send(9, "x", 10, 0, 0);
    h.txn(1, "ok", vec![send("x", 11, 0, 1)]);
    h.txn(2, "ok", vec![poll(vec![msg("x", 10, 0, 0)])]);
    let v = h.verdict();
    assert_txn(&v, &[(AnomalyKind::GSingleRealtime, 1)]);
}

#[test]
fn timeout_gives_unknown_never_valid() {
    let mut h = H::default();
    let t1 = vec![send("x", 1, 0, 0), send("y", 2, 1, 1)];
    let t2 = vec![send("x", 3, 0, 1), send("y", 4, 1, 0)];
    h.txn_invoke(1, &t1);
    h.txn_invoke(2, &t2);
    h.txn_done(1, "ok", t1);
    h.txn_done(2, "ok", t2);
    let text = h.lines.join("\n") + "\n";
    let hist = read_bytes("micro.jsonl", text.as_bytes()).expect("reads");
    let opts = CheckOptions {
        expect: vec![Guarantee::ExactlyOnce],
        ..CheckOptions::default()
    };
    let v = check_with_budget(&hist, &opts, Duration::ZERO);
    assert_eq!(v.status(Guarantee::ExactlyOnce), Status::Unknown);
    assert_eq!(v.valid, gauntlet_checkers::Validity::Unknown);
    assert!(
        v.warnings.iter().any(|w| w.contains("time budget")),
        "{:?}",
        v.warnings
    );
}

#[test]
fn without_transactions_only_the_kafka_checks_run() {
    let mut h = H::default();
    h.send(1, "x", 1, 0, 0);
    h.poll(2, vec![msg("x", 1, 0, 0)]);
    let v = h.verdict();
    for k in AnomalyKind::TXN {
        assert_eq!(
            v.anomalies.contains_key(&k),
            AnomalyKind::KAFKA.contains(&k),
            "{k}"
        );
    }
}

/// Appends a G0, a G1c, a G-single and a G2 on fresh partitions and processes.
fn inject(text: &mut String, next_index: u64, next_process: u64, next_value: i64, base: i64) {
    let mut h = H {
        lines: Vec::new(),
        index: next_index,
    };
    let (p, v) = (next_process, next_value);
    let part = |i: i64| base + i;
    // G0
    let t1 = vec![send("a", v, part(0), 0), send("b", v + 1, part(1), 1)];
    let t2 = vec![send("a", v + 2, part(0), 1), send("b", v + 3, part(1), 0)];
    h.txn_invoke(p, &t1);
    h.txn_invoke(p + 1, &t2);
    h.txn_done(p, "ok", t1);
    h.txn_done(p + 1, "ok", t2);
    // G1c
    let t1 = vec![
        send("c", v + 4, part(2), 0),
        poll(vec![msg("d", v + 5, part(3), 0)]),
    ];
    let t2 = vec![
        send("d", v + 5, part(3), 0),
        poll(vec![msg("c", v + 4, part(2), 0)]),
    ];
    h.txn_invoke(p + 2, &t1);
    h.txn_invoke(p + 3, &t2);
    h.txn_done(p + 2, "ok", t1);
    h.txn_done(p + 3, "ok", t2);
    // G-single
    h.send(p + 4, "e", v + 6, part(4), 0);
    let t1 = vec![poll(vec![
        msg("e", v + 6, part(4), 0),
        msg("f", v + 8, part(5), 0),
    ])];
    let t2 = vec![send("e", v + 7, part(4), 1), send("f", v + 8, part(5), 0)];
    h.txn_invoke(p + 5, &t1);
    h.txn_invoke(p + 6, &t2);
    h.txn_done(p + 6, "ok", t2);
    h.txn_done(p + 5, "ok", t1);
    // G2
    h.send(p + 7, "g", v + 9, part(6), 0);
    h.send(p + 8, "h", v + 10, part(7), 0);
    let t1 = vec![
        poll(vec![msg("g", v + 9, part(6), 0)]),
        send("h", v + 11, part(7), 1),
    ];
    let t2 = vec![
        poll(vec![msg("h", v + 10, part(7), 0)]),
        send("g", v + 12, part(6), 1),
    ];
    h.txn_invoke(p + 9, &t1);
    h.txn_invoke(p + 10, &t2);
    h.txn_done(p + 9, "ok", t1);
    h.txn_done(p + 10, "ok", t2);
    for l in h.lines {
        text.push_str(&l);
        text.push('\n');
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(24))]

    #[test]
    fn generated_serializable_histories_are_clean(seed in 0u64..1_000_000, procs in 1u32..6, parts in 1u32..10, txns in 1u64..400) {
        let cfg = TxnGenConfig { seed, txns, processes: procs, partitions: parts, ..TxnGenConfig::default() };
        let (buf, _) = generate_txns_vec(&cfg);
        let h = read_bytes("gen.jsonl", &buf).expect("generated history reads");
        let v = check(&h, &CheckOptions { expect: vec![Guarantee::ExactlyOnce], ..CheckOptions::default() });
        for k in AnomalyKind::TXN {
            prop_assert_eq!(v.count(k), 0, "{} in a serializable history: {:?}", k, v.anomalies[&k].examples.first());
        }
        prop_assert_eq!(v.count(AnomalyKind::AbortedRead), 0);
        prop_assert!(v.warnings.is_empty(), "{:?}", v.warnings);
    }

    #[test]
    fn injected_cycles_are_found(seed in 0u64..1_000_000, procs in 1u32..6, parts in 1u32..10, txns in 1u64..300) {
        let cfg = TxnGenConfig { seed, txns, processes: procs, partitions: parts, ..TxnGenConfig::default() };
        let (buf, s) = generate_txns_vec(&cfg);
        let mut text = String::from_utf8(buf).expect("utf-8");
        inject(&mut text, s.next_index, s.next_process, s.next_value, 1000);
        let h = read_bytes("gen.jsonl", text.as_bytes()).expect("reads");
        let v = check(&h, &CheckOptions::default());
        prop_assert_eq!(v.count(AnomalyKind::G0), 1);
        prop_assert_eq!(v.count(AnomalyKind::G1c), 1);
        prop_assert_eq!(v.count(AnomalyKind::GSingle), 1);
        prop_assert_eq!(v.count(AnomalyKind::G2), 1);
        prop_assert_eq!(v.status(Guarantee::ExactlyOnce), Status::Violated);
    }
}
