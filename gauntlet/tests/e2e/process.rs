//! Broker process faults and partition shapes: seed scenarios D3 (broker killed right
//! after acks), D6 (broker restarted or stalled with a send in flight), D8 (visibility
//! timeout shorter than processing), O5 (consumer-group rebalance), and the partition
//! shapes on a three-node cluster, with faults aimed at the leader.
//!
//! Each test prints what its runs showed and how long they took (`--no-capture`);
//! docs/nemesis.md keeps the figures and the findings.
use crate::common::*;
use serde_json::Value;
use std::time::Instant;

/// Seed D3 on RabbitMQ (one node): a durable classic queue of transient messages
/// loses what it holds when the broker is SIGKILLed; a quorum queue keeps every
/// confirmed message. Consumers are slowed (50 ms a message) so a backlog is queued.
mod d3_rabbitmq_kill_broker_transient_loses_quorum_keeps {
    use super::*;

    fn scenario(name: &str, delivery: &str) -> String {
        format!(
            "name = \"{name}\"\nbroker = \"rabbitmq\"\nnodes = 1\ntime = \"12s\"\nrate = 50.0\nseed = 3\n\
             nemesis = [\"kill-broker\"]\nnemesis-interval = \"5s\"\nnemesis-duration = \"1s\"\n\
             [delivery]\n{delivery}\n[queue]\nprocessing-ms = 50\n"
        )
    }

    #[test]
    fn transient_classic_loses() {
        let t = Instant::now();
        let unsafe_run = run_scenario(
            "d3-transient",
            &scenario(
                "d3-transient",
                "queue-type = \"classic\"\ndurable = true\npersistent = false",
            ),
            &[],
        );
        report(
            "D3 rabbitmq classic, transient messages, kill-broker",
            &unsafe_run,
            t,
        );
        assert_eq!(unsafe_run.code, 1, "{}", unsafe_run.verdict);
        assert!(
            count(&unsafe_run, "lost") > 0,
            "{}",
            unsafe_run.verdict["anomalies"]
        );
        assert_eq!(
            unsafe_run.verdict["guarantees"]["at-least-once"],
            "violated"
        );
        no_leftovers(&unsafe_run.dir);
    }

    #[test]
    fn quorum_keeps() {
        let t = Instant::now();
        // The same kill, aimed at the quorum queue's leader (the one node here): the
        // broker's own answer (`rabbitmqctl list_queues ... leader`) picks the node.
        let safe = run_scenario(
            "d3-quorum",
            &scenario("d3-quorum", "queue-type = \"quorum\"")
                .replace("[\"kill-broker\"]", "[\"kill-broker:leader\"]"),
            &[],
        );
        report("D3 rabbitmq quorum queue, kill-broker:leader", &safe, t);
        assert_eq!(safe.code, 0, "{}", safe.verdict);
        assert_eq!(count(&safe, "lost"), 0, "{}", safe.verdict["anomalies"]);
        assert_eq!(safe.verdict["stats"]["drained"], true);
        let events = nemesis_events(&safe.dir);
        let kill = events
            .iter()
            .find(|e| e["f"] == "kill" && e["type"] == "info")
            .expect("a kill of the leader");
        assert_eq!(kill["value"]["role"], "leader", "{kill}");
        assert_eq!(kill["value"]["node"], "n1", "{kill}");
        no_leftovers(&safe.dir);
    }
}

/// Seed D8 on SQS (moto): processing a batch (6 x 300 ms) outlasts a 1 s visibility
/// timeout, so the queue hands the batch's last messages to another consumer while
/// the first still works on them: `redelivered`. A 30 s timeout: none.
mod d8_sqs_visibility_timeout_shorter_than_processing_redelivers {
    use super::*;

    fn scenario(name: &str, timeout: u64) -> String {
        format!(
            "name = \"{name}\"\nbroker = \"sqs\"\ntime = \"10s\"\nrate = 20.0\nseed = 8\n\
             [delivery]\nvisibility-timeout = {timeout}\n[queue]\nbatch = 6\nprocessing-ms = 300\n"
        )
    }

