//! The false-alarm check on every broker: a clean at-least-once run (no faults,
//! 8 s at 50 sends/s) is VALID, drained, with no anomaly at all.
use crate::common::*;
use serde_json::Value;

const ANOMALIES: [&str; 12] = [
    "lost",
    "unseen",
    "unexpected",
    "aborted-read",
    "duplicate-write",
    "redelivered",
    "gap",
    "key-order",
    "producer-order",
    "partition-order",
    "total-order",
    "inconsistent-offsets",
];

/// Runs `args` (8 s at 50/s) and checks the run is clean: every anomaly but
/// those in `skip` is absent.
fn clean(name: &str, args: &[&str], min_sends: u64, skip: &[&str]) -> Run {
    let mut all: Vec<&str> = args.to_vec();
    all.extend(["--time", "8s", "--rate", "50"]);
    let r = run(name, &all);
    assert_eq!(r.code, 0, "{}", r.verdict);
    assert_eq!(r.verdict["valid"], Value::Bool(true), "{}", r.verdict);
    for a in ANOMALIES.iter().filter(|a| !skip.contains(a)) {
        assert_eq!(count(&r, a), 0, "{a}: {}", r.verdict["anomalies"][a]);
    }
    let sends = r.verdict["stats"]["sends_ok"].as_u64().unwrap_or(0);
    assert!(sends > min_sends, "only {sends} sends ok: {}", r.verdict);
    assert_eq!(r.verdict["stats"]["drained"], Value::Bool(true));
    assert_run_folder(&r.dir);
    no_leftovers(&r.dir);
    r
}

/// Across partitions (Kafka) or across streams, producer and total order are not
/// promised, and a clean run does break them (not claimed, so still valid).
const ACROSS_PARTITIONS: [&str; 2] = ["producer-order", "total-order"];

#[test]
fn nats_jetstream_clean_run_is_valid_with_no_anomaly() {
    clean("nats-clean", &["--broker", "nats"], 100, &[]);
}

#[test]
fn kafka_queue_clean_run_is_valid_with_no_anomaly() {
    let r = clean(
        "kafka-clean",
        &["--broker", "kafka"],
        100,
        &ACROSS_PARTITIONS,
    );
    assert_eq!(r.verdict["guarantees"]["partition-order"], "holds");
}

/// moto answers a SendMessage in 40-90 ms: two sequential producers make fewer than 50/s.
#[test]
fn sqs_clean_run_is_valid_with_no_anomaly() {
    clean("sqs-clean", &["--broker", "sqs"], 50, &[]);
}

#[test]
fn kafka_log_clean_run_is_valid_with_no_anomaly() {
    let r = clean(
        "kafka-log-clean",
        &["--broker", "kafka", "--workload", "log"],
        100,
        &ACROSS_PARTITIONS,
    );
    assert_eq!(r.verdict["guarantees"]["partition-order"], "holds");
    let history = std::fs::read_to_string(r.dir.join("history.jsonl")).expect("history");
    for f in [
        "\"f\":\"subscribe\"",
        "\"f\":\"commit\"",
        "\"f\":\"assign\"",
    ] {
        assert!(history.contains(f), "no {f} op in the history");
    }
}
