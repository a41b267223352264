//! A stream the broker lost (docs/checkers.md, "A lost stream"): the `drained`
//! marker says how the drain ended; where the broker answered that the stream
//! does not exist, what it acknowledged and nobody read is `lost`, the verdict
//! names the stream and from when, and every lost message has its place.
use gauntlet_checkers::{check, AnomalyKind as A, CheckOptions, Guarantee as G, Validity, Verdict};
use gauntlet_history::read_bytes;
use serde_json::{json, Value};

/// One line per op: index and time (1 ms apart) in call order.
#[derive(Default)]
struct H {
    lines: Vec<Value>,
}

impl H {
    fn push(&mut self, mut o: Value) -> &mut Self {
        let i = self.lines.len();
        o["index"] = json!(i);
        o["time"] = json!(i as u64 * 1_000_000);
        self.lines.push(o);
        self
    }
    /// A send of value `v` at offset `v - 1` of partition 0, ending `kind`.
    fn send(&mut self, p: u64, v: i64, kind: &str) -> &mut Self {
        self.push(
            json!({"process": p, "type": "invoke", "f": "send", "value": {"key": "k", "value": v}}),
        );
        let mut end =
            json!({"process": p, "type": kind, "f": "send", "value": {"key": "k", "value": v}});
        if kind == "ok" {
            end["value"]["partition"] = json!(0);
            end["value"]["offset"] = json!(v - 1);
        } else {
            end["error"] = json!("no responders available for request");
        }
        self.push(end)
    }
    /// A poll of group `g1` delivering values `vs` (each at offset `v - 1`).
    fn poll(&mut self, p: u64, vs: &[i64]) -> &mut Self {
        let msgs: Vec<Value> = vs
            .iter()
            .map(|v| json!({"key": "k", "value": v, "partition": 0, "offset": v - 1}))
            .collect();
        self.push(json!({"process": p, "type": "invoke", "f": "poll", "group": "g1"}));
        self.push(json!({"process": p, "type": "ok", "f": "poll", "group": "g1", "value": msgs}))
    }
    fn phase(&mut self, name: &str, drain: Option<Value>) -> &mut Self {
        let mut o = json!({"process": "harness", "type": "info", "f": "phase", "value": name});
        if let Some(d) = drain {
            o["drain"] = d;
        }
        self.push(o)
    }
    fn text(&self) -> String {
        self.lines.iter().map(|l| l.to_string() + "\n").collect()
    }
    fn check(&self) -> Verdict {
        let text = self.text();
        let h = read_bytes("t.jsonl", text.as_bytes()).unwrap_or_else(|e| panic!("{e}\n{text}"));
        check(
            &h,
            &CheckOptions {
                expect: vec![G::AtLeastOnce],
                max_examples: 5,
            },
        )
    }
}

fn missing() -> Value {
    json!({"ended": "missing", "missing": [{
        "group": "g1", "what": "stream gauntlet", "answer": "stream not found",
        "first_answer": 30_000_000_000u64, "confirmed": 40_000_000_000u64
    }]})
}

/// Sends 1-6 acknowledged; the group read 2 and 4 only; then every send
/// failed (the stream was gone), and the drain found no stream.
fn stream_lost_after_reads() -> H {
    let mut h = H::default();
    for v in 1..=6 {
        h.send(0, v, "ok");
    }
    h.poll(1, &[2]).poll(1, &[4]);
    // Index 15 is the last non-empty read; then the stream goes.
    h.send(0, 7, "fail").send(0, 8, "fail");
    h.phase("drain", None);
    h
}

#[test]
fn a_stream_the_broker_says_is_gone_loses_what_nobody_read() {
    let mut h = stream_lost_after_reads();
    h.phase("drained", Some(missing()));
    let v = h.check();
    // 1 before the first read, 3 between the reads, 5 and 6 after the last.
    assert_eq!(v.count(A::Lost), 4, "{:?}", v.anomalies[&A::Lost]);
    assert_eq!(v.count(A::Unseen), 0);
    assert_eq!(v.valid, Validity::False);
    let places = &v.anomalies[&A::Lost].by_place;
    assert_eq!(places.get("before-first-read"), Some(&1), "{places:?}");
    assert_eq!(places.get("between-reads"), Some(&1), "{places:?}");
    assert_eq!(places.get("after-last-read"), Some(&2), "{places:?}");
    assert_eq!(places.values().sum::<u64>(), 4);

    assert_eq!(v.sources_lost.len(), 1);
    let s = &v.sources_lost[0];
    assert_eq!(
        (s.group.as_str(), s.what.as_str()),
        ("g1", "stream gauntlet")
    );
    assert_eq!(
        (s.answered_at, s.confirmed_at),
        (30_000_000_000, 40_000_000_000)
    );
    // The last ok op is the second poll's completion (index 15); the first
    // failing send after it is invoked at index 16.
    assert_eq!(s.last_ok, Some(15_000_000));
    assert_eq!(s.failing_since, Some(16_000_000));
    let said = v
        .warnings
        .iter()
        .find(|w| w.starts_with("the broker lost stream gauntlet"))
        .unwrap_or_else(|| panic!("no warning: {:?}", v.warnings));
    assert!(
        said.contains("\"stream not found\" at 30.0 s and still at 40.0 s"),
        "{said}"
    );
    assert!(said.contains("from 0.0 s"), "{said}");

    // The verdict file keeps it, and reads back the same.
    let json = serde_json::to_value(&v).expect("verdict json");
    assert_eq!(json["sources_lost"][0]["what"], "stream gauntlet");
    assert_eq!(json["anomalies"]["lost"]["by_place"]["between-reads"], 1);
    let back: Verdict = serde_json::from_value(json).expect("reads back");
    assert_eq!(back.sources_lost, v.sources_lost);
}