    #[test]
    fn short_timeout_redelivers() {
        let t = Instant::now();
        let short = run_scenario("d8-short", &scenario("d8-short", 1), &[]);
        report("D8 sqs visibility 1 s, batch 6 x 300 ms", &short, t);
        assert_eq!(short.code, 0, "{}", short.verdict);
        assert!(
            count(&short, "redelivered") > 0,
            "{}",
            short.verdict["anomalies"]
        );
        assert_eq!(count(&short, "lost"), 0);
        assert_eq!(short.verdict["guarantees"]["at-most-once"], "violated");
        let examples = short.verdict["anomalies"]["redelivered"]["examples"]
            .as_array()
            .cloned()
            .unwrap_or_default();
        assert!(
            examples
                .iter()
                .any(|e| e["deliveries"][0]["consumer"] != e["deliveries"][1]["consumer"]),
            "no redelivery to another consumer: {examples:?}"
        );
        no_leftovers(&short.dir);
    }

    #[test]
    fn long_timeout_does_not() {
        let t = Instant::now();
        let long = run_scenario("d8-long", &scenario("d8-long", 30), &[]);
        report("D8 sqs visibility 30 s, batch 6 x 300 ms", &long, t);
        assert_eq!(long.code, 0, "{}", long.verdict);
        assert_eq!(
            count(&long, "redelivered"),
            0,
            "{}",
            long.verdict["anomalies"]
        );
        assert_eq!(count(&long, "lost"), 0);
        no_leftovers(&long.dir);
    }
}

/// The partition shapes and a leader kill on NATS JetStream, three nodes, R3 stream,
/// at-least-once: halves, majorities ring and bridge in turn (a replayed schedule),
/// then `kill-broker:leader`. Every grudge is in the history; nothing confirmed is lost.
#[test]
fn partition_shapes_and_leader_kill_on_nats_r3_lose_nothing() {
    let t = Instant::now();
    let schedule = schedule_file(
        "shapes",
        &[
            (2_000, 3_000, "partition:halves", "n1", 11),
            (7_000, 3_000, "partition:ring", "n1", 12),
            (12_000, 3_000, "partition:bridge", "n1", 13),
            (17_000, 2_000, "kill-broker:leader", "n1", 14),
        ],
    );
    let r = run(
        "nats-shapes",
        &[
            "--broker",
            "nats",
            "--time",
            "21s",
            "--rate",
            "50",
            "--replay",
            &schedule.display().to_string(),
        ],
    );
    report(
        "nats R3 partition:halves,ring,bridge + kill-broker:leader",
        &r,
        t,
    );
    let events = nemesis_events(&r.dir);
    let grudges: Vec<&serde_json::Value> = events
        .iter()
        .filter(|e| e["f"] == "partition" && e["type"] == "info")
        .collect();
    for e in &events {
        eprintln!("  nemesis {} {} {}", e["type"], e["f"], e["value"]);
    }
    assert_eq!(grudges.len(), 3, "{events:?}");
    for (g, shape) in grudges.iter().zip(["halves", "ring", "bridge"]) {
        assert_eq!(g["value"]["shape"], format!("partition:{shape}"), "{g}");
        assert!(g["value"]["grudge"].is_object(), "{g}");
    }
    let kill = events
        .iter()
        .find(|e| e["f"] == "kill" && e["type"] == "info")
        .expect("a kill of the leader");
    assert_eq!(kill["value"]["role"], "leader", "{kill}");
    assert!(kill["value"]["node"].is_string(), "{kill}");
    assert_eq!(r.code, 0, "{}", r.verdict);
    assert_eq!(count(&r, "lost"), 0, "{}", r.verdict["anomalies"]);
    assert_eq!(r.verdict["stats"]["drained"], true);
    no_leftovers(&r.dir);
}

