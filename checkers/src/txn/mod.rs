//! Transactions: an Elle-style dependency-graph checker for Kafka-model
//! histories (consume-transform-produce with `txn` ops), plus Jepsen's Kafka
//! anomalies where they fit the model. `docs/txn.md` gives every definition
//! and where it comes from.
//!
//! Objects are partitions (`topic`, `partition`); a version of an object is a
//! value at an offset. The version order of a partition is its offsets in
//! order, taken from every send completion and every read that gives an
//! offset (reads of aborted and unknown transactions included, as Jepsen
//! does: a poll reports the log whatever became of its transaction).
//! Offsets are made dense (transaction markers and aborted records leave
//! holes), an offset that held two values is left out (`inconsistent-offsets`
//! reports it), and a value stored twice keeps its first place.
//!
//! The graph's vertices are the history's transactions and bare sends that
//! took effect: committed, or unknown with a write somebody read. Bare polls
//! are not vertices: they have no writes, so they lie on no dependency cycle,
//! and the delivery and order checkers judge them; leaving them out keeps a
//! big queue history with a few transactions cheap. Edges: ww, wr, rw,
//! process and realtime (`spec`).
mod explain;
mod graph;
mod kafka;
pub mod spec;

use crate::found::Found;
use crate::verdict::AnomalyKind;
use gauntlet_history::model::{History, Outcome, NONE, NO_OFFSET, NO_OP};
use rustc_hash::FxHashMap;
use spec::{Spec, ALL, DATA, PROCESS, REALTIME, RW, SPECS, WR, WW};
use std::time::{Duration, Instant};

/// How long the cycle search may run before it gives up (the verdict then says `unknown`).
pub const DEFAULT_BUDGET: Duration = Duration::from_secs(30);
/// Anchor edges tried per component for a class whose cycle is not certain.
const ANCHORS: usize = 64;

/// Where an item of the history comes from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Source {
    Txn(u32),
    Send(u32),
    /// A bare poll (an index into `History::polls`): never a vertex; only
    /// Jepsen's Kafka checks read it.
    Poll(u32),
}

/// A transaction, a send or a poll.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Item {
    pub src: Source,
    pub process: u32,
    pub outcome: Outcome,
    /// In the graph: committed, or unknown with a write that somebody read.
    pub node: bool,
    pub w_first: u32,
    pub w_count: u32,
    pub r_first: u32,
    pub r_count: u32,
}

impl Item {
    /// Op index of the invoke (its source's: items keep no copy, 16 bytes an item less).
    #[inline]
    pub fn invoke(&self, h: &History) -> u64 {
        match self.src {
            Source::Txn(i) => h.txns[i as usize].invoke,
            Source::Send(i) => h.sends[i as usize].invoke,
            Source::Poll(i) => h.polls[i as usize].invoke,
        }
    }

    /// Op index of the completion, or [`NO_OP`] (its source's).
    #[inline]
    pub fn complete(&self, h: &History) -> u64 {
        match self.src {
            Source::Txn(i) => h.txns[i as usize].complete,
            Source::Send(i) => h.sends[i as usize].complete,
            Source::Poll(i) => h.polls[i as usize].complete,
        }
    }
}

/// One message an item sent or read.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Access {
    pub value: i64,
    /// Partition id, or [`NONE`].
    pub obj: u32,
    /// Place in the flat version order, or [`NONE`] when unknown.
    pub pos: u32,
}

/// The version orders of all objects, one after the other.
#[derive(Debug, Default)]
pub(crate) struct Versions {
    pub values: Vec<i64>,
    pub obj: Vec<u32>,
    /// The broker's offset of the version.
    pub offset: Vec<i64>,
    /// Dense index of the version within its object.
    pub idx: Vec<u32>,
    /// The item in the graph that wrote it, or [`NONE`].
    pub writer: Vec<u32>,
    /// The next place of the same object with a writer in the graph, or [`NONE`].
    pub next: Vec<u32>,
    pub pos_of: ValueMap,
}

