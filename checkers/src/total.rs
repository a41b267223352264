//! Total order (`docs/checkers.md`): (a) pairs a consumer received against
//! realtime order, counted with a Fenwick tree per consumer; (b) pairs with
//! concurrent sends that two consumers of one group received in opposite
//! orders, counted by a bounded pairwise search.
use crate::delivery::Index;
use crate::found::Found;
use crate::verdict::evidence::{PairFirst, PairSecond, TotalOrderPair, TotalOrderSplit};
use crate::verdict::Example;
use gauntlet_history::model::{History, Outcome, Send, NO_OP};
use rustc_hash::FxHashMap;

/// Comparisons allowed for part (b); past this the count is a lower bound.
pub(crate) const CROSS_BUDGET: u64 = 50_000_000;

pub(crate) struct Findings {
    pub total_order: Found,
    /// Part (b) ran out of budget: the count is a lower bound.
    pub bounded: bool,
}

/// (group slot, consumer 1, consumer 2) with consumer 1 < consumer 2.
type ConsumerPair = (u32, u32, u32);
/// (position in consumer 1's receipts, position in consumer 2's, send).
type SharedReceipt = (u32, u32, u32);

struct Fenwick(Vec<i32>);

impl Fenwick {
    fn add(&mut self, i: usize, v: i32) {
        let mut i = i + 1;
        while i < self.0.len() {
            self.0[i] += v;
            i += i & i.wrapping_neg();
        }
    }
    /// Sum over ranks < i.
    fn prefix(&self, i: usize) -> i64 {
        let mut i = i;
        let mut s = 0i64;
        while i > 0 {
            s += i64::from(self.0[i]);
            i -= i & i.wrapping_neg();
        }
        s
    }
}

fn precedes(a: &Send, b: &Send) -> bool {
    a.outcome == Outcome::Ok && a.complete != NO_OP && a.complete < b.invoke
}

