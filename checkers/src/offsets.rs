//! inconsistent-offsets: one broker position (partition + offset, or id) holding two different values.
//!
//! Every claim "position P holds value v" (an `ok` send's reported position, a
//! delivery's) is written into a table per partition, indexed by offset (ids
//! are dense already); a position whose claims disagree is one anomaly.
//! Offsets are nearly dense in practice, so the tables are plain vectors; a
//! partition whose offsets are too sparse for that is sorted instead.
use crate::found::Found;
use crate::verdict::evidence::{IdPosition, Inconsistent, OffsetPosition, Position};
use crate::verdict::Example;
use gauntlet_history::model::{History, NONE, NO_OFFSET};
use rustc_hash::FxHashSet;

/// A position: (partition or NONE, offset), or (ID, id) for broker ids.
type At = (u32, i64);
const ID: u32 = NONE - 1;

fn describe(h: &History, at: At) -> Position {
    match at {
        (ID, id) => Position::Id(IdPosition {
            id: h.id_name(id as u32).map(str::to_string),
        }),
        (p, o) => {
            let (topic, part) = h.partition(p).unwrap_or((None, -1));
            Position::Offset(OffsetPosition {
                offset: o,
                partition: (p != NONE).then_some(part),
                topic: topic.map(str::to_string),
            })
        }
    }
}

/// Calls `f(position, value, op)` for every claim, sends first: the positions
/// of written sends (`ok`, or `info` and proven written by a read, `written`),
/// of deliveries, and of the messages read by ops that did not end `ok`.
fn claims(h: &History, written: &[bool], mut f: impl FnMut(At, i64, u64)) {
    let mut claim = |partition: u32, offset: i64, id: u32, value: i64, op: u64| {
        if offset != NO_OFFSET {
            f((partition, offset), value, op);
        }
        if id != NONE {
            f((ID, i64::from(id)), value, op);
        }
    };
    for (s, &w) in h.sends.iter().zip(written) {
        if w {
            claim(s.partition, s.offset, s.id, s.value, s.complete);
        }
    }
    for d in &h.deliveries {
        claim(
            d.partition,
            d.offset,
            d.id,
            d.value,
            h.polls[d.poll as usize].complete,
        );
    }
    for o in &h.observed {
        claim(o.partition, o.offset, o.id, o.value, o.op);
    }
}

/// Table slot of a partition: partition ids are dense, NONE and ID get the last two.
fn slot(p: u32, n: usize) -> usize {
    match p {
        NONE => n,
        ID => n + 1,
        p => p as usize,
    }
}

pub(crate) fn check(h: &History, written: &[bool], max: usize) -> Found {
    let n = h.partitions.len();
    // Pass 1: offset range and claim count per partition.
    let mut range: Vec<(i64, i64, u64)> = vec![(i64::MAX, i64::MIN, 0); n + 2];
    claims(h, written, |(p, o), _, _| {
        let r = &mut range[slot(p, n)];
        r.0 = r.0.min(o);
        r.1 = r.1.max(o);
        r.2 += 1;
    });
    // Pass 2: dense tables where the offsets allow, a list to sort elsewhere.
    let dense: Vec<bool> = range
        .iter()
        .map(|&(lo, hi, count)| count > 0 && (hi as i128 - lo as i128) < 4 * count as i128 + 64)
        .collect();
    let mut tables: Vec<Vec<i64>> = range
        .iter()
        .zip(&dense)
        .map(|(&(lo, hi, _), &d)| {
            if d {
                vec![i64::MIN; (hi - lo + 1) as usize]
            } else {
                Vec::new()
            }
        })
        .collect();
    let mut sparse: Vec<(At, i64)> = Vec::new();
    let mut bad: FxHashSet<At> = FxHashSet::default();
    let mut taken_min: FxHashSet<At> = FxHashSet::default();
    claims(h, written, |at, v, _| {
        let s = slot(at.0, n);
        if !dense[s] {
            sparse.push((at, v));
            return;
        }
        let cell = &mut tables[s][(at.1 - range[s].0) as usize];
        // i64::MIN marks an empty cell; a claim of that very value is tracked aside.
        if *cell == i64::MIN && (v != i64::MIN || taken_min.insert(at)) {
            if v != i64::MIN && taken_min.contains(&at) {
                bad.insert(at);
            }
            *cell = v;
        } else if *cell != v {
            bad.insert(at);
        }
    });
    sparse.sort_unstable();
    for run in sparse.chunk_by(|a, b| a.0 == b.0) {
        if run.iter().any(|c| c.1 != run[0].1) {
            bad.insert(run[0].0);
        }
    }
    // Evidence for the first few: the first two disagreeing claims of each.
    let mut shown: Vec<At> = bad.iter().copied().collect();
    shown.sort_unstable();
    shown.truncate(max);
    let wanted: FxHashSet<At> = shown.iter().copied().collect();
    let mut seen: rustc_hash::FxHashMap<At, Vec<(i64, u64)>> = Default::default();
    claims(h, written, |at, v, op| {
        if wanted.contains(&at) {
            let list = seen.entry(at).or_default();
            if list.len() < 2 && list.first().is_none_or(|f| f.0 != v) {
                list.push((v, op));
            }
        }
    });
    let mut found = Found::new(max);
    found.count = bad.len() as u64;
    for at in shown {
        let list = seen.remove(&at).unwrap_or_default();
        found.example(|| {
            Example::Inconsistent(Inconsistent {
                ops: list.iter().map(|c| c.1).collect(),
                position: describe(h, at),
                values: list.iter().map(|c| c.0).collect(),
            })
        });
    }
    found
}
