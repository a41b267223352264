//! NATS JetStream, 3 nodes with routes, a replicated file stream (async-nats).
use crate::common;
use async_nats::jetstream::{self, consumer::pull, stream};
use futures_util::StreamExt;
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
