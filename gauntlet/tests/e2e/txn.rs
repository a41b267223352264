//! D9 on the Kafka protocol (tansu): the consume-transform-produce `txn`
//! workload. What tansu 0.6 does, measured (docs/txn.md, findings): it lets a
//! read_committed consumer read the records of aborted transactions, so every
//! aborted output the final drain polls is an aborted read (G1a), and
//! exactly-once is violated. The test recomputes that count from the history
//! itself and holds the verdict to it.
use crate::common::*;
use serde_json::Value;
use std::collections::HashSet;

#[test]
fn kafka_txn_aborted_outputs_are_visible_to_read_committed_consumers() {
    let r = run(
        "kafka-txn",
        &[
            "--broker",
            "kafka",
            "--workload",
            "txn",
            "--time",
            "12s",
            "--rate",
            "30",
            "--expect",
            "exactly-once",
        ],
    );
    let text = std::fs::read_to_string(r.dir.join("history.jsonl")).expect("history.jsonl");
    let (mut aborted, mut polled) = (HashSet::new(), Vec::new());
    let mut committed = 0;
    for line in text.lines() {
        let op: Value = serde_json::from_str(line).expect("history line");
        match (op["f"].as_str(), op["type"].as_str()) {
            (Some("txn"), Some("fail")) => {
                for m in op["value"].as_array().into_iter().flatten() {
                    if m["f"] == "send" {
                        aborted.insert(m["value"].as_i64().unwrap_or(-1));
                    }
                }
            }
            (Some("txn"), Some("ok")) => committed += 1,
            (Some("poll"), Some("ok")) => {
                for m in op["value"].as_array().into_iter().flatten() {
                    polled.push(m["value"].as_i64().unwrap_or(-1));
                }
            }
            _ => {}
        }
    }
    let visible: HashSet<i64> = polled
        .iter()
        .copied()
        .filter(|v| aborted.contains(v))
        .collect();
    assert!(committed > 10, "only {committed} transactions committed");
    assert!(
        !visible.is_empty(),
        "no aborted output was polled: tansu now hides aborted records ({} aborted)",
        aborted.len()
    );
    assert_eq!(
        count(&r, "aborted-read"),
        visible.len() as u64,
        "{}",
        r.verdict["anomalies"]["aborted-read"]
    );
    assert_eq!(r.verdict["guarantees"]["exactly-once"], "violated");
    assert_eq!(r.code, 1, "{}", r.verdict);
    assert_eq!(r.verdict["stats"]["drained"], Value::Bool(true));
    // The transaction anomalies are in the verdict (the history has transactions).
    assert!(r.verdict["anomalies"]["G-single"]["count"].is_u64());
    assert_run_folder(&r.dir);
    no_leftovers(&r.dir);
}
