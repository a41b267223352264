//! The processing pass (seed D7): hand-written histories of idempotent consumers
//! with exact counts, and a generated one with a known number of each anomaly.
use gauntlet_checkers::{check, AnomalyKind as A, CheckOptions, Guarantee as G, Status, Validity};
use gauntlet_history::read_bytes;
use serde_json::{json, Value};

#[derive(Default)]
struct H {
    lines: Vec<String>,
}

impl H {
    fn op(&mut self, process: u64, kind: &str, f: &str, value: Value) -> &mut Self {
        let i = self.lines.len();
        let mut o = json!({"index": i, "time": i * 1000, "process": process, "type": kind, "f": f});
        if f != "send" {
            o["group"] = json!("g1");
        }
        if !value.is_null() {
            o["value"] = value;
        }
        self.lines.push(o.to_string());
        self
    }
    fn send(&mut self, v: i64) -> &mut Self {
        self.op(0, "invoke", "send", json!({"key": "k", "value": v}))
            .op(0, "ok", "send", json!({"key": "k", "value": v}))
    }
    fn poll(&mut self, p: u64, vs: &[i64]) -> &mut Self {
        let ms: Vec<Value> = vs.iter().map(|v| json!({"key": "k", "value": v})).collect();
        self.op(p, "invoke", "poll", Value::Null)
            .op(p, "ok", "poll", json!(ms))
    }
    fn dedup(&mut self, p: u64, v: i64, step: &str, kind: &str, answer: Option<&str>) -> &mut Self {
        self.op(p, "invoke", "dedup", json!({"value": v, "step": step}));
        let mut end = json!({"value": v, "step": step});
        if let Some(a) = answer {
            end["answer"] = json!(a);
        }
        self.op(p, kind, "dedup", end)
    }
    fn effect(&mut self, p: u64, v: i64) -> &mut Self {
        self.op(p, "invoke", "effect", json!(v))
            .op(p, "ok", "effect", json!(v))
    }
    fn ack(&mut self, p: u64, vs: &[i64]) -> &mut Self {
        self.op(p, "invoke", "ack", json!(vs))
            .op(p, "ok", "ack", json!(vs))
    }
    fn drained(&mut self) -> &mut Self {
        let i = self.lines.len();
        self.lines.push(
            json!({"index": i, "time": i * 1000, "process": "harness", "type": "info", "f": "phase", "value": "drained"})
                .to_string(),
        );
        self
    }
    fn verdict(&self, expect: Vec<G>) -> gauntlet_checkers::Verdict {
        let text = self.lines.join("\n") + "\n";
        let h = read_bytes("processing.jsonl", text.as_bytes()).expect("reads");
        check(
            &h,
            &CheckOptions {
                expect,
                max_examples: 10,
            },
        )
    }
}

fn count(v: &gauntlet_checkers::Verdict, k: A) -> u64 {
    v.anomalies.get(&k).map_or(u64::MAX, |a| a.count)
}

#[test]
fn a_history_without_processing_ops_has_no_processing_anomaly_or_guarantee() {
    let mut h = H::default();
    h.send(1).poll(5, &[1]).ack(5, &[1]).drained();
    let v = h.verdict(vec![G::AtLeastOnce]);
    for k in A::PROCESSING {
        assert!(!v.anomalies.contains_key(&k), "{k} in {v:?}");
    }
    assert!(!v.guarantees.contains_key(&G::ExactlyOnceProcessing));
    assert_eq!(v.valid, Validity::True);
    // Claimed without processing ops: nothing speaks to it.
    let v = h.verdict(vec![G::ExactlyOnceProcessing]);
    assert_eq!(v.valid, Validity::Unknown);
}

#[test]
fn fail_open_during_an_outage_applies_a_redelivered_effect_twice() {
    let mut h = H::default();
    h.send(1).send(2);
    // Consumer 5: the store is down; fail-open processes 1 anyway, then is killed before its ack.
    h.poll(5, &[1])
        .dedup(5, 1, "claim", "fail", Some("unavailable"))
        .effect(5, 1);
    // Redelivered to 6 while the store is still down: processed again.
    h.poll(6, &[1, 2])
        .dedup(6, 1, "claim", "fail", Some("unavailable"))
        .effect(6, 1)
        .dedup(6, 2, "claim", "ok", Some("new"))
        .effect(6, 2)
        .ack(6, &[1, 2])
        .drained();
    let v = h.verdict(vec![G::ExactlyOnceProcessing]);
    assert_eq!(count(&v, A::DuplicateProcessing), 1, "{v:?}");
    assert_eq!(count(&v, A::LostProcessing), 0);
    assert_eq!(count(&v, A::Parked), 0);
    assert_eq!(v.status(G::ExactlyOnceProcessing), Status::Violated);
    assert_eq!(v.valid, Validity::False);
    // The delivery guarantees are judged as before: a redelivery, nothing lost.
    assert_eq!(count(&v, A::Redelivered), 0, "no broker id, no redelivered");
    assert_eq!(v.status(G::AtLeastOnce), Status::Holds);
    let ex = &v.anomalies[&A::DuplicateProcessing].examples[0];
    let j = ex.to_json();
    assert_eq!(j["value"], json!(1));
    assert_eq!(j["effects"].as_array().map(Vec::len), Some(2));
}