/// Value -> a `u32`, kept by the value's send (the history's [`ValueIndex`]
/// finds it): a vector indexed by send; a hash map for values no send names.
///
/// [`ValueIndex`]: gauntlet_history::model::ValueIndex
#[derive(Debug, Default)]
pub(crate) struct ValueMap {
    by_send: Vec<u32>,
    other: FxHashMap<i64, u32>,
}

impl ValueMap {
    fn new(h: &History) -> Self {
        ValueMap {
            by_send: vec![NONE; h.sends.len()],
            other: FxHashMap::default(),
        }
    }
    #[inline]
    pub fn get(&self, h: &History, value: i64) -> Option<u32> {
        match h.send_of_value.get(value) {
            Some(s) => {
                let x = self.by_send[s as usize];
                (x != NONE).then_some(x)
            }
            None => self.other.get(&value).copied(),
        }
    }
    #[inline]
    fn insert(&mut self, h: &History, value: i64, x: u32) {
        match h.send_of_value.get(value) {
            Some(s) => self.by_send[s as usize] = x,
            None => {
                self.other.insert(value, x);
            }
        }
    }
}

pub(crate) struct Ctx<'a> {
    pub h: &'a History,
    pub items: Vec<Item>,
    pub writes: Vec<Access>,
    pub reads: Vec<Access>,
    pub v: Versions,
    /// Value -> the item in the graph that wrote it.
    pub writer_of: ValueMap,
}

impl Ctx<'_> {
    pub fn writes_of(&self, i: u32) -> &[Access] {
        let it = &self.items[i as usize];
        &self.writes[it.w_first as usize..(it.w_first + it.w_count) as usize]
    }
    pub fn reads_of(&self, i: u32) -> &[Access] {
        let it = &self.items[i as usize];
        &self.reads[it.r_first as usize..(it.r_first + it.r_count) as usize]
    }
}

/// What the transaction checker found.
pub(crate) struct Findings {
    pub found: Vec<(AnomalyKind, Found)>,
    /// A serializability question stayed open: the search ran out of time or bounds.
    pub unknown: bool,
    pub warnings: Vec<String>,
}

fn u32_of(n: usize) -> u32 {
    u32::try_from(n).unwrap_or(NONE - 1)
}

