//! Histories of a topic whose partition count changes mid-run (seed O4), with
//! `repartition-key-order` injected at known keys and its exact expected count.
//!
//! One producer sends `before` messages of each key, the nemesis adds
//! partitions (`from` to `2 * from`), then it sends `lagging` messages of each
//! key still on its old partition (a producer whose metadata has not caught up
//! with the change: sent after it, so never the earlier half of a counted
//! pair), then `after` messages of each key.
//! Key `k` is on partition `k % count`, so with the count doubled a key either
//! stays (`k % 2from < from`) or moves to a new partition, which holds only
//! messages sent after the change. Each partition has its own consumer of one
//! group. The polls:
//!
//! 1. the new partitions' polls of the *injected* moved keys' later messages:
//!    the group receives them before their earlier ones (counted);
//! 2. the *overlapping* moved keys: their later messages' poll is invoked, then
//!    the earlier messages' poll, then both complete (a near miss: overlapping
//!    polls prove no order);
//! 3. every key's earlier messages, one poll per key on its old partition,
//!    then every key's lagging messages, one poll per key (so on its old
//!    partition the latest-polled message of a key is a lagging one, sent
//!    after the change);
//! 4. every other key's later messages (the moved ones in order, after their
//!    earlier messages: a near miss; the keys that stayed: same partition).
//!
//! No consumer ever receives two messages of a key out of order, so `key-order`
//! is 0: only the group-wide judgement sees the injected keys. Offsets rise in
//! poll order on every partition.
use crate::Rng;
use serde_json::json;

/// What to generate.
#[derive(Debug, Clone)]
pub struct RepartitionGen {
    /// The PRNG seed: which moved keys are injected and which overlap.
    pub seed: u64,
    /// Keys `k0..k{keys-1}`.
    pub keys: usize,
    /// Partitions before the change (after it: twice as many).
    pub from: u32,
    /// Messages of each key sent before the change.
    pub before: usize,
    /// Messages of each key sent after the change, on the new count.
    pub after: usize,
    /// Messages of each key sent after the change, between the earlier and the
    /// later ones, still on the old count (the producer's metadata lags).
    pub lagging: usize,
    /// Moved keys whose later messages the group receives first.
    pub inject: usize,
    /// Moved keys whose two polls overlap (not counted).
    pub overlap: usize,
    /// Write the `add-partitions` events (without them the anomaly is not judged).
    pub with_change: bool,
}

/// What the generated history holds.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RepartitionExpected {
    /// `repartition-key-order`: the injected keys.
    pub repartition_key_order: u64,
    /// `gap`: one per injected key, and one per overlapping key with lagging
    /// messages (the overlapping poll gave the group its earlier messages, not
    /// its lagging ones).
    pub gap: u64,
    /// Keys that moved to a new partition.
    pub moved: usize,
    /// Messages sent (all `ok`, all delivered once).
    pub messages: u64,
}

