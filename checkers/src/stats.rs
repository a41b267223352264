//! Figures about a history: op counts, throughput and send latency.
use crate::verdict::{Latency, Stats};
use gauntlet_history::model::{History, Outcome, NO_OP};

pub(crate) fn stats(h: &History, groups: usize, delivered_distinct: u64) -> Stats {
    let mut latencies: Vec<u64> = Vec::new();
    let (mut ok, mut fail, mut info) = (0u64, 0u64, 0u64);
    // The sending window: the first send's invoke to the last send's completion.
    let (mut first_send, mut last_send) = (u64::MAX, 0u64);
    for s in &h.sends {
        first_send = first_send.min(s.invoke_time);
        if s.complete != NO_OP {
            last_send = last_send.max(s.complete_time);
        }
        match s.outcome {
            Outcome::Ok => {
                ok += 1;
                if s.complete != NO_OP {
                    latencies.push(s.complete_time.saturating_sub(s.invoke_time));
                }
            }
            Outcome::Fail => fail += 1,
            Outcome::Info => info += 1,
        }
    }
    let send_latency_ns = percentiles(&mut latencies);
    let duration_ns = h.counts.last_time.saturating_sub(h.counts.first_time);
    Stats {
        ops: h.counts.ops,
        sends: h.sends.len() as u64,
        sends_ok: ok,
        sends_fail: fail,
        sends_info: info,
        delivered: h.deliveries.len() as u64,
        delivered_distinct,
        polls: h.polls.len() as u64,
        groups: groups as u64,
        keys: h.keys.len() as u64,
        clients: h.processes.len() as u64,
        nemesis_events: h.counts.nemesis_events,
        drained: h.drained.is_some(),
        duration_ns,
        send_latency_ns,
        sends_ok_per_s: if last_send > first_send {
            ok as f64 / ((last_send - first_send) as f64 / 1e9)
        } else {
            0.0
        },
        // Its own pass, before the delivery index (lib.rs).
        flow: None,
    }
}

/// p50, p99 and max; reorders `v`.
pub fn percentiles(v: &mut [u64]) -> Option<Latency> {
    if v.is_empty() {
        return None;
    }
    let n = v.len();
    let at = |q: f64| ((n as f64 * q).ceil() as usize).clamp(1, n) - 1;
    let p50 = *v.select_nth_unstable(at(0.50)).1;
    let p99 = *v.select_nth_unstable(at(0.99)).1;
    let max = *v.iter().max().unwrap_or(&0);
    Some(Latency { p50, p99, max })
}