fn build(h: &History) -> Ctx<'_> {
    let mut delivered = vec![false; h.sends.len()];
    for d in &h.deliveries {
        if d.send != NONE {
            delivered[d.send as usize] = true;
        }
    }
    let written = crate::delivery::written(h, &delivered);
    let was_read = |value: i64| {
        h.send_of_value
            .get(value)
            .is_some_and(|s| delivered[s as usize])
    };
    let bare = h.sends.iter().filter(|s| !s.in_txn).count();
    let mut items: Vec<Item> = Vec::with_capacity(bare + h.txns.len());
    let mut writes: Vec<Access> = Vec::with_capacity(h.sends.len());
    let mut reads: Vec<Access> = Vec::new();
    // The offset each read names (NO_OFFSET where it names none), until places are known.
    let mut read_offsets: Vec<i64> = Vec::new();
    let acc = |value: i64, obj: u32| Access {
        value,
        obj,
        pos: NONE,
    };
    // Bare sends first, then the transactions merged in by invoke: both come in
    // invoke order (a bare send is stored at its invoke, transactions in invoke
    // order), and two ops never share an invoke.
    for (si, s) in h.sends.iter().enumerate() {
        if s.in_txn {
            continue;
        }
        let w_first = u32_of(writes.len());
        writes.push(acc(s.value, s.partition));
        items.push(Item {
            src: Source::Send(u32_of(si)),
            process: s.process,
            outcome: s.outcome,
            node: s.outcome == Outcome::Ok || (s.outcome == Outcome::Info && delivered[si]),
            w_first,
            w_count: 1,
            r_first: 0,
            r_count: 0,
        });
    }
    let mut txn_items: Vec<Item> = Vec::with_capacity(h.txns.len());
    for (ti, t) in h.txns.iter().enumerate() {
        let (w_first, r_first) = (u32_of(writes.len()), u32_of(reads.len()));
        let mut any_read = false;
        for m in h.txn_mops_of(t) {
            if m.send {
                any_read |= was_read(m.value);
                writes.push(acc(m.value, m.partition));
            } else {
                reads.push(acc(m.value, m.partition));
                read_offsets.push(m.offset);
            }
        }
        txn_items.push(Item {
            src: Source::Txn(u32_of(ti)),
            process: t.process,
            outcome: t.outcome,
            node: t.outcome == Outcome::Ok || (t.outcome == Outcome::Info && any_read),
            w_first,
            w_count: u32_of(writes.len()) - w_first,
            r_first,
            r_count: u32_of(reads.len()) - r_first,
        });
    }
    let txn_node: Vec<bool> = txn_items.iter().map(|it| it.node).collect();
    merge_by_invoke(h, &mut items, txn_items);
    // Bare polls are no items ([`bare_polls`]): only the Kafka checks read them.
    // Version orders: written sends' positions (a send that ended `info` only
    // where a read proves it written), and every read's, whatever became of
    // the op that read it (Jepsen's version orders).
    let mut entries: Vec<(u32, i64, i64)> = Vec::new();
    for (s, &w) in h.sends.iter().zip(&written) {
        if w && !s.in_txn && s.offset != NO_OFFSET && s.partition != NONE {
            entries.push((s.partition, s.offset, s.value));
        }
    }
    for o in &h.observed {
        if o.offset != NO_OFFSET && o.partition != NONE {
            entries.push((o.partition, o.offset, o.value));
        }
    }
    for d in &h.deliveries {
        if d.offset == NO_OFFSET || d.partition == NONE {
            continue;
        }
        // Most deliveries repeat what their send's completion said.
        let known = d.send != NONE && {
            let s = &h.sends[d.send as usize];
            s.outcome == Outcome::Ok && s.offset == d.offset && s.partition == d.partition
        };
        if !known {
            entries.push((d.partition, d.offset, d.value));
        }
    }
    for (t, &committed) in h.txns.iter().zip(&txn_node) {
        for m in h.txn_mops_of(t) {
            if m.offset != NO_OFFSET && m.partition != NONE && (!m.send || committed) {
                entries.push((m.partition, m.offset, m.value));
            }
        }
    }
    sort_entries(&mut entries);
    let mut v = Versions {
        pos_of: ValueMap::new(h),
        ..Versions::default()
    };
    let mut i = 0;
    let mut cur_obj = NONE;
    let mut idx = 0u32;
    while i < entries.len() {
        let (obj, off, value) = entries[i];
        let mut j = i + 1;
        // Entries of one place: one version when they all name one value.
        let mut one_value = true;
        while j < entries.len() && entries[j].0 == obj && entries[j].1 == off {
            one_value &= entries[j].2 == value;
            j += 1;
        }
        if one_value && v.pos_of.get(h, value).is_none() {
            if obj != cur_obj {
                cur_obj = obj;
                idx = 0;
            }
            v.pos_of.insert(h, value, u32_of(v.values.len()));
            v.values.push(value);
            v.obj.push(obj);
            v.offset.push(off);
            v.idx.push(idx);
            idx += 1;
        }
        i = j;
    }
    drop(entries);

    let mut writer_of = ValueMap::new(h);
    for (ii, it) in items.iter().enumerate() {
        for a in &mut writes[it.w_first as usize..(it.w_first + it.w_count) as usize] {
            if let Some(p) = v.pos_of.get(h, a.value) {
                a.pos = p;
                a.obj = v.obj[p as usize];
            }
            if it.node {
                writer_of.insert(h, a.value, u32_of(ii));
            }
        }
        let (a, b) = (it.r_first as usize, (it.r_first + it.r_count) as usize);
        for (a, &off) in reads[a..b].iter_mut().zip(&read_offsets[a..b]) {
            // A read of a copy stored elsewhere (a duplicate, or an offset that
            // held two values) has no place in the version order.
            if let Some(p) = v.pos_of.get(h, a.value) {
                if off == NO_OFFSET || (v.offset[p as usize] == off && v.obj[p as usize] == a.obj) {
                    a.pos = p;
                    a.obj = v.obj[p as usize];
                }
            }
        }
    }
    v.writer = v
        .values
        .iter()
        .map(|&x| writer_of.get(h, x).unwrap_or(NONE))
        .collect();
    v.next = vec![NONE; v.values.len()];
    let mut following = NONE;
    for p in (0..v.values.len()).rev() {
        if p + 1 < v.values.len() && v.obj[p + 1] != v.obj[p] {
            following = NONE;
        }
        v.next[p] = following;
        if v.writer[p] != NONE {
            following = u32_of(p);
        }
    }
    Ctx {
        h,
        items,
        writes,
        reads,
        v,
        writer_of,
    }
}

