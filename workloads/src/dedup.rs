//! The idempotent consumer (seed D7): at-least-once delivery plus a dedup store
//! of its own, a Redis node beside the broker, that remembers which values were
//! processed (`docs/workloads.md`, "The idempotent consumer").
//!
//! Per message of a poll, with `mark = "before"`: one atomic `SET dedup:<v> 1 NX
//! PX <ttl>` (a `claim`): `new` applies the effect, `seen` skips it. With `mark =
//! "after"` (the documents' way): `EXISTS dedup:<v>` (a `check`), the effect,
//! then `SET ... NX PX` (a `mark`). When the store does not answer (refused:
//! `unavailable`; a timeout: unknown), `fail-open` applies the effect anyway,
//! `fail-closed` neither applies nor acknowledges it: the message is released
//! to the broker, which delivers it again later. Every store call is a `dedup`
//! op and every effect an `effect` op of the history (`docs/history-format.md`,
//! "Processing"); the poll's `ok` is recorded when the messages are handed over,
//! before any of them is processed.
use crate::client::{Consumer, Outcome, Received};
use crate::drivers::redis::{connect, timed};
use crate::queue::{ack, poll_ok, poll_recorded, wire, ConsumerConfig, Polled, WireEvent};
use crate::stall::{stall_here, Stall, StallPoint};
use redis::aio::MultiplexedConnection;
use serde::{Deserialize, Serialize};
use serde_json::json;
use std::fmt;
use std::str::FromStr;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

/// When the consumer marks a value in the store, relative to its effect.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Mark {
    /// Check, apply, then mark (the documents' order): a consumer killed between
    /// the effect and the mark applies it again when the message comes back.
    #[default]
    After,
    /// Claim (check and mark in one `SET NX`), then apply: a consumer killed
    /// between the claim and the effect loses the effect.
    Before,
}

/// What the consumer does while the store does not answer.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Policy {
    /// Apply the effect anyway (and acknowledge).
    FailOpen,
    /// Neither apply nor acknowledge: the broker delivers it again later.
    #[default]
    FailClosed,
}

impl Mark {
    /// `after` or `before`.
    pub fn name(self) -> &'static str {
        match self {
            Mark::After => "after",
            Mark::Before => "before",
        }
    }
}

impl Policy {
    /// `fail-open` or `fail-closed`.
    pub fn name(self) -> &'static str {
        match self {
            Policy::FailOpen => "fail-open",
            Policy::FailClosed => "fail-closed",
        }
    }
}

impl fmt::Display for Mark {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

impl fmt::Display for Policy {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

impl FromStr for Mark {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        [Mark::After, Mark::Before]
            .into_iter()
            .find(|m| m.name() == s)
            .ok_or_else(|| format!("mark {s:?}: after or before"))
    }
}

impl FromStr for Policy {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        [Policy::FailOpen, Policy::FailClosed]
            .into_iter()
            .find(|m| m.name() == s)
            .ok_or_else(|| format!("policy {s:?}: fail-open or fail-closed"))
    }
}

/// How a worker reaches and uses its dedup store (what the harness hands it).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct DedupCall {
    /// `host:port` of the store (through the client proxy when the run has one).
    pub addr: String,
    /// When the value is marked.
    pub mark: Mark,
    /// What to do while the store does not answer.
    pub policy: Policy,
    /// How long a mark lives, in milliseconds (`PX`).
    pub ttl_ms: u64,
}

/// How long one store call may take before its answer is unknown.
pub const STORE_TIMEOUT: Duration = Duration::from_secs(1);

/// What one store call answered.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Answer {
    New,
    Seen,
    /// Refused or not reachable (definitely not done).
    Unavailable(String),
    /// A timeout or a dropped connection: may or may not have been done.
    Unknown(String),
}

/// The consumer's connection to its dedup store, made again after a failure.
pub struct Store {
    url: String,
    con: Option<MultiplexedConnection>,
    ttl_ms: u64,
}

