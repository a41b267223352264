//! Gauntlet's workloads: broker drivers behind one client trait ([`client`]),
//! delivery settings as configuration ([`settings`]), the recorder that writes
//! the history as the run goes ([`recorder`]), and the workloads themselves
//! ([`queue`]; [`log`] and [`txn`] for the Kafka protocol). Nothing here knows
//! about containers: a driver gets addresses.
//!
//! A consumer worker's side is here too: the arguments the harness starts it
//! with ([`worker_call`]) and the points where it can be made to stall for the
//! nemesis ([`stall`]).
//!
//! Of Gauntlet's crates it depends on `gauntlet-history` only. It must not
//! depend on containers, Docker or the harness: whoever runs a workload starts
//! the brokers and hands it their `host:port` addresses.
#![warn(missing_docs)]
pub mod broker;
pub mod client;
pub mod dedup;
pub mod drivers;
pub mod keys;
pub mod log;
pub mod queue;
pub mod recorder;
pub mod settings;
pub mod stall;
pub mod twohop;
pub mod txn;
pub mod worker_call;

pub use broker::BrokerKind;
pub use client::{ClientError, Consumer, Driver, Outcome, Producer, Received, Stored};
pub use recorder::Recorder;
pub use settings::{AckPoint, Delivery, Mode, Resolved};

use std::sync::Arc;

/// The driver for a broker, talking to `addrs` (host:port of each node's client port).
/// A `drain` driver takes over everything other consumers left unacknowledged at once.
/// `replicas`: the replicas of the stream its `setup` creates, where the broker
/// has them (NATS JetStream, 1 to 5 and at most the nodes); `None`, the driver's
/// default. Given to another broker, it is refused.
pub fn driver_for(
    broker: BrokerKind,
    addrs: &[String],
    settings: Resolved,
    drain: bool,
    replicas: Option<usize>,
) -> Result<Arc<dyn Driver>, ClientError> {
    if let (Some(r), false) = (replicas, broker == BrokerKind::Nats) {
        return Err(ClientError::Unsupported {
            broker: broker.name(),
            what: format!("setting a stream's replicas ({r})"),
        });
    }
    let first = addrs.first().cloned().unwrap_or_default();
    match broker {
        BrokerKind::Redis => {
            let mut d = drivers::redis::Redis::new(&first, settings);
            if drain {
                d.claim_idle = std::time::Duration::ZERO;
                d.drain = true;
            }
            Ok(Arc::new(d))
        }
        BrokerKind::RabbitMq => Ok(Arc::new(drivers::rabbitmq::RabbitMq::new(addrs, settings))),
        BrokerKind::Nats => Ok(Arc::new(
            drivers::nats::Nats::new(addrs, settings, drain).with_replicas(replicas)?,
        )),
        BrokerKind::Kafka => Ok(Arc::new(drivers::kafka::Kafka::new(
            addrs, settings, drain,
        )?)),
        BrokerKind::Sqs => Ok(Arc::new(drivers::sqs::Sqs::new(&first, settings, drain)?)),
    }
}
