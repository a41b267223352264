//! Two-hop pipeline histories (`docs/twohop.md`) with anomalies injected at
//! known places and the exact count of each.
//!
//! One producer (process 0) sends `inputs` values (0, 1, ...) over `keys`
//! keys, all `ok`, to stream A. One transformer (process 1) polls them in
//! batches of up to five, in order, and after each poll sends one output per
//! input (value `OUTPUT_BASE + input`, the input's key, `"input"`: the input's
//! value) to stream B; it drops the inputs chosen as `lost` (reads them, sends
//! nothing). At the end it sends a second output (value `DUPLICATE_BASE +
//! input`) of each input chosen as `duplicates`. One consumer (process 2) polls
//! the outputs in send order, except that `swaps` pairs of consecutive
//! outputs of one key are delivered the other way round (each: one
//! `two-hop-order`, reordered by the second hop). Both hops' polls are in group
//! `two-hop`, and the history ends with the `drained` marker.
use gauntlet_history::rng::Rng;
use serde_json::{json, Value};
use std::collections::BTreeSet;

/// The value of the output of input `v`: `OUTPUT_BASE + v`.
pub const OUTPUT_BASE: i64 = 1_000_000;
/// The value of the second output of input `v`: `DUPLICATE_BASE + v`.
pub const DUPLICATE_BASE: i64 = 2_000_000;

/// What to generate.
#[derive(Debug, Clone)]
pub struct TwoHopGen {
    /// Seeds the choice of the lost, duplicated and swapped messages.
    pub seed: u64,
    /// Inputs sent.
    pub inputs: usize,
    /// Keys, 1 and up.
    pub keys: usize,
    /// Inputs the transformer drops.
    pub lost: usize,
    /// Inputs transformed twice.
    pub duplicates: usize,
    /// Pairs of one key's consecutive outputs delivered the other way round.
    pub swaps: usize,
}

/// The counts the checker must find.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct TwoHopExpected {
    /// `two-hop-lost` (all `transformer`).
    pub lost: u64,
    /// `two-hop-duplicate`.
    pub duplicate: u64,
    /// `two-hop-order` (all `second-hop`).
    pub order: u64,
}

struct Lines {
    out: Vec<u8>,
    index: u64,
}

impl Lines {
    fn op(&mut self, process: u64, kind: &str, f: &str, group: bool, value: Value) {
        let mut o = json!({"index": self.index, "time": self.index * 1000, "process": process,
            "type": kind, "f": f, "value": value});
        if group {
            o["group"] = json!("two-hop");
        }
        self.index += 1;
        self.out.extend_from_slice(o.to_string().as_bytes());
        self.out.push(b'\n');
    }
}

fn msg(key: &str, value: i64, topic: &str, offset: i64, input: Option<i64>) -> Value {
    let mut m =
        json!({"key": key, "value": value, "topic": topic, "partition": 0, "offset": offset});
    if let Some(i) = input {
        m["input"] = json!(i);
    }
    m
}

/// Picks `n` distinct numbers below `of`, seeded.
fn choose(rng: &mut Rng, n: usize, of: usize, except: &BTreeSet<usize>) -> BTreeSet<usize> {
    let mut out = BTreeSet::new();
    let room = of.saturating_sub(except.len());
    while out.len() < n.min(room) {
        let i = rng.below(of as u64) as usize;
        if !except.contains(&i) {
            out.insert(i);
        }
    }
    out
}

/// The history as JSON Lines and what the checker must find in it.
pub fn generate(cfg: &TwoHopGen) -> (Vec<u8>, TwoHopExpected) {
    let mut rng = Rng::new(cfg.seed);
    let keys = cfg.keys.max(1);
    let key = |v: usize| format!("k{}", v % keys);
    let lost = choose(&mut rng, cfg.lost, cfg.inputs, &BTreeSet::new());
    let duplicates = choose(&mut rng, cfg.duplicates, cfg.inputs, &lost);
    let mut l = Lines {
        out: Vec::new(),
        index: 0,
    };
    for v in 0..cfg.inputs {
        let k = key(v);
        l.op(0, "invoke", "send", false, json!({"key": k, "value": v}));
        l.op(
            0,
            "ok",
            "send",
            false,
            msg(&k, v as i64, "a", v as i64, None),
        );
    }
    // The transformer: a poll, then one send per input it keeps.
    let mut b_offset = 0i64;
    let mut delivered: Vec<(String, i64, i64, i64)> = Vec::new(); // (key, value, offset, input)
    let send = |l: &mut Lines, k: &str, value: i64, input: i64, off: &mut i64| {
        l.op(
            1,
            "invoke",
            "send",
            false,
            json!({"key": k, "value": value, "input": input}),
        );
        l.op(
            1,
            "ok",
            "send",
            false,
            msg(k, value, "b", *off, Some(input)),
        );
        *off += 1;
        (k.to_string(), value, *off - 1, input)
    };
    for batch in (0..cfg.inputs).collect::<Vec<_>>().chunks(5) {
        l.op(1, "invoke", "poll", true, Value::Null);
        let ms: Vec<Value> = batch
            .iter()
            .map(|&v| msg(&key(v), v as i64, "a", v as i64, None))
            .collect();
        l.op(1, "ok", "poll", true, Value::Array(ms));
        for &v in batch {
            if !lost.contains(&v) {
                let d = send(
                    &mut l,
                    &key(v),
                    OUTPUT_BASE + v as i64,
                    v as i64,
                    &mut b_offset,
                );
                delivered.push(d);
            }
        }
    }
    // Swaps: disjoint pairs of consecutive outputs of one key.
    let mut by_key: std::collections::BTreeMap<String, Vec<usize>> = Default::default();
    for (i, d) in delivered.iter().enumerate() {
        by_key.entry(d.0.clone()).or_default().push(i);
    }
    let pairs: Vec<(usize, usize)> = by_key
        .values()
        .flat_map(|ix| ix.chunks_exact(2).map(|c| (c[0], c[1])).collect::<Vec<_>>())
        .collect();
    let swapped = choose(&mut rng, cfg.swaps, pairs.len(), &BTreeSet::new());
    for &p in &swapped {
        let (a, b) = pairs[p];
        delivered.swap(a, b);
    }
    // The duplicates, sent last and delivered last.
    for &v in &duplicates {
        let d = send(
            &mut l,
            &key(v),
            DUPLICATE_BASE + v as i64,
            v as i64,
            &mut b_offset,
        );
        delivered.push(d);
    }
    for batch in delivered.chunks(7) {
        l.op(2, "invoke", "poll", true, Value::Null);
        let ms: Vec<Value> = batch
            .iter()
            .map(|(k, v, o, i)| msg(k, *v, "b", *o, Some(*i)))
            .collect();
        l.op(2, "ok", "poll", true, Value::Array(ms));
    }
    let drained = json!({"index": l.index, "time": l.index * 1000, "process": "harness",
        "type": "info", "f": "phase", "value": "drained"});
    l.out.extend_from_slice(drained.to_string().as_bytes());
    l.out.push(b'\n');
    let expected = TwoHopExpected {
        lost: lost.len() as u64,
        duplicate: duplicates.len() as u64,
        order: swapped.len() as u64,
    };
    (l.out, expected)
}