pub(crate) fn check(h: &History, idx: &Index, max: usize) -> Findings {
    let mut found = Found::new(max);
    // First receipts grouped by consumer, in receipt order (a stable counting sort).
    let n_proc = h.processes.len();
    let mut counts = vec![0u32; n_proc + 1];
    for (di, d) in h.deliveries.iter().enumerate() {
        if idx.first_receipt[di] {
            counts[h.polls[d.poll as usize].process as usize + 1] += 1;
        }
    }
    for i in 1..counts.len() {
        counts[i] += counts[i - 1];
    }
    let mut fill = counts.clone();
    let mut by_consumer = vec![0u32; counts[n_proc] as usize];
    for (di, d) in h.deliveries.iter().enumerate() {
        if idx.first_receipt[di] {
            let c = h.polls[d.poll as usize].process as usize;
            by_consumer[fill[c] as usize] = di as u32;
            fill[c] += 1;
        }
    }
    // Ranks of sends by invoke index.
    // Ranks of sends by invoke index, and for each send the number of invokes at or
    // before its completion, computed once in linear sweeps (sends are stored in
    // nearly invoke order, so the sorts are close to linear too).
    let n = h.sends.len();
    let mut by_invoke: Vec<u32> = (0..n as u32).collect();
    crate::radix::sort_by_key(&mut by_invoke, |i| h.sends[i as usize].invoke);
    let mut rank_of = vec![0u32; n];
    for (r, &i) in by_invoke.iter().enumerate() {
        // Equal invoke indices (a transaction's sends) share the lowest rank.
        let same = r > 0 && h.sends[by_invoke[r - 1] as usize].invoke == h.sends[i as usize].invoke;
        rank_of[i as usize] = if same {
            rank_of[by_invoke[r - 1] as usize]
        } else {
            r as u32
        };
    }
    let mut by_complete: Vec<u32> = (0..n as u32)
        .filter(|&i| h.sends[i as usize].complete != NO_OP)
        .collect();
    crate::radix::sort_by_key(&mut by_complete, |i| h.sends[i as usize].complete);
    let mut invoked_by_completion = vec![0u32; n];
    let mut k = 0usize;
    for &i in &by_complete {
        let c = h.sends[i as usize].complete;
        while k < n && h.sends[by_invoke[k] as usize].invoke <= c {
            k += 1;
        }
        invoked_by_completion[i as usize] = k as u32;
    }
    // (a) per consumer, with a Fenwick tree over the ranks of that consumer's own
    // receipts only: a small tree stays in cache, where one over all sends missed it
    // on every step. Each receipt's slot in it and each query's bound come from
    // radix-sorting positions by rank and by bound, and a sweep.
    let mut rank: Vec<u32> = Vec::new();
    let mut bound: Vec<u32> = Vec::new();
    let mut by_rank: Vec<u32> = Vec::new();
    let mut queries: Vec<u32> = Vec::new();
    let mut slot = Vec::new();
    let mut below = Vec::new();
    let mut tree = Fenwick(Vec::new());
    for c in 0..n_proc {
        let list = &by_consumer[counts[c] as usize..counts[c + 1] as usize];
        rank.clear();
        bound.clear();
        queries.clear();
        for (pos, &di) in list.iter().enumerate() {
            let si = h.deliveries[di as usize].send as usize;
            rank.push(rank_of[si]);
            let s = &h.sends[si];
            if s.outcome == Outcome::Ok && s.complete != NO_OP {
                bound.push(invoked_by_completion[si]);
                queries.push(pos as u32);
            } else {
                bound.push(0);
            }
        }
        by_rank.clear();
        by_rank.extend(0..list.len() as u32);
        crate::radix::sort_by_key(&mut by_rank, |p| u64::from(rank[p as usize]));
        crate::radix::sort_by_key(&mut queries, |p| u64::from(bound[p as usize]));
        // slot[pos]: receipts of lower rank (equal ranks, a transaction's sends,
        // share the first slot of their run); below[pos]: receipts of rank below the
        // number of sends invoked by the completion of pos's send.
        slot.clear();
        slot.resize(list.len(), 0u32);
        for (i, &pos) in by_rank.iter().enumerate() {
            slot[pos as usize] = if i > 0 && rank[by_rank[i - 1] as usize] == rank[pos as usize] {
                slot[by_rank[i - 1] as usize]
            } else {
                i as u32
            };
        }
        below.clear();
        below.resize(list.len(), 0u32);
        let mut k = 0usize;
        for &pos in &queries {
            let b = bound[pos as usize];
            while k < by_rank.len() && rank[by_rank[k] as usize] < b {
                k += 1;
            }
            below[pos as usize] = k as u32;
        }
        tree.0.clear();
        tree.0.resize(list.len() + 1, 0);
        for (pos, &di) in list.iter().enumerate() {
            let s = &h.sends[h.deliveries[di as usize].send as usize];
            if s.outcome == Outcome::Ok && s.complete != NO_OP {
                // Received before s, but invoked after s completed: the earlier
                // receipts whose rank is not below the invokes up to s's completion.
                let later = pos as i64 - tree.prefix(below[pos] as usize);
                if later > 0 {
                    found.count += later as u64;
                    if found.wants_examples() {
                        let m2 = list[..pos].iter().rev().find(|&&dj| {
                            let s2 = &h.sends[h.deliveries[dj as usize].send as usize];
                            s2.invoke > s.complete
                        });
                        if let Some(&dj) = m2 {
                            let d1 = &h.deliveries[di as usize];
                            let d2 = &h.deliveries[dj as usize];
                            let s2 = &h.sends[d2.send as usize];
                            let poll = &h.polls[d1.poll as usize];
                            found.example(|| {
                                Example::TotalOrderPair(TotalOrderPair {
                                    consumer: h.process_number(poll.process),
                                    first: PairFirst {
                                        delivered_by: poll.complete,
                                        send_ok: s.complete,
                                        value: s.value,
                                    },
                                    group: h.group_name(poll.group).to_string(),
                                    pairs_here: later,
                                    second: PairSecond {
                                        delivered_by: h.polls[d2.poll as usize].complete,
                                        send_invoke: s2.invoke,
                                        value: s2.value,
                                    },
                                })
                            });
                        }
                    }
                }
            }
            tree.add(slot[pos] as usize, 1);
        }
    }

    // (b) values that two consumers of one group both received.
    let mut pos_in_consumer = vec![0u32; h.deliveries.len()];
    for c in 0..n_proc {
        for (pos, &di) in by_consumer[counts[c] as usize..counts[c + 1] as usize]
            .iter()
            .enumerate()
        {
            pos_in_consumer[di as usize] = pos as u32;
        }
    }
    // (slot, send) -> first receipts by distinct consumers.
    let mut shared: FxHashMap<(u32, u32), Vec<u32>> = FxHashMap::default();
    for (di, d) in h.deliveries.iter().enumerate() {
        if !idx.first_receipt[di] {
            continue;
        }
        let slot = idx.slot_of_group[h.polls[d.poll as usize].group as usize];
        let f = idx.first[slot as usize][d.send as usize];
        if f != di as u32 {
            shared
                .entry((slot, d.send))
                .or_insert_with(|| vec![f])
                .push(di as u32);
        }
    }
    let mut pairs: FxHashMap<ConsumerPair, Vec<SharedReceipt>> = FxHashMap::default();
    for (&(slot, s), dels) in &shared {
        for (i, &a) in dels.iter().enumerate() {
            for &b in &dels[i + 1..] {
                let ca = h.polls[h.deliveries[a as usize].poll as usize].process;
                let cb = h.polls[h.deliveries[b as usize].poll as usize].process;
                let (a, b, ca, cb) = if ca < cb {
                    (a, b, ca, cb)
                } else {
                    (b, a, cb, ca)
                };
                if ca == cb {
                    continue;
                }
                pairs.entry((slot, ca, cb)).or_default().push((
                    pos_in_consumer[a as usize],
                    pos_in_consumer[b as usize],
                    s,
                ));
            }
        }
    }
    let mut budget = CROSS_BUDGET;
    let mut bounded = false;
    let mut keys: Vec<_> = pairs.keys().copied().collect();
    keys.sort_unstable();
    'outer: for key in keys {
        let list = pairs.get_mut(&key).map(std::mem::take).unwrap_or_default();
        let mut list = list;
        list.sort_unstable();
        for i in 0..list.len() {
            for j in i + 1..list.len() {
                if budget == 0 {
                    bounded = true;
                    break 'outer;
                }
                budget -= 1;
                let (a1, a2, sa) = list[i];
                let (b1, b2, sb) = list[j];
                if a1 < b1 && a2 > b2 {
                    let x = &h.sends[sa as usize];
                    let y = &h.sends[sb as usize];
                    if !precedes(x, y) && !precedes(y, x) {
                        found.hit(|| {
                            Example::TotalOrderSplit(TotalOrderSplit {
                                consumers: [h.process_number(key.1), h.process_number(key.2)],
                                group: h.group_name(idx.groups[key.0 as usize]).to_string(),
                                orders: [[x.value, y.value], [y.value, x.value]],
                                send_invokes: [x.invoke, y.invoke],
                                values: [x.value, y.value],
                            })
                        });
                    }
                }
            }
        }
    }
    Findings {
        total_order: found,
        bounded,
    }
}