/// Merges `more` into `items`, both by invoke, in place from the back; a sort
/// if either is out of order after all.
fn merge_by_invoke(h: &History, items: &mut Vec<Item>, more: Vec<Item>) {
    let sorted = |v: &[Item]| v.windows(2).all(|w| w[0].invoke(h) <= w[1].invoke(h));
    if !sorted(items) || !sorted(&more) {
        items.extend(more);
        items.sort_by_key(|it| it.invoke(h));
        return;
    }
    let m = items.len();
    let Some(&fill) = more.first() else {
        return;
    };
    items.resize(m + more.len(), fill);
    let (mut i, mut j, mut w) = (m, more.len(), items.len());
    while j > 0 {
        w -= 1;
        if i > 0 && items[i - 1].invoke(h) > more[j - 1].invoke(h) {
            items[w] = items[i - 1];
            i -= 1;
        } else {
            items[w] = more[j - 1];
            j -= 1;
        }
    }
}

/// The bare polls (the polls that are not a transaction's reads, and read
/// something), by invoke: the Kafka checks read them beside the items. They
/// are never vertices of the graph, so they are no items: their items and
/// reads would be about half of a queue history's ([`bare_poll`], [`poll_reads`]).
pub(crate) fn bare_polls(h: &History) -> Vec<u32> {
    let mut polls: Vec<u32> = Vec::new();
    for (pi, p) in h.polls.iter().enumerate() {
        let of_txn = h
            .txns
            .binary_search_by_key(&p.invoke, |t| t.invoke)
            .is_ok_and(|t| h.txns[t].process == p.process);
        if !of_txn && p.count != 0 {
            polls.push(u32_of(pi));
        }
    }
    polls.sort_by_key(|&p| h.polls[p as usize].invoke);
    polls
}

/// A bare poll as an item (not one of `Ctx::items`; its reads are [`poll_reads`]).
pub(crate) fn bare_poll(h: &History, p: u32) -> Item {
    let poll = &h.polls[p as usize];
    Item {
        src: Source::Poll(p),
        process: poll.process,
        outcome: Outcome::Ok,
        node: false,
        w_first: 0,
        w_count: 0,
        r_first: 0,
        r_count: poll.count,
    }
}

/// The reads of bare poll `p`, placed in the version order, into `out`.
pub(crate) fn poll_reads(cx: &Ctx<'_>, p: u32, out: &mut Vec<Access>) {
    out.clear();
    for d in cx.h.poll_deliveries(&cx.h.polls[p as usize]) {
        let mut a = Access {
            value: d.value,
            obj: d.partition,
            pos: NONE,
        };
        // A read of a copy stored elsewhere (a duplicate, or an offset that
        // held two values) has no place in the version order.
        if let Some(p) = cx.v.pos_of.get(cx.h, d.value) {
            let (off, obj) = (cx.v.offset[p as usize], cx.v.obj[p as usize]);
            if d.offset == NO_OFFSET || (off == d.offset && obj == a.obj) {
                a.pos = p;
                a.obj = obj;
            }
        }
        out.push(a);
    }
}

