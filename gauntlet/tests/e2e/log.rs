//! The log workload under consumer crashes (Kafka protocol, tansu): seed O5
//! (commit after processing, a consumer killed before its commit: the next
//! owner of its partitions re-reads from the last committed offset, nothing is
//! lost) and seed D5 in log form (auto-commit runs ahead of processing, a
//! consumer killed after the commit: its messages are lost).
use crate::common::*;

#[test]
fn log_commit_after_processing_and_kill_consumer_redelivers_without_loss() {
    let r = run(
        "kafka-log-o5",
        &[
            "--broker",
            "kafka",
            "--workload",
            "log",
            "--nemesis",
            "kill-consumer:before-ack",
            "--time",
            "14s",
            "--rate",
            "50",
        ],
    );
    assert_eq!(r.code, 0, "{}", r.verdict);
    assert!(count(&r, "redelivered") > 0, "{}", r.verdict["anomalies"]);
    for a in [
        "lost",
        "unseen",
        "gap",
        "partition-order",
        "inconsistent-offsets",
    ] {
        assert_eq!(count(&r, a), 0, "{a}: {}", r.verdict["anomalies"][a]);
    }
    assert_eq!(r.verdict["guarantees"]["at-least-once"], "holds");
    no_leftovers(&r.dir);
}

#[test]
fn log_auto_commit_and_kill_consumer_after_commit_loses_messages() {
    let r = run(
        "kafka-log-d5",
        &[
            "--broker",
            "kafka",
            "--workload",
            "log",
            "--mode",
            "at-most-once",
            "--nemesis",
            "kill-consumer:after-ack",
            "--time",
            "14s",
            "--rate",
            "50",
        ],
    );
    assert_eq!(r.code, 1, "{}", r.verdict);
    assert!(count(&r, "lost") > 0, "{}", r.verdict["anomalies"]);
    assert_eq!(r.verdict["guarantees"]["at-least-once"], "violated");
    no_leftovers(&r.dir);
}

/// O5 with explicit assignment: the restarted worker takes its slot's partitions
/// back at the committed offsets.
#[test]
fn log_assign_and_kill_consumer_redelivers_without_loss() {
    let r = run(
        "kafka-log-assign-o5",
        &[
            "--broker",
            "kafka",
            "--workload",
            "log",
            "--membership",
            "assign",
            "--nemesis",
            "kill-consumer:before-ack",
            "--time",
            "12s",
            "--rate",
            "50",
        ],
    );
    assert_eq!(r.code, 0, "{}", r.verdict);
    assert!(count(&r, "redelivered") > 0, "{}", r.verdict["anomalies"]);
    for a in [
        "lost",
        "unseen",
        "gap",
        "partition-order",
        "inconsistent-offsets",
    ] {
        assert_eq!(count(&r, a), 0, "{a}: {}", r.verdict["anomalies"][a]);
    }
    assert_eq!(r.verdict["stats"]["drained"], serde_json::Value::Bool(true));
    no_leftovers(&r.dir);
}
