//! Many sends in flight (issue 25): pipelined producers on every broker that
//! pipelines, and faults that strike a busy broker.
use crate::common::*;
use serde_json::Value;
use std::collections::HashMap;
use std::path::Path;
use std::time::Instant;

/// Where the broker stored each acknowledged send, per producer, in the order the
/// producer invoked them: `(sends, inversions)`, an inversion being a send stored
/// before one its producer invoked earlier. Positions: Redis's stream ids
/// (`ms-seq`), NATS's stream sequence (`offset`).
fn write_order(dir: &Path) -> (usize, usize) {
    type Position = (u64, u64);
    let mut invoked: HashMap<u64, (u64, u64)> = HashMap::new();
    let mut stored: HashMap<u64, Vec<(u64, Position)>> = HashMap::new();
    for v in history_events(&dir.join("history.jsonl")) {
        if v["f"] != "send" {
            continue;
        }
        let (Some(p), Some(index)) = (v["process"].as_u64(), v["index"].as_u64()) else {
            continue;
        };
        if v["type"] == "invoke" {
            if let Some(producer) = v["producer"].as_u64() {
                invoked.insert(p, (producer, index));
            }
            continue;
        }
        if v["type"] != "ok" {
            continue;
        }
        let Some((producer, at)) = invoked.get(&p).copied() else {
            continue;
        };
        let position = if let Some(o) = v["value"]["offset"].as_u64() {
            (o, 0)
        } else if let Some((ms, seq)) = v["value"]["id"].as_str().and_then(|i| i.split_once('-')) {
            (ms.parse().unwrap_or(0), seq.parse().unwrap_or(0))
        } else {
            continue;
        };
        stored.entry(producer).or_default().push((at, position));
    }
    let (mut sends, mut inversions) = (0, 0);
    for list in stored.values_mut() {
        list.sort_unstable();
        sends += list.len();
        inversions += list.windows(2).filter(|w| w[1].1 < w[0].1).count();
    }
    (sends, inversions)
}

/// Each broker whose client pipelines takes 32 sends in flight per producer at
/// full rate, with no fault: every send recorded with its own invoke and
/// completion, nothing lost, and, where the broker says where it stored a send
/// (Redis, NATS), each producer's sends stored in the order it invoked them.
/// (What consumers see is another matter: RabbitMQ requeues what the stopped
/// workers had prefetched, so the drain may get it after later messages.)
mod pipelined_producers_on_redis_nats_and_rabbitmq_lose_nothing_and_store_in_producer_order {
    use super::*;

    /// `broker` on `nodes` nodes, 32 sends in flight per producer at full rate.
    fn pipelined(broker: &str, nodes: &str) {
        let t = Instant::now();
        let r = run(
            &format!("pipelined-{broker}"),
            &[
                "--broker",
                broker,
                "--nodes",
                nodes,
                "--nemesis",
                "none",
                "--time",
                "8s",
                "--rate",
                "max",
                "--in-flight",
                "32",
                "--seed",
                "25",
            ],
        );
        report(&format!("{broker} in-flight 32, rate max"), &r, t);
        let (overlapped, most) = overlap(&r.dir);
        eprintln!(
            "{broker}: sends_ok_per_s {}, {overlapped} sends overlapped another of their producer, at most {most} open at once",
            r.verdict["stats"]["sends_ok_per_s"]
        );
        let (stored, inversions) = write_order(&r.dir);
        eprintln!(
            "{broker}: {stored} sends with a position, {inversions} stored out of their producer's order; \
             producer-order as consumed {}",
            count(&r, "producer-order")
        );
        assert_eq!(r.code, 0, "{broker}: {}", r.verdict);
        assert_eq!(count(&r, "lost"), 0, "{broker}: {}", r.verdict["anomalies"]);
        if broker != "rabbitmq" {
            assert!(
                stored > 1000,
                "{broker}: only {stored} sends say where they were stored"
            );
            assert_eq!(inversions, 0, "{broker}: sends stored out of order");
        }
        assert!(
            overlapped > 100,
            "{broker}: only {overlapped} sends overlapped"
        );
        assert!(most > 1, "{broker}: never more than one send open");
        assert_eq!(r.verdict["stats"]["drained"], Value::Bool(true));
        no_leftovers(&r.dir);
    }

