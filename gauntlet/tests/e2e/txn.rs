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
            "--image",
            gauntlet_harness::brokers::kafka::MEMORY_IMAGE,
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

/// Faults aimed at Kafka's coordinators (issue 5): the harness asks the broker
/// (FindCoordinator, from inside a node) which node coordinates the workload's
/// transactional id and its consumer group, and pauses that node. On one node
/// the answer is always n1; what this shows is that the question is asked and
/// answered, that each pause is recorded with its role and node, and that the run
/// heals, drains and loses nothing committed.
#[test]
fn pauses_aimed_at_the_txn_and_group_coordinators_hit_the_node_kafka_names() {
    let schedule = schedule_file(
        "coordinators",
        &[
            (3_000, 2_500, "pause:txn-coordinator", "n1", 1),
            (8_000, 2_500, "pause:group-coordinator", "n1", 2),
        ],
    );
    let r = run(
        "kafka-txn-coordinators",
        &[
            "--broker",
            "kafka",
            // tansu's PostgreSQL build refuses EndTxn (docs/brokers.md): the
            // transactional workload runs on the memory build.
            "--image",
            gauntlet_harness::brokers::kafka::MEMORY_IMAGE,
            "--workload",
            "txn",
            "--time",
            "13s",
            "--rate",
            "30",
            "--expect",
            "exactly-once",
            "--replay",
            &schedule.display().to_string(),
        ],
    );
    let _ = std::fs::remove_file(&schedule);
    let events = nemesis_events(&r.dir);
    let pauses: Vec<&Value> = events
        .iter()
        .filter(|e| e["f"] == "pause" && e["type"] == "info")
        .collect();
    let roles: Vec<&str> = pauses
        .iter()
        .filter_map(|e| e["value"]["role"].as_str())
        .collect();
    assert_eq!(
        roles,
        ["txn-coordinator", "group-coordinator"],
        "{events:?}"
    );
    for p in &pauses {
        assert_eq!(p["value"]["node"], "n1", "{p}");
    }
    assert!(
        events.iter().filter(|e| e["f"] == "resume").count() >= 2,
        "a pause was not resumed: {events:?}"
    );
    assert_eq!(r.verdict["stats"]["drained"], Value::Bool(true));
    assert_eq!(count(&r, "lost"), 0, "{}", r.verdict["anomalies"]);
    assert_run_folder(&r.dir);
    no_leftovers(&r.dir);
}

/// `--workload txn --nemesis crash-producer` (docs/txn.md): the fault is an
/// entry of the nemesis's table that the txn workload does itself. It used to
/// be refused as an unknown fault before the workload could take it. Its
/// transformers destroy their client in the middle of some transactions (each
/// ends `info` with the reason); the schedule has no fault, and the nemesis
/// records only the final heal.
#[test]
fn crash_producer_destroys_clients_mid_transaction_in_the_txn_workload() {
    let r = run(
        "kafka-txn-crash-producer",
        &[
            "--broker",
            "kafka",
            "--image",
            gauntlet_harness::brokers::kafka::MEMORY_IMAGE,
            "--workload",
            "txn",
            "--nemesis",
            "crash-producer",
            "--time",
            "12s",
            "--rate",
            "30",
            "--expect",
            "exactly-once",
        ],
    );
    let text = std::fs::read_to_string(r.dir.join("history.jsonl")).expect("history.jsonl");
    let crashed = text
        .lines()
        .filter_map(|l| serde_json::from_str::<Value>(l).ok())
        .filter(|op| {
            op["f"] == "txn"
                && op["type"] == "info"
                && op["error"] == "client destroyed mid-transaction"
        })
        .count();
    assert!(
        crashed > 0,
        "no transaction ended with its client destroyed ({})",
        r.verdict["stats"]
    );
    let schedule = std::fs::read_to_string(r.dir.join("schedule.toml")).expect("schedule.toml");
    assert!(!schedule.contains("[[fault]]"), "{schedule}");
    let events = nemesis_events(&r.dir);
    assert!(
        events.iter().all(|e| e["f"] == "heal-all"),
        "only the final heal: {events:?}"
    );
    assert_eq!(r.verdict["stats"]["drained"], Value::Bool(true));
    assert_run_folder(&r.dir);
    no_leftovers(&r.dir);
}