#[test]
fn a_drain_that_could_not_finish_leaves_the_same_messages_unseen() {
    // No `drained` marker: the broker never answered for them.
    let v = stream_lost_after_reads().check();
    // 1 and 3 are proven skipped by the higher offset 4 the group read (v1.1);
    // 5 and 6 could still be waiting.
    assert_eq!((v.count(A::Lost), v.count(A::Unseen)), (2, 2));
    assert!(v.sources_lost.is_empty());
    assert_eq!(v.valid, Validity::False);
}

#[test]
fn a_caught_up_drain_and_an_old_marker_judge_alike_and_name_no_stream() {
    let mut caught_up = stream_lost_after_reads();
    caught_up.phase("drained", Some(json!({"ended": "caught-up"})));
    let mut old = stream_lost_after_reads();
    old.phase("drained", None);
    let (a, b) = (caught_up.check(), old.check());
    assert_eq!(a.count(A::Lost), 4);
    assert_eq!(a.anomalies, b.anomalies);
    assert!(a.sources_lost.is_empty() && b.sources_lost.is_empty());
    assert!(!serde_json::to_string(&a)
        .unwrap_or_default()
        .contains("sources_lost"));
}

#[test]
fn a_lost_stream_with_nothing_unread_is_still_named() {
    // Every acknowledged send was read before the stream went: valid, and said.
    let mut h = H::default();
    h.send(0, 1, "ok").send(0, 2, "ok").poll(1, &[1, 2]);
    h.send(0, 3, "fail")
        .phase("drain", None)
        .phase("drained", Some(missing()));
    let v = h.check();
    assert_eq!((v.count(A::Lost), v.valid), (0, Validity::True));
    assert_eq!(v.sources_lost.len(), 1);
    assert!(v
        .warnings
        .iter()
        .any(|w| w.contains("the broker lost stream gauntlet")));
}

#[test]
fn lost_messages_without_offsets_are_placed_by_send_order() {
    // A queue without offsets: 1..=5 acknowledged, the group read 2 and 4.
    let mut h = H::default();
    for v in 1..=5 {
        h.push(
            json!({"process": 0, "type": "invoke", "f": "send", "value": {"key": "k", "value": v}}),
        );
        h.push(json!({"process": 0, "type": "ok", "f": "send", "value": {"key": "k", "value": v}}));
    }
    for v in [2, 4] {
        h.push(json!({"process": 1, "type": "invoke", "f": "poll", "group": "g1"}));
        h.push(json!({"process": 1, "type": "ok", "f": "poll", "group": "g1", "value": [{"key": "k", "value": v}]}));
    }
    h.phase("drained", Some(json!({"ended": "caught-up"})));
    let v = h.check();
    assert_eq!(v.count(A::Lost), 3);
    let places = &v.anomalies[&A::Lost].by_place;
    assert_eq!(
        (
            places.get("before-first-read"),
            places.get("between-reads"),
            places.get("after-last-read")
        ),
        (Some(&1), Some(&1), Some(&1)),
        "{places:?}"
    );
}

#[test]
fn a_drain_field_that_is_not_a_drain_ending_is_refused_with_its_line() {
    let mut h = stream_lost_after_reads();
    h.phase("drained", Some(json!({"ended": "somehow"})));
    let text = h.text();
    let err = read_bytes("t.jsonl", text.as_bytes())
        .err()
        .unwrap_or_else(|| panic!("a bad drain field was read"))
        .to_string();
    assert!(err.starts_with("t.jsonl:22:"), "{err}");
    assert!(err.contains("drain"), "{err}");
}
