//! The two-hop pipeline's anomalies (`docs/twohop.md`, seed row O7):
//! `two-hop-lost`, `two-hop-duplicate` and `two-hop-order`.
//!
//! A two-hop history has *inputs* (sends that name no `input`: the producers'
//! sends to stream A) and *outputs* (a transformer's sends to stream B, each
//! naming the value of the input it was made from). The checker follows each
//! input through both hops: read by a transformer (a delivery of the input to
//! the process that then sent the output), sent on, delivered to a consumer
//! (a delivery of the output). It runs only when the history has outputs: in
//! every other history its anomaly types are absent from the verdict.
use crate::found::Found;
use crate::verdict::Example;
use gauntlet_history::model::{History, Outcome, NONE};
use rustc_hash::FxHashMap;
use serde::{Deserialize, Serialize};

/// Where a message left the pipeline or where an order broke.
pub mod place {
    /// Lost: no transformer ever read the input.
    pub const FIRST_HOP: &str = "first-hop";
    /// Lost: a transformer read the input and no output of it was written.
    /// Order: read in order, the outputs were sent in the other order.
    pub const TRANSFORMER: &str = "transformer";
    /// Lost: an output was written and never delivered. Order: sent in
    /// order, delivered in the other order.
    pub const SECOND_HOP: &str = "second-hop";
    /// Order: the transformers read the inputs in the other order (already
    /// out of order when read).
    pub const INPUT: &str = "input";
    /// Order: the read of an input is not in the history.
    pub const UNKNOWN: &str = "unknown";
}

/// An output as an example names it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct OutputRef {
    /// Op index of the poll that delivered it to the consumer (order examples).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub delivered_by: Option<u64>,
    /// The input's value.
    pub input: i64,
    /// Op index of the input's send invoke.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub input_send: Option<u64>,
    /// Op index of the poll by which the transformer read the input (`None`: not in the history).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub read_by: Option<u64>,
    /// Op index of the output's send invoke.
    pub send_invoke: u64,
    /// The transformer: the process that sent the output.
    pub transformer: u64,
    /// The output's value.
    pub value: i64,
}

/// `two-hop-lost`: an input that reached no consumer.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TwoHopLost {
    /// Op index of the `drained` marker.
    pub drained: u64,
    /// The input's key.
    pub key: String,
    /// Its outputs that were written, never delivered (`second-hop`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub outputs: Vec<OutputRef>,
    /// Op index of the poll by which a transformer read it (`transformer`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub read_by: Option<u64>,
    /// Op index of the input's send invoke.
    pub send_invoke: u64,
    /// The input's value.
    pub value: i64,
    /// Where it left the pipeline: `first-hop`, `transformer` or `second-hop`.
    #[serde(rename = "where")]
    pub at: String,
}

/// `two-hop-duplicate`: an input with two or more outputs written.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TwoHopDuplicate {
    /// The input's key.
    pub key: String,
    /// Its written outputs, in send order.
    pub outputs: Vec<OutputRef>,
    /// Op index of the input's send invoke.
    pub send_invoke: u64,
    /// The input's value.
    pub value: i64,
}

/// `two-hop-order`: a consumer received F2 before F1, F1's input sent before F2's.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TwoHopOrder {
    /// Where the order broke: `input`, `transformer`, `second-hop` or `unknown`.
    pub broke_at: String,
    /// The consumer.
    pub consumer: u64,
    /// The inputs' key.
    pub key: String,
    /// The inputs' producer.
    pub producer: u64,
    /// F2: received first, its input sent after F1's.
    pub received_first: OutputRef,
    /// F1: its input sent first, received after F2.
    pub sent_first: OutputRef,
}

/// What the pass found.
pub(crate) struct Findings {
    pub lost: Found,
    pub duplicate: Found,
    pub order: Found,
}

/// Whether the history is a two-hop one (its verdict has the three types).
pub fn applies(h: &History) -> bool {
    !h.inputs.is_empty()
}

/// Per output send: its input's send index (or NONE) and the transformer's read of it.
struct Output {
    send: u32,
    input: i64,
    input_send: u32,
    /// (poll complete index, place in the poll) of the read, or None.
    read: Option<(u64, u32)>,
}

