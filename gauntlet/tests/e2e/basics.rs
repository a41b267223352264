//! The false-alarm check and the consumer-crash scenarios D4 and D5 on Redis and RabbitMQ.
use crate::common::*;
use serde_json::Value;

#[test]
fn redis_clean_run_is_valid_with_no_anomaly() {
    let r = run(
        "redis-clean",
        &["--broker", "redis", "--time", "8s", "--rate", "50"],
    );
    assert_eq!(r.code, 0, "{}", r.verdict);
    for a in [
        "lost",
        "unseen",
        "unexpected",
        "duplicate-write",
        "redelivered",
        "gap",
        "key-order",
        "inconsistent-offsets",
    ] {
        assert_eq!(count(&r, a), 0, "{a}: {}", r.verdict["anomalies"][a]);
    }
    assert!(r.verdict["stats"]["sends_ok"].as_u64().unwrap_or(0) > 100);
    assert_eq!(r.verdict["stats"]["drained"], Value::Bool(true));
    assert_run_folder(&r.dir);
    no_leftovers(&r.dir);
}

/// Seed D5: the consumer acknowledges before processing and is killed while processing.
#[test]
fn redis_ack_before_processing_and_kill_consumer_loses_messages() {
    let r = run(
        "redis-d5",
        &[
            "--broker",
            "redis",
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

/// Seed D4: the consumer processes, is killed before acknowledging: redelivery, no loss.
#[test]
fn redis_ack_after_processing_and_kill_consumer_redelivers_without_loss() {
    let r = run(
        "redis-d4",
        &[
            "--broker",
            "redis",
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
    assert_eq!(count(&r, "lost"), 0);
    assert_eq!(r.verdict["guarantees"]["at-most-once"], "violated");
    no_leftovers(&r.dir);
}

/// RabbitMQ: a clean run on a quorum queue, then the auto-ack hazard (seed D5 / at-most-once).
#[test]
fn rabbitmq_clean_and_auto_ack_kill_consumer() {
    let clean = run(
        "rabbit-clean",
        &[
            "--broker", "rabbitmq", "--nodes", "1", "--time", "8s", "--rate", "50",
        ],
    );
    assert_eq!(clean.code, 0, "{}", clean.verdict);
    assert_eq!(count(&clean, "lost"), 0);
    assert_eq!(count(&clean, "redelivered"), 0);
    let amo = run(
        "rabbit-d5",
        &[
            "--broker",
            "rabbitmq",
            "--nodes",
            "1",
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
    assert_eq!(amo.code, 1, "{}", amo.verdict);
    assert!(count(&amo, "lost") > 0, "{}", amo.verdict["anomalies"]);
    no_leftovers(&amo.dir);
}
