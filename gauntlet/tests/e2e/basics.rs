//! The false-alarm check and the consumer-crash scenarios D4 and D5 on Redis and RabbitMQ.
use crate::common::*;
use serde_json::Value;

#[test]
fn redis_clean_run_is_valid_with_no_anomaly() {
    let r = run(
        "redis-clean",
        &[
            "--broker",
            "redis",
            "--nemesis",
            "none",
            "--time",
            "8s",
            "--rate",
            "50",
        ],
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

/// `gauntlet run` with no arguments, as a newcomer runs it: Redis Streams (a primary
/// and two replicas, AOF `appendfsync always`), at-least-once, 20 s, with the default
/// faults: a consumer killed before its ack, the primary SIGKILLed and restarted with
/// a send in flight, another consumer kill. Valid: redelivered, nothing lost.
#[test]
fn default_run_kills_consumers_and_restarts_the_primary_and_loses_nothing() {
    let t = std::time::Instant::now();
    let r = run("default", &[]);
    report("default run (no arguments)", &r, t);
    let schedule = std::fs::read_to_string(r.dir.join("schedule.toml")).expect("schedule.toml");
    // (fault, target) per [[fault]] table, in order.
    let drawn: Vec<(String, String)> = schedule
        .split("[[fault]]")
        .skip(1)
        .map(|table| {
            let field = |k: &str| {
                table
                    .lines()
                    .find_map(|l| l.trim().strip_prefix(&format!("{k} = ")))
                    .map(|v| v.trim_matches('"').to_string())
                    .unwrap_or_default()
            };
            (field("fault"), field("target"))
        })
        .collect();
    assert_eq!(drawn.len(), 3, "{schedule}");
    assert_eq!(drawn[0].0, "kill-consumer:before-ack", "{schedule}");
    assert_eq!(
        drawn[1],
        ("restart-broker:mid-batch".to_string(), "n1".to_string()),
        "{schedule}"
    );
    assert_eq!(drawn[2].0, "kill-consumer:before-ack", "{schedule}");
    // Every fault was applied: started without an error, the primary came back.
    let events = nemesis_events(&r.dir);
    let info = |f: &str| -> Vec<&Value> {
        events
            .iter()
            .filter(|e| e["type"] == "info" && e["f"] == f)
            .collect()
    };
    let kills = info("kill-consumer");
    assert_eq!(kills.len(), 2, "{events:?}");
    let restarts = info("restart");
    assert_eq!(restarts.len(), 1, "{events:?}");
    for e in kills.iter().chain(&restarts).chain(&info("restarted")) {
        assert!(e["value"].get("error").is_none(), "fault failed: {e}");
    }
    assert_eq!(restarts[0]["value"]["node"], "n1", "{}", restarts[0]);
    assert_eq!(info("restarted").len(), 1, "{events:?}");
    assert_eq!(r.code, 0, "{}", r.verdict);
    assert_eq!(r.verdict["valid"], Value::Bool(true), "{}", r.verdict);
    assert!(count(&r, "redelivered") > 0, "{}", r.verdict["anomalies"]);
    assert_eq!(count(&r, "lost"), 0, "{}", r.verdict["anomalies"]);
    assert_eq!(count(&r, "unseen"), 0, "{}", r.verdict["anomalies"]);
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

/// RabbitMQ: a clean run on a quorum queue, and the auto-ack hazard (seed D5 /
/// at-most-once). Two tests, one run each, so that they can run side by side.
mod rabbitmq_clean_and_auto_ack_kill_consumer {
    use crate::common::*;

    #[test]
    fn clean() {
        let clean = run(
            "rabbit-clean",
            &[
                "--broker", "rabbitmq", "--nodes", "1", "--time", "8s", "--rate", "50",
            ],
        );
        assert_eq!(clean.code, 0, "{}", clean.verdict);
        assert_eq!(count(&clean, "lost"), 0);
        assert_eq!(count(&clean, "redelivered"), 0);
        no_leftovers(&clean.dir);
    }

    #[test]
    fn auto_ack_kill_consumer_loses() {
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
}
