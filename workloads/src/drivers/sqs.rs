//! SQS (aws-sdk-sqs; moto's server in Gauntlet's image): one queue per group,
//! `gauntlet-<group>`, standard, or FIFO (`gauntlet-<group>.fifo`) when `dedup` is
//! set. SQS has no fan-out of its own (that is SNS), so with several groups the
//! producer sends each message to every group's queue: each queue holds its own
//! copy, with its own MessageId; the send records the first group's id, and its
//! outcome is `ok` only when every copy was sent.
//!
//! - FIFO: MessageGroupId = key (per-key order), MessageDeduplicationId = value.
//! - `retries`: the SDK's standard retry mode with `retries + 1` attempts.
//! - Consumer: ReceiveMessage (at most 10, long poll of `wait` rounded up to whole
//!   seconds), VisibilityTimeout `visibility-timeout` (5 s), ApproximateReceiveCount > 1
//!   flags a redelivery. Manual ack: DeleteMessage after processing; auto ack:
//!   delete right after receiving, before processing.
//! - Drain: a message received by a stopped worker and not deleted becomes visible
//!   again after the visibility timeout; while the queue reports messages in flight
//!   (ApproximateNumberOfMessagesNotVisible), the drain's poll keeps waiting, for up
//!   to the visibility timeout plus a margin.
use crate::client::{
    body, parse_body, ClientError, Consumer, Driver, Outcome, Producer, Received, Stored,
};
use crate::settings::Resolved;
use async_trait::async_trait;
use aws_sdk_sqs::config::retry::RetryConfig;
use aws_sdk_sqs::config::timeout::TimeoutConfig;
use aws_sdk_sqs::config::{BehaviorVersion, Credentials, Region};
use aws_sdk_sqs::error::SdkError;
use aws_sdk_sqs::types::{MessageSystemAttributeName, QueueAttributeName};
use aws_sdk_sqs::Client;
use std::time::{Duration, Instant};

/// The SQS driver.
pub struct Sqs {
    /// The `http://host:port` endpoint of the server.
    pub endpoint: String,
    /// The delivery settings.
    pub settings: Resolved,
    /// A drain driver: while the queue reports messages in flight, its polls keep waiting
    /// (see the module docs).
    pub drain: bool,
    /// FIFO queues (when `dedup` is set).
    fifo: bool,
}

impl Sqs {
    /// A driver for the server at `addr` (host:port); refuses transactions, which SQS does not have.
    pub fn new(addr: &str, settings: Resolved, drain: bool) -> Result<Self, ClientError> {
        if settings.transactions {
            return Err(ClientError::Unsupported {
                broker: "sqs",
                what: "transactions (set `transactions = false`, or use mode `idempotent`)".into(),
            });
        }
        Ok(Sqs {
            endpoint: format!("http://{addr}"),
            fifo: settings.dedup,
            settings,
            drain,
        })
    }

    fn client(&self) -> Client {
        let conf = aws_sdk_sqs::Config::builder()
            .behavior_version(BehaviorVersion::latest())
            .region(Region::new("us-east-1"))
            .endpoint_url(&self.endpoint)
            // moto accepts any credentials.
            .credentials_provider(Credentials::new("test", "test", None, None, "gauntlet"))
            .http_client(aws_smithy_http_client::Builder::new().build_http())
            .retry_config(RetryConfig::standard().with_max_attempts(self.settings.retries + 1))
            .timeout_config(
                TimeoutConfig::builder()
                    .connect_timeout(Duration::from_secs(3))
                    .operation_attempt_timeout(Duration::from_secs(25))
                    .build(),
            )
            .build();
        Client::from_conf(conf)
    }

    fn queue_name(&self, group: &str) -> String {
        if self.fifo {
            format!("gauntlet-{group}.fifo")
        } else {
            format!("gauntlet-{group}")
        }
    }

    async fn queue_url(&self, c: &Client, group: &str) -> Result<String, ClientError> {
        let name = self.queue_name(group);
        let out = c
            .get_queue_url()
            .queue_name(&name)
            .send()
            .await
            .map_err(|e| setup_err(&format!("get queue url {name}"), e))?;
        out.queue_url
            .ok_or_else(|| setup_err(&format!("get queue url {name}"), "no url in the answer"))
    }
}

