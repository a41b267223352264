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
