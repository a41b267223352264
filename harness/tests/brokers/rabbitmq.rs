//! RabbitMQ, 3 nodes, a quorum queue, publisher confirms (lapin).
use crate::common;
use gauntlet_harness::{BrokerKind, Deployment, NodeControl};
use lapin::options::{
    BasicAckOptions, BasicGetOptions, BasicPublishOptions, ConfirmSelectOptions,
    QueueDeclareOptions,
};
use lapin::types::{AMQPValue, FieldTable};
use lapin::{BasicProperties, Channel, Connection, ConnectionProperties};
use std::time::Duration;

const QUEUE: &str = "gauntlet-it";

async fn channel(addr: &str) -> Result<(Connection, Channel), lapin::Error> {
    let conn = Connection::connect(
        &format!("amqp://guest:guest@{addr}/%2f"),
        ConnectionProperties::default(),
    )
    .await?;
    let ch = conn.create_channel().await?;
    ch.confirm_select(ConfirmSelectOptions::default()).await?;
    let mut args = FieldTable::default();
    args.insert(
        "x-queue-type".into(),
        AMQPValue::LongString("quorum".into()),
    );
    ch.queue_declare(
        QUEUE,
        QueueDeclareOptions {
            durable: true,
            ..Default::default()
        },
        args,
    )
    .await?;
    Ok((conn, ch))
}

async fn publish(ch: &Channel, body: &str) {
    let confirm = ch
        .basic_publish(
            "",
            QUEUE,
            BasicPublishOptions::default(),
            body.as_bytes(),
            BasicProperties::default().with_delivery_mode(2),
        )
        .await
        .expect("publish")
        .await
        .expect("confirm");
    assert!(confirm.is_ack(), "{body} not confirmed: {confirm:?}");
}

async fn get(ch: &Channel) -> Result<String, String> {
    match ch
        .basic_get(QUEUE, BasicGetOptions::default())
        .await
        .map_err(|e| e.to_string())?
    {
        Some(m) => {
            m.delivery
                .ack(BasicAckOptions::default())
                .await
                .map_err(|e| e.to_string())?;
            Ok(String::from_utf8_lossy(&m.delivery.data).into_owned())
        }
        None => Err("queue empty".into()),
    }
}

/// `get` on a connection of its own (closed afterwards).
async fn get_fresh(addr: &str) -> Result<String, String> {
    let (conn, ch) = channel(addr).await.map_err(|e| e.to_string())?;
    let got = get(&ch).await;
    let _ = conn.close(0, "bye").await;
    got
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn three_nodes_quorum_queue_survives_kill_of_a_node_and_a_missing_queue_is_told() {
    let dep = common::launch(BrokerKind::RabbitMq, Some(3)).await;
    let addrs = dep.addrs("amqp");
    let (conn1, ch1) =
        common::retry("connect n1", Duration::from_secs(60), || channel(&addrs[0])).await;
    publish(&ch1, "m1").await;
    assert_eq!(
        common::retry("get m1", Duration::from_secs(60), || get(&ch1)).await,
        "m1"
    );
    publish(&ch1, "m2").await;

    // n1 held the queue's leader; kill it, read the confirmed m2 through n2.
    dep.kill("n1").await.expect("kill n1");
    let _ = conn1.close(0, "bye").await;
    // While the queue elects a new leader the broker closes the channel of a
    // basic.get with an error, so every attempt gets a fresh connection.
    assert_eq!(
        common::retry("get m2 after kill", Duration::from_secs(90), || get_fresh(
            &addrs[1]
        ))
        .await,
        "m2"
    );

    dep.start("n1").await.expect("start n1");
    dep.wait_cluster_ready(Duration::from_secs(120))
        .await
        .expect("cluster whole again");
    let (conn1, ch1) = common::retry("reconnect n1", Duration::from_secs(60), || {
        channel(&addrs[0])
    })
    .await;
    publish(&ch1, "m3").await;
    assert_eq!(
        common::retry("get m3", Duration::from_secs(60), || get(&ch1)).await,
        "m3"
    );
    let _ = conn1.close(0, "bye").await;

    common::kill_and_restart(&dep, "n3").await;

    // The final drain's consumer takes a 404 on basic.consume as the broker's
    // answer that the queue does not exist (docs/checkers.md, "A lost stream"):
    // a group whose queue was never declared.
    let driver = common::drain_driver(BrokerKind::RabbitMq, &addrs);
    let m = common::drain_answer(&*driver, "never-declared", "never declared")
        .await
        .expect("a queue never declared is missing");
    assert!(m.what.starts_with("queue "), "{m:?}");
    assert!(
        m.answer.contains("404") || m.answer.contains("NOT-FOUND"),
        "{m:?}"
    );
    common::teardown(dep).await;
}
