//! The two-hop checker (`docs/twohop.md`): hand-written pipelines where each
//! anomaly fires (and where the order broke), near-misses where it must not,
//! and generated histories with exact counts.
use gauntlet_checkers::verdict::Example;
use gauntlet_checkers::{check, AnomalyKind as A, CheckOptions, Guarantee as G, Status, Verdict};
use gauntlet_history::read_bytes;
use gauntlet_testkit::twohop_gen::{generate, TwoHopExpected, TwoHopGen};
use serde_json::{json, Value};

/// Indices and times in call order. Process 0 is the producer of stream A.
#[derive(Default)]
struct H {
    lines: Vec<String>,
}

impl H {
    fn op(&mut self, p: Value, kind: &str, f: &str, group: bool, value: Value) -> &mut Self {
        let i = self.lines.len();
        let mut o = json!({"index": i, "time": i * 1000, "process": p, "type": kind, "f": f});
        if group {
            o["group"] = json!("two-hop");
        }
        if !value.is_null() {
            o["value"] = value;
        }
        self.lines.push(o.to_string());
        self
    }
    /// Input `v` of key `k`, sent by process 0.
    fn input(&mut self, k: &str, v: i64) -> &mut Self {
        self.op(
            json!(0),
            "invoke",
            "send",
            false,
            json!({"key": k, "value": v}),
        )
        .op(json!(0), "ok", "send", false, json!({"key": k, "value": v}))
    }
    /// Transformer `p` sends output `v` of input `input`.
    fn output(&mut self, p: u64, k: &str, v: i64, input: i64) -> &mut Self {
        let m = json!({"key": k, "value": v, "input": input});
        self.op(json!(p), "invoke", "send", false, m.clone())
            .op(json!(p), "ok", "send", false, m)
    }
    /// Process `p` polls `values` of key `k`.
    fn poll(&mut self, p: u64, k: &str, values: &[i64]) -> &mut Self {
        let ms: Vec<Value> = values
            .iter()
            .map(|v| json!({"key": k, "value": v}))
            .collect();
        self.op(json!(p), "invoke", "poll", true, Value::Null).op(
            json!(p),
            "ok",
            "poll",
            true,
            Value::Array(ms),
        )
    }
    fn drained(&mut self) -> &mut Self {
        self.op(json!("harness"), "info", "phase", false, json!("drained"))
    }
    fn verdict(&self) -> Verdict {
        let text = self.lines.join("\n") + "\n";
        let h = read_bytes("twohop.jsonl", text.as_bytes()).expect("history reads");
        check(
            &h,
            &CheckOptions {
                expect: vec![G::AtLeastOnce, G::KeyOrder],
                max_examples: 10,
            },
        )
    }
}

fn count(v: &Verdict, k: A) -> u64 {
    v.anomalies.get(&k).map_or(u64::MAX, |a| a.count)
}

fn order_example(v: &Verdict) -> (String, i64, i64) {
    match v.anomalies[&A::TwoHopOrder].examples.first() {
        Some(Example::TwoHopOrder(o)) => (
            o.broke_at.clone(),
            o.received_first.value,
            o.sent_first.value,
        ),
        other => panic!("no typed two-hop-order example: {other:?}"),
    }
}

/// Inputs 1 and 2 of key k, then what `rest` does with them.
fn pipeline(rest: impl FnOnce(&mut H)) -> Verdict {
    let mut h = H::default();
    h.input("k", 1).input("k", 2);
    rest(&mut h);
    h.drained();
    h.verdict()
}

#[test]
fn an_ordered_pipeline_is_valid_and_only_two_hop_histories_have_the_two_hop_types() {
    let v = pipeline(|h| {
        h.poll(1, "k", &[1, 2])
            .output(1, "k", 11, 1)
            .output(1, "k", 12, 2)
            .poll(2, "k", &[11, 12]);
    });
    for k in A::TWO_HOP {
        assert_eq!(count(&v, k), 0, "{k}");
    }
    assert_eq!(v.guarantees[&G::KeyOrder], Status::Holds);
    assert_eq!(v.valid, gauntlet_checkers::Validity::True, "{v:?}");
    // A queue history (no send names an input) has none of them.
    let mut q = H::default();
    q.input("k", 1).poll(2, "k", &[1]).drained();
    let v = q.verdict();
    assert!(A::TWO_HOP.iter().all(|k| !v.anomalies.contains_key(k)));
}