fn setup_err(what: &str, e: impl std::fmt::Display) -> ClientError {
    ClientError::Setup {
        broker: "sqs",
        reason: format!("{what}: {e}"),
    }
}

/// The one place SDK errors become outcomes.
fn classify<T, E: std::fmt::Debug>(
    e: &SdkError<E, aws_sdk_sqs::config::http::HttpResponse>,
) -> Outcome<T> {
    let text = format!("{e:?}");
    match e {
        // Definite: the request could not even be built, so it was never sent.
        SdkError::ConstructionFailure(_) => Outcome::Fail(text),
        // Definite: the service answered 4xx (bad parameter, no such queue, throttled):
        // it refused the request. A 5xx may come after the work was done: unknown.
        SdkError::ServiceError(s) if s.raw().status().is_client_error() => Outcome::Fail(text),
        // Timeouts, dispatch (connection) failures, unreadable answers, 5xx: unknown.
        _ => Outcome::Info(text),
    }
}

#[async_trait]
impl Driver for Sqs {
    fn name(&self) -> &'static str {
        "sqs"
    }

    async fn setup(&self, groups: &[String]) -> Result<(), ClientError> {
        let c = self.client();
        for g in groups {
            let name = self.queue_name(g);
            let mut req = c
                .create_queue()
                .queue_name(&name)
                .attributes(
                    QueueAttributeName::VisibilityTimeout,
                    self.settings.visibility_timeout.to_string(),
                )
                .attributes(QueueAttributeName::MessageRetentionPeriod, "86400");
            if self.fifo {
                req = req.attributes(QueueAttributeName::FifoQueue, "true");
            }
            req.send()
                .await
                .map_err(|e| setup_err(&format!("create queue {name}"), format!("{e:?}")))?;
        }
        Ok(())
    }

    async fn producer(&self, _process: u64) -> Result<Box<dyn Producer>, ClientError> {
        let c = self.client();
        // The producer sends to every queue there is (one per group).
        let out = c
            .list_queues()
            .queue_name_prefix("gauntlet-")
            .send()
            .await
            .map_err(|e| setup_err("list queues", format!("{e:?}")))?;
        let mut urls: Vec<String> = out
            .queue_urls
            .unwrap_or_default()
            .into_iter()
            .filter(|u| u.ends_with(".fifo") == self.fifo)
            .collect();
        urls.sort();
        if urls.is_empty() {
            return Err(setup_err(
                "producer",
                "no gauntlet-* queue (setup not run?)",
            ));
        }
        Ok(Box::new(SqsProducer {
            client: c,
            urls,
            fifo: self.fifo,
        }))
    }

    async fn consumer(&self, group: &str, _process: u64) -> Result<Box<dyn Consumer>, ClientError> {
        let c = self.client();
        let url = self.queue_url(&c, group).await?;
        Ok(Box::new(SqsConsumer {
            client: c,
            url,
            manual_ack: self.settings.manual_ack,
            drain: self.drain,
            visibility: Duration::from_secs(self.settings.visibility_timeout),
        }))
    }
}

struct SqsProducer {
    client: Client,
    urls: Vec<String>,
    fifo: bool,
}

#[async_trait]
impl Producer for SqsProducer {
    async fn send(&mut self, key: &str, value: i64) -> Outcome<Stored> {
        let payload = String::from_utf8_lossy(&body(key, value)).into_owned();
        let mut first_id = None;
        for (i, url) in self.urls.iter().enumerate() {
            let mut req = self
                .client
                .send_message()
                .queue_url(url)
                .message_body(&payload);
            if self.fifo {
                req = req
                    .message_group_id(key)
                    .message_deduplication_id(value.to_string());
            }
            match req.send().await {
                Ok(out) => {
                    if i == 0 {
                        first_id = out.message_id;
                    }
                }
                // A copy already went to another group's queue: the send happened in part.
                Err(e) if i > 0 => {
                    return Outcome::Info(format!(
                        "sent to {i} of {} queues, then: {e:?}",
                        self.urls.len()
                    ))
                }
                Err(e) => return classify(&e),
            }
        }
        Outcome::Ok(Stored {
            id: first_id,
            ..Stored::default()
        })
    }
}

