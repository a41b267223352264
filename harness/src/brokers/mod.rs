//! One cluster recipe per broker.
pub mod kafka;
pub mod nats;
pub mod rabbitmq;
pub mod redis;
pub mod sqs;
