//! One driver per broker, each behind [`crate::client::Driver`].
pub mod rabbitmq;
pub mod redis;
