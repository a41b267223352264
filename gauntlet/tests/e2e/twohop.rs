//! O7 on NATS JetStream and the Kafka protocol: the `two-hop` workload (producers -> stream A ->
//! transformers -> stream B -> consumers, docs/twohop.md). Three transformers
//! sharing A's durable consumer break a key's order on the second hop
//! (`two-hop-order`, which the test recounts from the history itself); one
//! transformer keeps it, also when the nemesis kills it between its sends and
//! its ack (then inputs are transformed twice: `two-hop-duplicate`, order
//! intact). On Kafka, three transformers in one consumer group never share a
//! partition, so a key's order holds through both hops, until each transformer
//! runs a pool of workers that send outputs as their transforms end.
use crate::common::*;
use serde_json::Value;
use std::collections::{HashMap, HashSet};
use std::time::Instant;

/// Outputs a run must have sent for its order to be judged. A run's outputs
/// follow the machine's speed (368 of the shared-input run's on a loaded
/// machine, 700 on an idle one): the bound says the pipeline ran, the anomaly
/// counts say what it did.
const MIN_OUTPUTS: u64 = 100;

const SHARED: &str = include_str!("../../../ci/scenarios/nats-two-hop-shared-input.toml");
const ONE: &str = include_str!("../../../ci/scenarios/nats-two-hop-one-transformer.toml");

/// `two-hop-order` recounted from the history, by the definition of
/// docs/twohop.md for a history with one producer of inputs (whose values
/// rise in send order): per consumer of B and per key, the first output of
/// each input, in delivery order; an output counts when one delivered after
/// it came from a smaller input.
fn recount_order(dir: &std::path::Path) -> (u64, u64, u64) {
    let text = std::fs::read_to_string(dir.join("history.jsonl")).expect("history.jsonl");
    let mut input_of: HashMap<i64, i64> = HashMap::new();
    let mut lines: HashMap<(u64, String), Vec<i64>> = HashMap::new();
    let mut seen: HashSet<(u64, i64)> = HashSet::new();
    let mut outputs_per_input: HashMap<i64, HashSet<i64>> = HashMap::new();
    for line in text.lines() {
        let op: Value = serde_json::from_str(line).expect("history line");
        match (op["f"].as_str(), op["type"].as_str()) {
            // The invoke names the input (a consumer may get an output before
            // its send's ok is recorded).
            (Some("send"), Some("invoke")) => {
                if let Some(i) = op["value"]["input"].as_i64() {
                    let v = op["value"]["value"].as_i64().unwrap_or(-1);
                    input_of.insert(v, i);
                }
            }
            (Some("send"), Some("ok")) => {
                if let Some(i) = op["value"]["input"].as_i64() {
                    let v = op["value"]["value"].as_i64().unwrap_or(-1);
                    outputs_per_input.entry(i).or_default().insert(v);
                }
            }
            (Some("poll"), Some("ok")) => {
                let p = op["process"].as_u64().unwrap_or(u64::MAX);
                for m in op["value"].as_array().into_iter().flatten() {
                    let v = m["value"].as_i64().unwrap_or(-1);
                    let Some(&i) = input_of.get(&v) else { continue };
                    if seen.insert((p, i)) {
                        let k = m["key"].as_str().unwrap_or("").to_string();
                        lines.entry((p, k)).or_default().push(i);
                    }
                }
            }
            _ => {}
        }
    }
    let mut early = 0;
    for l in lines.values() {
        let mut min_after = i64::MAX;
        for &i in l.iter().rev() {
            if min_after < i {
                early += 1;
            }
            min_after = min_after.min(i);
        }
    }
    let dups = outputs_per_input.values().filter(|o| o.len() > 1).count() as u64;
    let outputs = outputs_per_input.values().map(|o| o.len() as u64).sum();
    (early, dups, outputs)
}

/// Runs a two-hop scenario for 12 s and prints its figures under `label`.
fn run_two_hop(name: &str, toml: &str, label: &str) -> Run {
    let started = Instant::now();
    let r = run_scenario(name, toml, &["--time", "12s"]);
    print(label, &r, started);
    r
}

fn print(label: &str, r: &Run, started: Instant) {
    let places: Vec<String> = r.verdict["anomalies"]["two-hop-order"]["examples"]
        .as_array()
        .into_iter()
        .flatten()
        .map(|e| e["broke_at"].as_str().unwrap_or("?").to_string())
        .collect();
    eprintln!(
        "{label}: exit {}, inputs+outputs sent ok {}, two-hop-order {}, two-hop-duplicate {}, \
         two-hop-lost {}, lost {}, key-order {}, example places {places:?} ({:.0} s wall)",
        r.code,
        r.verdict["stats"]["sends_ok"],
        count(r, "two-hop-order"),
        count(r, "two-hop-duplicate"),
        count(r, "two-hop-lost"),
        count(r, "lost"),
        count(r, "key-order"),
        started.elapsed().as_secs_f64()
    );
}