/// The items that precede others in real time (in the graph, completed, not
/// `info`), by completion: what [`edges`] merges into the items for realtime edges.
fn completed(cx: &Ctx<'_>) -> Vec<u32> {
    let mut done: Vec<u32> = (0..u32_of(cx.items.len()))
        .filter(|&i| {
            let it = &cx.items[i as usize];
            it.node && it.complete(cx.h) != NO_OP && it.outcome != Outcome::Info
        })
        .collect();
    crate::radix::sort_by_key(&mut done, |i| cx.items[i as usize].complete(cx.h));
    done
}

/// The edges of the dependency graph, each given to `e` as (from, to, kind),
/// the same ones in the same order on every call (`graph::build` calls it
/// twice); `done` is [`completed`].
fn edges(cx: &Ctx<'_>, done: &[u32], e: &mut dyn FnMut(u32, u32, u8)) {
    let v = &cx.v;
    // ww: each version's writer after the previous version's.
    let mut prev = NONE;
    for p in 0..v.values.len() {
        if p > 0 && v.obj[p - 1] != v.obj[p] {
            prev = NONE;
        }
        let w = v.writer[p];
        if w != NONE {
            if prev != NONE && prev != w {
                e(prev, w, WW);
            }
            prev = w;
        }
    }
    let mut last: Vec<(u32, u32)> = Vec::new();
    for (ri, it) in cx.items.iter().enumerate() {
        if !it.node || it.r_count == 0 {
            continue;
        }
        let r = u32_of(ri);
        // wr: the writer of every version read.
        let mut lw = NONE;
        last.clear();
        for a in cx.reads_of(r) {
            let w = if a.pos == NONE {
                cx.writer_of.get(cx.h, a.value).unwrap_or(NONE)
            } else {
                v.writer[a.pos as usize]
            };
            if w != NONE && w != r && w != lw {
                e(w, r, WR);
                lw = w;
            }
            // A read of a copy stored elsewhere read the value all the same:
            // what comes after it is what comes after the value's place.
            let (obj, p) = match a.pos {
                NONE => match v.pos_of.get(cx.h, a.value) {
                    Some(p) => (v.obj[p as usize], p),
                    None => continue,
                },
                p => (a.obj, p),
            };
            match last.iter_mut().find(|x| x.0 == obj) {
                Some(x) => x.1 = x.1.max(p),
                None => last.push((obj, p)),
            }
        }
        // rw: from a transaction's last read of each object to the writer of
        // the next version. A read that stops inside another transaction's
        // writes points past them: that transaction's writes there are one
        // version block, so the read is not overwritten by its own writer (a
        // poll may stop mid-transaction; `G1b` judges reading past the rest).
        if matches!(it.src, Source::Txn(_)) {
            for &(_, p) in &last {
                let wp = v.writer[p as usize];
                let mut n = v.next[p as usize];
                while n != NONE && (v.writer[n as usize] == r || v.writer[n as usize] == wp) {
                    n = v.next[n as usize];
                }
                if n != NONE {
                    e(r, v.writer[n as usize], RW);
                }
            }
        }
    }
    // process: consecutive items of one process.
    let mut last_of: Vec<u32> = vec![NONE; cx.h.processes.len()];
    for (i, it) in cx.items.iter().enumerate() {
        if !it.node {
            continue;
        }
        let Some(l) = last_of.get_mut(it.process as usize) else {
            continue;
        };
        if *l != NONE {
            e(*l, u32_of(i), PROCESS);
        }
        *l = u32_of(i);
    }
    // realtime: A completed before B was invoked; only the frontier (no edge implied by two others).
    // Items are in invoke order; their completions, radix-sorted, are merged in.
    // An op that ended `info` may take effect any time later: it precedes nothing.
    // The frontier in the order it was joined, which is completion order. A
    // completion of B removes the members that were there when B was invoked:
    // those completed before B's invoke, a prefix.
    let mut frontier: Vec<u32> = Vec::new();
    let mut d = 0usize;
    for (i, it) in cx.items.iter().enumerate() {
        if !it.node {
            continue;
        }
        let invoke = it.invoke(cx.h);
        while d < done.len() && cx.items[done[d] as usize].complete(cx.h) < invoke {
            complete_one(cx, &mut frontier, done[d]);
            d += 1;
        }
        for &f in &frontier {
            e(f, u32_of(i), REALTIME);
        }
    }
}

