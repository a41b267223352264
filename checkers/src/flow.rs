//! Throughput and consumer lag per key and per partition (`stats.flow`, seed O6).
//!
//! One pass over the deliveries finds each message's first delivery (a bit per
//! send); the lags are then grouped by key, by partition and by time with a
//! counting sort, so the cost is a few bytes per delivered message and linear time.
use crate::stats::percentiles;
use crate::verdict::flow::{Flow, FlowRow, LagBucket, FLOW_ROWS};
use crate::verdict::Latency;
use gauntlet_history::model::{History, Outcome, NONE, NO_OP};

/// Buckets of the lag over time, at most.
const BUCKETS: u64 = 60;

/// One delivered message: its send, where it was first delivered, its lag in µs.
#[derive(Clone, Copy)]
struct Lag {
    send: u32,
    partition: u32,
    lag_us: u32,
}

/// The flow of `h`, or `None` when no send names a key.
pub(crate) fn flow(h: &History) -> Option<Flow> {
    if h.keys.is_empty() || h.sends.iter().all(|s| s.key == NONE) {
        return None;
    }
    let (mut first, mut last) = (u64::MAX, 0u64);
    for s in &h.sends {
        first = first.min(s.invoke_time);
        last = last.max(if s.complete != NO_OP {
            s.complete_time
        } else {
            s.invoke_time
        });
    }
    let window_ns = last.saturating_sub(first);
    let window_s = window_ns as f64 / 1e9;

    // Each message's first delivery, in the order polls completed.
    let mut seen = vec![0u64; h.sends.len().div_ceil(64)];
    let mut lags: Vec<Lag> = Vec::new();
    for d in &h.deliveries {
        let i = d.send as usize;
        if d.send == NONE || seen[i / 64] & (1 << (i % 64)) != 0 {
            continue;
        }
        seen[i / 64] |= 1 << (i % 64);
        let s = &h.sends[i];
        let at = h.polls[d.poll as usize].complete_time;
        let lag_us = (at.saturating_sub(s.invoke_time) / 1_000).min(u64::from(u32::MAX)) as u32;
        let partition = if d.partition != NONE {
            d.partition
        } else {
            s.partition
        };
        lags.push(Lag {
            send: d.send,
            partition,
            lag_us,
        });
    }
    drop(seen);

    // Per key.
    let nkeys = h.keys.len();
    let mut key_rows = rows(nkeys);
    for s in &h.sends {
        if s.key != NONE {
            count_send(&mut key_rows[s.key as usize], s.outcome);
        }
    }
    let key_lags = grouped(&lags, nkeys, |l| Some(h.sends[l.send as usize].key));
    let (keys, hottest) = table(key_rows, key_lags, window_s, |k| {
        h.key_name(k as u32).to_string()
    });

    // Per partition: where the broker stored the message (its first delivery's
    // partition, or the send's).
    let nparts = h.partitions.len();
    let mut part_rows = rows(nparts);
    if nparts > 0 {
        let mut delivered_in = vec![NONE; h.sends.len()];
        for l in &lags {
            delivered_in[l.send as usize] = l.partition;
        }
        for (i, s) in h.sends.iter().enumerate() {
            let p = if delivered_in[i] != NONE {
                delivered_in[i]
            } else {
                s.partition
            };
            if p != NONE {
                count_send(&mut part_rows[p as usize], s.outcome);
            }
        }
    }
    let part_lags = grouped(&lags, nparts, |l| {
        (l.partition != NONE).then_some(l.partition)
    });
    let (partitions, _) = table(part_rows, part_lags, window_s, |p| {
        match h.partition(p as u32) {
            Some((Some(topic), n)) => format!("{topic}/{n}"),
            Some((None, n)) => n.to_string(),
            None => p.to_string(),
        }
    });

    // Over time, by the send's invoke.
    let width_s = (window_ns.div_ceil(1_000_000_000)).div_ceil(BUCKETS).max(1);
    let width_ns = width_s * 1_000_000_000;
    let nb = (window_ns / width_ns + 1) as usize;
    let bucket = |send: u32| ((h.sends[send as usize].invoke_time - first) / width_ns) as u32;
    let mut sent = vec![0u64; nb];
    for s in &h.sends {
        sent[((s.invoke_time - first) / width_ns) as usize] += 1;
    }
    let all = grouped(&lags, nb, |l| Some(bucket(l.send)));
    let hot = match hottest {
        Some(k) => grouped(&lags, nb, |l| {
            (h.sends[l.send as usize].key as usize == k).then(|| bucket(l.send))
        }),
        None => vec![(0, None); nb],
    };
    let lag_over_time = (0..nb)
        .map(|b| LagBucket {
            start_ms: b as u64 * width_s * 1_000,
            sent: sent[b],
            delivered: all[b].0,
            lag_ns: all[b].1,
            hottest_key_lag_ns: hot[b].1,
        })
        .collect();

    Some(Flow {
        window_s,
        keys_not_listed: (nkeys.saturating_sub(FLOW_ROWS)) as u64,
        keys,
        partitions_not_listed: (nparts.saturating_sub(FLOW_ROWS)) as u64,
        partitions,
        lag_over_time,
    })
}

