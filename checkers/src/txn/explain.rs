//! Every cycle as a proof: which transactions, why each one must come before
//! the next, and the contradiction; the same facts as data in the example.
use super::spec::{kind_name, PROCESS, REALTIME, RW, WR, WW};
use super::{Ctx, Cycle, Item, Source};
use crate::verdict::evidence::{Cycle as CycleExample, Step, TxnObject, TxnOp};
use crate::verdict::Example;
use gauntlet_history::model::{Outcome, NONE, NO_OP};

fn outcome_name(o: Outcome) -> &'static str {
    match o {
        Outcome::Ok => "ok",
        Outcome::Fail => "fail",
        Outcome::Info => "info",
    }
}

/// How a partition is named in text.
pub(crate) fn obj_name(cx: &Ctx<'_>, obj: u32) -> String {
    match cx.h.partition(obj) {
        Some((Some(t), p)) => format!("{t}/{p}"),
        Some((None, p)) => format!("partition {p}"),
        None => "an unknown partition".to_string(),
    }
}

pub(crate) fn obj_ref(cx: &Ctx<'_>, obj: u32) -> Option<TxnObject> {
    cx.h.partition(obj).map(|(t, p)| TxnObject {
        partition: p,
        topic: t.map(str::to_string),
    })
}

/// An item as data: what it was, who ran it, how it ended, its op indices.
pub(crate) fn item_ref(cx: &Ctx<'_>, i: u32) -> TxnOp {
    item_ref_of(cx, &cx.items[i as usize])
}

/// [`item_ref`] of an item that may be no member of `cx.items` (a bare poll).
pub(crate) fn item_ref_of(cx: &Ctx<'_>, it: &Item) -> TxnOp {
    let f = match it.src {
        Source::Txn(_) => "txn",
        Source::Send(_) => "send",
        Source::Poll(_) => "poll",
    };
    let complete = it.complete(cx.h);
    TxnOp {
        complete: (complete != NO_OP).then_some(complete),
        f: f.to_string(),
        invoke: it.invoke(cx.h),
        name: None,
        process: cx.h.process_number(it.process),
        outcome: outcome_name(it.outcome).to_string(),
    }
}

fn item_text(cx: &Ctx<'_>, i: u32) -> String {
    let it = &cx.items[i as usize];
    let f = match it.src {
        Source::Txn(_) => "txn",
        Source::Send(_) => "send",
        Source::Poll(_) => "poll",
    };
    let done = match it.complete(cx.h) {
        NO_OP => "never completed".to_string(),
        c => format!("op {c}"),
    };
    format!(
        "{f} of process {} ({}; invoked at op {}, {done})",
        cx.h.process_number(it.process),
        outcome_name(it.outcome),
        it.invoke(cx.h)
    )
}