mod nats_two_hop_shared_transformers_reorder_a_key_one_transformer_keeps_it {
    use super::*;

    #[test]
    fn shared_transformers_reorder() {
        let unsafe_run = run_two_hop("two-hop-shared", SHARED, "three transformers sharing A");
        let (early, _, outputs) = recount_order(&unsafe_run.dir);
        eprintln!("recounted from the history: {early} outputs early of {outputs}");
        assert!(outputs > MIN_OUTPUTS, "only {outputs} outputs sent");
        assert!(early > 0, "three transformers kept every key's order");
        assert_eq!(count(&unsafe_run, "two-hop-order"), early);
        assert_eq!(unsafe_run.verdict["guarantees"]["key-order"], "violated");
        assert_eq!(count(&unsafe_run, "two-hop-lost"), 0);
        assert_eq!(count(&unsafe_run, "lost"), 0);
        for e in unsafe_run.verdict["anomalies"]["two-hop-order"]["examples"]
            .as_array()
            .into_iter()
            .flatten()
        {
            let at = e["broke_at"].as_str().unwrap_or("");
            assert!(
                ["input", "transformer", "second-hop"].contains(&at),
                "an order breach not traced: {e}"
            );
            assert_ne!(
                e["received_first"]["transformer"],
                Value::Null,
                "the transformer is named: {e}"
            );
        }
        assert_eq!(unsafe_run.code, 1, "{}", unsafe_run.verdict);
        assert_eq!(unsafe_run.verdict["stats"]["drained"], Value::Bool(true));
        no_leftovers(&unsafe_run.dir);
    }

    #[test]
    fn one_transformer_keeps() {
        let safe = run_two_hop("two-hop-one", ONE, "one transformer");
        let (early, dups, outputs) = recount_order(&safe.dir);
        assert!(outputs > MIN_OUTPUTS, "only {outputs} outputs sent");
        assert_eq!((early, dups), (0, 0));
        for a in ["two-hop-order", "two-hop-duplicate", "two-hop-lost", "lost"] {
            assert_eq!(count(&safe, a), 0, "{a}: {}", safe.verdict["anomalies"][a]);
        }
        assert_eq!(safe.verdict["valid"], Value::Bool(true), "{}", safe.verdict);
        assert_eq!(safe.code, 0);
        assert_run_folder(&safe.dir);
        no_leftovers(&safe.dir);
    }
}

#[test]
fn nats_two_hop_killed_transformers_duplicate_outputs_and_keep_the_order() {
    let toml = ONE
        .replace(
            "name = \"nats-two-hop-one-transformer\"",
            "name = \"nats-two-hop-kill\"",
        )
        .replace(
            "expect = [\"at-least-once\", \"key-order\"]",
            "expect = [\"at-least-once\"]\nnemesis = [\"kill-consumer:before-ack\"]\nnemesis-interval = \"3s\"",
        )
        .replace("processing-ms = 10\n", "processing-ms = 10\ncrash-rate = 0.1\n");
    assert!(
        toml.contains("crash-rate = 0.1") && toml.contains("kill-consumer"),
        "{toml}"
    );
    let r = run_two_hop(
        "two-hop-kill",
        &toml,
        "one transformer, killed before its ack",
    );
    let kills: Vec<Value> = nemesis_events(&r.dir)
        .into_iter()
        .filter(|e| e["type"] == "info" && e["value"]["transformer"] == Value::Bool(true))
        .collect();
    let failed = nemesis_events(&r.dir)
        .into_iter()
        .filter(|e| e["type"] == "info" && e["value"]["error"].is_string())
        .count();
    let (early, dups, outputs) = recount_order(&r.dir);
    eprintln!(
        "transformers killed by the nemesis: {} (failed faults {failed}); recounted: {early} \
         outputs early, {dups} inputs transformed twice or more, {outputs} outputs",
        kills.len()
    );
    assert!(!kills.is_empty(), "the nemesis killed no transformer");
    assert!(dups > 0, "no kill left an input to be transformed again");
    assert_eq!(count(&r, "two-hop-duplicate"), dups);
    assert_eq!(early, 0);
    assert_eq!(count(&r, "two-hop-order"), 0);
    assert_eq!(count(&r, "two-hop-lost"), 0);
    assert_eq!(r.verdict["guarantees"]["at-least-once"], "holds");
    assert_eq!(r.verdict["guarantees"]["at-most-once"], "violated");
    assert_eq!(r.code, 0, "{}", r.verdict);
    no_leftovers(&r.dir);
}

