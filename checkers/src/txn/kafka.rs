//! The anomalies that are not cycles: intermediate reads (G1b), reads of a
//! transaction's own writes (precommitted-read), and Jepsen's Kafka checks
//! of how a process's polls and sends move through each partition
//! (`jepsen.tests.kafka`: poll-skip, nonmonotonic-poll, nonmonotonic-send,
//! int-poll-skip, int-nonmonotonic-poll, int-send-skip, int-nonmonotonic-send).
use super::explain::{item_ref_of, obj_ref};
use super::{bare_poll, bare_polls, poll_reads, Access, Ctx, Item, Source};
use crate::found::Found;
use crate::verdict::evidence::{G1b, Precommitted, Versions};
use crate::verdict::AnomalyKind;
use crate::verdict::Example;
use gauntlet_history::model::{Outcome, NONE};
use rustc_hash::FxHashMap;

/// The slot of `k` in `found`; past its end when the pass does not judge `k`.
fn get(found: &mut [(AnomalyKind, Found)], k: AnomalyKind) -> usize {
    found
        .iter()
        .position(|(x, _)| *x == k)
        .unwrap_or(found.len())
}

/// Counts a hit of the anomaly in `slot` (nothing when this pass does not judge it).
fn hit(found: &mut [(AnomalyKind, Found)], slot: usize, f: impl FnOnce() -> Example) {
    if let Some((_, x)) = found.get_mut(slot) {
        x.hit(f);
    }
}

/// The group an item read for: a bare poll's named group, else `None` (a
/// transaction, a send, or a poll of the default group).
fn named_group(cx: &Ctx<'_>, it: &Item) -> Option<u32> {
    match it.src {
        Source::Poll(p) => Some(cx.h.polls[p as usize].group).filter(|&g| g != 0),
        _ => None,
    }
}

/// Which named groups were delivered each version, in committed polls: the
/// first group of each place, and any other groups beside it.
struct Readers {
    /// [place]: the first named group delivered it, or [`NONE`].
    first: Vec<u32>,
    /// (place, group) for every other group delivered a place, sorted, each
    /// once: 8 bytes a pair, where a map of lists cost about a hundred bytes a
    /// place (a history whose messages go to two groups has one per place).
    more: Vec<(u32, u32)>,
}

impl Readers {
    /// From the bare polls (`polls`, [`bare_polls`]): only they read for a named group.
    fn new(cx: &Ctx<'_>, polls: &[u32]) -> Readers {
        let mut r = Readers {
            first: Vec::new(),
            more: Vec::new(),
        };
        let mut reads = Vec::new();
        for &p in polls {
            let it = bare_poll(cx.h, p);
            let Some(g) = named_group(cx, &it) else {
                continue;
            };
            if it.outcome != Outcome::Ok {
                continue;
            }
            poll_reads(cx, p, &mut reads);
            for a in &reads {
                if a.pos == NONE {
                    continue;
                }
                if r.first.is_empty() {
                    r.first = vec![NONE; cx.v.values.len()];
                }
                let slot = &mut r.first[a.pos as usize];
                if *slot == NONE {
                    *slot = g;
                } else if *slot != g && r.more.last() != Some(&(a.pos, g)) {
                    r.more.push((a.pos, g));
                }
            }
        }
        r.more.sort_unstable();
        r.more.dedup();
        r.more.shrink_to_fit();
        r
    }

    /// Whether a committed poll of `group` was delivered the version at `pos`.
    fn by_group(&self, pos: u32, group: u32) -> bool {
        self.first.get(pos as usize) == Some(&group)
            || self.more.binary_search(&(pos, group)).is_ok()
    }

    /// The values of the versions strictly between places `p1` and `p2` that
    /// count as skipped by a reader of `group`: all of them without a named
    /// group; with one, those no committed poll of the group was delivered.
    fn skipped<'a>(
        &'a self,
        cx: &'a Ctx<'_>,
        group: Option<u32>,
        p1: u32,
        p2: u32,
    ) -> impl Iterator<Item = i64> + 'a {
        ((p1 + 1)..p2)
            .filter(move |&p| group.is_none_or(|g| !self.by_group(p, g)))
            .map(|p| cx.v.values[p as usize])
    }
}