impl Store {
    /// A store at `addr` (`host:port`); connects at the first call.
    pub fn new(addr: &str, ttl_ms: u64) -> Self {
        Store {
            url: format!("redis://{addr}/"),
            con: None,
            ttl_ms,
        }
    }

    async fn con(&mut self) -> Result<&mut MultiplexedConnection, String> {
        if self.con.is_none() {
            let c = tokio::time::timeout(STORE_TIMEOUT, connect(&self.url))
                .await
                .map_err(|_| format!("no connection to the dedup store within {STORE_TIMEOUT:?}"))?
                .map_err(|e| e.to_string())?;
            self.con = Some(c);
        }
        self.con.as_mut().ok_or_else(|| "no connection".to_string())
    }

    fn key(value: i64) -> String {
        format!("dedup:{value}")
    }

    /// `SET dedup:<v> 1 NX PX ttl`: `New` when this call set it.
    async fn set_nx(&mut self, value: i64) -> Answer {
        let ttl = self.ttl_ms;
        let con = match self.con().await {
            Ok(c) => c,
            Err(e) => return Answer::Unavailable(e),
        };
        let cmd = redis::cmd("SET")
            .arg(Store::key(value))
            .arg(1)
            .arg("NX")
            .arg("PX")
            .arg(ttl)
            .to_owned();
        let out = timed(STORE_TIMEOUT, cmd.query_async::<redis::Value>(con)).await;
        self.answer(out, |v| !matches!(v, redis::Value::Nil))
    }

    /// `EXISTS dedup:<v>`: `Seen` when it is marked.
    async fn exists(&mut self, value: i64) -> Answer {
        let con = match self.con().await {
            Ok(c) => c,
            Err(e) => return Answer::Unavailable(e),
        };
        let cmd = redis::cmd("EXISTS").arg(Store::key(value)).to_owned();
        let out = timed(STORE_TIMEOUT, cmd.query_async::<i64>(con)).await;
        self.answer(out, |n| *n == 0)
    }

    fn answer<T>(&mut self, out: Outcome<T>, new: impl Fn(&T) -> bool) -> Answer {
        match out {
            Outcome::Ok(v) if new(&v) => Answer::New,
            Outcome::Ok(_) => Answer::Seen,
            Outcome::Fail(e) => {
                self.con = None;
                Answer::Unavailable(e)
            }
            Outcome::Info(e) => {
                self.con = None;
                Answer::Unknown(e)
            }
        }
    }
}

/// Records one store call (`dedup` op) and makes it.
async fn call(
    store: &mut Store,
    cfg: &ConsumerConfig,
    value: i64,
    step: &str,
    emit: &mut dyn FnMut(WireEvent),
) -> Answer {
    let v = json!({"value": value, "step": step});
    emit(wire("invoke", "dedup", &cfg.group, Some(v), None));
    let answer = if step == "check" {
        store.exists(value).await
    } else {
        store.set_nx(value).await
    };
    let end = |a: &str| Some(json!({"value": value, "step": step, "answer": a}));
    match &answer {
        Answer::New => emit(wire("ok", "dedup", &cfg.group, end("new"), None)),
        Answer::Seen => emit(wire("ok", "dedup", &cfg.group, end("seen"), None)),
        Answer::Unavailable(e) => emit(wire(
            "fail",
            "dedup",
            &cfg.group,
            end("unavailable"),
            Some(e.clone()),
        )),
        Answer::Unknown(e) => emit(wire(
            "info",
            "dedup",
            &cfg.group,
            Some(json!({"value": value, "step": step})),
            Some(e.clone()),
        )),
    }
    answer
}

/// Applies a message's effect (the simulated processing), recorded as an
/// `effect` op; the stall point `before-effect` is just before it.
async fn effect(
    cfg: &ConsumerConfig,
    m: &Received,
    stall: &Stall,
    emit: &mut dyn FnMut(WireEvent),
) {
    stall_here(stall, StallPoint::BeforeEffect, emit).await;
    emit(wire(
        "invoke",
        "effect",
        &cfg.group,
        Some(json!(m.value)),
        None,
    ));
    if !cfg.processing.is_zero() {
        tokio::time::sleep(cfg.processing).await;
    }
    emit(wire("ok", "effect", &cfg.group, Some(json!(m.value)), None));
}