#[test]
fn reordered_by_the_second_hop() {
    let v = pipeline(|h| {
        h.poll(1, "k", &[1, 2])
            .output(1, "k", 11, 1)
            .output(1, "k", 12, 2)
            .poll(2, "k", &[12, 11]);
    });
    assert_eq!(count(&v, A::TwoHopOrder), 1);
    assert_eq!(order_example(&v), ("second-hop".into(), 12, 11));
    assert_eq!(v.guarantees[&G::KeyOrder], Status::Violated);
    assert_eq!(count(&v, A::TwoHopLost), 0);
}

#[test]
fn reordered_by_the_transformers() {
    // Transformer 1 read input 1 first; transformer 3, which read 2, sent first.
    let v = pipeline(|h| {
        h.poll(1, "k", &[1])
            .poll(3, "k", &[2])
            .output(3, "k", 12, 2)
            .output(1, "k", 11, 1)
            .poll(2, "k", &[12, 11]);
    });
    assert_eq!(count(&v, A::TwoHopOrder), 1);
    assert_eq!(order_example(&v), ("transformer".into(), 12, 11));
}

#[test]
fn already_out_of_order_when_read() {
    let v = pipeline(|h| {
        h.poll(3, "k", &[2])
            .poll(1, "k", &[1])
            .output(1, "k", 11, 1)
            .output(3, "k", 12, 2)
            .poll(2, "k", &[12, 11]);
    });
    assert_eq!(count(&v, A::TwoHopOrder), 1);
    assert_eq!(order_example(&v), ("input".into(), 12, 11));
}

#[test]
fn a_second_output_of_an_input_is_a_duplicate_and_not_an_order_breach() {
    // Input 1 transformed again after 2 (a transformer killed before its ack):
    // the consumer gets 11, 12, 21; 21 is no first receipt of input 1.
    let v = pipeline(|h| {
        h.poll(1, "k", &[1, 2])
            .output(1, "k", 11, 1)
            .output(1, "k", 12, 2)
            .poll(4, "k", &[1])
            .output(4, "k", 21, 1)
            .poll(2, "k", &[11, 12, 21]);
    });
    assert_eq!(count(&v, A::TwoHopDuplicate), 1);
    assert_eq!(count(&v, A::TwoHopOrder), 0);
    assert_eq!(v.guarantees[&G::AtMostOnce], Status::Violated);
    match v.anomalies[&A::TwoHopDuplicate].examples.first() {
        Some(Example::TwoHopDuplicate(d)) => {
            assert_eq!(d.value, 1);
            let outs: Vec<(i64, u64)> =
                d.outputs.iter().map(|o| (o.value, o.transformer)).collect();
            assert_eq!(outs, vec![(11, 1), (21, 4)]);
        }
        other => panic!("{other:?}"),
    }
    // Near-miss: the same output delivered twice is `redelivered`, not a duplicate.
    let v = pipeline(|h| {
        h.poll(1, "k", &[1, 2])
            .output(1, "k", 11, 1)
            .output(1, "k", 12, 2)
            .poll(2, "k", &[11, 12, 11]);
    });
    assert_eq!(count(&v, A::TwoHopDuplicate), 0);
    assert_eq!(count(&v, A::TwoHopOrder), 0);
}

#[test]
fn lost_at_each_place_after_the_drain_and_not_before() {
    let build = |drained: bool| {
        let mut h = H::default();
        h.input("k", 1).input("k", 2).input("k", 3).input("k", 4);
        // 1: never read. 2: read, dropped. 3: sent on, never delivered. 4: through.
        h.poll(1, "k", &[2, 3, 4])
            .output(1, "k", 13, 3)
            .output(1, "k", 14, 4)
            .poll(2, "k", &[14]);
        if drained {
            h.drained();
        }
        h.verdict()
    };
    let v = build(true);
    assert_eq!(count(&v, A::TwoHopLost), 3);
    let wheres: Vec<(i64, String)> = v.anomalies[&A::TwoHopLost]
        .examples
        .iter()
        .map(|e| match e {
            Example::TwoHopLost(l) => (l.value, l.at.clone()),
            other => panic!("{other:?}"),
        })
        .collect();
    assert_eq!(
        wheres,
        vec![
            (1, "first-hop".into()),
            (2, "transformer".into()),
            (3, "second-hop".into())
        ]
    );
    assert_eq!(v.guarantees[&G::AtLeastOnce], Status::Violated);
    let places: Vec<(String, u64)> = v.anomalies[&A::TwoHopLost]
        .by_place
        .iter()
        .map(|(p, n)| (p.clone(), *n))
        .collect();
    assert_eq!(
        places,
        vec![
            ("first-hop".into(), 1),
            ("second-hop".into(), 1),
            ("transformer".into(), 1)
        ]
    );
    assert_eq!(count(&build(false), A::TwoHopLost), 0);
}