pub(crate) fn check(h: &History, max: usize) -> Findings {
    let mut f = Findings {
        lost: Found::new(max),
        duplicate: Found::new(max),
        order: Found::new(max),
    };
    // Deliveries of each send, per process: (poll complete, place, process).
    let mut delivered: FxHashMap<u32, Vec<(u64, u32, u32)>> = FxHashMap::default();
    for p in &h.polls {
        for (place, di) in (p.first..p.first + p.count).enumerate() {
            let d = &h.deliveries[di as usize];
            if d.send != NONE {
                delivered
                    .entry(d.send)
                    .or_default()
                    .push((p.complete, place as u32, p.process));
            }
        }
    }
    let mut outputs: Vec<Output> = Vec::with_capacity(h.inputs.len());
    let mut output_of_send: FxHashMap<u32, u32> = FxHashMap::default();
    let mut outputs_of_input: FxHashMap<u32, Vec<u32>> = FxHashMap::default();
    for &(send, input) in &h.inputs {
        let s = &h.sends[send as usize];
        let input_send = h.send_of_value.get(input).unwrap_or(NONE);
        // The transformer's read: its last delivery of the input before it sent the output.
        let read = (input_send != NONE)
            .then(|| delivered.get(&input_send))
            .flatten()
            .and_then(|ds| {
                ds.iter()
                    .filter(|&&(complete, _, process)| process == s.process && complete < s.invoke)
                    .map(|&(complete, place, _)| (complete, place))
                    .max()
            });
        let o = outputs.len() as u32;
        output_of_send.insert(send, o);
        if input_send != NONE {
            outputs_of_input.entry(input_send).or_default().push(o);
        }
        outputs.push(Output {
            send,
            input,
            input_send,
            read,
        });
    }
    let written =
        |send: u32| h.sends[send as usize].outcome == Outcome::Ok || delivered.contains_key(&send);
    let oref = |o: &Output, delivered_by: Option<u64>| {
        let s = &h.sends[o.send as usize];
        OutputRef {
            delivered_by,
            input: o.input,
            input_send: (o.input_send != NONE).then(|| h.sends[o.input_send as usize].invoke),
            read_by: o.read.map(|r| r.0),
            send_invoke: s.invoke,
            transformer: h.process_number(s.process),
            value: s.value,
        }
    };

    // Inputs: sends that name no input, in invoke order.
    let is_output: Vec<bool> = {
        let mut v = vec![false; h.sends.len()];
        for &(send, _) in &h.inputs {
            v[send as usize] = true;
        }
        v
    };
    for (i, s) in h.sends.iter().enumerate() {
        let i = i as u32;
        if is_output[i as usize] {
            continue;
        }
        let outs = outputs_of_input.get(&i).map(Vec::as_slice).unwrap_or(&[]);
        let written_outs: Vec<u32> = outs
            .iter()
            .copied()
            .filter(|&o| written(outputs[o as usize].send))
            .collect();
        if written_outs.len() >= 2 {
            f.duplicate.hit(|| {
                Example::TwoHopDuplicate(TwoHopDuplicate {
                    key: h.key_name(s.key).to_string(),
                    outputs: written_outs
                        .iter()
                        .map(|&o| oref(&outputs[o as usize], None))
                        .collect(),
                    send_invoke: s.invoke,
                    value: s.value,
                })
            });
        }
        let Some(drained) = h.drained else {
            continue;
        };
        if !written(i) {
            continue;
        }
        let reached = outs
            .iter()
            .any(|&o| delivered.contains_key(&outputs[o as usize].send));
        if reached {
            continue;
        }
        let read_by = delivered
            .get(&i)
            .and_then(|ds| ds.iter().map(|d| d.0).min());
        let at = if !written_outs.is_empty() {
            place::SECOND_HOP
        } else if read_by.is_some() {
            place::TRANSFORMER
        } else {
            place::FIRST_HOP
        };
        *f.lost.by_place.entry(at.to_string()).or_insert(0) += 1;
        f.lost.hit(|| {
            Example::TwoHopLost(TwoHopLost {
                drained,
                key: h.key_name(s.key).to_string(),
                outputs: written_outs
                    .iter()
                    .map(|&o| oref(&outputs[o as usize], None))
                    .collect(),
                read_by,
                send_invoke: s.invoke,
                value: s.value,
                at: at.to_string(),
            })
        });
    }

    // Order: per consumer, per (input producer, input key), the first receipt
    // of an output of each input, in delivery order.
    type Line = Vec<(u32, u32, u64)>; // (input position, output index, delivered_by)
    let mut lines: FxHashMap<(u32, u32, u32), Line> = FxHashMap::default();
    let mut seen: rustc_hash::FxHashSet<(u32, u32)> = Default::default();
    let mut line_order: Vec<(u32, u32, u32)> = Vec::new();
    for p in &h.polls {
        for di in p.first..p.first + p.count {
            let d = &h.deliveries[di as usize];
            let Some(&o) = (d.send != NONE)
                .then(|| output_of_send.get(&d.send))
                .flatten()
            else {
                continue;
            };
            let out = &outputs[o as usize];
            if out.input_send == NONE || !seen.insert((p.process, out.input_send)) {
                continue;
            }
            let input = &h.sends[out.input_send as usize];
            let k = (p.process, input.producer, input.key);
            let line = lines.entry(k).or_insert_with(|| {
                line_order.push(k);
                Vec::new()
            });
            line.push((input.position, o, p.complete));
        }
    }
    for k in line_order {
        let line = &lines[&k];
        // Suffix minimum of the input positions: F at i came early when a later one has a smaller.
        let mut min_after: Vec<Option<usize>> = vec![None; line.len()];
        let mut best: Option<usize> = None;
        for i in (0..line.len()).rev() {
            min_after[i] = best;
            if best.is_none_or(|b| line[i].0 < line[b].0) {
                best = Some(i);
            }
        }
        for (i, m) in min_after.iter().enumerate() {
            let Some(j) = *m else { continue };
            if line[j].0 >= line[i].0 {
                continue;
            }
            let (f2, f1) = (&outputs[line[i].1 as usize], &outputs[line[j].1 as usize]);
            let (s2, s1) = (&h.sends[f2.send as usize], &h.sends[f1.send as usize]);
            let broke_at = match (f2.read, f1.read) {
                (Some(r2), Some(r1)) if r2 < r1 => place::INPUT,
                (Some(_), Some(_)) if s2.invoke < s1.invoke => place::TRANSFORMER,
                (Some(_), Some(_)) => place::SECOND_HOP,
                _ => place::UNKNOWN,
            };
            *f.order.by_place.entry(broke_at.to_string()).or_insert(0) += 1;
            f.order.hit(|| {
                Example::TwoHopOrder(TwoHopOrder {
                    broke_at: broke_at.to_string(),
                    consumer: h.process_number(k.0),
                    key: h.key_name(k.2).to_string(),
                    producer: h.process_number(k.1),
                    received_first: oref(f2, Some(line[i].2)),
                    sent_first: oref(f1, Some(line[j].2)),
                })
            });
        }
    }
    f
}
