//! `repartition-key-order` (extension, seed O4): key order judged across a
//! consumer group, for the messages whose sends straddle a change of the
//! topic's partition count (`docs/checkers.md`, "Key order across a
//! repartition").
//!
//! When partitions are added, a partitioner that hashes the key modulo the
//! partition count moves most keys to another partition. The old and the new
//! partition are usually read by different consumers of the group, so the
//! per-consumer `key-order` sees nothing: each consumer receives its part in
//! order. This pass looks at the group as a whole. For each (producer, key),
//! in the producer's send order, a message B sent after A is received by the
//! group before A when the poll that first gave B to the group completed
//! before the poll that first gave A to it was invoked (real time; overlapping
//! polls prove nothing). It counts the pair when A and B were on different
//! partitions and the history's `add-partitions` event lies between them
//! (A's send invoked before the change completed, B's send completed after it
//! began), and names the change, both partitions and both messages.
//!
//! The anomaly is in a verdict only when the history has an `add-partitions`
//! nemesis event ([`has_change`]): older histories and those from elsewhere
//! are judged exactly as before.
use crate::delivery::Index;
use crate::found::Found;
use crate::order::msg_ref;
use crate::verdict::evidence::RepartitionKeyOrder;
use crate::verdict::Example;
use gauntlet_history::model::{History, NONE};
use gauntlet_history::OpType;
use rustc_hash::{FxHashMap, FxHashSet};

/// The nemesis `f` of a change of a topic's partition count.
pub const CHANGE_F: &str = "add-partitions";

/// Whether the history has a partition-count change (an `add-partitions`
/// nemesis event, done or failed): only then is the anomaly judged.
pub fn has_change(h: &History) -> bool {
    h.nemesis.iter().any(|e| e.f == CHANGE_F)
}

/// One change that took effect: from its invoke (or its completion, when the
/// history has no invoke for it) to its completion, in nanoseconds, and the op
/// index of its completion.
#[derive(Debug, Clone, Copy)]
struct Change {
    began: u64,
    done: u64,
    index: u64,
}

/// The changes that took effect: each `info` `add-partitions` event whose
/// value carries no `error`, with the latest `invoke` of the same name before it.
fn changes(h: &History) -> Vec<Change> {
    let mut out = Vec::new();
    let mut began: Option<u64> = None;
    for e in h.nemesis.iter().filter(|e| e.f == CHANGE_F) {
        match e.kind {
            OpType::Invoke => began = Some(e.time),
            _ => {
                let failed = serde_json::from_str::<serde_json::Value>(&e.value)
                    .ok()
                    .is_some_and(|v| v.get("error").is_some());
                if !failed && e.kind != OpType::Fail {
                    out.push(Change {
                        began: began.unwrap_or(e.time).min(e.time),
                        done: e.time,
                        index: e.index,
                    });
                }
                began = None;
            }
        }
    }
    out
}

/// An earlier message of a (producer, key) already received by the group, on one
/// partition, whose send was invoked before one change completed: of all such messages,
/// the one the group was given last (the best candidate for A against any later B).
#[derive(Clone, Copy)]
struct Earlier {
    partition: u32,
    /// Index into the changes.
    change: usize,
    /// The invoke op index of the poll that first gave it to the group.
    poll_invoke: u64,
    delivery: u32,
}

pub(crate) fn check(h: &History, idx: &Index, max: usize) -> Found {
    let mut found = Found::new(max);
    let changes = changes(h);
    if changes.is_empty() {
        return found;
    }
    // (producer, key) -> its sends, then sorted by position.
    let mut pairs: FxHashMap<(u32, u32), Vec<u32>> = FxHashMap::default();
    for (i, s) in h.sends.iter().enumerate() {
        pairs.entry((s.producer, s.key)).or_default().push(i as u32);
    }
    let mut pairs: Vec<((u32, u32), Vec<u32>)> = pairs.into_iter().collect();
    pairs.sort_unstable_by_key(|(k, _)| *k);
    let mut keys_violated: FxHashSet<u32> = FxHashSet::default();
    let mut group_keys: FxHashSet<(u32, u32)> = FxHashSet::default();
    for (_, sends) in pairs.iter_mut() {
        sends.sort_unstable_by_key(|&s| h.sends[s as usize].position);
    }
    for (slot, &group) in idx.groups.iter().enumerate() {
        for ((_, key), sends) in &pairs {
            // Per (partition, change), the latest-polled earlier message sent before the
            // change completed (few partitions and changes: a list). One representative
            // per partition alone is not enough: a producer whose metadata lags sends
            // after the change onto the old partition, and such a message, polled last,
            // would hide the earlier one that does straddle the change.
            let mut earlier: Vec<Earlier> = Vec::new();
            for &b in sends {
                let db = idx.first[slot][b as usize];
                if db == NONE {
                    continue;
                }
                let delivery = &h.deliveries[db as usize];
                let pb = &h.polls[delivery.poll as usize];
                let part_b = partition_of(h, b, db);
                if part_b == NONE {
                    continue;
                }
                let send_b = &h.sends[b as usize];
                let b_complete = if send_b.complete_time == 0 {
                    u64::MAX
                } else {
                    send_b.complete_time
                };
                let hit = earlier.iter().find(|a| {
                    a.partition != part_b
                        && a.poll_invoke > pb.complete
                        && b_complete > changes[a.change].began
                });
                if let Some(a) = hit {
                    let change = changes[a.change];
                    let group_name = h.group_name(group);
                    if group_keys.insert((group, *key)) {
                        found.group_hit(group_name);
                    }
                    if keys_violated.insert(*key) {
                        found.example(|| {
                            let pa = &h.polls[h.deliveries[a.delivery as usize].poll as usize];
                            Example::RepartitionKeyOrder(RepartitionKeyOrder {
                                change: change.index,
                                group: group_name.to_string(),
                                key: h.key_name(*key).to_string(),
                                new_partition: h.partition(part_b).map(|(_, p)| p),
                                old_partition: h.partition(a.partition).map(|(_, p)| p),
                                received_first: msg_ref(h, db),
                                received_first_by: h.process_number(pb.process),
                                sent_first: msg_ref(h, a.delivery),
                                sent_first_by: h.process_number(pa.process),
                            })
                        });
                    }
                }
                for (ci, c) in changes.iter().enumerate() {
                    if send_b.invoke_time >= c.done {
                        continue;
                    }
                    match earlier
                        .iter_mut()
                        .find(|e| e.partition == part_b && e.change == ci)
                    {
                        Some(e) if e.poll_invoke < pb.invoke => {
                            e.poll_invoke = pb.invoke;
                            e.delivery = db;
                        }
                        Some(_) => {}
                        None => earlier.push(Earlier {
                            partition: part_b,
                            change: ci,
                            poll_invoke: pb.invoke,
                            delivery: db,
                        }),
                    }
                }
            }
        }
    }
    found.count = keys_violated.len() as u64;
    found
}

/// The partition a message was on: where it was delivered, else where its send said.
fn partition_of(h: &History, send: u32, delivery: u32) -> u32 {
    let d = &h.deliveries[delivery as usize];
    if d.partition != NONE {
        d.partition
    } else {
        h.sends[send as usize].partition
    }
}