/// Item `b` completed: it replaces in the frontier what it follows.
fn complete_one(cx: &Ctx<'_>, frontier: &mut Vec<u32>, b: u32) {
    let inv = cx.items[b as usize].invoke(cx.h);
    let k = frontier
        .iter()
        .position(|&f| cx.items[f as usize].complete(cx.h) >= inv)
        .unwrap_or(frontier.len());
    frontier.drain(..k);
    frontier.push(b);
}

/// Sorts version entries by (object, offset): a radix sort on one integer key
/// where the offsets' range allows it, else a comparison sort. Order within a
/// place does not matter to the caller.
fn sort_entries(entries: &mut Vec<(u32, i64, i64)>) {
    if entries
        .windows(2)
        .all(|w| (w[0].0, w[0].1) <= (w[1].0, w[1].1))
    {
        return;
    }
    let (Some(lo), Some(hi)) = (
        entries.iter().map(|e| e.1).min(),
        entries.iter().map(|e| e.1).max(),
    ) else {
        return;
    };
    let max_obj = entries.iter().map(|e| e.0).max().unwrap_or(0);
    let span = hi.abs_diff(lo);
    let off_bits = u64::BITS - span.leading_zeros();
    let obj_bits = u32::BITS - max_obj.leading_zeros();
    if entries.len() < 512 || off_bits + obj_bits > 64 {
        entries.sort_unstable_by_key(|e| (e.0, e.1));
        return;
    }
    let key = |e: &(u32, i64, i64)| -> u64 {
        let rel = e.1.abs_diff(lo);
        if off_bits == 64 {
            rel
        } else {
            (u64::from(e.0) << off_bits) | rel
        }
    };
    // Least significant digit first, 11 bits a pass, into a buffer of the same size.
    const BITS: u32 = 11;
    const BUCKETS: usize = 1 << BITS;
    let bits = off_bits + obj_bits;
    let mut tmp: Vec<(u32, i64, i64)> = vec![(0, 0, 0); entries.len()];
    let mut shift = 0;
    while shift < bits {
        let digit = |e: &(u32, i64, i64)| ((key(e) >> shift) as usize) & (BUCKETS - 1);
        let mut start = vec![0usize; BUCKETS];
        for e in entries.iter() {
            start[digit(e)] += 1;
        }
        let mut acc = 0;
        for c in start.iter_mut() {
            let here = *c;
            *c = acc;
            acc += here;
        }
        for e in entries.iter() {
            let b = digit(e);
            tmp[start[b]] = *e;
            start[b] += 1;
        }
        std::mem::swap(entries, &mut tmp);
        shift += BITS;
    }
}

/// A cycle found, with its class.
pub(crate) struct Cycle {
    pub spec: Spec,
    pub steps: Vec<graph::Step>,
}