/// Faults a deployment cannot do are refused with the reason, before any op.
#[test]
fn shapes_need_three_nodes_and_leaders_need_a_broker_that_names_one() {
    let (code, err) = run_refused(
        "refuse-shape",
        &[
            "--broker",
            "sqs",
            "--time",
            "2s",
            "--nemesis",
            "partition:halves",
        ],
    );
    assert_eq!(code, 3, "{err}");
    assert!(
        err.contains("partition:halves on sqs: needs at least three nodes"),
        "{err}"
    );
    assert!(
        !err.contains("first op"),
        "refused only after ops began: {err}"
    );
    let (code, err) = run_refused(
        "refuse-leader",
        &[
            "--broker",
            "sqs",
            "--time",
            "2s",
            "--nemesis",
            "pause:leader",
        ],
    );
    assert_eq!(code, 3, "{err}");
    assert!(err.contains("cannot tell which node leads"), "{err}");
    assert!(
        !err.contains("first op"),
        "refused only after ops began: {err}"
    );
    let (code, err) = run_refused(
        "refuse-coordinator",
        &[
            "--broker",
            "redis",
            "--nodes",
            "1",
            "--time",
            "2s",
            "--nemesis",
            "pause:txn-coordinator",
        ],
    );
    assert_eq!(code, 3, "{err}");
    assert!(
        err.contains("cannot tell which node is the txn-coordinator"),
        "{err}"
    );
    assert!(
        !err.contains("first op"),
        "refused only after ops began: {err}"
    );
}

/// Seed D3, safe side, on Redis (primary and two replicas, AOF `appendfsync always`):
/// SIGKILL of the primary, found by asking the nodes (`INFO replication`), loses no
/// acknowledged write.
#[test]
fn d3_redis_kill_primary_with_fsync_always_loses_nothing() {
    let t = Instant::now();
    let r = run(
        "redis-kill-primary",
        &[
            "--broker",
            "redis",
            "--time",
            "12s",
            "--rate",
            "50",
            "--seed",
            "3",
            "--nemesis",
            "kill-broker:leader",
        ],
    );
    report("D3 redis appendfsync always, kill-broker:leader", &r, t);
    let events = nemesis_events(&r.dir);
    let kill = events
        .iter()
        .find(|e| e["f"] == "kill" && e["type"] == "info")
        .expect("a kill of the primary");
    assert_eq!(kill["value"]["node"], "n1", "{kill}");
    assert_eq!(kill["value"]["role"], "leader", "{kill}");
    assert_eq!(r.code, 0, "{}", r.verdict);
    assert_eq!(count(&r, "lost"), 0, "{}", r.verdict["anomalies"]);
    no_leftovers(&r.dir);
}

/// Seed D6 on NATS JetStream (one node), publish retries on. What the seed predicts
/// for a restart mid-batch did not happen: a SIGKILL and restart with a send in flight
/// (`restart-broker:mid-batch`) left no duplicate, because a killed server drops what
/// it had not answered and the retry stores it once. A broker that *stalls* with the
/// batch in flight does duplicate: `pause` for 7 s, longer than the 5 s publish
/// timeout, so each in-flight send is retried while the first copy waits in the
/// frozen server's socket, and both are stored. With `Nats-Msg-Id` dedup: none.
mod d6_nats_restart_mid_batch_and_stall_with_and_without_dedup {
    use super::*;

    /// Paused for 7 s (longer than the 5 s publish timeout) every 3 s.
    fn stall(name: &str, mode: &str) -> String {
        format!(
            "name = \"{name}\"\nbroker = \"nats\"\nnodes = 1\ntime = \"16s\"\nrate = 50.0\nseed = 6\n\
             nemesis = [\"pause\"]\nnemesis-interval = \"3s\"\nnemesis-duration = \"7s\"\n\
             [delivery]\nmode = \"{mode}\"\n"
        )
    }