/// Generates the history (JSON Lines) and what it holds. The injected and
/// overlapping keys are drawn among the moved ones (as many as there are).
pub fn generate_repartition(cfg: &RepartitionGen) -> (Vec<u8>, RepartitionExpected) {
    let from = cfg.from.max(1);
    let to = 2 * from;
    let keys = cfg.keys;
    let moved: Vec<usize> = (0..keys)
        .filter(|k| (*k as u32 % to) != (*k as u32 % from))
        .collect();
    // Draw the injected, then the overlapping keys among the moved ones.
    let mut rng = Rng::new(cfg.seed);
    let mut pool = moved.clone();
    let mut take = |n: usize, pool: &mut Vec<usize>| -> Vec<usize> {
        let mut out = Vec::new();
        while out.len() < n && !pool.is_empty() {
            let i = rng.below(pool.len() as u64) as usize;
            out.push(pool.swap_remove(i));
        }
        out.sort_unstable();
        out
    };
    let injected = take(cfg.inject, &mut pool);
    let overlapping = take(cfg.overlap, &mut pool);

    let mut w = Writer::default();
    let mut offsets = vec![0i64; to as usize];
    // (key, value, partition, offset) of each key's earlier and later messages.
    let mut earlier: Vec<Vec<(i64, u32, i64)>> = vec![Vec::new(); keys];
    let mut lagging: Vec<Vec<(i64, u32, i64)>> = vec![Vec::new(); keys];
    let mut later: Vec<Vec<(i64, u32, i64)>> = vec![Vec::new(); keys];
    let mut value = 0i64;
    let mut send = |w: &mut Writer, k: usize, count: u32, offsets: &mut Vec<i64>| {
        let p = k as u32 % count;
        let o = offsets[p as usize];
        offsets[p as usize] += 1;
        let key = format!("k{k}");
        w.op(
            json!(0),
            "invoke",
            "send",
            json!({"key": key, "value": value}),
        );
        w.op(
            json!(0),
            "ok",
            "send",
            json!({"key": key, "value": value, "partition": p, "offset": o}),
        );
        let m = (value, p, o);
        value += 1;
        m
    };
    // The earlier messages: the overlapping keys' first, so that their early poll
    // (2.) reads the lowest offsets of their old partitions.
    let first: Vec<usize> = overlapping
        .iter()
        .copied()
        .chain((0..keys).filter(|k| !overlapping.contains(k)))
        .collect();
    for &k in &first {
        for _ in 0..cfg.before {
            let m = send(&mut w, k, from, &mut offsets);
            earlier[k].push(m);
        }
    }
    if cfg.with_change {
        w.op(
            json!("nemesis"),
            "invoke",
            "add-partitions",
            json!({"fault": "add-partitions", "fault_id": 0, "instant": true}),
        );
        w.op(
            json!("nemesis"),
            "info",
            "add-partitions",
            json!({"fault_id": 0, "instant": true, "via": "storage",
                   "topics": [{"topic": "t", "partitions_before": from, "partitions_after": to}]}),
        );
    }
    // The lagging messages, on the old count.
    for &k in &first {
        for _ in 0..cfg.lagging {
            let m = send(&mut w, k, from, &mut offsets);
            lagging[k].push(m);
        }
    }
    // The later messages: the injected keys' first, then the overlapping ones',
    // so offsets rise in poll order on the new partitions.
    let order: Vec<usize> = injected
        .iter()
        .chain(overlapping.iter())
        .copied()
        .chain((0..keys).filter(|k| !injected.contains(k) && !overlapping.contains(k)))
        .collect();
    for &k in &order {
        for _ in 0..cfg.after {
            let m = send(&mut w, k, to, &mut offsets);
            later[k].push(m);
        }
    }
    let consumer = |p: u32| 100 + u64::from(p);
    let poll_ok = |w: &mut Writer, k: usize, msgs: &[(i64, u32, i64)]| {
        let p = msgs.first().map_or(0, |m| m.1);
        let list: Vec<_> = msgs
            .iter()
            .map(|&(v, p, o)| json!({"key": format!("k{k}"), "value": v, "partition": p, "offset": o}))
            .collect();
        w.op(json!(consumer(p)), "ok", "poll", json!(list));
    };
    let poll_invoke = |w: &mut Writer, msgs: &[(i64, u32, i64)]| {
        let p = msgs.first().map_or(0, |m| m.1);
        w.op(
            json!(consumer(p)),
            "invoke",
            "poll",
            serde_json::Value::Null,
        );
    };
    // 1. Injected: the later messages first.
    for &k in &injected {
        if !later[k].is_empty() {
            poll_invoke(&mut w, &later[k]);
            poll_ok(&mut w, k, &later[k]);
        }
    }
    // 2. Overlapping: both polls under way at once.
    for &k in &overlapping {
        if later[k].is_empty() || earlier[k].is_empty() {
            continue;
        }
        poll_invoke(&mut w, &later[k]);
        poll_invoke(&mut w, &earlier[k]);
        poll_ok(&mut w, k, &later[k]);
        poll_ok(&mut w, k, &earlier[k]);
    }
    // 3. Every other key's earlier messages, in the order they were sent.
    for &k in first.iter().filter(|k| !overlapping.contains(k)) {
        if !earlier[k].is_empty() {
            poll_invoke(&mut w, &earlier[k]);
            poll_ok(&mut w, k, &earlier[k]);
        }
    }
    for &k in &first {
        if !lagging[k].is_empty() {
            poll_invoke(&mut w, &lagging[k]);
            poll_ok(&mut w, k, &lagging[k]);
        }
    }
    // 4. The later messages not yet delivered.
    for &k in order
        .iter()
        .filter(|k| !injected.contains(k) && !overlapping.contains(k))
    {
        if !later[k].is_empty() {
            poll_invoke(&mut w, &later[k]);
            poll_ok(&mut w, k, &later[k]);
        }
    }
    w.op(json!("harness"), "info", "phase", json!("drained"));
    let counted = injected
        .iter()
        .filter(|&&k| !later[k].is_empty() && !earlier[k].is_empty())
        .count() as u64;
    let gap = counted
        + overlapping
            .iter()
            .filter(|&&k| !later[k].is_empty() && !earlier[k].is_empty() && !lagging[k].is_empty())
            .count() as u64;
    (
        w.out,
        RepartitionExpected {
            repartition_key_order: if cfg.with_change { counted } else { 0 },
            gap,
            moved: moved.len(),
            messages: value as u64,
        },
    )
}

#[derive(Default)]
struct Writer {
    out: Vec<u8>,
    index: u64,
}

impl Writer {
    fn op(&mut self, process: serde_json::Value, ty: &str, f: &str, value: serde_json::Value) {
        let mut op = json!({
            "index": self.index,
            "time": self.index * 1000,
            "process": process,
            "type": ty,
            "f": f,
        });
        if !value.is_null() {
            op["value"] = value;
        }
        self.out.extend_from_slice(op.to_string().as_bytes());
        self.out.push(b'\n');
        self.index += 1;
    }
}
