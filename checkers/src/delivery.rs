//! Delivery anomalies: lost, unseen, unexpected, aborted-read, recovered,
//! duplicate-write and redelivered (`docs/checkers.md`).
//!
//! One pass over the deliveries in file order builds, per judged group, the
//! first delivery of every send; the rest is read off that index.
use crate::found::Found;
use crate::verdict::evidence::{DeliveryRef, Missing, OutcomeRead, Repeated, Unexpected};
use crate::verdict::Example;
use gauntlet_history::model::{Delivery, History, Outcome, NONE, NO_OFFSET, NO_OP};
use rustc_hash::{FxHashMap, FxHashSet};

/// What identifies a broker message.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub(crate) enum Ident {
    Pos(u32, i64),
    Id(u32),
    Unknown,
}

pub(crate) fn ident(d: &Delivery) -> Ident {
    ident_of(d.partition, d.offset, d.id)
}

fn ident_of(partition: u32, offset: i64, id: u32) -> Ident {
    if offset != NO_OFFSET {
        Ident::Pos(partition, offset)
    } else if id != NONE {
        Ident::Id(id)
    } else {
        Ident::Unknown
    }
}

/// Two identities that name different broker messages (both known, of one kind).
fn differ(a: Ident, b: Ident) -> bool {
    match (a, b) {
        (Ident::Pos(..), Ident::Pos(..)) | (Ident::Id(_), Ident::Id(_)) => a != b,
        _ => false,
    }
}

/// [send]: whether the message is known to be written: its send ended `ok`, or
/// ended `info` and an `ok` read returned it or another send of its transaction
/// (Jepsen's `must-have-committed?`).
pub(crate) fn written(h: &History, delivered_any: &[bool]) -> Vec<bool> {
    let mut w: Vec<bool> = h
        .sends
        .iter()
        .zip(delivered_any)
        .map(|(s, &d)| s.outcome == Outcome::Ok || (s.outcome == Outcome::Info && d))
        .collect();
    for t in &h.txns {
        if t.outcome != Outcome::Info {
            continue;
        }
        let sends = || {
            h.txn_mops_of(t)
                .iter()
                .filter(|m| m.send)
                .filter_map(|m| h.send_of_value.get(m.value))
        };
        if sends().any(|s| delivered_any[s as usize]) {
            for s in sends() {
                w[s as usize] = true;
            }
        }
    }
    w
}

/// The delivery index the other checkers read.
pub(crate) struct Index {
    /// Group ids judged: those that polled, or the default group when none did.
    pub groups: Vec<u32>,
    /// Group id -> slot in the per-group tables, or NONE.
    pub slot_of_group: Vec<u32>,
    /// [slot][send]: the group's first delivery of the send, or NONE.
    pub first: Vec<Vec<u32>>,
    /// [slot][send]: the poll with the smallest invoke index that delivered it to the group.
    pub earliest_poll: Vec<Vec<u32>>,
    /// [send]: delivered to any group.
    pub delivered_any: Vec<bool>,
    /// [send]: known to be written ([`written`]).
    pub written: Vec<bool>,
    /// [delivery]: the consumer's first receipt of this value (and the value was sent).
    pub first_receipt: Vec<bool>,
}

pub(crate) struct Findings {
    pub lost: Found,
    pub unseen: Found,
    pub unexpected: Found,
    pub aborted_read: Found,
    pub recovered: Found,
    pub duplicate_write: Found,
    pub redelivered: Found,
}

fn delivery_ref(h: &History, d: &Delivery) -> DeliveryRef {
    let poll = &h.polls[d.poll as usize];
    let (topic, partition) = match h.partition(d.partition) {
        Some((t, p)) => (t.map(str::to_string), Some(p)),
        None => (None, None),
    };
    DeliveryRef {
        consumer: h.process_number(poll.process),
        delivered_by: poll.complete,
        group: h.group_name(poll.group).to_string(),
        id: h.id_name(d.id).map(str::to_string),
        offset: (d.offset != NO_OFFSET).then_some(d.offset),
        partition,
        redelivered: d.redelivered,
        topic,
    }
}

fn op_or_none(i: u64) -> Option<u64> {
    (i != NO_OP).then_some(i)
}