    #[test]
    fn restart_mid_batch_keeps_at_least_once_and_duplicates_only_sends_in_flight() {
        let t = Instant::now();
        let restart = run(
            "d6-restart",
            &[
                "--broker",
                "nats",
                "--nodes",
                "1",
                "--time",
                "14s",
                "--rate",
                "50",
                "--seed",
                "6",
                "--nemesis",
                "restart-broker:mid-batch",
            ],
        );
        report("D6 nats restart-broker:mid-batch, no dedup", &restart, t);
        let events = nemesis_events(&restart.dir);
        let in_flight = events
            .iter()
            .filter(|e| e["f"] == "restart" && e["value"]["send_in_flight"] == true)
            .count();
        assert!(in_flight >= 1, "no restart hit a send in flight");
        assert_eq!(restart.code, 0, "{}", restart.verdict);
        assert_eq!(
            count(&restart, "lost"),
            0,
            "{}",
            restart.verdict["anomalies"]
        );
        // Stored twice is allowed at-least-once, and happens only to a send the
        // SIGKILL caught between its store and its PubAck (a window of about a
        // millisecond on an idle machine: none; two with two CPU hogs beside it,
        // 2026-12-07): each duplicate's send was under way when a restart began.
        let restarts: Vec<u64> = events
            .iter()
            .filter(|e| e["f"] == "restart")
            .filter_map(|e| e["index"].as_u64())
            .collect();
        let duplicates = restart.verdict["anomalies"]["duplicate-write"]["examples"]
            .as_array()
            .cloned()
            .unwrap_or_default();
        eprintln!(
            "duplicate-write {} (restarts at history index {restarts:?})",
            count(&restart, "duplicate-write")
        );
        for d in &duplicates {
            let (invoke, completion) = (
                d["send_invoke"].as_u64().unwrap_or(0),
                d["send_completion"].as_u64().unwrap_or(u64::MAX),
            );
            assert!(
                restarts.iter().any(|&r| invoke < r && r < completion),
                "a duplicate of a send no restart caught: {d}"
            );
        }
        no_leftovers(&restart.dir);
    }

    #[test]
    fn stall_duplicates() {
        let t = Instant::now();
        let dup = run_scenario("d6-stall", &stall("d6-stall", "at-least-once"), &[]);
        report("D6 nats pause 7 s, retries, no dedup", &dup, t);
        assert!(
            count(&dup, "duplicate-write") > 0,
            "{}",
            dup.verdict["anomalies"]
        );
        assert_eq!(count(&dup, "lost"), 0);
        assert_eq!(dup.verdict["guarantees"]["at-most-once"], "violated");
        no_leftovers(&dup.dir);
    }

    #[test]
    fn stall_with_dedup_does_not() {
        let t = Instant::now();
        let dedup = run_scenario(
            "d6-stall-dedup",
            &stall("d6-stall-dedup", "idempotent"),
            &[],
        );
        report("D6 nats pause 7 s, retries, Nats-Msg-Id dedup", &dedup, t);
        assert_eq!(dedup.code, 0, "{}", dedup.verdict);
        assert_eq!(
            count(&dedup, "duplicate-write"),
            0,
            "{}",
            dedup.verdict["anomalies"]
        );
        assert_eq!(count(&dedup, "lost"), 0);
        no_leftovers(&dedup.dir);
    }
}

