//! `kill-consumer[:before-ack|:after-ack]`: SIGKILL a consumer worker, at a
//! moment of its batch; it heals by itself (the harness restarts the worker
//! under a new process number).

/// When a consumer is killed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum KillConsumerAt {
    /// Whenever the fault fires.
    Any,
    /// After processing a batch, before acknowledging it (seed D4: redelivery).
    BeforeAck,
    /// After acknowledging (or committing) a batch, before processing finished (seed D5: loss).
    AfterAck,
    /// An idempotent consumer, between its dedup store's answer for a message
    /// and the message's effect (seed D7: with the mark before the effect, the
    /// effect is lost).
    BeforeEffect,
}
