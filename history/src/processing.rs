//! Extension: what an idempotent consumer did with each message it was handed
//! (seed D7; `docs/history-format.md`, "Processing"). Two client functions,
//! recorded by a consumer between its poll and its ack:
//!
//! * `dedup`: one call to the consumer's dedup store. The invoke's value is
//!   `{"value": v, "step": "claim" | "check" | "mark"}`; an `ok` completion adds
//!   `"answer": "new" | "seen"`; a `fail` is the store definitely unavailable
//!   (`"answer": "unavailable"`), an `info` or no completion an unknown answer
//!   (a timeout).
//! * `effect`: the message's effect applied, value `v`: `ok` applied, `fail`
//!   not applied, `info` or no completion unknown.
//!
//! Older readers count both as client functions they do not know and skip them;
//! a history without them is read exactly as before.
use crate::model::{Outcome, NO_OP};
use crate::op::{Value, F};

/// Which call to the dedup store a `dedup` op was.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DedupStep {
    /// `claim`: the check and the mark in one atomic `SET key NX` (mark before the effect).
    Claim,
    /// `check`: is the value marked? (mark after the effect: the documents' `SISMEMBER`).
    Check,
    /// `mark`: mark the value after its effect (`SET key NX` with the TTL).
    Mark,
}

impl DedupStep {
    /// The step's name in a history.
    pub fn name(self) -> &'static str {
        match self {
            DedupStep::Claim => "claim",
            DedupStep::Check => "check",
            DedupStep::Mark => "mark",
        }
    }
    fn from_name(s: &str) -> Option<Self> {
        [DedupStep::Claim, DedupStep::Check, DedupStep::Mark]
            .into_iter()
            .find(|k| k.name() == s)
    }
    /// Whether this call decides if the effect is applied (a claim or a check).
    pub fn decides(self) -> bool {
        self != DedupStep::Mark
    }
}

/// What the dedup store answered.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DedupAnswer {
    /// The value was not marked (a claim also marked it).
    New,
    /// The value was marked already.
    Seen,
    /// The store could not be reached or refused (the op's `fail`).
    Unavailable,
    /// No answer known: a timeout, a crash (`info` or no completion).
    Unknown,
}

impl DedupAnswer {
    /// The answer's name in a history.
    pub fn name(self) -> &'static str {
        match self {
            DedupAnswer::New => "new",
            DedupAnswer::Seen => "seen",
            DedupAnswer::Unavailable => "unavailable",
            DedupAnswer::Unknown => "unknown",
        }
    }
}

/// What a processing op was.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ProcessingKind {
    /// A `dedup` op: the step, and the answer once it completed.
    Dedup(DedupStep, DedupAnswer),
    /// An `effect` op.
    Effect,
}

/// One `dedup` or `effect` op.
#[derive(Debug, Clone)]
pub struct Processing {
    /// What it was.
    pub kind: ProcessingKind,
    /// The message's value.
    pub value: i64,
    /// The group (consumer group, queue subscription) id.
    pub group: u32,
    /// Dense client id.
    pub process: u32,
    /// Op index of the invoke.
    pub invoke: u64,
    /// Op index of the completion, or [`NO_OP`].
    pub complete: u64,
    /// `ok`, `fail`, or `info` (also when it never completed).
    pub outcome: Outcome,
}

/// Whether `f` is one of the processing functions.
pub(crate) fn is_processing(f: &F<'_>) -> bool {
    matches!(f, F::Other(n) if n == "dedup" || n == "effect")
}

fn object(v: &Value<'_>) -> Option<serde_json::Value> {
    match v {
        Value::Raw(r) => serde_json::from_str(r).ok(),
        _ => None,
    }
}

/// The record of an invoke of `dedup` or `effect`; an error text when its value
/// is not what the function needs.
pub(crate) fn invoked(
    f: &F<'_>,
    value: &Value<'_>,
    group: u32,
    process: u32,
    index: u64,
) -> Result<Processing, String> {
    let v = object(value);
    let (kind, value) = if f.name() == "effect" {
        let n = v
            .as_ref()
            .and_then(|v| v.as_i64().or_else(|| v["value"].as_i64()));
        (
            ProcessingKind::Effect,
            n.ok_or("an effect needs the message's value, an integer")?,
        )
    } else {
        let v = v.ok_or("a dedup needs {\"value\", \"step\"}")?;
        let n = v["value"]
            .as_i64()
            .ok_or("a dedup needs the message's \"value\", an integer")?;
        let step = v["step"]
            .as_str()
            .and_then(DedupStep::from_name)
            .ok_or("a dedup's \"step\" is claim, check or mark")?;
        (ProcessingKind::Dedup(step, DedupAnswer::Unknown), n)
    };
    Ok(Processing {
        kind,
        value,
        group,
        process,
        invoke: index,
        complete: NO_OP,
        outcome: Outcome::Info,
    })
}

/// Completes `p` with the completion's outcome and, for a `dedup` that ended
/// `ok`, the store's answer (`new` or `seen`; anything else is unknown).
pub(crate) fn completed(p: &mut Processing, outcome: Outcome, index: u64, value: &Value<'_>) {
    p.complete = index;
    p.outcome = outcome;
    if let ProcessingKind::Dedup(step, _) = p.kind {
        let answer = match outcome {
            Outcome::Fail => DedupAnswer::Unavailable,
            Outcome::Info => DedupAnswer::Unknown,
            Outcome::Ok => match object(value).as_ref().and_then(|v| v["answer"].as_str()) {
                Some("new") => DedupAnswer::New,
                Some("seen") => DedupAnswer::Seen,
                _ => DedupAnswer::Unknown,
            },
        };
        p.kind = ProcessingKind::Dedup(step, answer);
    }
}