/// Seed O5 on the Kafka protocol (tansu, 3 partitions, two consumers of one group,
/// commit after processing): a member killed before it committed; the group gives its
/// partition to another member, which reads again from the last committed offset
/// (`redelivered`: the same partition and offsets, by another consumer: a live
/// member, or the drain's when the rebalance has not finished by then), and no
/// key is read out of order.
///
/// One kill, early, from an explicit schedule: the group hands the partition over only
/// after the dead member's session times out (6 s) and the group has rejoined: 4.4
/// and 8 s after the kill measured here (2026-12-04). A seeded schedule with a second
/// kill 5 s after the first restarted that rebalance, and once in CI nothing was
/// handed over in the 13 s left before the drain.
#[test]
fn o5_kafka_group_rebalance_redelivers_from_the_commit_in_key_order() {
    let t = Instant::now();
    let schedule = results_dir("o5-kafka-schedule").with_extension("toml");
    std::fs::write(
        &schedule,
        "seed = 5\n\n[[fault]]\nat_ms = 3000\nduration_ms = 0\n\
         fault = \"kill-consumer:before-ack\"\ntarget = \"n1\"\npick = 1\n",
    )
    .expect("write schedule");
    let replay = schedule.display().to_string();
    let r = run(
        "o5-kafka",
        &[
            "--broker",
            "kafka",
            "--time",
            "24s",
            "--rate",
            "50",
            "--seed",
            "5",
            "--replay",
            &replay,
            "--expect",
            "at-least-once,key-order",
        ],
    );
    let _ = std::fs::remove_file(&schedule);
    report("O5 kafka kill-consumer:before-ack (group rebalance)", &r, t);
    assert_eq!(r.code, 0, "{}", r.verdict);
    assert_eq!(count(&r, "lost"), 0, "{}", r.verdict["anomalies"]);
    assert_eq!(count(&r, "key-order"), 0, "{}", r.verdict["anomalies"]);
    assert!(count(&r, "redelivered") > 0, "{}", r.verdict["anomalies"]);
    // Where the drain began: redeliveries before it came from a rebalance.
    let history = std::fs::read_to_string(r.dir.join("history.jsonl")).expect("history");
    let drain = history
        .lines()
        .filter_map(|l| serde_json::from_str::<serde_json::Value>(l).ok())
        .find(|e| e["f"] == "phase" && e["value"] == "drain")
        .and_then(|e| e["index"].as_u64())
        .expect("a drain phase");
    // Every delivery of the run, read from the history (the verdict's examples are
    // capped at ten, and the one that shows the hand-over may not be among them):
    // a record delivered to one consumer and again to another before the drain.
    let mut deliveries: std::collections::HashMap<(u64, u64), Vec<(u64, u64)>> =
        std::collections::HashMap::new();
    for e in history
        .lines()
        .filter_map(|l| serde_json::from_str::<serde_json::Value>(l).ok())
        .filter(|e| e["f"] == "poll" && e["type"] == "ok")
    {
        let (Some(process), Some(index)) = (e["process"].as_u64(), e["index"].as_u64()) else {
            continue;
        };
        for m in e["value"].as_array().into_iter().flatten() {
            if let (Some(p), Some(o)) = (m["partition"].as_u64(), m["offset"].as_u64()) {
                deliveries.entry((p, o)).or_default().push((process, index));
            }
        }
    }
    // Another consumer reads again from the last commit: a live member after
    // the rebalance, or, when the group has not handed the partition over by
    // then (a CI run of 2026-12-06: 16 records of partition 1, all read again by
    // the drain's consumer), the drain. Either shows the uncommitted records
    // coming back from the commit to someone else.
    let again_by_another = |before: u64| {
        deliveries.values().any(|d| {
            d.iter().any(|&(first, i)| {
                d.iter()
                    .any(|&(second, j)| second != first && i < j && j < before)
            })
        })
    };
    eprintln!(
        "O5 kafka: handed over before the drain: {}",
        again_by_another(drain)
    );
    assert!(
        again_by_another(u64::MAX),
        "no record delivered to one consumer and again to another; {} records delivered",
        deliveries.len()
    );
    no_leftovers(&r.dir);
}

/// Seed D3 on the Kafka protocol, a finding about the local broker: tansu (memory
/// storage, one node) forgets every topic on a restart, even with `acks=all`. The
/// producers go on: their sends are acknowledged into a topic created afresh, from
/// offset 0 again, so offsets that held one value before the restart hold another
/// after it (`inconsistent-offsets`, in every run). How much is `lost` depends on
/// timing: the sends acknowledged and not yet consumed when the broker went down
/// (none when the consumers had caught up, as in one CI run), plus, when the
/// consumers keep positions past the new topic's offsets, every send after the
/// restart. So the count is printed, not asserted.
#[test]
fn d3_kafka_tansu_restart_forgets_acknowledged_records() {
    let t = Instant::now();
    let r = run(
        "d3-tansu",
        &[
            "--broker",
            "kafka",
            "--image",
            gauntlet_harness::brokers::kafka::MEMORY_IMAGE,
            "--time",
            "12s",
            "--rate",
            "50",
            "--seed",
            "3",
            "--nemesis",
            "restart-broker",
        ],
    );
    report("D3 kafka (tansu, memory) restart-broker, acks=all", &r, t);
    assert_eq!(r.code, 1, "{}", r.verdict);
    assert!(
        count(&r, "inconsistent-offsets") > 0,
        "{}",
        r.verdict["anomalies"]
    );
    no_leftovers(&r.dir);
}