pub(crate) fn check(h: &History, max: usize) -> (Index, Findings) {
    let n_sends = h.sends.len();
    let mut groups: Vec<u32> = Vec::new();
    let mut slot_of_group = vec![NONE; h.groups.len().max(1)];
    for p in &h.polls {
        if slot_of_group[p.group as usize] == NONE {
            slot_of_group[p.group as usize] = groups.len() as u32;
            groups.push(p.group);
        }
    }
    if groups.is_empty() {
        slot_of_group[0] = 0;
        groups.push(0);
    }
    let mut first = vec![vec![NONE; n_sends]; groups.len()];
    let mut earliest_poll = vec![vec![NONE; n_sends]; groups.len()];
    let mut global_first = vec![NONE; n_sends];
    let mut delivered_any = vec![false; n_sends];
    let mut first_receipt = vec![false; h.deliveries.len()];

    let mut unexpected = Found::new(max);
    let mut unexpected_values: FxHashSet<i64> = FxHashSet::default();
    let mut dup_values: FxHashSet<u32> = FxHashSet::default();
    let mut redelivered_pairs: FxHashSet<(u32, u32)> = FxHashSet::default();
    // Receipts past a group's first one, by (consumer, send).
    let mut repeat_receipts: FxHashSet<(u32, u32)> = FxHashSet::default();
    // Identities a group saw for a send, once it has seen two different ones.
    let mut many_idents: FxHashMap<(u32, u32), Vec<Ident>> = FxHashMap::default();
    // [slot][partition]: the highest offset the group was delivered there, and by which delivery.
    let n_parts = h.partitions.len();
    let mut max_offset: Vec<Vec<(i64, u32)>> = vec![Vec::new(); groups.len()];
    // [slot][partition]: the lowest offset the group was delivered there (the
    // place of a lost message, [`place_of_lost`]).
    let mut min_offset: Vec<Vec<i64>> = vec![Vec::new(); groups.len()];

    for (di, d) in h.deliveries.iter().enumerate() {
        let poll = &h.polls[d.poll as usize];
        let slot = slot_of_group[poll.group as usize];
        // A read at an offset proves the partition reached it, whether or not
        // the value read there was ever sent (an `unexpected` one counts too).
        if d.offset != NO_OFFSET && d.partition != NONE {
            let m = &mut max_offset[slot as usize];
            if m.is_empty() {
                m.resize(n_parts, (NO_OFFSET, NONE));
            }
            let e = &mut m[d.partition as usize];
            if d.offset > e.0 {
                *e = (d.offset, di as u32);
            }
            let lo = &mut min_offset[slot as usize];
            if lo.is_empty() {
                lo.resize(n_parts, i64::MAX);
            }
            let e = &mut lo[d.partition as usize];
            *e = (*e).min(d.offset);
        }
        if d.send == NONE {
            if unexpected_values.insert(d.value) {
                unexpected.hit(|| {
                    Example::Unexpected(Unexpected {
                        delivery: delivery_ref(h, d),
                        key: h.key_name(d.key).to_string(),
                        value: d.value,
                    })
                });
            }
            continue;
        }
        let s = d.send as usize;
        delivered_any[s] = true;
        let id = ident(d);
        // Stored at two positions: the send's completion named another one
        // than this delivery, or an earlier delivery did.
        let send = &h.sends[s];
        if send.outcome != Outcome::Fail
            && differ(ident_of(send.partition, send.offset, send.id), id)
        {
            dup_values.insert(d.send);
        }
        let g0 = global_first[s];
        if g0 == NONE {
            global_first[s] = di as u32;
        } else if differ(ident(&h.deliveries[g0 as usize]), id) {
            dup_values.insert(d.send);
        }
        let f = first[slot as usize][s];
        if f == NONE {
            first[slot as usize][s] = di as u32;
            earliest_poll[slot as usize][s] = d.poll;
            first_receipt[di] = true;
            continue;
        }
        // A repeat within the group.
        let ep = &mut earliest_poll[slot as usize][s];
        if poll.invoke < h.polls[*ep as usize].invoke {
            *ep = d.poll;
        }
        let fd = &h.deliveries[f as usize];
        let first_consumer = h.polls[fd.poll as usize].process;
        if first_consumer != poll.process && repeat_receipts.insert((poll.process, d.send)) {
            first_receipt[di] = true;
        }
        let fid = ident(fd);
        if id == Ident::Unknown || fid == Ident::Unknown {
            if d.redelivered {
                redelivered_pairs.insert((slot, d.send));
            } else {
                dup_values.insert(d.send);
            }
        } else if id == fid {
            redelivered_pairs.insert((slot, d.send));
        } else {
            let seen = many_idents
                .entry((slot, d.send))
                .or_insert_with(|| vec![fid]);
            if seen.contains(&id) {
                redelivered_pairs.insert((slot, d.send));
            } else {
                seen.push(id);
            }
        }
    }

    let written = written(h, &delivered_any);
    // Positions seen elsewhere: another ok attempt of a retried send, reads of
    // ops that did not end ok.
    let mut first_observed: FxHashMap<u32, Ident> = FxHashMap::default();
    for o in &h.observed {
        let Some(s) = h.send_of_value.get(o.value) else {
            continue;
        };
        let id = ident_of(o.partition, o.offset, o.id);
        let send = &h.sends[s as usize];
        let own = if written[s as usize] {
            ident_of(send.partition, send.offset, send.id)
        } else {
            Ident::Unknown
        };
        let delivered = match global_first[s as usize] {
            NONE => Ident::Unknown,
            d => ident(&h.deliveries[d as usize]),
        };
        let seen = *first_observed.entry(s).or_insert(id);
        if differ(own, id) || differ(delivered, id) || differ(seen, id) {
            dup_values.insert(s);
        }
    }

    // Lost / unseen, aborted reads, recovered.
    let drained = h.drained;
    // [slot]: the first and last send invoke among the sends the group read
    // (the place of a lost message without offsets).
    let mut read_span: Vec<(u64, u64)> = vec![(u64::MAX, 0); groups.len()];
    for (slot, firsts) in first.iter().enumerate() {
        let span = &mut read_span[slot];
        for (s, &d) in firsts.iter().enumerate() {
            if d != NONE {
                let invoke = h.sends[s].invoke;
                *span = (span.0.min(invoke), span.1.max(invoke));
            }
        }
    }
    let slot_of = |g: u32| slot_of_group[g as usize] as usize;
    let mut lost = Found::new(max);
    let mut unseen = Found::new(max);
    let mut aborted_read = Found::new(max);
    let mut recovered = Found::new(max);
    let mut missing_in: Vec<u32> = Vec::new();
    let mut lost_in: Vec<(u32, u32)> = Vec::new();
    for (s, send) in h.sends.iter().enumerate() {
        if written[s] {
            missing_in.clear();
            lost_in.clear();
            for (slot, &g) in groups.iter().enumerate() {
                if first[slot][s] != NONE {
                    continue;
                }
                missing_in.push(g);
                // Skipped for certain: the group was delivered a higher offset
                // of the same partition, and no poll of it has an unknown outcome.
                if send.offset != NO_OFFSET && send.partition != NONE && !h.group_is_unsure(g) {
                    if let Some(&(o, d)) = max_offset[slot].get(send.partition as usize) {
                        if o != NO_OFFSET && o > send.offset {
                            lost_in.push((g, d));
                        }
                    }
                }
            }
        }
        if written[s] && !missing_in.is_empty() {
            let is_lost = drained.is_some() || !lost_in.is_empty();
            if drained.is_none() && is_lost {
                missing_in.retain(|g| lost_in.iter().any(|l| l.0 == *g));
            }
            let (target, groups_hit) = if is_lost {
                (&mut lost, &missing_in[..])
            } else {
                (&mut unseen, &missing_in[..])
            };
            for &g in groups_hit {
                target.group_hit(h.group_name(g));
            }
            if let (true, Some(&g)) = (is_lost, groups_hit.first()) {
                let slot = slot_of(g);
                let place = place_of_lost(
                    send,
                    min_offset[slot].get(send.partition as usize).copied(),
                    max_offset[slot].get(send.partition as usize).map(|e| e.0),
                    read_span[slot],
                );
                *target.by_place.entry(place.to_string()).or_insert(0) += 1;
            }
            target.hit(|| {
                let mut m = Missing {
                    drained: None,
                    groups: groups_hit
                        .iter()
                        .map(|&g| h.group_name(g).to_string())
                        .collect(),
                    higher_offset_delivered: None,
                    key: h.key_name(send.key).to_string(),
                    offset: None,
                    partition: None,
                    proven_by: None,
                    send_invoke: send.invoke,
                    send_ok: op_or_none(send.complete),
                    send_outcome: None,
                    value: send.value,
                };
                if send.outcome != Outcome::Ok {
                    m.send_outcome = Some("info".into());
                    m.proven_by = Some("a read of it or of its transaction's other sends".into());
                }
                if let Some(d) = drained {
                    m.drained = Some(d);
                } else if let Some(&(_, d)) = lost_in.first() {
                    let (_, part) = h.partition(send.partition).unwrap_or((None, -1));
                    let dd = &h.deliveries[d as usize];
                    m.partition = Some(part);
                    m.offset = Some(send.offset);
                    m.higher_offset_delivered = Some(delivery_ref(h, dd));
                }
                Example::Missing(m)
            });
        }
        match send.outcome {
            Outcome::Ok => {}
            Outcome::Fail | Outcome::Info if delivered_any[s] => {
                let target = if send.outcome == Outcome::Fail {
                    &mut aborted_read
                } else {
                    &mut recovered
                };
                target.hit(|| {
                    let d = &h.deliveries[global_first[s] as usize];
                    Example::Outcome(OutcomeRead {
                        delivery: delivery_ref(h, d),
                        in_txn: send.in_txn,
                        key: h.key_name(send.key).to_string(),
                        send_completion: op_or_none(send.complete),
                        send_invoke: send.invoke,
                        value: send.value,
                    })
                });
            }
            _ => {}
        }
    }

    // Duplicates and redeliveries: counts are distinct values; examples list the deliveries.
    let mut duplicate_write = Found::new(max);
    let mut redelivered = Found::new(max);
    duplicate_write.count = dup_values.len() as u64;
    let mut redelivered_values: FxHashSet<u32> = FxHashSet::default();
    for &(slot, s) in &redelivered_pairs {
        redelivered.group_hit(h.group_name(groups[slot as usize]));
        redelivered_values.insert(s);
    }
    redelivered.count = redelivered_values.len() as u64;
    let mut dup_ex: Vec<u32> = dup_values.iter().copied().collect();
    dup_ex.sort_unstable();
    dup_ex.truncate(max);
    let mut red_ex: Vec<u32> = redelivered_values.iter().copied().collect();
    red_ex.sort_unstable();
    red_ex.truncate(max);
    if !dup_ex.is_empty() || !red_ex.is_empty() {
        let wanted: FxHashSet<u32> = dup_ex.iter().chain(red_ex.iter()).copied().collect();
        let mut by_send: FxHashMap<u32, Vec<DeliveryRef>> = FxHashMap::default();
        for d in &h.deliveries {
            if wanted.contains(&d.send) {
                let list = by_send.entry(d.send).or_default();
                if list.len() < 20 {
                    list.push(delivery_ref(h, d));
                }
            }
        }
        for (found, list) in [(&mut duplicate_write, &dup_ex), (&mut redelivered, &red_ex)] {
            for &s in list {
                let send = &h.sends[s as usize];
                found.example(|| {
                    Example::Repeated(Repeated {
                        deliveries: by_send.get(&s).cloned().unwrap_or_default(),
                        key: h.key_name(send.key).to_string(),
                        send_completion: op_or_none(send.complete),
                        send_invoke: send.invoke,
                        value: send.value,
                    })
                });
            }
        }
    }
    (
        Index {
            groups,
            slot_of_group,
            first,
            earliest_poll,
            delivered_any,
            written,
            first_receipt,
        },
        Findings {
            lost,
            unseen,
            unexpected,
            aborted_read,
            recovered,
            duplicate_write,
            redelivered,
        },
    )
}

/// Where a lost message sits among what its group read (Jepsen's breakdown of
/// a queue's losses, as information: `docs/checkers.md`, "Where the lost
/// messages were"): `before-first-read` (the broker started over, or lost a
/// prefix), `between-reads` (a hole the group read past: the worst kind),
/// `after-last-read` (a lost tail), or `never-read` (the group read nothing to
/// compare with). By offset where the message and the group's reads of its
/// partition have one, else by the order of the send invokes.
fn place_of_lost(
    send: &gauntlet_history::Send,
    min_offset: Option<i64>,
    max_offset: Option<i64>,
    read_span: (u64, u64),
) -> &'static str {
    let by = |x: i64, lo: i64, hi: i64| {
        if x < lo {
            "before-first-read"
        } else if x > hi {
            "after-last-read"
        } else {
            "between-reads"
        }
    };
    match (send.offset, min_offset, max_offset) {
        (o, Some(lo), Some(hi)) if o != NO_OFFSET && lo != i64::MAX && hi != NO_OFFSET => {
            by(o, lo, hi)
        }
        _ if read_span.0 <= read_span.1 => {
            by(send.invoke as i64, read_span.0 as i64, read_span.1 as i64)
        }
        _ => "never-read",
    }
}
