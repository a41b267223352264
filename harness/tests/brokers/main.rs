//! Integration tests against real brokers in containers: one module per broker.
//! Each forms a cluster from Gauntlet's local image (building it with the same
//! function as `gauntlet images build` if missing), sends and receives through a
//! real client library, kills and restarts a node, receives again, tears down and
//! checks that nothing labelled with its run id is left.
mod common;
mod control;
mod kafka;
mod nats;
mod rabbitmq;
mod redis;
mod sqs;
