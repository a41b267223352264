//! The SQS-compatible server (moto), one node, with the AWS SDK's SQS client:
//! FIFO deduplication and the visibility timeout, the two SQS behaviours the seed's
//! scenarios rely on.
use crate::common;
use aws_sdk_sqs::config::{BehaviorVersion, Credentials, Region};
use aws_sdk_sqs::types::QueueAttributeName;
use aws_sdk_sqs::Client;
use gauntlet_harness::{BrokerKind, Deployment};
use std::time::Duration;

fn client(addr: &str) -> Client {
    let conf = aws_sdk_sqs::Config::builder()
        .behavior_version(BehaviorVersion::latest())
        .region(Region::new("us-east-1"))
        .endpoint_url(format!("http://{addr}"))
        .credentials_provider(Credentials::new("test", "test", None, None, "gauntlet"))
        .http_client(aws_smithy_http_client::Builder::new().build_http())
        .build();
    Client::from_conf(conf)
}

async fn queue(
    c: &Client,
    name: &str,
    attrs: &[(QueueAttributeName, &str)],
) -> Result<String, String> {
    let mut req = c.create_queue().queue_name(name);
    for (k, v) in attrs {
        req = req.attributes(k.clone(), *v);
    }
    let out = req.send().await.map_err(|e| format!("{e:?}"))?;
    out.queue_url.ok_or_else(|| "no queue url".to_string())
}

async fn receive(c: &Client, url: &str) -> Vec<(String, String)> {
    let out = c
        .receive_message()
        .queue_url(url)
        .max_number_of_messages(10)
        .wait_time_seconds(1)
        .send()
        .await
        .expect("receive");
    out.messages
        .unwrap_or_default()
        .into_iter()
        .map(|m| {
            (
                m.body.unwrap_or_default(),
                m.receipt_handle.unwrap_or_default(),
            )
        })
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn fifo_dedup_visibility_timeout_and_restart() {
    let dep = common::launch(BrokerKind::Sqs, None).await;
    let addr = dep.addrs("http")[0].clone();
    let c = client(&addr);

    // FIFO: the same deduplication id twice is stored once.
    let fifo = common::retry("create fifo queue", Duration::from_secs(30), || {
        queue(&c, "it.fifo", &[(QueueAttributeName::FifoQueue, "true")])
    })
    .await;
    for _ in 0..2 {
        c.send_message()
            .queue_url(&fifo)
            .message_body("m1")
            .message_group_id("g")
            .message_deduplication_id("d1")
            .send()
            .await
            .expect("send m1");
    }
    let got = receive(&c, &fifo).await;
    assert_eq!(got.len(), 1, "deduplicated: {got:?}");
    assert_eq!(got[0].0, "m1");
    c.delete_message()
        .queue_url(&fifo)
        .receipt_handle(&got[0].1)
        .send()
        .await
        .expect("delete");

    // Visibility timeout: not deleted in time, the message is delivered again.
    let std_q = queue(&c, "it-vt", &[(QueueAttributeName::VisibilityTimeout, "1")])
        .await
        .expect("create queue");
    c.send_message()
        .queue_url(&std_q)
        .message_body("v1")
        .send()
        .await
        .expect("send v1");
    let first = receive(&c, &std_q).await;
    assert_eq!(first.len(), 1);
    // Waits for the redelivery itself (due 1 s after the receive), not a fixed time.
    let again = common::retry(
        "redelivery after the visibility timeout",
        Duration::from_secs(60),
        || async {
            let got = receive(&c, &std_q).await;
            if got.is_empty() {
                Err("not yet")
            } else {
                Ok(got)
            }
        },
    )
    .await;
    assert_eq!(again[0].0, "v1");

    // moto keeps its state in memory: after SIGKILL + restart the queues are gone.
    common::kill_and_restart(&dep, "n1").await;
    let q = common::retry(
        "create queue after restart",
        Duration::from_secs(30),
        || queue(&c, "it-after", &[]),
    )
    .await;
    c.send_message()
        .queue_url(&q)
        .message_body("m2")
        .send()
        .await
        .expect("send m2");
    let got = receive(&c, &q).await;
    assert_eq!(
        got.iter().map(|m| m.0.as_str()).collect::<Vec<_>>(),
        vec!["m2"]
    );
    common::teardown(dep).await;
}
