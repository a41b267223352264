//! Redis, a primary (n1) and two replicas, a list as the queue (redis crate).
use crate::common;
use gauntlet_harness::broker::{AppendFsync, Durability, RedisDurability};
use gauntlet_harness::{BrokerKind, Deployment};
use redis::aio::MultiplexedConnection;
use std::time::Duration;

async fn conn(addr: &str) -> Result<MultiplexedConnection, redis::RedisError> {
    redis::Client::open(format!("redis://{addr}/"))?
        .get_multiplexed_async_connection()
        .await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn primary_and_two_replicas_survive_kill_of_the_primary() {
    let dep = common::launch(BrokerKind::Redis, Some(3)).await;
    let addrs = dep.addrs("client");
    let mut primary =
        common::retry("connect n1", Duration::from_secs(30), || conn(&addrs[0])).await;

    let _: i64 = redis::cmd("LPUSH")
        .arg("q")
        .arg("m1")
        .query_async(&mut primary)
        .await
        .expect("lpush m1");
    let got: Option<String> = redis::cmd("RPOP")
        .arg("q")
        .query_async(&mut primary)
        .await
        .expect("rpop");
    assert_eq!(got.as_deref(), Some("m1"));

    let _: i64 = redis::cmd("LPUSH")
        .arg("q")
        .arg("m2")
        .query_async(&mut primary)
        .await
        .expect("lpush m2");
    // WAIT answers after 5 s with how many replicas have m2 so far; a replica still
    // catching up on a loaded machine is waited for again, up to a minute.
    common::retry(
        "both replicas acknowledged m2",
        Duration::from_secs(60),
        || {
            let mut primary = primary.clone();
            async move {
                let acked: i64 = redis::cmd("WAIT")
                    .arg(2)
                    .arg(5000)
                    .query_async(&mut primary)
                    .await
                    .map_err(|e| e.to_string())?;
                if acked == 2 {
                    Ok(())
                } else {
                    Err(format!("{acked} of 2 replicas acknowledged m2"))
                }
            }
        },
    )
    .await;
    let mut replica =
        common::retry("connect n2", Duration::from_secs(30), || conn(&addrs[1])).await;
    let seen: Vec<String> = redis::cmd("LRANGE")
        .arg("q")
        .arg(0)
        .arg(-1)
        .query_async(&mut replica)
        .await
        .expect("lrange on replica");
    assert_eq!(seen, vec!["m2".to_string()]);

    // The append-only file (fsync always) brings m2 back after SIGKILL of the primary.
    common::kill_and_restart(&dep, "n1").await;
    let mut primary =
        common::retry("reconnect n1", Duration::from_secs(30), || conn(&addrs[0])).await;
    let got: Option<String> = redis::cmd("RPOP")
        .arg("q")
        .query_async(&mut primary)
        .await
        .expect("rpop m2");
    assert_eq!(got.as_deref(), Some("m2"));

    common::teardown(dep).await;
}

/// `redis-cli config get KEY` on `node`: the value Redis runs with.
async fn config_get(dep: &impl gauntlet_harness::NodeControl, node: &str, key: &str) -> String {
    let out = dep
        .exec(
            node,
            &gauntlet_harness::Command::new(&["redis-cli", "config", "get", key]),
            Duration::from_secs(20),
        )
        .await
        .unwrap_or_else(|e| panic!("redis-cli config get {key} on {node}: {e}"));
    assert!(out.success(), "redis-cli on {node}: {}", out.combined());
    // Two lines: the key, then its value.
    out.stdout
        .lines()
        .nth(1)
        .unwrap_or_default()
        .trim()
        .to_string()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_scenarios_appendfsync_reaches_every_node() {
    let durability = Durability {
        redis: RedisDurability {
            appendonly: true,
            appendfsync: AppendFsync::Everysec,
        },
        nats_sync: None,
    };
    let dep = common::launch_with(BrokerKind::Redis, Some(2), None, durability).await;
    for node in ["n1", "n2"] {
        assert_eq!(config_get(&dep, node, "appendfsync").await, "everysec");
        assert_eq!(config_get(&dep, node, "appendonly").await, "yes");
    }
    common::teardown(dep).await;

    // appendonly no, and the default (always) kept for appendfsync.
    let durability = Durability {
        redis: RedisDurability {
            appendonly: false,
            appendfsync: AppendFsync::Always,
        },
        nats_sync: None,
    };
    let dep = common::launch_with(BrokerKind::Redis, Some(1), None, durability).await;
    assert_eq!(config_get(&dep, "n1", "appendonly").await, "no");
    assert_eq!(config_get(&dep, "n1", "appendfsync").await, "always");
    common::teardown(dep).await;
}

/// The final drain's consumer asks whether its stream and group still exist
/// (docs/checkers.md, "A lost stream"): a stream gone is `missing`, and so is
/// a stream that a producer's XADD made again without the group.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_drain_consumer_tells_a_lost_stream_and_a_lost_group() {
    let dep = common::launch(BrokerKind::Redis, Some(1)).await;
    let addrs = dep.addrs("client");
    let driver = common::drain_driver(BrokerKind::Redis, &addrs);
    let groups = ["g".to_string()];
    common::retry("setup", Duration::from_secs(30), || driver.setup(&groups)).await;
    let drain = |when: &'static str| common::drain_answer(&*driver, "g", when);
    assert!(drain("whole").await.is_none(), "the stream and group exist");

    let mut con = common::retry("connect", Duration::from_secs(30), || conn(&addrs[0])).await;
    let _: i64 = redis::cmd("DEL")
        .arg("gauntlet")
        .query_async(&mut con)
        .await
        .expect("DEL");
    let m = drain("deleted").await.expect("a deleted stream is missing");
    assert_eq!(m.what, "stream gauntlet", "{m:?}");
    assert!(m.answer.contains("no such key"), "{m:?}");
    assert!(m.confirmed_after_ms >= 1000, "{m:?}");

    let _: String = redis::cmd("XADD")
        .arg("gauntlet")
        .arg("*")
        .arg("key")
        .arg("k")
        .arg("value")
        .arg(1)
        .query_async(&mut con)
        .await
        .expect("XADD");
    let m = drain("made again")
        .await
        .expect("a stream without the group");
    assert_eq!(m.what, "consumer group g of stream gauntlet", "{m:?}");
    common::teardown(dep).await;
}