/// Searches the graph: cycles of every class in [`SPECS`].
fn search(g: &graph::Graph, deadline: Instant, warnings: &mut Vec<String>) -> (Vec<Cycle>, bool) {
    let n = g.node_count();
    let (full, full_n) = graph::scc(g, ALL, &vec![true; n]);
    let mut cycles = Vec::new();
    let mut unknown = false;
    if full_n == 0 {
        return (cycles, unknown);
    }
    let in_full: Vec<bool> = full.iter().map(|&c| c != NONE).collect();
    let (data, data_n) = graph::scc(g, DATA, &in_full);
    let in_data: Vec<bool> = data.iter().map(|&c| c != NONE).collect();
    let mut explained = vec![false; data_n as usize];
    // The components of the graph cut to the current class's kinds: classes
    // that share a cut come one after the other in SPECS, so one is kept at a time.
    let mut cut: Option<(u8, Vec<u32>, u32)> = None;
    'specs: for spec in SPECS {
        let active = if spec.data_only { &in_data } else { &in_full };
        if spec.data_only && data_n == 0 {
            continue;
        }
        if cut.as_ref().is_none_or(|c| c.0 != spec.scc) {
            drop(cut.take());
            let (comp, ncomp) = graph::scc(g, spec.scc, active);
            cut = Some((spec.scc, comp, ncomp));
        }
        let Some((_, comp, ncomp)) = &cut else {
            continue;
        };
        let certain = spec.allowed == spec.scc
            && spec.single == 0
            && spec.multiple == 0
            && spec.required & !spec.anchor == 0;
        let mut tried = vec![0usize; *ncomp as usize];
        let mut done = vec![false; *ncomp as usize];
        for a in 0..n as u32 {
            let c = comp[a as usize];
            if c == NONE || done[c as usize] {
                continue;
            }
            let nb = g.neighbors_slice(a);
            let ks = g.edges_slice(a);
            for (&b, &bits) in nb.iter().zip(ks) {
                if comp[b as usize] != c || done[c as usize] {
                    continue;
                }
                let anchors = bits & spec.anchor & spec.allowed;
                for k0 in spec::KINDS {
                    if anchors & k0 == 0 || done[c as usize] {
                        continue;
                    }
                    if !certain && tried[c as usize] >= ANCHORS {
                        continue;
                    }
                    tried[c as usize] += 1;
                    match graph::cycle_through(g, &spec, comp, c, a, b, k0, deadline) {
                        Ok(Some(steps)) => {
                            done[c as usize] = true;
                            if spec.data_only {
                                let d = data[a as usize];
                                if d != NONE {
                                    explained[d as usize] = true;
                                }
                            }
                            cycles.push(Cycle { spec, steps });
                        }
                        Ok(None) => {}
                        Err(graph::Timeout) => {
                            warnings.push(format!(
                                "txn: the cycle search ran out of its time budget while looking for {}; cycles may be missing",
                                spec.kind
                            ));
                            if spec.data_only {
                                unknown = true;
                            }
                            break 'specs;
                        }
                    }
                }
            }
        }
    }
    let unexplained = explained.iter().filter(|&&x| !x).count();
    if unexplained > 0 && !unknown {
        unknown = true;
        warnings.push(format!(
            "txn: {unexplained} strongly connected component(s) of the ww/wr/rw graph hold a cycle the bounded search did not pin down"
        ));
    }
    (cycles, unknown)
}

/// Checks the transactions of a history; for a history without any, only
/// Jepsen's Kafka checks of its polls and sends ([`AnomalyKind::KAFKA`]).
pub(crate) fn check(h: &History, max: usize, budget: Duration) -> Findings {
    let started = Instant::now();
    let deadline = started + budget;
    let cx = build(h);
    let mut warnings = Vec::new();
    let kinds: &[AnomalyKind] = if h.txns.is_empty() {
        &AnomalyKind::KAFKA
    } else {
        &AnomalyKind::TXN
    };
    let mut found: Vec<(AnomalyKind, Found)> =
        kinds.iter().map(|&k| (k, Found::new(max))).collect();
    if h.txns.is_empty() {
        kafka::check(&cx, &mut found);
        return Findings {
            found,
            unknown: false,
            warnings,
        };
    }
    let done = completed(&cx);
    let g = graph::build(cx.items.len(), |e| edges(&cx, &done, e));
    drop(done);
    let (cycles, unknown) = search(&g, deadline, &mut warnings);
    drop(g);
    for c in &cycles {
        if let Some((_, f)) = found.iter_mut().find(|(k, _)| *k == c.spec.kind) {
            f.hit(|| explain::cycle(&cx, c));
        }
    }
    kafka::check(&cx, &mut found);
    Findings {
        found,
        unknown,
        warnings,
    }
}