/// The facts behind the edge `a -> b` of kind `k`, as data and as a sentence.
fn step(cx: &Ctx<'_>, a: u32, b: u32, k: u8, an: &str, bn: &str) -> (Step, String) {
    let v = &cx.v;
    let mut data = Step {
        completed: None,
        from: an.to_string(),
        invoked: None,
        object: None,
        process: None,
        to: bn.to_string(),
        edge: kind_name(k).to_string(),
        value: None,
        value_next: None,
    };
    let text = match k {
        WW => {
            let mut hit = None;
            for w in cx.writes_of(b) {
                if w.pos == NONE {
                    continue;
                }
                let mut p = w.pos as usize;
                while p > 0 && v.obj[p - 1] == v.obj[w.pos as usize] {
                    p -= 1;
                    if v.writer[p] != NONE {
                        if v.writer[p] == a {
                            hit = Some((p, w.pos as usize));
                        }
                        break;
                    }
                }
                if hit.is_some() {
                    break;
                }
            }
            match hit {
                Some((p1, p2)) => {
                    data.object = Some(obj_ref(cx, v.obj[p1]));
                    data.value = Some(v.values[p1]);
                    data.value_next = Some(v.values[p2]);
                    format!(
                        "{an} sent {} to {} and {bn} sent {}, the next version there (ww)",
                        v.values[p1],
                        obj_name(cx, v.obj[p1]),
                        v.values[p2]
                    )
                }
                None => format!("{an} wrote a version before one {bn} wrote (ww)"),
            }
        }
        WR => {
            let hit = cx
                .reads_of(b)
                .iter()
                .find(|r| r.pos != NONE && v.writer[r.pos as usize] == a);
            match hit {
                Some(r) => {
                    data.object = Some(obj_ref(cx, r.obj));
                    data.value = Some(r.value);
                    format!(
                        "{an} sent {} to {}, which {bn} read (wr)",
                        r.value,
                        obj_name(cx, r.obj)
                    )
                }
                None => format!("{bn} read a version {an} wrote (wr)"),
            }
        }
        RW => {
            let mut last: Vec<(u32, u32)> = Vec::new();
            for r in cx.reads_of(a) {
                if r.pos == NONE {
                    continue;
                }
                match last.iter_mut().find(|x| x.0 == r.obj) {
                    Some(x) => x.1 = x.1.max(r.pos),
                    None => last.push((r.obj, r.pos)),
                }
            }
            let mut hit = None;
            for &(obj, p) in &last {
                let mut n = v.next[p as usize];
                while n != NONE && v.writer[n as usize] == a {
                    n = v.next[n as usize];
                }
                if n != NONE && v.writer[n as usize] == b {
                    hit = Some((obj, p, n));
                    break;
                }
            }
            match hit {
                Some((obj, p, n)) => {
                    data.object = Some(obj_ref(cx, obj));
                    data.value = Some(v.values[p as usize]);
                    data.value_next = Some(v.values[n as usize]);
                    format!(
                        "{an}'s last read of {} was {}, and {bn} sent {}, a later version (rw)",
                        obj_name(cx, obj),
                        v.values[p as usize],
                        v.values[n as usize]
                    )
                }
                None => format!("{an} did not read a version {bn} wrote (rw)"),
            }
        }
        PROCESS => {
            let p = cx.h.process_number(cx.items[a as usize].process);
            data.process = Some(p);
            format!("process {p} ran {an} before {bn} (process)")
        }
        REALTIME => {
            let completed = cx.items[a as usize].complete(cx.h);
            let invoked = cx.items[b as usize].invoke(cx.h);
            data.completed = Some(completed);
            data.invoked = Some(invoked);
            format!(
                "{an} completed (op {completed}) before {bn} was invoked (op {invoked}) (realtime)"
            )
        }
        _ => format!("{an} < {bn}"),
    };
    (data, text)
}

/// A cycle as an example: its transactions, its steps, and the proof in words.
pub(crate) fn cycle(cx: &Ctx<'_>, c: &Cycle) -> Example {
    let nodes: Vec<u32> = c.steps.iter().map(|s| s.0).collect();
    let name = |i: u32| {
        let k = nodes.iter().position(|&x| x == i).unwrap_or(0);
        format!("T{}", k + 1)
    };
    let mut text = String::from("Let:\n");
    let mut txns = Vec::new();
    for (k, &i) in nodes.iter().enumerate() {
        text.push_str(&format!("  T{} = {}\n", k + 1, item_text(cx, i)));
        let mut j = item_ref(cx, i);
        j.name = Some(format!("T{}", k + 1));
        txns.push(j);
    }
    text.push_str("Then:\n");
    let mut steps = Vec::new();
    let last = c.steps.len().saturating_sub(1);
    for (k, &(a, b, kind)) in c.steps.iter().enumerate() {
        let (an, bn) = (name(a), name(b));
        let (d, why) = step(cx, a, b, kind, &an, &bn);
        steps.push(d);
        if k == last {
            text.push_str(&format!(
                "  - However, {an} < {bn}, because {why}: a contradiction!"
            ));
        } else {
            text.push_str(&format!("  - {an} < {bn}, because {why}.\n"));
        }
    }
    let ops: Vec<u64> = nodes
        .iter()
        .map(|&i| {
            let it = &cx.items[i as usize];
            match it.complete(cx.h) {
                NO_OP => it.invoke(cx.h),
                c => c,
            }
        })
        .collect();
    Example::Cycle(CycleExample {
        cycle: txns,
        explanation: text,
        ops,
        steps,
    })
}