#[test]
fn fail_closed_parks_then_processes_once_when_redelivered() {
    let mut h = H::default();
    h.send(1);
    // The store is down: held back, neither processed nor acknowledged.
    h.poll(5, &[1])
        .dedup(5, 1, "claim", "fail", Some("unavailable"));
    // Redelivered after the outage: processed once.
    h.poll(5, &[1])
        .dedup(5, 1, "claim", "ok", Some("new"))
        .effect(5, 1)
        .ack(5, &[1]);
    // Redelivered again (a consumer killed before its ack): seen, skipped.
    h.poll(6, &[1])
        .dedup(6, 1, "claim", "ok", Some("seen"))
        .ack(6, &[1])
        .drained();
    let v = h.verdict(vec![G::ExactlyOnceProcessing, G::AtLeastOnce]);
    assert_eq!(count(&v, A::DuplicateProcessing), 0, "{v:?}");
    assert_eq!(count(&v, A::LostProcessing), 0);
    assert_eq!(count(&v, A::Parked), 1);
    assert_eq!(v.status(G::ExactlyOnceProcessing), Status::Holds);
    assert_eq!(v.valid, Validity::True);
}

#[test]
fn a_parked_message_never_processed_is_lost_processing() {
    let mut h = H::default();
    h.send(1);
    h.poll(5, &[1])
        .dedup(5, 1, "claim", "info", None)
        .op(5, "invoke", "poll", Value::Null)
        .op(5, "ok", "poll", json!([]))
        .drained();
    let v = h.verdict(vec![G::ExactlyOnceProcessing]);
    assert_eq!(count(&v, A::Parked), 1, "{v:?}");
    assert_eq!(count(&v, A::LostProcessing), 1);
    assert_eq!(v.status(G::ExactlyOnceProcessing), Status::Violated);
}

#[test]
fn mark_before_then_killed_before_the_effect_loses_it() {
    let mut h = H::default();
    h.send(1);
    // Claimed (marked), killed before the effect: no completion follows.
    h.poll(5, &[1]).dedup(5, 1, "claim", "ok", Some("new"));
    // Redelivered: the store says seen, the effect is never applied.
    h.poll(6, &[1])
        .dedup(6, 1, "claim", "ok", Some("seen"))
        .ack(6, &[1])
        .drained();
    let v = h.verdict(vec![G::ExactlyOnceProcessing]);
    assert_eq!(count(&v, A::LostProcessing), 1, "{v:?}");
    assert_eq!(count(&v, A::DuplicateProcessing), 0);
    assert_eq!(count(&v, A::Parked), 0);
}

#[test]
fn an_effect_of_unknown_outcome_is_neither_lost_nor_a_duplicate() {
    let mut h = H::default();
    h.send(1);
    h.poll(5, &[1])
        .dedup(5, 1, "claim", "ok", Some("new"))
        .op(5, "invoke", "effect", json!(1));
    h.poll(6, &[1])
        .dedup(6, 1, "claim", "ok", Some("seen"))
        .drained();
    let v = h.verdict(vec![G::ExactlyOnceProcessing]);
    assert_eq!(count(&v, A::LostProcessing), 0, "{v:?}");
    assert_eq!(count(&v, A::DuplicateProcessing), 0);
}

#[test]
fn without_a_drain_nothing_is_lost_processing_and_the_guarantee_is_unknown() {
    let mut h = H::default();
    h.send(1);
    h.poll(5, &[1]).dedup(5, 1, "claim", "ok", Some("new"));
    let v = h.verdict(vec![G::ExactlyOnceProcessing]);
    assert_eq!(count(&v, A::LostProcessing), 0, "{v:?}");
    assert_eq!(v.status(G::ExactlyOnceProcessing), Status::Unknown);
}

#[test]
fn a_dedup_without_a_step_is_a_bad_line() {
    let mut h = H::default();
    h.send(1).op(5, "invoke", "dedup", json!({"value": 1}));
    let text = h.lines.join("\n") + "\n";
    let e = read_bytes("processing.jsonl", text.as_bytes()).expect_err("refused");
    assert!(e.to_string().contains("step"), "{e}");
}

/// Generated: `n` messages, every `dup`-th applied twice, every `lost`-th never
/// applied (claimed, then killed), every `park`-th parked once then processed.
#[test]
fn generated_history_gives_exact_counts() {
    let (n, dup, lost, park) = (600i64, 7, 11, 13);
    let mut h = H::default();
    let (mut want_dup, mut want_lost, mut want_park) = (0, 0, 0);
    for v in 0..n {
        h.send(v);
    }
    let mut p = 10u64;
    for v in 0..n {
        p += 1;
        h.poll(p, &[v]);
        if v % dup == 0 {
            want_dup += 1;
            h.dedup(p, v, "check", "fail", Some("unavailable"))
                .effect(p, v);
            p += 1;
            h.poll(p, &[v])
                .dedup(p, v, "check", "ok", Some("new"))
                .effect(p, v)
                .dedup(p, v, "mark", "ok", Some("new"))
                .ack(p, &[v]);
        } else if v % lost == 0 {
            want_lost += 1;
            h.dedup(p, v, "claim", "ok", Some("new"));
            p += 1;
            h.poll(p, &[v])
                .dedup(p, v, "claim", "ok", Some("seen"))
                .ack(p, &[v]);
        } else if v % park == 0 {
            want_park += 1;
            h.dedup(p, v, "claim", "fail", Some("unavailable"))
                .dedup(p, v, "claim", "ok", Some("new"))
                .effect(p, v)
                .ack(p, &[v]);
        } else {
            h.dedup(p, v, "claim", "ok", Some("new"))
                .effect(p, v)
                .ack(p, &[v]);
        }
    }
    h.drained();
    let v = h.verdict(vec![G::ExactlyOnceProcessing]);
    assert_eq!(count(&v, A::DuplicateProcessing), want_dup);
    assert_eq!(count(&v, A::LostProcessing), want_lost);
    assert_eq!(count(&v, A::Parked), want_park);
    assert_eq!((want_dup, want_lost, want_park), (86, 47, 36));
}
