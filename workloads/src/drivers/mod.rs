//! One driver per broker, each behind [`crate::client::Driver`].
pub mod kafka;
pub mod nats;
pub mod rabbitmq;
pub mod redis;
pub mod sqs;