#[derive(Clone, Copy, Default)]
struct Counts {
    sends: u64,
    ok: u64,
}

fn rows(n: usize) -> Vec<Counts> {
    vec![Counts::default(); n]
}

fn count_send(c: &mut Counts, outcome: Outcome) {
    c.sends += 1;
    if outcome == Outcome::Ok {
        c.ok += 1;
    }
}

/// The lags grouped by `tag` (in `0..n`; `None` leaves a lag out), by counting
/// sort: per tag, how many and their percentiles in nanoseconds.
fn grouped(
    lags: &[Lag],
    n: usize,
    tag: impl Fn(&Lag) -> Option<u32>,
) -> Vec<(u64, Option<Latency>)> {
    let mut start = vec![0usize; n + 1];
    for l in lags {
        if let Some(t) = tag(l) {
            start[t as usize + 1] += 1;
        }
    }
    for i in 0..n {
        start[i + 1] += start[i];
    }
    let mut at = start.clone();
    let mut sorted = vec![0u64; start[n]];
    for l in lags {
        if let Some(t) = tag(l) {
            sorted[at[t as usize]] = u64::from(l.lag_us) * 1_000;
            at[t as usize] += 1;
        }
    }
    (0..n)
        .map(|t| {
            let slice = &mut sorted[start[t]..start[t + 1]];
            (slice.len() as u64, percentiles(slice))
        })
        .collect()
}

/// The rows with sends or deliveries, hottest first (most sends, then most
/// delivered, then the first met), at most [`FLOW_ROWS`]; and the hottest's id.
fn table(
    counts: Vec<Counts>,
    lags: Vec<(u64, Option<Latency>)>,
    window_s: f64,
    name: impl Fn(usize) -> String,
) -> (Vec<FlowRow>, Option<usize>) {
    let total: u64 = counts.iter().map(|c| c.sends).sum();
    let mut ids: Vec<usize> = (0..counts.len())
        .filter(|&i| counts[i].sends > 0 || lags[i].0 > 0)
        .collect();
    let order = |&i: &usize| (std::cmp::Reverse((counts[i].sends, lags[i].0)), i);
    if ids.len() > FLOW_ROWS {
        ids.select_nth_unstable_by_key(FLOW_ROWS, order);
        ids.truncate(FLOW_ROWS);
    }
    ids.sort_unstable_by_key(order);
    let hottest = ids.first().copied();
    let rows = ids
        .into_iter()
        .map(|i| FlowRow {
            name: name(i),
            sends: counts[i].sends,
            sends_ok: counts[i].ok,
            share: if total > 0 {
                counts[i].sends as f64 / total as f64
            } else {
                0.0
            },
            sends_ok_per_s: if window_s > 0.0 {
                counts[i].ok as f64 / window_s
            } else {
                0.0
            },
            delivered: lags[i].0,
            lag_ns: lags[i].1,
        })
        .collect();
    (rows, hottest)
}