#[test]
fn two_hop_is_refused_on_a_broker_that_cannot_run_it() {
    let (code, err) = run_refused(
        "two-hop-redis",
        &["--broker", "redis", "--workload", "two-hop", "--time", "2s"],
    );
    assert_eq!(code, 3, "{err}");
    assert!(
        err.contains("two-hop workload") && err.contains("redis"),
        "{err}"
    );
    assert!(!err.contains("first op"), "refused after ops began: {err}");
}

const KAFKA_GROUP: &str = include_str!("../../../ci/scenarios/kafka-two-hop-group.toml");

#[test]
fn kafka_two_hop_transformers_in_one_group_keep_each_keys_order() {
    let r = run_two_hop(
        "two-hop-kafka",
        KAFKA_GROUP,
        "kafka, three transformers in one group",
    );
    let text = std::fs::read_to_string(r.dir.join("history.jsonl")).expect("history.jsonl");
    // Which transformers read inputs (topic `gauntlet`), and from which partitions.
    let mut readers: HashMap<u64, HashSet<i64>> = HashMap::new();
    for line in text.lines() {
        let op: Value = serde_json::from_str(line).expect("history line");
        if op["f"] == "poll" && op["type"] == "ok" {
            for m in op["value"].as_array().into_iter().flatten() {
                if m["topic"] == "gauntlet" {
                    readers
                        .entry(op["process"].as_u64().unwrap_or(u64::MAX))
                        .or_default()
                        .insert(m["partition"].as_i64().unwrap_or(-1));
                }
            }
        }
    }
    let (early, dups, outputs) = recount_order(&r.dir);
    eprintln!(
        "transformers that read inputs, with their partitions: {readers:?}; recounted: {early} \
         outputs early, {dups} inputs transformed twice or more, {outputs} outputs"
    );
    assert!(outputs > MIN_OUTPUTS, "only {outputs} outputs sent");
    assert!(
        readers.len() >= 2,
        "one transformer did all the work: {readers:?}"
    );
    assert_eq!(early, 0);
    assert_eq!(count(&r, "two-hop-order"), 0);
    assert_eq!(count(&r, "two-hop-lost"), 0);
    assert_eq!(count(&r, "two-hop-duplicate"), dups);
    assert_eq!(r.verdict["guarantees"]["key-order"], "holds");
    assert_eq!(r.code, 0, "{}", r.verdict);
    no_leftovers(&r.dir);
}

const KAFKA_WORKERS: &str = include_str!("../../../ci/scenarios/kafka-two-hop-workers.toml");

/// O7's unsafe side on Kafka: the same group of three transformers, each with a
/// pool of four workers that send each output as its own transform ends. A
/// key's later input overtakes an earlier one inside the transformer: the
/// consumer of B gets F2 before F1, and the checker says the order broke in the
/// transformer (the transformer read the inputs in order).
#[test]
fn kafka_two_hop_worker_pool_in_a_transformer_reorders_a_key() {
    let r = run_two_hop(
        "two-hop-kafka-workers",
        KAFKA_WORKERS,
        "kafka, three transformers, four workers each",
    );
    let (early, dups, outputs) = recount_order(&r.dir);
    eprintln!("recounted: {early} outputs early, {dups} inputs transformed twice or more, {outputs} outputs");
    assert!(outputs > MIN_OUTPUTS, "only {outputs} outputs sent");
    assert!(early > 0, "no output overtook another");
    assert_eq!(
        count(&r, "two-hop-order"),
        early,
        "{}",
        r.verdict["anomalies"]
    );
    assert_eq!(count(&r, "two-hop-lost"), 0);
    let places: Vec<String> = r.verdict["anomalies"]["two-hop-order"]["examples"]
        .as_array()
        .into_iter()
        .flatten()
        .map(|e| e["broke_at"].as_str().unwrap_or("?").to_string())
        .collect();
    assert!(
        places.iter().any(|p| p == "transformer"),
        "no example traced to the transformer: {places:?}"
    );
    assert_eq!(r.verdict["guarantees"]["key-order"], "violated");
    assert_eq!(r.code, 1, "{}", r.verdict["anomalies"]);
    no_leftovers(&r.dir);
}