/// Seed D3 on the durable Kafka cluster (three tansu brokers on PostgreSQL with
/// `fsync=on`, `synchronous_commit=on`): a SIGKILL and restart of a broker with a
/// send in flight loses nothing acknowledged, and no offset holds two values.
#[test]
fn d3_kafka_durable_restart_mid_batch_loses_nothing() {
    let t = Instant::now();
    let r = run(
        "d3-kafka-durable",
        &[
            "--broker",
            "kafka",
            "--time",
            "14s",
            "--rate",
            "50",
            "--seed",
            "3",
            "--nemesis",
            "restart-broker:mid-batch",
        ],
    );
    report(
        "D3 kafka (tansu on PostgreSQL) restart-broker:mid-batch",
        &r,
        t,
    );
    let events = nemesis_events(&r.dir);
    let restarts: Vec<&Value> = events
        .iter()
        .filter(|e| e["type"] == "info" && e["f"] == "restarted")
        .collect();
    assert!(!restarts.is_empty(), "no restart happened: {events:?}");
    for e in &restarts {
        assert!(e["value"].get("error").is_none(), "restart failed: {e}");
    }
    assert_eq!(count(&r, "lost"), 0, "{}", r.verdict["anomalies"]);
    assert_eq!(
        count(&r, "inconsistent-offsets"),
        0,
        "{}",
        r.verdict["anomalies"]
    );
    assert_eq!(
        r.verdict["stats"]["drained"],
        Value::Bool(true),
        "{}",
        r.verdict
    );
    assert_eq!(
        r.verdict["guarantees"]["at-least-once"], "holds",
        "{}",
        r.verdict
    );
    assert!(
        std::path::Path::new(&r.dir)
            .join("nodes")
            .join("storage.log")
            .is_file(),
        "the storage node's log is collected"
    );
    no_leftovers(&r.dir);
}

/// The storage node is a node of the deployment: `kill-broker:storage` SIGKILLs
/// PostgreSQL under the brokers and the heal starts it again; with `fsync=on` and
/// `synchronous_commit=on` every acknowledged send survives it.
#[test]
fn kafka_durable_kill_of_the_storage_node_loses_nothing_acknowledged() {
    let t = Instant::now();
    let r = run(
        "kafka-kill-storage",
        &[
            "--broker",
            "kafka",
            "--time",
            "14s",
            "--rate",
            "50",
            "--seed",
            "5",
            "--nemesis",
            "kill-broker:storage",
        ],
    );
    report("kafka (tansu on PostgreSQL) kill-broker:storage", &r, t);
    let events = nemesis_events(&r.dir);
    let kills: Vec<&Value> = events
        .iter()
        .filter(|e| e["type"] == "info" && e["f"] == "kill")
        .collect();
    assert!(!kills.is_empty(), "no kill happened: {events:?}");
    for e in &kills {
        assert_eq!(e["value"]["node"], "storage", "{e}");
        assert!(e["value"].get("error").is_none(), "kill failed: {e}");
    }
    assert_eq!(count(&r, "lost"), 0, "{}", r.verdict["anomalies"]);
    assert_eq!(
        r.verdict["stats"]["drained"],
        Value::Bool(true),
        "{}",
        r.verdict
    );
    no_leftovers(&r.dir);
}

/// Seed D3's negative control on the durable Kafka cluster: PostgreSQL with
/// `fsync` and `synchronous_commit` off acknowledges commits still in its memory;
/// SIGKILLed under load, it loses acknowledged sends, and the brokers hand their
/// offsets to later messages. Gauntlet must catch it (measured by hand at 150/s:
/// 42 of 3007 lost, 42 offsets reused).
#[test]
fn d3_kafka_storage_without_fsync_killed_loses_acknowledged_sends() {
    let t = Instant::now();
    let r = run_scenario(
        "kafka-storage-unsafe",
        r#"name = "kafka-storage-unsafe"
broker = "kafka"
time = "20s"
rate = 150
seed = 5
expect = ["at-least-once"]
nemesis = ["kill-broker:storage"]
nemesis-interval = "4s"

[storage]
fsync = false
synchronous-commit = false
"#,
        &[],
    );
    report(
        "D3 kafka storage fsync=off synchronous_commit=off, kill-broker:storage",
        &r,
        t,
    );
    assert_eq!(r.code, 1, "{}", r.verdict);
    assert!(count(&r, "lost") > 0, "{}", r.verdict["anomalies"]);
    assert_eq!(r.verdict["guarantees"]["at-least-once"], "violated");
    let storage_log =
        std::fs::read_to_string(r.dir.join("nodes").join("storage.log")).expect("storage.log");
    assert!(storage_log.contains("PostgreSQL 17"), "{storage_log}");
    no_leftovers(&r.dir);
}