/// Processes one message; `true` when it may be acknowledged, `false` when it is held back.
async fn process(
    store: &mut Store,
    dedup: &DedupCall,
    cfg: &ConsumerConfig,
    m: &Received,
    stall: &Stall,
    emit: &mut dyn FnMut(WireEvent),
) -> bool {
    let open = dedup.policy == Policy::FailOpen;
    match dedup.mark {
        Mark::Before => match call(store, cfg, m.value, "claim", emit).await {
            Answer::New => {
                effect(cfg, m, stall, emit).await;
                true
            }
            Answer::Seen => true,
            Answer::Unavailable(_) | Answer::Unknown(_) if open => {
                effect(cfg, m, stall, emit).await;
                true
            }
            Answer::Unavailable(_) | Answer::Unknown(_) => false,
        },
        Mark::After => match call(store, cfg, m.value, "check", emit).await {
            Answer::Seen => true,
            Answer::Unavailable(_) | Answer::Unknown(_) if !open => false,
            _ => {
                effect(cfg, m, stall, emit).await;
                // The mark's answer changes nothing now: the effect is applied.
                call(store, cfg, m.value, "mark", emit).await;
                true
            }
        },
    }
}

/// The consumer loop of a worker with a dedup store: poll, record the delivery,
/// process each message through the store, stall point `before-ack`, then
/// acknowledge what was processed or skipped and release what was held back.
/// Returns as [`crate::queue::run_consumer`] does.
pub async fn run_dedup_consumer(
    consumer: &mut dyn Consumer,
    cfg: &ConsumerConfig,
    dedup: &DedupCall,
    stop: &AtomicBool,
    stall: &Stall,
    emit: &mut dyn FnMut(WireEvent),
) {
    let mut store = Store::new(&dedup.addr, dedup.ttl_ms);
    let mut empty = 0u32;
    while !stop.load(Ordering::Relaxed) {
        let msgs = match poll_recorded(consumer, cfg, emit).await {
            Polled::Got(msgs) => msgs,
            Polled::Again => continue,
            Polled::Gone => return,
        };
        emit(poll_ok(cfg, &msgs));
        if msgs.is_empty() {
            empty += 1;
            if cfg.drain_after_empty.is_some_and(|n| empty >= n) {
                return;
            }
            continue;
        }
        empty = 0;
        let (mut done, mut held) = (Vec::new(), Vec::new());
        for m in msgs {
            if process(&mut store, dedup, cfg, &m, stall, emit).await {
                done.push(m);
            } else {
                held.push(m);
            }
        }
        stall_here(stall, StallPoint::BeforeAck, emit).await;
        if !ack(consumer, cfg, &done, emit).await {
            return;
        }
        if !held.is_empty() {
            if let Outcome::Info(_) = consumer.release(&held).await {
                return;
            }
            // Held back: the store is not answering; do not spin on it.
            tokio::time::sleep(Duration::from_millis(200)).await;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_parse_back() {
        for m in [Mark::After, Mark::Before] {
            assert_eq!(m.name().parse::<Mark>(), Ok(m));
        }
        for p in [Policy::FailOpen, Policy::FailClosed] {
            assert_eq!(p.name().parse::<Policy>(), Ok(p));
        }
        assert!("sometimes".parse::<Policy>().is_err());
    }

    #[test]
    fn a_store_nobody_listens_on_is_unavailable() {
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .expect("runtime");
        // Port 1 on loopback: refused at once.
        let mut s = Store::new("127.0.0.1:1", 60_000);
        let a = rt.block_on(s.set_nx(7));
        assert!(matches!(a, Answer::Unavailable(_)), "{a:?}");
    }
}
