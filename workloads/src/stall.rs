//! Where a consumer worker stalls so that the nemesis can kill it at an exact
//! moment (`kill-consumer:before-ack`, `kill-consumer:after-ack`).
//!
//! The protocol, one line each way: the harness writes [`StallPoint::command`] on
//! the worker's stdin; the worker arms its [`Stall`], and when it reaches that
//! point it prints a [`STALLED`] control event on stdout and waits to be killed.
use crate::queue::WireEvent;
use std::sync::atomic::{AtomicU8, Ordering};
use std::time::Duration;

/// A point in a consumer's batch where it can be made to stall.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum StallPoint {
    /// After processing a batch, before acknowledging (committing) it (seed D4:
    /// the batch is redelivered).
    BeforeAck,
    /// After acknowledging (committing) a batch, before processing finished
    /// (seed D5: with the ack before processing, the batch is lost).
    AfterAck,
    /// An idempotent consumer, after its dedup store answered for a message and
    /// before the message's effect (seed D7: with the mark before the effect,
    /// the effect is lost). Only the `[dedup]` consumer reaches it.
    BeforeEffect,
}

impl StallPoint {
    /// Both points: `before-ack`, then `after-ack`.
    pub const ALL: [StallPoint; 3] = [
        StallPoint::BeforeAck,
        StallPoint::AfterAck,
        StallPoint::BeforeEffect,
    ];

    /// `before-ack` or `after-ack`, as in the fault's name.
    pub fn name(self) -> &'static str {
        match self {
            StallPoint::BeforeAck => "before-ack",
            StallPoint::AfterAck => "after-ack",
            StallPoint::BeforeEffect => "before-effect",
        }
    }

    /// The stdin line that arms a worker's stall (without the newline).
    pub fn command(self) -> String {
        format!("stall:{}", self.name())
    }

    /// The point a stdin line arms, if it is a stall command.
    pub fn from_command(line: &str) -> Option<StallPoint> {
        let name = line.trim().strip_prefix("stall:")?;
        StallPoint::ALL.into_iter().find(|p| p.name() == name)
    }

    fn code(self) -> u8 {
        match self {
            StallPoint::BeforeAck => 1,
            StallPoint::AfterAck => 2,
            StallPoint::BeforeEffect => 3,
        }
    }
}

/// The stall a worker is armed with: none, or one point.
#[derive(Debug, Default)]
pub struct Stall(AtomicU8);

impl Stall {
    /// A stall armed with no point.
    pub fn new() -> Self {
        Stall::default()
    }

    /// From now on, the worker stalls when it reaches `point`.
    pub fn arm(&self, point: StallPoint) {
        self.0.store(point.code(), Ordering::Relaxed);
    }

    /// Whether the worker is armed to stall at `point`.
    pub fn is_at(&self, point: StallPoint) -> bool {
        self.0.load(Ordering::Relaxed) == point.code()
    }
}

/// The control event a worker prints when it has stalled where it was told.
pub const STALLED: &str = "stalled";

/// Stalls for good (reporting [`STALLED`] first) when the worker is armed at `point`.
pub(crate) async fn stall_here(stall: &Stall, point: StallPoint, emit: &mut dyn FnMut(WireEvent)) {
    if stall.is_at(point) {
        emit(WireEvent {
            kind: STALLED.into(),
            f: "control".into(),
            group: None,
            value: None,
            error: None,
        });
        // Wait to be killed.
        loop {
            tokio::time::sleep(Duration::from_secs(3600)).await;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn commands_round_trip_and_arm_one_point() {
        for p in StallPoint::ALL {
            assert_eq!(StallPoint::from_command(&p.command()), Some(p));
            assert_eq!(
                StallPoint::from_command(&format!("{}\n", p.command())),
                Some(p)
            );
        }
        assert_eq!(StallPoint::from_command("stall:mid-ack"), None);
        assert_eq!(StallPoint::from_command("before-ack"), None);
        let s = Stall::new();
        assert!(!s.is_at(StallPoint::BeforeAck) && !s.is_at(StallPoint::AfterAck));
        s.arm(StallPoint::AfterAck);
        assert!(s.is_at(StallPoint::AfterAck) && !s.is_at(StallPoint::BeforeAck));
    }
}