    #[test]
    fn redis() {
        pipelined("redis", "1");
    }

    #[test]
    fn nats() {
        pipelined("nats", "3");
    }

    #[test]
    fn rabbitmq() {
        pipelined("rabbitmq", "1");
    }
}

/// Seed D3 on a busy Redis: one node with `appendfsync always`, two producers with
/// 64 sends in flight each at full rate, and `restart-broker:mid-batch`: the
/// SIGKILL catches many sends under way (printed), which end unknown or failed;
/// every acknowledged one was fsynced first, so nothing acknowledged is lost.
#[test]
fn busy_redis_restart_mid_batch_with_fsync_always_loses_nothing() {
    let t = Instant::now();
    let r = run(
        "busy-redis-restart",
        &[
            "--broker",
            "redis",
            "--nodes",
            "1",
            "--time",
            "15s",
            "--rate",
            "max",
            "--in-flight",
            "64",
            "--seed",
            "25",
            "--nemesis",
            "restart-broker:mid-batch",
        ],
    );
    report("busy redis restart-broker:mid-batch, always", &r, t);
    let caught: Vec<i64> = nemesis_events(&r.dir)
        .iter()
        .filter(|e| e["f"] == "restart" && e["value"]["mid_batch"] == true)
        .filter_map(|e| e["value"]["sends_in_flight"].as_i64())
        .collect();
    eprintln!(
        "sends in flight as each restart struck: {caught:?}; sends info {}, fail {}",
        r.verdict["stats"]["sends_info"], r.verdict["stats"]["sends_fail"]
    );
    assert!(!caught.is_empty(), "no mid-batch restart in the history");
    assert!(
        caught.iter().any(|&n| n >= 10),
        "no restart caught 10 sends or more in flight: {caught:?}"
    );
    assert_eq!(r.code, 0, "{}", r.verdict);
    assert_eq!(count(&r, "lost"), 0, "{}", r.verdict["anomalies"]);
    no_leftovers(&r.dir);
}

/// The `kafka-acks1-inflight5` negative control (seed D2) at its own rate, and
/// on a busy broker (rate 2000, 32 sends in flight per producer), both for 12 s
/// (ack-loss every 4 s) and side by side: the busy
/// run finds more duplicate writes per ack-loss fault, because each lost reply
/// now stands for many sends that librdkafka retries. Both counts are printed.
#[test]
fn kafka_acks1_inflight5_finds_more_duplicates_per_fault_when_busy() {
    let file = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../ci/scenarios/kafka-acks1-inflight5.toml"
    );
    let per_fault = |r: &Run| {
        let faults = nemesis_events(&r.dir)
            .iter()
            .filter(|e| e["f"] == "ack-loss")
            .count()
            .max(1) as f64;
        (count(r, "duplicate-write"), faults)
    };
    let t = Instant::now();
    let (today, busy) = side_by_side(
        || run("acks1-today", &[file, "--time", "12s"]),
        || {
            run(
                "acks1-busy",
                &[file, "--time", "12s", "--rate", "2000", "--in-flight", "32"],
            )
        },
    );
    report("kafka-acks1-inflight5 at its own rate", &today, t);
    report("kafka-acks1-inflight5, rate 2000, in-flight 32", &busy, t);
    let (d0, f0) = per_fault(&today);
    let (d1, f1) = per_fault(&busy);
    eprintln!(
        "duplicate-write per ack-loss fault: {:.1} at rate 100 with one send in flight ({d0} in {f0} faults), \
         {:.1} at rate 2000 with 32 in flight ({d1} in {f1} faults); sends ok {} vs {}",
        d0 as f64 / f0,
        d1 as f64 / f1,
        today.verdict["stats"]["sends_ok"],
        busy.verdict["stats"]["sends_ok"]
    );
    assert_eq!(
        today.code, 1,
        "the negative control is caught: {}",
        today.verdict
    );
    assert_eq!(
        busy.code, 1,
        "the negative control is caught: {}",
        busy.verdict
    );
    assert!(
        d1 as f64 / f1 > d0 as f64 / f0,
        "no more duplicates per fault when busy"
    );
    no_leftovers(&today.dir);
    no_leftovers(&busy.dir);
}
