//! Jepsen EDN histories (`history/src/edn.rs`): a realistic Kafka-workload
//! history reads and checks, with the anomalies it holds; bad EDN is refused
//! with its line and column.
use gauntlet_checkers::{check, AnomalyKind, CheckOptions, Guarantee, Status};
use gauntlet_history::edn::{looks_like, Edn, Parser};
use gauntlet_history::{read_bytes, read_path};
use std::path::Path;

const FIXTURE: &str = concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/tests/fixtures/jepsen-kafka.edn"
);

#[test]
fn jepsen_kafka_history_reads_and_checks() {
    let h = read_path(FIXTURE).expect("the fixture reads");
    assert_eq!(h.counts.ops, 17);
    assert_eq!(h.counts.nemesis_events, 3);
    // The file has :txn ops, so its :send and :poll ops are transactions too:
    // the send, T1, T2, the aborted one and the poll.
    assert_eq!(h.txns.len(), 5);
    assert_eq!(h.counts.txns_ok, 4);
    // Values are made unique in the run: key k, value v -> k * 1e9 + v.
    assert!(h.send_of(1_000_000_001).is_some());
    assert!(h.send_of(1).is_some());
    let v = check(&h, &CheckOptions::default());
    assert_eq!(v.count(AnomalyKind::GSingle), 1);
    assert_eq!(v.count(AnomalyKind::AbortedRead), 1);
    for k in AnomalyKind::TXN {
        if k != AnomalyKind::GSingle {
            assert_eq!(v.count(k), 0, "{k}");
        }
    }
    assert_eq!(v.status(Guarantee::ExactlyOnce), Status::Violated);
    let text = v.anomalies[&AnomalyKind::GSingle].examples[0].to_json()["explanation"]
        .as_str()
        .unwrap_or("")
        .to_string();
    assert!(text.contains("last read of partition 0 was 1"), "{text}");
}

#[test]
fn detects_edn_by_name_or_first_form() {
    assert!(looks_like(Path::new("h.edn"), b""));
    assert!(looks_like(Path::new("h"), b"  {:index 0}"));
    assert!(looks_like(Path::new("h"), b"#jepsen.history.Op{"));
    assert!(!looks_like(Path::new("h.jsonl"), b"{\"index\":0}"));
}

#[test]
fn errors_name_line_and_column() {
    let text = b"{:index 0, :time 1, :type :invoke, :process 0, :f :send, :value [[:send 0 1]]}\n{:index 1, :type :ok,\n  :value [}\n";
    let e = read_bytes("bad.edn", text)
        .err()
        .map(|e| e.to_string())
        .unwrap_or_default();
    assert_eq!(e, "bad.edn:3: column 11: `}` where `]` was expected");
    let text = b"{:index 0, :time 1, :type :sideways, :process 0, :f :send}\n";
    let e = read_bytes("bad.edn", text)
        .err()
        .map(|e| e.to_string())
        .unwrap_or_default();
    assert!(e.starts_with("bad.edn:1: column 0: :type must be"), "{e}");
}

#[test]
fn parses_the_subset() {
    let mut p = Parser::new(
        br#"[1 -2 3N 1.5 "a\"b" \c nil true :k sym (1) #{1} {:a 1} #tag [2] #_ 9 ;c
    ]"#,
    );
    let v = p.form().expect("parses");
    let Edn::Vector(xs) = v else {
        panic!("a vector")
    };
    assert_eq!(xs.len(), 14);
    assert_eq!(xs[2], Edn::Int(3));
    assert_eq!(xs[4], Edn::Str("a\"b".into()));
    assert_eq!(
        xs[13],
        Edn::Tagged("tag".into(), Box::new(Edn::Vector(vec![Edn::Int(2)])))
    );
    assert!(p.at_end());
}

/// A history in EDN, checked against at-least-once.
fn edn_verdict(text: &str) -> (gauntlet_history::History, gauntlet_checkers::Verdict) {
    let h = read_bytes("h.edn", text.as_bytes()).unwrap_or_else(|e| panic!("{e}\n{text}"));
    let v = check(&h, &CheckOptions::default());
    (h, v)
}

/// Every anomaly with a count above 0, by name.
fn counts(v: &gauntlet_checkers::Verdict) -> Vec<(String, u64)> {
    v.anomalies
        .iter()
        .filter(|(_, a)| a.count > 0)
        .map(|(k, a)| (k.to_string(), a.count))
        .collect()
}

#[test]
fn a_poll_op_that_carries_a_send_is_a_send() {
    // Jepsen's early queue tests: `:f :poll` with a `:send` micro-op. Before,
    // the send was dropped, and the read of x=1 was `unexpected`.
    let (h, v) = edn_verdict(
        "{:index 0, :time 0, :type :invoke, :f :poll, :process 0, :value [[:send 0 1]]}
{:index 1, :time 1, :type :ok, :f :poll, :process 0, :value [[:send 0 [0 1]]]}
{:index 2, :time 2, :type :invoke, :f :poll, :process 1, :value [[:send 0 2]]}
{:index 3, :time 3, :type :info, :f :poll, :process 1}
{:index 4, :time 4, :type :invoke, :f :poll, :process 2, :value [[:poll]]}
{:index 5, :time 5, :type :ok, :f :poll, :process 2, :value [[:poll {0 [[0 1]]}]]}
",
    );
    assert_eq!(h.sends.len(), 2);
    assert_eq!((h.sends[0].value, h.sends[0].offset), (1, 0));
    assert_eq!(
        h.sends[0].outcome,
        gauntlet_history::model::Outcome::Ok,
        "x=1 acknowledged"
    );
    // A completion without micro-ops is what its invoke was: x=2's send, unknown.
    assert_eq!(h.sends[1].outcome, gauntlet_history::model::Outcome::Info);
    assert_eq!(h.polls.len(), 1);
    assert_eq!(v.stats.sends, 2);
    assert_eq!(v.stats.sends_ok, 1);
    assert_eq!(counts(&v), []);
    assert_eq!(v.valid, gauntlet_checkers::Validity::True);
}

#[test]
fn near_miss_ops_whose_micro_ops_match_their_f_read_as_before() {
    let (h, v) = edn_verdict(
        "{:index 0, :time 0, :type :invoke, :f :send, :process 0, :value [[:send 0 1]]}
{:index 1, :time 1, :type :ok, :f :send, :process 0, :value [[:send 0 [0 1]]]}
{:index 2, :time 2, :type :invoke, :f :poll, :process 2, :value [[:poll]]}
{:index 3, :time 3, :type :ok, :f :poll, :process 2, :value [[:poll {0 [[0 1] [1 7]]}]]}
",
    );
    assert_eq!(h.sends.len(), 1);
    assert_eq!(h.polls.len(), 1);
    assert_eq!(h.deliveries.len(), 2);
    assert!(h.txns.is_empty());
    // 7 at offset 1 was never sent: unexpected (an integrity anomaly).
    assert_eq!(counts(&v), [("unexpected".to_string(), 1)]);
    assert_eq!(v.valid, gauntlet_checkers::Validity::False);
}
