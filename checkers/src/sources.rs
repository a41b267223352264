//! A stream, queue or topic the broker lost: the `drained` marker says the
//! broker answered the drain that it does not exist (docs/checkers.md, "A lost
//! stream"). The delivery pass already counts what it acknowledged and nobody
//! read as `lost` (the marker is there); this says what was lost, and from when.
use crate::verdict::SourceLost;
use gauntlet_history::{History, Outcome};

/// One entry per group whose drain found its source missing.
pub(crate) fn lost(h: &History) -> Vec<SourceLost> {
    let Some(end) = &h.drain_end else {
        return Vec::new();
    };
    if end.missing.is_empty() {
        return Vec::new();
    }
    // The workload's ops only: the drain's own come after its marker.
    let before_drain = h.drain.or(h.drained).unwrap_or(u64::MAX);
    let last_send = h
        .sends
        .iter()
        .filter(|s| s.outcome == Outcome::Ok && s.complete < before_drain)
        .map(|s| s.complete_time)
        .max();
    let last_read = h
        .polls
        .iter()
        .filter(|p| p.count > 0 && p.complete < before_drain)
        .map(|p| p.complete_time)
        .max();
    let last_ok = last_send.max(last_read);
    let failing_since = h
        .sends
        .iter()
        .filter(|s| {
            s.outcome != Outcome::Ok
                && s.invoke < before_drain
                && last_ok.is_none_or(|t| s.invoke_time >= t)
        })
        .map(|s| s.invoke_time)
        .min();
    end.missing
        .iter()
        .map(|m| SourceLost {
            group: m.group.clone(),
            what: m.what.clone(),
            answer: m.answer.clone(),
            answered_at: m.first_answer,
            confirmed_at: m.confirmed,
            last_ok,
            failing_since,
        })
        .collect()
}

/// The verdict's warning for one lost source, in words.
pub(crate) fn sentence(s: &SourceLost) -> String {
    let secs = |ns: u64| format!("{:.1} s", ns as f64 / 1e9);
    let mut out = format!(
        "the broker lost {}: the drain of {} was told \"{}\" at {} and still at {}",
        s.what,
        if s.group.is_empty() {
            "the default group".to_string()
        } else {
            format!("group {}", s.group)
        },
        s.answer,
        secs(s.answered_at),
        secs(s.confirmed_at),
    );
    match (s.last_ok, s.failing_since) {
        (Some(ok), Some(fail)) => out.push_str(&format!(
            "; the last acknowledged send or delivery was at {}, and sends failed or went unknown from {}",
            secs(ok),
            secs(fail)
        )),
        (Some(ok), None) => out.push_str(&format!(
            "; the last acknowledged send or delivery was at {}",
            secs(ok)
        )),
        (None, Some(fail)) => out.push_str(&format!(
            "; sends failed or went unknown from {}",
            secs(fail)
        )),
        (None, None) => {}
    }
    out.push_str(": what it acknowledged there and nobody read is counted lost");
    out
}
