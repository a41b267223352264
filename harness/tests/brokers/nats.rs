//! NATS JetStream, 3 nodes with routes, a replicated file stream (async-nats).
use crate::common;
use async_nats::jetstream::{self, consumer::pull, stream};
use futures_util::StreamExt;
use gauntlet_harness::broker::{Durability, SyncInterval};
use gauntlet_harness::{BrokerKind, Deployment, NodeControl};
use std::time::Duration;

async fn fetch_one(
    consumer: &jetstream::consumer::Consumer<pull::Config>,
) -> Result<String, String> {
    let mut batch = consumer
        .fetch()
        .max_messages(1)
        .expires(Duration::from_secs(2))
        .messages()
        .await
        .map_err(|e| e.to_string())?;
    match batch.next().await {
        Some(Ok(m)) => {
            m.ack().await.map_err(|e| e.to_string())?;
            Ok(String::from_utf8_lossy(&m.payload).into_owned())
        }
        Some(Err(e)) => Err(e.to_string()),
        None => Err("no message yet".into()),
    }
}

async fn publish(js: &jetstream::Context, body: &'static str) -> Result<(), String> {
    js.publish("gauntlet.it", body.into())
        .await
        .map_err(|e| e.to_string())?
        .await
        .map(|_| ())
        .map_err(|e| e.to_string())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn three_nodes_jetstream_r3_survives_kill_of_a_node() {
    let dep = common::launch(BrokerKind::Nats, Some(3)).await;
    let urls: Vec<async_nats::ServerAddr> = dep
        .addrs("client")
        .iter()
        .map(|a| format!("nats://{a}").parse().expect("server addr"))
        .collect();
    let client = common::retry("connect", Duration::from_secs(60), || {
        async_nats::connect(urls.clone())
    })
    .await;
    let js = jetstream::new(client);
    let stream = common::retry("create stream", Duration::from_secs(60), || {
        js.get_or_create_stream(stream::Config {
            name: "GAUNTLET".into(),
            subjects: vec!["gauntlet.>".into()],
            num_replicas: 3,
            storage: stream::StorageType::File,
            ..Default::default()
        })
    })
    .await;
    let consumer: jetstream::consumer::Consumer<pull::Config> =
        common::retry("create consumer", Duration::from_secs(30), || {
            stream.get_or_create_consumer(
                "it",
                pull::Config {
                    durable_name: Some("it".into()),
                    ..Default::default()
                },
            )
        })
        .await;
    common::retry("publish m1", Duration::from_secs(30), || publish(&js, "m1")).await;
    assert_eq!(
        common::retry("fetch m1", Duration::from_secs(30), || fetch_one(&consumer)).await,
        "m1"
    );
    common::retry("publish m2", Duration::from_secs(30), || publish(&js, "m2")).await;

    dep.kill("n1").await.expect("kill n1");
    assert_eq!(
        common::retry("fetch m2 with n1 down", Duration::from_secs(60), || {
            fetch_one(&consumer)
        })
        .await,
        "m2"
    );
    dep.start("n1").await.expect("start n1");
    dep.wait_cluster_ready(Duration::from_secs(120))
        .await
        .expect("cluster whole again");
    common::retry("publish m3", Duration::from_secs(30), || publish(&js, "m3")).await;
    assert_eq!(
        common::retry("fetch m3", Duration::from_secs(30), || fetch_one(&consumer)).await,
        "m3"
    );

    common::kill_and_restart(&dep, "n2").await;
    common::teardown(dep).await;
}

/// JetStream's configuration as `node` reports it on `/varz` (from inside the
/// node): (`sync_interval` in nanoseconds, `sync_always`).
async fn varz_sync(dep: &impl NodeControl, node: &str) -> Result<(u64, bool), String> {
    let out = dep
        .exec(
            node,
            &gauntlet_harness::Command::new(&[
                "python3",
                "-c",
                "import json,urllib.request as u; \
                 print(json.dumps(json.load(u.urlopen('http://127.0.0.1:8222/varz',timeout=5))\
                 ['jetstream']['config']))",
            ]),
            Duration::from_secs(20),
        )
        .await
        .map_err(|e| e.to_string())?;
    if !out.success() {
        return Err(out.combined());
    }
    let c: serde_json::Value =
        serde_json::from_str(out.stdout.trim()).map_err(|e| format!("{e}: {}", out.stdout))?;
    eprintln!("{node} /varz jetstream.config: {c}");
    Ok((
        c["sync_interval"].as_u64().unwrap_or(0),
        c["sync_always"].as_bool().unwrap_or(false),
    ))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sync_always_and_a_stream_of_five_replicas_on_five_nodes() {
    let durability = Durability {
        nats_sync: Some(SyncInterval::Always),
        ..Durability::default()
    };
    let dep = common::launch_with(BrokerKind::Nats, Some(5), None, durability).await;
    for node in dep.nodes() {
        let (_, always) = varz_sync(&dep, &node).await.expect("varz");
        assert!(always, "{node}: sync_always on /varz");
    }
    // The driver the run uses creates the stream with the scenario's replicas.
    let addrs = dep.addrs("client");
    let driver = gauntlet_workloads::driver_for(
        BrokerKind::Nats,
        &addrs,
        gauntlet_workloads::Delivery::default().resolve(),
        false,
        Some(5),
    )
    .expect("a driver of 5 replicas on 5 nodes");
    driver.setup(&["g".to_string()]).await.expect("setup");
    let urls: Vec<async_nats::ServerAddr> = addrs
        .iter()
        .map(|a| format!("nats://{a}").parse().expect("server addr"))
        .collect();
    let client = common::retry("connect", Duration::from_secs(60), || {
        async_nats::connect(urls.clone())
    })
    .await;
    let js = jetstream::new(client);
    let stream = js.get_stream("gauntlet").await.expect("the stream");
    let info = common::retry("the stream's 4 followers", Duration::from_secs(60), || {
        let stream = &stream;
        async move {
            let info = stream.get_info().await.map_err(|e| e.to_string())?;
            let followers = info.cluster.as_ref().map_or(0, |c| c.replicas.len());
            if followers == 4 {
                Ok(info)
            } else {
                Err(format!("{followers} follower(s) so far"))
            }
        }
    })
    .await;
    assert_eq!(info.config.num_replicas, 5);
    // The consumer names no count: its state has the stream's 5 replicas.
    let consumer = stream.consumer_info("g").await.expect("consumer g");
    let followers = consumer.cluster.as_ref().map_or(0, |c| c.replicas.len());
    assert_eq!(followers, 4, "consumer g: {:?}", consumer.cluster);
    // And a 6th replica, or 5 on 3 nodes, is refused by the driver.
    for (nodes, r) in [(5, 6), (3, 5)] {
        let e = gauntlet_workloads::driver_for(
            BrokerKind::Nats,
            &addrs[..nodes],
            gauntlet_workloads::Delivery::default().resolve(),
            false,
            Some(r),
        )
        .err()
        .map(|e| e.to_string())
        .unwrap_or_default();
        assert!(
            e.contains(&format!("{r} replicas on {nodes} node(s)")),
            "{e}"
        );
    }
    common::teardown(dep).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_sync_interval_reaches_the_server_and_its_absence_keeps_the_default() {
    let durability = Durability {
        nats_sync: Some(SyncInterval::Every(Duration::from_secs(10))),
        ..Durability::default()
    };
    let dep = common::launch_with(BrokerKind::Nats, Some(1), None, durability).await;
    assert_eq!(
        varz_sync(&dep, "n1").await.expect("varz"),
        (10_000_000_000, false)
    );
    common::teardown(dep).await;
    // Without the setting: the server's own default, two minutes.
    let dep = common::launch(BrokerKind::Nats, Some(1)).await;
    assert_eq!(
        varz_sync(&dep, "n1").await.expect("varz"),
        (120_000_000_000, false)
    );
    common::teardown(dep).await;
}

/// The final drain's consumer takes JetStream's "stream not found" as the
/// broker's answer, asked again after the confirmation window (docs/checkers.md,
/// "A lost stream").
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_drain_consumer_tells_a_lost_stream() {
    let dep = common::launch(BrokerKind::Nats, Some(1)).await;
    let addrs = dep.addrs("client");
    let driver = common::drain_driver(BrokerKind::Nats, &addrs);
    let groups = ["g".to_string()];
    common::retry("setup", Duration::from_secs(60), || driver.setup(&groups)).await;
    assert!(
        common::drain_answer(&*driver, "g", "whole").await.is_none(),
        "the stream exists"
    );

    let urls: Vec<async_nats::ServerAddr> = addrs
        .iter()
        .map(|a| format!("nats://{a}").parse().expect("server addr"))
        .collect();
    let client = common::retry("connect", Duration::from_secs(60), || {
        async_nats::connect(urls.clone())
    })
    .await;
    jetstream::new(client)
        .delete_stream("gauntlet")
        .await
        .expect("delete the stream");
    let m = common::drain_answer(&*driver, "g", "deleted")
        .await
        .expect("a deleted stream is missing");
    assert_eq!(m.what, "stream gauntlet", "{m:?}");
    assert!(m.answer.contains("10059"), "{m:?}");
    assert!(m.confirmed_after_ms >= 1000, "{m:?}");
    common::teardown(dep).await;
}
