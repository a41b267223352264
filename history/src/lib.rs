//! Gauntlet's history: the op model of the v1.1 contract (`docs/history-format.md`),
//! a fast streaming JSON Lines reader that checks the contract line by line (on
//! several threads, [`ReadOptions`]), the reader of Jepsen's EDN histories
//! ([`edn`]), the compact in-memory form the checkers read, the writer the
//! recorder uses, and the seeded PRNG the workspace shares ([`rng`]).
//!
//! Reading never keeps whole ops: [`read_path`] pairs each completion with its
//! invoke as it goes and keeps a few dozen bytes per message (see [`model`]).
//!
//! This crate depends on no other Gauntlet crate, and does no I/O beyond the
//! file it reads or writes.
#![warn(missing_docs)]
pub mod drain;
pub mod edn;
pub mod error;
mod fast;
pub mod json;
pub mod model;
pub mod op;
mod parallel;
pub mod processing;
pub mod reader;
pub mod rng;
pub mod writer;

pub use drain::{DrainEnd, DrainEnded, MissingSource};
pub use error::{HistoryError, Problem};
pub use model::{Delivery, History, Outcome, Poll, Send, NONE, NO_OFFSET, NO_OP};
pub use op::{parse_op, Msg, Op, OpType, Process, Value, F};
pub use reader::{
    read, read_bytes, read_bytes_with, read_path, read_path_with, read_with, ReadOptions,
};
pub use writer::{Actor, Event, HistoryWriter, Message, Payload};