struct SqsConsumer {
    client: Client,
    url: String,
    manual_ack: bool,
    drain: bool,
    /// The delivery setting `visibility-timeout`.
    visibility: Duration,
}

impl SqsConsumer {
    async fn receive(&self, max: usize, wait: Duration) -> Outcome<Vec<Received>> {
        // Long polls are whole seconds; rounding down to 0 would make a busy loop.
        let secs = wait.as_secs_f64().ceil().clamp(1.0, 20.0) as i32;
        let out = match self
            .client
            .receive_message()
            .queue_url(&self.url)
            .max_number_of_messages(max.clamp(1, 10) as i32)
            .wait_time_seconds(secs)
            .visibility_timeout(i32::try_from(self.visibility.as_secs()).unwrap_or(i32::MAX))
            .message_system_attribute_names(MessageSystemAttributeName::ApproximateReceiveCount)
            .send()
            .await
        {
            Ok(out) => out,
            Err(e) => return classify(&e),
        };
        let mut got = Vec::new();
        for m in out.messages.unwrap_or_default() {
            let Ok((key, value)) = parse_body(m.body().unwrap_or_default().as_bytes()) else {
                continue;
            };
            let receives = m
                .attributes()
                .and_then(|a| a.get(&MessageSystemAttributeName::ApproximateReceiveCount))
                .and_then(|n| n.parse::<u64>().ok())
                .unwrap_or(1);
            got.push(Received {
                key,
                value,
                stored: Stored {
                    id: m.message_id().map(str::to_string),
                    ..Stored::default()
                },
                redelivered: receives > 1,
                ack_token: m.receipt_handle().unwrap_or_default().to_string(),
            });
        }
        Outcome::Ok(got)
    }

    async fn delete(&self, msgs: &[Received]) -> Outcome<()> {
        for (i, m) in msgs.iter().enumerate() {
            if let Err(e) = self
                .client
                .delete_message()
                .queue_url(&self.url)
                .receipt_handle(&m.ack_token)
                .send()
                .await
            {
                return match classify(&e) {
                    // Some messages were deleted already: the ack happened in part.
                    Outcome::Fail(e) if i > 0 => {
                        Outcome::Info(format!("deleted {i} of {}, then: {e}", msgs.len()))
                    }
                    other => other,
                };
            }
        }
        Outcome::Ok(())
    }

    /// Messages received by someone and not deleted yet (they will become visible again).
    async fn in_flight(&self) -> u64 {
        let out = self
            .client
            .get_queue_attributes()
            .queue_url(&self.url)
            .attribute_names(QueueAttributeName::ApproximateNumberOfMessagesNotVisible)
            .attribute_names(QueueAttributeName::ApproximateNumberOfMessages)
            .send()
            .await;
        let Ok(out) = out else { return 0 };
        let attrs = out.attributes.unwrap_or_default();
        [
            QueueAttributeName::ApproximateNumberOfMessagesNotVisible,
            QueueAttributeName::ApproximateNumberOfMessages,
        ]
        .iter()
        .filter_map(|k| attrs.get(k).and_then(|v| v.parse::<u64>().ok()))
        .sum()
    }
}

#[async_trait]
impl Consumer for SqsConsumer {
    async fn poll(&mut self, max: usize, wait: Duration) -> Outcome<Vec<Received>> {
        let start = Instant::now();
        let got = loop {
            match self.receive(max, wait).await {
                Outcome::Ok(v) if v.is_empty() && self.drain => {
                    if start.elapsed() >= self.visibility + Duration::from_secs(2)
                        || self.in_flight().await == 0
                    {
                        break v;
                    }
                }
                Outcome::Ok(v) => break v,
                other => return other,
            }
        };
        if !self.manual_ack && !got.is_empty() {
            // Auto ack: delete before processing. If the delete fails the messages
            // come back after the visibility timeout, flagged as redeliveries.
            let _ = self.delete(&got).await;
        }
        Outcome::Ok(got)
    }

    async fn ack(&mut self, msgs: &[Received]) -> Outcome<()> {
        if !self.manual_ack || msgs.is_empty() {
            return Outcome::Ok(());
        }
        self.delete(msgs).await
    }

    fn acks(&self) -> bool {
        self.manual_ack
    }
}