/// Consecutive accesses to one object within one item: skips and backward
/// steps. `group`: the named group a poll read for (its skips discount what
/// the group was delivered, as for `poll-skip`); `None` for sends.
#[allow(clippy::too_many_arguments)]
fn internal(
    cx: &Ctx<'_>,
    it: &Item,
    accs: &[Access],
    group: Option<u32>,
    readers: &Readers,
    skip: usize,
    back: usize,
    found: &mut [(AnomalyKind, Found)],
) {
    if accs.len() < 2 {
        return;
    }
    let mut last: Vec<(u32, u32, i64)> = Vec::new();
    for a in accs {
        if a.pos == NONE {
            continue;
        }
        match last.iter_mut().find(|x| x.0 == a.obj) {
            Some(x) => {
                let (p1, v1) = (x.1, x.2);
                let delta = i64::from(cx.v.idx[a.pos as usize]) - i64::from(cx.v.idx[p1 as usize]);
                if delta > 1 && readers.skipped(cx, group, p1, a.pos).next().is_some() {
                    hit(found, skip, || {
                        Example::Versions(Versions {
                            delta,
                            object: obj_ref(cx, a.obj),
                            op: Some(item_ref_of(cx, it)),
                            ops: None,
                            skipped: Some(readers.skipped(cx, group, p1, a.pos).take(20).collect()),
                            values: [v1, a.value],
                        })
                    });
                } else if delta < 1 {
                    hit(found, back, || {
                        Example::Versions(Versions {
                            delta,
                            object: obj_ref(cx, a.obj),
                            op: Some(item_ref_of(cx, it)),
                            ops: None,
                            skipped: None,
                            values: [v1, a.value],
                        })
                    });
                }
                x.1 = a.pos;
                x.2 = a.value;
            }
            None => last.push((a.obj, a.pos, a.value)),
        }
    }
}