#[test]
fn examples_survive_the_verdict_json_and_come_back_typed() {
    let v = pipeline(|h| {
        h.poll(1, "k", &[1, 2])
            .output(1, "k", 11, 1)
            .output(1, "k", 12, 2)
            .poll(2, "k", &[12, 11]);
    });
    let text = serde_json::to_string(&v).expect("json");
    assert!(text.contains("\"two-hop-order\""), "{text}");
    let back: Verdict = serde_json::from_str(&text).expect("read back");
    assert!(matches!(
        back.anomalies[&A::TwoHopOrder].examples.first(),
        Some(Example::TwoHopOrder(_))
    ));
}

#[test]
fn generated_pipelines_have_exactly_the_injected_anomalies() {
    for seed in 0..40u64 {
        let cfg = TwoHopGen {
            seed,
            inputs: 200 + (seed as usize * 7) % 300,
            keys: 1 + (seed as usize) % 6,
            lost: (seed as usize) % 5,
            duplicates: (seed as usize * 3) % 7,
            swaps: (seed as usize * 5) % 9,
        };
        let (bytes, want) = generate(&cfg);
        let h = read_bytes("gen.jsonl", &bytes).expect("generated history reads");
        let v = check(&h, &CheckOptions::default());
        let got = TwoHopExpected {
            lost: count(&v, A::TwoHopLost),
            duplicate: count(&v, A::TwoHopDuplicate),
            order: count(&v, A::TwoHopOrder),
        };
        assert_eq!(got, want, "seed {seed}: {cfg:?}");
        let placed: u64 = v.anomalies[&A::TwoHopOrder].by_place.values().sum();
        assert_eq!(placed, want.order, "every breach has its place");
        assert_eq!(
            v.anomalies[&A::TwoHopOrder]
                .by_place
                .get("second-hop")
                .copied(),
            (want.order > 0).then_some(want.order)
        );
        for e in &v.anomalies[&A::TwoHopOrder].examples {
            match e {
                Example::TwoHopOrder(o) => assert_eq!(o.broke_at, "second-hop"),
                other => panic!("{other:?}"),
            }
        }
        for e in &v.anomalies[&A::TwoHopLost].examples {
            match e {
                Example::TwoHopLost(l) => assert_eq!(l.at, "transformer"),
                other => panic!("{other:?}"),
            }
        }
        // The generator's one-group pipeline loses nothing by the standard checks.
        assert_eq!(count(&v, A::Lost), 0, "seed {seed}");
    }
    // And one with nothing injected is clean.
    let (bytes, want) = generate(&TwoHopGen {
        seed: 9,
        inputs: 1000,
        keys: 4,
        lost: 0,
        duplicates: 0,
        swaps: 0,
    });
    assert_eq!(want, TwoHopExpected::default());
    let v = check(
        &read_bytes("clean.jsonl", &bytes).expect("reads"),
        &CheckOptions {
            expect: vec![G::AtLeastOnce, G::KeyOrder, G::AtMostOnce],
            max_examples: 10,
        },
    );
    assert_eq!(
        v.valid,
        gauntlet_checkers::Validity::True,
        "{:?}",
        v.anomalies
    );
}

#[test]
fn the_reader_keeps_a_sends_input_and_only_where_it_is_given() {
    let mut h = H::default();
    h.input("k", 1).output(1, "k", 11, 1);
    // Written by hand in another key order, with `input` null on a plain send.
    h.lines.push(
        r#"{"index":4,"time":4000,"process":5,"type":"invoke","f":"send","value":{"value":7,"input":null,"key":"k"}}"#
            .to_string(),
    );
    let text = h.lines.join("\n") + "\n";
    let read = read_bytes("input.jsonl", text.as_bytes()).expect("reads");
    assert_eq!(read.inputs, vec![(1, 1)]);
    assert_eq!(read.sends[1].value, 11);
    let mut q = H::default();
    q.input("k", 1).poll(2, "k", &[1]);
    let text = q.lines.join("\n") + "\n";
    assert!(read_bytes("q.jsonl", text.as_bytes())
        .expect("reads")
        .inputs
        .is_empty());
}
