//! A generator of transactional histories that are strict serializable by
//! construction, for the transaction checker's property tests and
//! `gauntlet bench --txn`.
//!
//! The simulated broker applies each transaction atomically at one instant
//! between its invoke and its completion (its linearization point), in one
//! global order. Partitions are split among the processes as inputs (a
//! consume-transform-produce process reads its own inputs) and every
//! transaction reads each of its inputs from its position to the end of the
//! log at that instant, then appends its sends. Reading to the end makes every
//! anti-dependency point forward in the global order, so the history has no
//! dependency cycle, realtime or not, and no Kafka-style skip or backward
//! step. Some transactions abort (nothing applied, no read counted) and some
//! end `info` (applied or not; the process then comes back under a new number).
use gauntlet_history::rng::Rng;
use std::io::{self, Write};

/// What to generate.
#[derive(Debug, Clone)]
pub struct TxnGenConfig {
    /// Seeds the generator: the same seed and configuration give the same history.
    pub seed: u64,
    /// Transactions to generate.
    pub txns: u64,
    /// Concurrent processes.
    pub processes: u32,
    /// Partitions; partition `p` is an input of process slot `p % processes`.
    pub partitions: u32,
    /// Sends per transaction: 0 ..= this.
    pub max_sends: u32,
    /// Probability that a transaction aborts (ends `fail`).
    pub fail_rate: f64,
    /// Probability that a transaction that does not abort ends `info`.
    pub info_rate: f64,
}

impl Default for TxnGenConfig {
    fn default() -> Self {
        TxnGenConfig {
            seed: 1,
            txns: 1000,
            processes: 8,
            partitions: 16,
            max_sends: 3,
            fail_rate: 0.05,
            info_rate: 0.01,
        }
    }
}

/// What was generated.
#[derive(Debug, Clone, Copy, Default)]
pub struct TxnGenSummary {
    /// Lines written.
    pub ops: u64,
    /// Transactions completed (every one completes).
    pub txns: u64,
    /// Transactions committed (ended `ok`).
    pub committed: u64,
    /// The next free op index, process number and value (for appending more ops).
    pub next_index: u64,
    /// The next free process number.
    pub next_process: u64,
    /// The next free value.
    pub next_value: i64,
}

struct Slot {
    process: u64,
    /// Planned sends: (partition, value).
    sends: Vec<(u32, i64)>,
    pending: bool,
    applied: bool,
    outcome: u8, // 0 ok, 1 fail, 2 info
    /// Reads at the linearization point: (partition, offset, value).
    reads: Vec<(u32, i64, i64)>,
    offsets: Vec<i64>,
}

/// Writes the history as JSON Lines to `out`.
pub fn generate_txns<W: Write>(cfg: &TxnGenConfig, mut out: W) -> io::Result<TxnGenSummary> {
    let mut rng = Rng::new(cfg.seed);
    let np = cfg.processes.max(1);
    let nparts = cfg.partitions.max(1);
    let mut logs: Vec<Vec<i64>> = vec![Vec::new(); nparts as usize];
    let mut pos: Vec<Vec<usize>> = vec![vec![0; nparts as usize]; np as usize];
    let mut slots: Vec<Slot> = (0..np)
        .map(|i| Slot {
            process: u64::from(i),
            sends: Vec::new(),
            pending: false,
            applied: false,
            outcome: 0,
            reads: Vec::new(),
            offsets: Vec::new(),
        })
        .collect();
    let mut next_process = u64::from(np);
    let mut s = TxnGenSummary::default();
    let (mut index, mut time, mut value) = (0u64, 0u64, 0i64);
    let mut started = 0u64;
    let mut line = String::with_capacity(512);
    while started < cfg.txns || slots.iter().any(|x| x.pending) {
        let si = rng.below(u64::from(np)) as usize;
        let slot = &mut slots[si];
        time += 1 + rng.below(1000);
        line.clear();
        if !slot.pending {
            if started >= cfg.txns {
                continue;
            }
            started += 1;
            slot.sends.clear();
            for _ in 0..rng.range(0, u64::from(cfg.max_sends)) {
                slot.sends
                    .push((rng.below(u64::from(nparts)) as u32, value));
                value += 1;
            }
            slot.pending = true;
            slot.applied = false;
            slot.outcome = if rng.chance(cfg.fail_rate) {
                1
            } else if rng.chance(cfg.info_rate) {
                2
            } else {
                0
            };
            line.push_str(&format!(
                "{{\"index\":{index},\"time\":{time},\"process\":{},\"type\":\"invoke\",\"f\":\"txn\",\"value\":[{{\"f\":\"poll\"}}",
                slot.process
            ));
            for &(p, v) in &slot.sends {
                line.push_str(&format!(
                    ",{{\"f\":\"send\",\"key\":\"k{p}\",\"value\":{v}}}"
                ));
            }
            line.push_str("]}\n");
        } else if !slot.applied {
            slot.applied = true;
            slot.reads.clear();
            slot.offsets.clear();
            let apply = match slot.outcome {
                0 => true,
                1 => false,
                _ => rng.chance(0.5),
            };
            if slot.outcome != 1 {
                let mut p = si as u32;
                while p < nparts {
                    let from = pos[si][p as usize];
                    let log = &logs[p as usize];
                    for (o, &v) in log.iter().enumerate().skip(from) {
                        slot.reads.push((p, o as i64, v));
                    }
                    if apply {
                        pos[si][p as usize] = log.len();
                    }
                    p += np;
                }
            }
            for &(p, v) in &slot.sends {
                let log = &mut logs[p as usize];
                slot.offsets.push(log.len() as i64);
                if apply {
                    log.push(v);
                }
            }
            if !apply {
                slot.reads.clear();
            }
            continue;
        } else {
            let kind = ["ok", "fail", "info"][slot.outcome as usize];
            line.push_str(&format!(
                "{{\"index\":{index},\"time\":{time},\"process\":{},\"type\":\"{kind}\",\"f\":\"txn\"",
                slot.process
            ));
            if slot.outcome == 0 {
                line.push_str(",\"value\":[{\"f\":\"poll\",\"messages\":[");
                for (i, &(p, o, v)) in slot.reads.iter().enumerate() {
                    if i > 0 {
                        line.push(',');
                    }
                    line.push_str(&format!(
                        "{{\"key\":\"k{p}\",\"value\":{v},\"partition\":{p},\"offset\":{o}}}"
                    ));
                }
                line.push_str("]}");
                for (&(p, v), &o) in slot.sends.iter().zip(&slot.offsets) {
                    line.push_str(&format!(
                        ",{{\"f\":\"send\",\"key\":\"k{p}\",\"value\":{v},\"partition\":{p},\"offset\":{o}}}"
                    ));
                }
                line.push(']');
                s.committed += 1;
            } else if slot.outcome == 1 {
                line.push_str(",\"error\":\"transaction aborted\"");
            } else {
                line.push_str(",\"error\":\"timed out\"");
            }
            line.push_str("}\n");
            if slot.outcome == 2 {
                slot.process = next_process;
                next_process += 1;
            }
            slot.pending = false;
            s.txns += 1;
        }
        out.write_all(line.as_bytes())?;
        index += 1;
        s.ops += 1;
    }
    s.next_index = index;
    s.next_process = next_process;
    s.next_value = value;
    Ok(s)
}

/// [`generate_txns`] into memory.
pub fn generate_txns_vec(cfg: &TxnGenConfig) -> (Vec<u8>, TxnGenSummary) {
    let mut buf = Vec::new();
    let s = generate_txns(cfg, &mut buf).unwrap_or_default();
    (buf, s)
}