pub(crate) fn check(cx: &Ctx<'_>, found: &mut [(AnomalyKind, Found)]) {
    let g1b = get(found, AnomalyKind::G1b);
    let pre = get(found, AnomalyKind::PrecommittedRead);
    let ips = get(found, AnomalyKind::IntPollSkip);
    let inp = get(found, AnomalyKind::IntNonmonotonicPoll);
    let iss = get(found, AnomalyKind::IntSendSkip);
    let ins = get(found, AnomalyKind::IntNonmonotonicSend);
    let ps = get(found, AnomalyKind::PollSkip);
    let np = get(found, AnomalyKind::NonmonotonicPoll);
    let ns = get(found, AnomalyKind::NonmonotonicSend);
    let h = cx.h;
    let epochs = crate::resets::Epochs::new(h);
    let polls = bare_polls(h);
    let readers = Readers::new(cx, &polls);
    // (process, object) -> (item, place, value, epoch) of the last committed read.
    let mut last_read: FxHashMap<(u32, u32), (Item, u32, i64, u32)> = FxHashMap::default();
    // (process, object) -> (item, place, value, epoch) of the last send.
    let mut last_send: FxHashMap<(u32, u32), (Item, u32, i64, u32)> = FxHashMap::default();
    let mut firsts: Vec<(u32, u32, i64)> = Vec::new();
    let mut lasts: Vec<(u32, u32, i64)> = Vec::new();
    // The items and the bare polls merged by invoke (on a tie the item first),
    // the items in a stable order by invoke: the order the polls were once
    // merged into the items in.
    let in_order = cx
        .items
        .windows(2)
        .all(|w| w[0].invoke(h) <= w[1].invoke(h));
    let order: Vec<u32> = if in_order {
        Vec::new()
    } else {
        let mut o: Vec<u32> = (0..cx.items.len() as u32).collect();
        o.sort_by_key(|&i| cx.items[i as usize].invoke(h));
        o
    };
    let item_at = |k: usize| -> Option<u32> {
        if in_order {
            (k < cx.items.len()).then_some(k as u32)
        } else {
            order.get(k).copied()
        }
    };
    let (mut next_item, mut next_poll) = (0usize, 0usize);
    let mut poll_buf: Vec<Access> = Vec::new();
    loop {
        let next = (item_at(next_item), polls.get(next_poll));
        // `i`: the item's index, NONE for a bare poll.
        let (i, item) = match next {
            (Some(i), Some(&p)) if cx.items[i as usize].invoke(h) <= h.polls[p as usize].invoke => {
                next_item += 1;
                (i, cx.items[i as usize])
            }
            (Some(i), None) => {
                next_item += 1;
                (i, cx.items[i as usize])
            }
            (_, Some(&p)) => {
                next_poll += 1;
                poll_reads(cx, p, &mut poll_buf);
                (NONE, bare_poll(h, p))
            }
            (None, None) => break,
        };
        let it = &item;
        let (reads, writes) = if i == NONE {
            (&poll_buf[..], &[][..])
        } else {
            (cx.reads_of(i), cx.writes_of(i))
        };
        internal(
            cx,
            it,
            reads,
            named_group(cx, it),
            &readers,
            ips,
            inp,
            found,
        );
        internal(cx, it, writes, None, &readers, iss, ins, found);
        if let Source::Txn(_) = it.src {
            if let Some(r) = reads
                .iter()
                .find(|r| writes.iter().any(|w| w.value == r.value))
            {
                hit(found, pre, || {
                    Example::Precommitted(Precommitted {
                        object: obj_ref(cx, r.obj),
                        op: item_ref_of(cx, it),
                        value: r.value,
                    })
                });
            }
        }
        // G1b: a committed reader read another transaction's write to an
        // object, then, in the same op, a version of that object after the
        // transaction's next write to it, without reading that write.
        if it.outcome == Outcome::Ok && matches!(it.src, Source::Txn(_)) {
            let mut seen: Vec<(u32, u32)> = Vec::new();
            for (j, r) in reads.iter().enumerate() {
                if r.pos == NONE {
                    continue;
                }
                let Some(t) = cx.writer_of.get(h, r.value) else {
                    continue;
                };
                if t == i || !matches!(cx.items[t as usize].src, Source::Txn(_)) {
                    continue;
                }
                if seen.contains(&(t, r.obj)) {
                    continue;
                }
                let tw = cx.writes_of(t);
                let Some(wi) = tw.iter().position(|w| w.value == r.value) else {
                    continue;
                };
                let Some(later) = tw[wi + 1..]
                    .iter()
                    .find(|w| w.obj == r.obj && w.pos != NONE)
                else {
                    continue;
                };
                let rest = &reads[j + 1..];
                let read_later = rest.iter().any(|x| x.value == later.value);
                let past = rest
                    .iter()
                    .find(|x| x.obj == r.obj && x.pos != NONE && x.pos > later.pos);
                if let (false, Some(past)) = (read_later, past) {
                    seen.push((t, r.obj));
                    hit(found, g1b, || {
                        Example::G1b(G1b {
                            missed: later.value,
                            object: obj_ref(cx, r.obj),
                            read: r.value,
                            reader: item_ref_of(cx, it),
                            then_read: past.value,
                            writer: item_ref_of(cx, &cx.items[t as usize]),
                        })
                    });
                }
            }
        }
        // poll-skip / nonmonotonic-poll: this op's first read of each object
        // against the last committed read of it by the same process.
        let invoke = it.invoke(h);
        let ep = |obj: u32| epochs.epoch(it.process, obj, invoke);
        firsts.clear();
        lasts.clear();
        for r in reads {
            if r.pos == NONE {
                continue;
            }
            if !firsts.iter().any(|x| x.0 == r.obj) {
                firsts.push((r.obj, r.pos, r.value));
            }
            match lasts.iter_mut().find(|x| x.0 == r.obj) {
                Some(x) => {
                    x.1 = r.pos;
                    x.2 = r.value;
                }
                None => lasts.push((r.obj, r.pos, r.value)),
            }
        }
        for &(obj, p2, v2) in &firsts {
            let Some(&(prev, p1, v1, e)) = last_read.get(&(it.process, obj)) else {
                continue;
            };
            if e != ep(obj) {
                continue;
            }
            let delta = i64::from(cx.v.idx[p2 as usize]) - i64::from(cx.v.idx[p1 as usize]);
            // A consumer that shares its group's partition with others (a NATS
            // pull consumer, a RabbitMQ queue, a Redis Streams group) is handed
            // only some of its versions: a version between that another
            // consumer of the named group was delivered is the group's, not
            // skipped (docs/txn.md, poll-skip).
            let group = named_group(cx, it);
            if delta > 1 && readers.skipped(cx, group, p1, p2).next().is_some() {
                hit(found, ps, || {
                    Example::Versions(Versions {
                        delta,
                        object: obj_ref(cx, obj),
                        op: None,
                        ops: Some([item_ref_of(cx, &prev), item_ref_of(cx, it)]),
                        skipped: Some(readers.skipped(cx, group, p1, p2).take(20).collect()),
                        values: [v1, v2],
                    })
                });
            } else if delta < 1 {
                hit(found, np, || {
                    Example::Versions(Versions {
                        delta,
                        object: obj_ref(cx, obj),
                        op: None,
                        ops: Some([item_ref_of(cx, &prev), item_ref_of(cx, it)]),
                        skipped: None,
                        values: [v1, v2],
                    })
                });
            }
        }
        if it.outcome == Outcome::Ok {
            for &(obj, p, v) in &lasts {
                last_read.insert((it.process, obj), (item, p, v, ep(obj)));
            }
        }
        // nonmonotonic-send: this op's first send to each object against the
        // last send to it by the same process.
        if it.outcome != Outcome::Fail {
            firsts.clear();
            lasts.clear();
            for w in writes {
                if w.pos == NONE {
                    continue;
                }
                if !firsts.iter().any(|x| x.0 == w.obj) {
                    firsts.push((w.obj, w.pos, w.value));
                }
                match lasts.iter_mut().find(|x| x.0 == w.obj) {
                    Some(x) => {
                        x.1 = w.pos;
                        x.2 = w.value;
                    }
                    None => lasts.push((w.obj, w.pos, w.value)),
                }
            }
            for &(obj, p2, v2) in &firsts {
                if let Some(&(prev, p1, v1, e)) = last_send.get(&(it.process, obj)) {
                    if e != ep(obj) {
                        continue;
                    }
                    let delta = i64::from(cx.v.idx[p2 as usize]) - i64::from(cx.v.idx[p1 as usize]);
                    if delta < 1 {
                        hit(found, ns, || {
                            Example::Versions(Versions {
                                delta,
                                object: obj_ref(cx, obj),
                                op: None,
                                ops: Some([item_ref_of(cx, &prev), item_ref_of(cx, it)]),
                                skipped: None,
                                values: [v1, v2],
                            })
                        });
                    }
                }
            }
            for &(obj, p, v) in &lasts {
                last_send.insert((it.process, obj), (item, p, v, ep(obj)));
            }
        }
    }
}
