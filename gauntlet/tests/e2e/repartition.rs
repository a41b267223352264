//! Seed O4 on the Kafka protocol (the durable cluster: three tansu brokers on
//! PostgreSQL): partitions added while keys are in flight (`add-partitions`).
//! With librdkafka's partitioner most keys move to another partition; the
//! consumers lag, so a moved key's earlier messages wait on the old partition
//! while its later ones are delivered from the new one (by another consumer,
//! or the drain), and the group receives some key's later message before its
//! earlier one (`repartition-key-order`); with the pinned partitioner no key
//! moves and key order holds. Both runs replay one schedule:
//! the partitions are added 6 s into a 20 s run.
use crate::common::*;
use serde_json::Value;
use std::time::Instant;

const UNSAFE: &str = include_str!("../../../ci/scenarios/kafka-add-partitions.toml");
const SAFE: &str = include_str!("../../../ci/scenarios/kafka-add-partitions-pinned.toml");

/// Runs a scenario with `add-partitions` at 6 s.
fn run_o4(name: &str, toml: &str) -> Run {
    let schedule = schedule_file(name, &[(6000, 0, "add-partitions", "n1", 0)]);
    let replay = schedule.display().to_string();
    let r = run_scenario(name, toml, &["--replay", &replay]);
    let _ = std::fs::remove_file(&schedule);
    r
}

/// The `add-partitions` info of the run: it says where and how, and each topic's counts.
fn change_event(r: &Run) -> Value {
    let events = nemesis_events(&r.dir);
    let done = events
        .iter()
        .find(|e| e["f"] == "add-partitions" && e["type"] == "info")
        .cloned()
        .unwrap_or_else(|| panic!("no add-partitions info among {events:?}"));
    eprintln!("O4 change: {done}");
    assert!(done.get("error").is_none(), "{done}");
    let v = &done["value"];
    assert_eq!(v["via"], "storage", "{done}");
    assert_eq!(v["node"], "storage", "{done}");
    assert_eq!(v["instant"], true, "{done}");
    let topic = v["topics"]
        .as_array()
        .and_then(|ts| ts.iter().find(|t| t["topic"] == "gauntlet"))
        .unwrap_or_else(|| panic!("no topic gauntlet in {done}"));
    assert_eq!(
        (&topic["partitions_before"], &topic["partitions_after"]),
        (&Value::from(3), &Value::from(5)),
        "{done}"
    );
    done
}

/// (sends stored on an added partition, deliveries from one) in the history.
fn on_added_partitions(r: &Run) -> (u64, u64) {
    let (mut sent, mut delivered) = (0, 0);
    for e in history_events(&r.dir.join("history.jsonl")) {
        if e["type"] != "ok" {
            continue;
        }
        let added = |m: &Value| m["partition"].as_u64().is_some_and(|p| p >= 3);
        match e["f"].as_str() {
            Some("send") if added(&e["value"]) => sent += 1,
            Some("poll") => {
                delivered += e["value"]
                    .as_array()
                    .map_or(0, |ms| ms.iter().filter(|m| added(m)).count() as u64)
            }
            _ => {}
        }
    }
    (sent, delivered)
}

#[test]
fn o4_kafka_add_partitions_moves_keys_and_breaks_key_order_across_the_group() {
    let t = Instant::now();
    let r = run_o4("o4-hash", UNSAFE);
    report("O4 kafka add-partitions, librdkafka's partitioner", &r, t);
    let change = change_event(&r);
    let (sent, delivered) = on_added_partitions(&r);
    let n = count(&r, "repartition-key-order");
    eprintln!(
        "O4 hash: repartition-key-order {n}, sends to the added partitions {sent}, \
         deliveries from them {delivered}, key-order {}, gap {}",
        count(&r, "key-order"),
        count(&r, "gap")
    );
    // The producers saw the new count within the run and hashed keys onto it, and the
    // group (or at the latest the drain) read the new partitions.
    assert!(sent > 0, "no send went to an added partition");
    assert!(delivered > 0, "nothing was read from an added partition");
    assert_eq!(count(&r, "lost"), 0, "{}", r.verdict["anomalies"]);
    assert!(n > 0, "{}", r.verdict["anomalies"]);
    assert_eq!(r.code, 1, "{}", r.verdict);
    assert_eq!(r.verdict["guarantees"]["key-order"], "violated");
    // The example names the change, the key's two partitions and both messages.
    let ex = &r.verdict["anomalies"]["repartition-key-order"]["examples"][0];
    eprintln!("O4 hash example: {ex}");
    assert_eq!(ex["change"], change["index"], "{ex}");
    assert_ne!(ex["old_partition"], ex["new_partition"], "{ex}");
    assert!(
        ex["received_first"]["delivered_by"].as_u64() < ex["sent_first"]["delivered_by"].as_u64(),
        "{ex}"
    );
    // The report marks the moment.
    let html = std::fs::read_to_string(r.dir.join("report.html")).expect("report.html");
    assert!(html.contains("partitions added") && html.contains("gauntlet from 3 to 5"));
    no_leftovers(&r.dir);
}

#[test]
fn o4_kafka_add_partitions_with_pinned_keys_keeps_key_order() {
    let t = Instant::now();
    let r = run_o4("o4-pinned", SAFE);
    report("O4 kafka add-partitions, pinned partitioner", &r, t);
    change_event(&r);
    let (sent, delivered) = on_added_partitions(&r);
    eprintln!(
        "O4 pinned: repartition-key-order {}, sends to the added partitions {sent}, \
         deliveries from them {delivered}",
        count(&r, "repartition-key-order")
    );
    // The partitions were added, but no key moved onto them.
    assert_eq!(sent, 0);
    assert_eq!(
        count(&r, "repartition-key-order"),
        0,
        "{}",
        r.verdict["anomalies"]
    );
    assert_eq!(count(&r, "key-order"), 0, "{}", r.verdict["anomalies"]);
    assert_eq!(count(&r, "lost"), 0, "{}", r.verdict["anomalies"]);
    assert_eq!(r.code, 0, "{}", r.verdict);
    no_leftovers(&r.dir);
}

#[test]
fn o4_add_partitions_is_refused_where_no_partition_can_be_added() {
    // Before anything is deployed: a broker without partitions, and tansu's memory build.
    let (code, err) = run_refused(
        "o4-redis",
        &[
            "--broker",
            "redis",
            "--nemesis",
            "add-partitions",
            "--time",
            "5s",
        ],
    );
    eprintln!("O4 refused on redis: exit {code}: {}", err.trim());
    assert_eq!(code, 3, "{err}");
    assert!(err.contains("add-partitions on redis"), "{err}");
    let (code, err) = run_refused(
        "o4-memory",
        &[
            "--broker",
            "kafka",
            "--image",
            "gauntlet/kafka:tansu-memory-0.6.0-510f3e2",
            "--nemesis",
            "add-partitions",
            "--time",
            "5s",
        ],
    );
    eprintln!(
        "O4 refused on the memory build: exit {code}: {}",
        err.trim()
    );
    assert_eq!(code, 3, "{err}");
    assert!(err.contains("tansu-memory"), "{err}");
}
