//! The processing pass (seed D7, `docs/checkers.md`, "Processing"): what the
//! idempotent consumers' `dedup` and `effect` ops say about each message's
//! effect. It judges effects, not deliveries: a message delivered twice whose
//! effect was applied once is processed exactly once.
//!
//! Per group, for every message delivered to it (an `ok` poll) or named by a
//! processing op of it:
//!
//! * `duplicate-processing`: two or more `effect` ops of the value ended `ok`.
//! * `lost-processing`: the run reached `drained`, the value was delivered to
//!   the group, and no `effect` of it ended `ok` or with an unknown outcome
//!   (an effect that may have been applied is not counted lost).
//! * `parked` (information): a claim or check of the value was answered
//!   `unavailable` or ended unknown (a timeout; a call with no completion is a
//!   consumer that died, not one that held the value back), and its consumer's
//!   next processing op, if any, was not the value's effect: the consumer held
//!   it back (fail-closed).
use crate::found::Found;
use crate::verdict::processing::Processed;
use crate::verdict::Example;
use gauntlet_history::model::Outcome;
use gauntlet_history::processing::{DedupAnswer, ProcessingKind};
use gauntlet_history::History;
use rustc_hash::FxHashMap;

/// What the pass found.
pub(crate) struct ProcessingFound {
    pub duplicate: Found,
    pub lost: Found,
    pub parked: Found,
}

#[derive(Default)]
struct Facts {
    effects_ok: Vec<u64>,
    effect_maybe: bool,
    delivered_by: Vec<u64>,
    answers: Vec<String>,
    parked: bool,
}

/// Runs the pass; `max` examples per anomaly.
pub(crate) fn check(h: &History, max: usize) -> ProcessingFound {
    let mut facts: FxHashMap<(u32, i64), Facts> = FxHashMap::default();
    // The groups whose consumers record their processing: only their messages are judged.
    let mut judged: Vec<u32> = h.processing.iter().map(|p| p.group).collect();
    judged.sort_unstable();
    judged.dedup();
    for poll in &h.polls {
        if judged.binary_search(&poll.group).is_err() {
            continue;
        }
        for d in h.poll_deliveries(poll) {
            facts
                .entry((poll.group, d.value))
                .or_default()
                .delivered_by
                .push(poll.complete);
        }
    }
    // Each process's processing ops in invoke order, to see what followed a dedup.
    let mut by_process: FxHashMap<u32, Vec<usize>> = FxHashMap::default();
    for (i, p) in h.processing.iter().enumerate() {
        by_process.entry(p.process).or_default().push(i);
    }
    for (i, p) in h.processing.iter().enumerate() {
        let f = facts.entry((p.group, p.value)).or_default();
        match p.kind {
            ProcessingKind::Effect => match p.outcome {
                Outcome::Ok => f.effects_ok.push(p.complete),
                Outcome::Info => f.effect_maybe = true,
                Outcome::Fail => {}
            },
            ProcessingKind::Dedup(step, answer) if step.decides() => {
                let at = if p.complete == gauntlet_history::NO_OP {
                    format!("invoked at op {}, no answer", p.invoke)
                } else {
                    format!("op {}", p.complete)
                };
                f.answers
                    .push(format!("{} {} ({at})", step.name(), answer.name()));
                // Answered (a timeout is an answer too: the consumer went on),
                // and not followed by the value's effect.
                let answered = p.complete != gauntlet_history::NO_OP;
                if answered && matches!(answer, DedupAnswer::Unavailable | DedupAnswer::Unknown) {
                    let mine = &by_process[&p.process];
                    let pos = mine.iter().position(|&j| j == i).unwrap_or(mine.len());
                    let applied_next = mine.get(pos + 1).is_some_and(|&next| {
                        let n = &h.processing[next];
                        n.kind == ProcessingKind::Effect && n.value == p.value
                    });
                    if !applied_next {
                        f.parked = true;
                    }
                }
            }
            ProcessingKind::Dedup(..) => {}
        }
    }
    let mut keys: Vec<(u32, i64)> = facts.keys().copied().collect();
    keys.sort_unstable();
    let mut out = ProcessingFound {
        duplicate: Found::new(max),
        lost: Found::new(max),
        parked: Found::new(max),
    };
    let example = |g: u32, v: i64, f: &Facts| {
        Example::Processed(Processed {
            value: v,
            group: h.group_name(g).to_string(),
            effects: f.effects_ok.clone(),
            delivered_by: f.delivered_by.clone(),
            answers: f.answers.clone(),
        })
    };
    for (g, v) in keys {
        let f = &facts[&(g, v)];
        let group = h.group_name(g);
        if f.effects_ok.len() >= 2 {
            out.duplicate.hit(|| example(g, v, f));
            out.duplicate.group_hit(group);
        }
        if h.drained.is_some()
            && !f.delivered_by.is_empty()
            && f.effects_ok.is_empty()
            && !f.effect_maybe
        {
            out.lost.hit(|| example(g, v, f));
            out.lost.group_hit(group);
        }
        if f.parked {
            out.parked.hit(|| example(g, v, f));
            out.parked.group_hit(group);
        }
    }
    out
}
