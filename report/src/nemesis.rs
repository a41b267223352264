//! Fault intervals from the nemesis events of a history, for shading plots.
//!
//! The history keeps every nemesis op (`process: "nemesis"`) as an event with
//! its `f`, `type` and raw `value`. A fault is shown as an interval from the
//! event that starts it to the event that ends it, paired by this rule:
//!
//! * A start event whose value says `"instant": true` (Gauntlet's runs write it
//!   into the start events of a fault that ends at once, such as
//!   `kill-consumer`) is an instant fault, drawn as a mark: the other events
//!   of its `fault_id` (its `info`, an end that came at once) are part of it,
//!   and the mark is its `info` when it has one (it says what the fault did).
//! * Events whose values carry the same `fault_id` (Gauntlet's own runs write
//!   the fault's position in the schedule into its start and end events) are
//!   one fault: the first starts it, the next with another `f` (or `"end":
//!   true`) ends it, and the rest (the `info` after an `invoke`) are part of
//!   them. The rules below pair the events without an id (Jepsen's histories,
//!   and Gauntlet's before v1.1).
//! * An event whose value has `"end": true` ends the latest open fault (of the
//!   same target, when the value names one).
//! * Ending names: `resume` ends `pause`; `heal` (also `heal-all`, `repair`)
//!   ends every open `partition`-like fault (any `f` containing `partition`,
//!   `cut`, `drop`, `delay`, `slow`, `isolate`, `netem`, and the proxy's
//!   `ack-loss`, `blackhole`, `latency`, `jitter`, `loss`, `bandwidth`); `start`/`restart` end a `kill` or `stop`
//!   of the same target; `stop-X` ends `start-X`; `X-end` / `end-X` end `X`.
//!   `clock-reset` ends every open clock fault (`clock-*`, `*skew*`);
//!   `restart-X` ends `kill-X` (`kill-consumer` .. `restart-consumer`);
//!   `restart` ends a `kill`/`stop` of its target, else it is a fault of its
//!   own until `restarted` (the names of `gauntlet-nemesis`).
//!   A `stop` starts a node stop (ended by `start`); a `start` only ends.
//! * A `kill` whose value names a client `process` (and no `node`) is instant:
//!   the client comes back under a new process number, so nothing stays down.
//! * An `invoke` followed by the `info` of the same `f` and target (Jepsen's
//!   nemesis writes both) is one event: the second one is not a new fault.
//! * A `heal` with nothing open, or any end with nothing to end, is an instant.
//! * A `kill-consumer` that nothing ended is an instant fault too (a history
//!   written before the runs said `"instant"`): the consumer came back as a
//!   new process at once.
//! * A fault still open at the end of the history lasts until its last op,
//!   and the report says in words that it never ended.
use gauntlet_history::model::NemesisEvent;
use gauntlet_history::OpType;

/// One fault, from the op that started it to the op that ended it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Interval {
    /// The fault's name (the `f` of the op that started it).
    pub f: String,
    /// The node, nodes or process the fault was aimed at ("" when none is named).
    pub target: String,
    /// Time of the op that started it, in nanoseconds.
    pub start_time: u64,
    /// Op index of the op that started it.
    pub start_index: u64,
    /// `None`: never ended (shaded to the end of the history).
    pub end_time: Option<u64>,
    /// Op index of the op that ended it (`None`: never ended).
    pub end_index: Option<u64>,
    /// The `f` of the op that ended it (`None`: never ended).
    pub end_f: Option<String>,
}

/// The fault intervals and the instant events (indices into the event list).
#[derive(Debug, Clone, Default)]
pub struct Faults {
    /// The faults that lasted, in the order they started.
    pub intervals: Vec<Interval>,
    /// The instant faults and the events that neither started nor ended a
    /// fault, as indices into the event list, in order.
    pub instants: Vec<usize>,
}

impl Faults {
    /// The faults still open at the end of the history.
    pub fn open_at_end(&self) -> impl Iterator<Item = &Interval> {
        self.intervals.iter().filter(|i| i.end_time.is_none())
    }
}

fn parse_value(raw: &str) -> Option<serde_json::Value> {
    if raw.is_empty() {
        return None;
    }
    serde_json::from_str(raw).ok()
}

/// The target a nemesis value names: `node`, `nodes`, `process`, `target`, or a bare string.
pub fn target_of(raw: &str) -> String {
    let Some(v) = parse_value(raw) else {
        return String::new();
    };
    let show = |x: &serde_json::Value| match x {
        serde_json::Value::String(s) => s.clone(),
        other => other.to_string(),
    };
    match &v {
        serde_json::Value::String(s) => s.clone(),
        serde_json::Value::Object(m) => ["node", "nodes", "target", "process"]
            .iter()
            .find_map(|k| m.get(*k).map(show))
            .unwrap_or_default(),
        serde_json::Value::Array(_) => v.to_string(),
        _ => String::new(),
    }
}

/// The `fault_id` of a nemesis value, when it has one.
fn fault_id(raw: &str) -> Option<u64> {
    match parse_value(raw)? {
        serde_json::Value::Object(m) => m.get("fault_id")?.as_u64(),
        _ => None,
    }
}

/// The value says the fault ends at once (`"instant": true`).
fn is_instant(raw: &str) -> bool {
    matches!(parse_value(raw), Some(serde_json::Value::Object(m)) if m.get("instant") == Some(&serde_json::Value::Bool(true)))
}

fn is_end_marked(raw: &str) -> bool {
    matches!(parse_value(raw), Some(serde_json::Value::Object(m)) if m.get("end") == Some(&serde_json::Value::Bool(true)))
}

fn names_client_only(raw: &str) -> bool {
    matches!(parse_value(raw), Some(serde_json::Value::Object(m)) if m.contains_key("process") && !m.contains_key("node") && !m.contains_key("nodes"))
}

fn partition_like(f: &str) -> bool {
    [
        "partition",
        "cut",
        "drop",
        "delay",
        "slow",
        "isolate",
        "netem",
        // The network faults of the harness's proxy (gauntlet-nemesis `LinkFault`).
        "ack-loss",
        "blackhole",
        "latency",
        "jitter",
        "loss",
        "bandwidth",
    ]
    .iter()
    .any(|w| f.contains(w))
}

/// Pairs fault starts with their ends (see the module docs for the rule).
pub fn faults(events: &[NemesisEvent]) -> Faults {
    let mut out = Faults::default();
    // Indices into out.intervals of the faults still open.
    let mut open: Vec<usize> = Vec::new();
    // The fault id of each interval, and the ids whose fault has ended.
    let mut ids: Vec<Option<u64>> = Vec::new();
    let mut ended_ids = std::collections::BTreeSet::new();
    // The position in out.instants of each instant fault with an id.
    let mut instant_of = std::collections::BTreeMap::<u64, usize>::new();
    // The event that started each interval.
    let mut started_by: Vec<usize> = Vec::new();
    let mut last: Option<(OpType, String, String, usize)> = None;
    for (i, e) in events.iter().enumerate() {
        let f = e.f.as_str();
        let target = target_of(&e.value);
        let id = fault_id(&e.value);
        if let Some(id) = id {
            if ended_ids.contains(&id) {
                // The info after an instant's invoke says what it did (which
                // process it killed): the mark is that event.
                if let Some(&k) = instant_of.get(&id) {
                    let first = &events[out.instants[k]];
                    if first.kind == OpType::Invoke && e.kind != OpType::Invoke && first.f == e.f {
                        out.instants[k] = i;
                    }
                }
                continue;
            }
            if is_instant(&e.value) && !open.iter().any(|&o| ids[o] == Some(id)) {
                // An instant fault: a mark; the rest of its id is part of it.
                instant_of.insert(id, out.instants.len());
                out.instants.push(i);
                ended_ids.insert(id);
                last = None;
                continue;
            }
            if let Some(k) = open.iter().position(|&o| ids[o] == Some(id)) {
                let iv = &mut out.intervals[open[k]];
                if iv.f != f || is_end_marked(&e.value) {
                    iv.end_time = Some(e.time);
                    iv.end_index = Some(e.index);
                    iv.end_f = Some(e.f.clone());
                    open.remove(k);
                    ended_ids.insert(id);
                }
                last = None;
                continue;
            }
        }
        // invoke then info of the same fault: one event.
        if let Some((OpType::Invoke, lf, lt, li)) = &last {
            if e.kind != OpType::Invoke && lf == f && *lt == target {
                let _ = li;
                last = None;
                continue;
            }
        }
        last = Some((e.kind, f.to_string(), target.clone(), i));
        if is_instant(&e.value) {
            out.instants.push(i);
            continue;
        }
        let mut close = |pred: &dyn Fn(&Interval) -> bool, all: bool| -> bool {
            let mut closed = false;
            let mut k = open.len();
            while k > 0 {
                k -= 1;
                let iv = &mut out.intervals[open[k]];
                if pred(iv) {
                    iv.end_time = Some(e.time);
                    iv.end_index = Some(e.index);
                    iv.end_f = Some(e.f.clone());
                    open.remove(k);
                    closed = true;
                    if !all {
                        break;
                    }
                }
            }
            closed
        };
        let same_target =
            |iv: &Interval| target.is_empty() || iv.target.is_empty() || iv.target == target;
        let ended = if is_end_marked(&e.value) {
            Some(close(&|iv| same_target(iv), false))
        } else if f == "resume" {
            Some(close(&|iv| iv.f == "pause" && same_target(iv), false))
        } else if matches!(f, "heal" | "heal-all" | "healed" | "repair") {
            Some(close(&|iv| partition_like(&iv.f), true))
        } else if f == "restart" {
            // Ends a kill or stop; else it is a fault of its own, until `restarted`.
            close(
                &|iv| matches!(iv.f.as_str(), "kill" | "stop") && same_target(iv),
                false,
            )
            .then_some(true)
        } else if f == "restarted" {
            Some(close(
                &|iv| matches!(iv.f.as_str(), "restart" | "kill" | "stop") && same_target(iv),
                false,
            ))
        } else if let Some(rest) = f.strip_prefix("restart-") {
            let want = format!("kill-{rest}");
            Some(close(&|iv| iv.f == want && same_target(iv), false))
        } else if f == "start" {
            Some(close(
                &|iv| matches!(iv.f.as_str(), "kill" | "stop") && same_target(iv),
                false,
            ))
        } else if matches!(f, "clock-reset" | "reset-clock" | "clock-heal") {
            Some(close(
                &|iv| iv.f.starts_with("clock") || iv.f.contains("skew"),
                true,
            ))
        } else if let Some(rest) = f.strip_prefix("stop-") {
            let want = format!("start-{rest}");
            Some(close(&|iv| iv.f == want, false))
        } else {
            f.strip_suffix("-end")
                .or_else(|| f.strip_prefix("end-"))
                .map(|base| close(&|iv| iv.f == base && same_target(iv), false))
        };
        match ended {
            Some(true) => {}
            Some(false) => out.instants.push(i),
            None => {
                if f == "kill" && names_client_only(&e.value) {
                    out.instants.push(i);
                    continue;
                }
                open.push(out.intervals.len());
                ids.push(id);
                started_by.push(i);
                out.intervals.push(Interval {
                    f: e.f.clone(),
                    target,
                    start_time: e.time,
                    start_index: e.index,
                    end_time: None,
                    end_index: None,
                    end_f: None,
                });
            }
        }
    }
    // A consumer kill nothing ended was an instant: the consumer came back at once.
    let mut k = 0;
    while k < out.intervals.len() {
        let iv = &out.intervals[k];
        if iv.end_time.is_none() && iv.f == "kill-consumer" {
            out.intervals.remove(k);
            out.instants.push(started_by.remove(k));
        } else {
            k += 1;
        }
    }
    out.instants.sort_unstable();
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ev(index: u64, kind: OpType, f: &str, value: &str) -> NemesisEvent {
        NemesisEvent {
            index,
            time: index * 10,
            kind,
            f: f.into(),
            value: value.into(),
        }
    }

    #[test]
    fn pairs_starts_and_ends() {
        let events = vec![
            ev(1, OpType::Invoke, "kill", r#"{"node":"n1"}"#),
            ev(2, OpType::Info, "kill", r#"{"node":"n1"}"#),
            ev(3, OpType::Info, "partition", r#"{"nodes":["n1","n2"]}"#),
            ev(4, OpType::Info, "pause", r#"{"node":"n3"}"#),
            ev(5, OpType::Info, "start", r#"{"node":"n1"}"#),
            ev(6, OpType::Info, "heal", ""),
            ev(7, OpType::Info, "kill", r#"{"process":10,"signal":"KILL"}"#),
            ev(8, OpType::Info, "start-clock-skew", ""),
            ev(85, OpType::Info, "start", r#"{"node":"n9"}"#),
            ev(9, OpType::Info, "stop-clock-skew", ""),
            ev(10, OpType::Info, "heal", ""),
            ev(11, OpType::Info, "flaky", r#"{"end":false}"#),
            ev(12, OpType::Info, "flaky", r#"{"end":true}"#),
            ev(13, OpType::Info, "kill-consumer", r#"{"process":4}"#),
            ev(14, OpType::Info, "restart-consumer", r#"{"process":4}"#),
            ev(15, OpType::Info, "restart", r#"{"node":"n2"}"#),
            ev(16, OpType::Info, "restarted", r#"{"node":"n2"}"#),
        ];
        let got = faults(&events);
        let spans: Vec<(&str, u64, Option<u64>)> = got
            .intervals
            .iter()
            .map(|i| (i.f.as_str(), i.start_index, i.end_index))
            .collect();
        assert_eq!(
            spans,
            vec![
                ("kill", 1, Some(5)),
                ("partition", 3, Some(6)),
                ("pause", 4, None),
                ("start-clock-skew", 8, Some(9)),
                ("flaky", 11, Some(12)),
                ("kill-consumer", 13, Some(14)),
                ("restart", 15, Some(16)),
            ]
        );
        // The client kill and the heal with nothing open are instants.
        // A start with nothing to end is one too.
        assert_eq!(got.instants, vec![6, 8, 10]);
        assert_eq!(got.intervals[0].target, "n1");
    }

    #[test]
    fn pairs_by_fault_id_when_the_events_carry_one() {
        // A link fault the harness moved from n3 to n1: the start's invoke and
        // info name different nodes, the id says they are one fault.
        let events = vec![
            ev(
                1,
                OpType::Invoke,
                "ack-loss",
                r#"{"fault":"ack-loss","target":"n3","fault_id":0}"#,
            ),
            ev(
                2,
                OpType::Info,
                "ack-loss",
                r#"{"node":"n1","scheduled":"n3","fault_id":0}"#,
            ),
            ev(
                3,
                OpType::Invoke,
                "kill",
                r#"{"fault":"kill-broker","target":"n2","fault_id":1}"#,
            ),
            ev(4, OpType::Info, "kill", r#"{"node":"n2","fault_id":1}"#),
            ev(
                5,
                OpType::Invoke,
                "ack-loss-end",
                r#"{"target":"n1","fault_id":0}"#,
            ),
            ev(
                6,
                OpType::Info,
                "ack-loss-end",
                r#"{"node":"n1","fault_id":0}"#,
            ),
            ev(
                7,
                OpType::Invoke,
                "start",
                r#"{"target":"n2","fault_id":1}"#,
            ),
            ev(8, OpType::Info, "start", r#"{"node":"n2","fault_id":1}"#),
            // A start that failed ends at once.
            ev(
                9,
                OpType::Invoke,
                "pause",
                r#"{"fault":"pause","target":"n3","fault_id":2}"#,
            ),
            ev(
                10,
                OpType::Info,
                "pause",
                r#"{"error":"no","fault_id":2,"end":true}"#,
            ),
        ];
        let got = faults(&events);
        let spans: Vec<(&str, u64, Option<u64>)> = got
            .intervals
            .iter()
            .map(|i| (i.f.as_str(), i.start_index, i.end_index))
            .collect();
        assert_eq!(
            spans,
            vec![
                ("ack-loss", 1, Some(5)),
                ("kill", 3, Some(7)),
                ("pause", 9, Some(10))
            ]
        );
        assert!(got.instants.is_empty(), "{:?}", got.instants);
    }

    #[test]
    fn pairs_the_proxy_network_faults() {
        // As run.rs records them: invoke then info for start and for end.
        let events = vec![
            ev(
                1,
                OpType::Invoke,
                "ack-loss",
                r#"{"fault":"ack-loss","target":"n1"}"#,
            ),
            ev(
                2,
                OpType::Info,
                "ack-loss",
                r#"{"node":"n1","fault":"ack-loss"}"#,
            ),
            ev(3, OpType::Invoke, "ack-loss-end", r#"{"target":"n1"}"#),
            ev(
                4,
                OpType::Info,
                "ack-loss-end",
                r#"{"node":"n1","healed":{}}"#,
            ),
            ev(
                5,
                OpType::Invoke,
                "latency",
                r#"{"fault":"latency:200","target":"n2"}"#,
            ),
            ev(6, OpType::Info, "latency", r#"{"node":"n2"}"#),
            ev(7, OpType::Info, "heal-all", r#"{"problems":[]}"#),
            ev(8, OpType::Info, "reset", r#"{"node":"n1"}"#),
            ev(9, OpType::Info, "reset-end", r#"{"node":"n1"}"#),
        ];
        let got = faults(&events);
        let spans: Vec<(&str, u64, Option<u64>)> = got
            .intervals
            .iter()
            .map(|i| (i.f.as_str(), i.start_index, i.end_index))
            .collect();
        assert_eq!(
            spans,
            vec![
                ("ack-loss", 1, Some(3)),
                ("latency", 5, Some(7)),
                ("reset", 8, Some(9)),
            ]
        );
        assert!(got.instants.is_empty(), "{:?}", got.instants);
    }
}

#[cfg(test)]
mod drawn_as_they_were {
    use super::*;

    fn ev(index: u64, kind: OpType, f: &str, value: &str) -> NemesisEvent {
        NemesisEvent {
            index,
            time: index * 10,
            kind,
            f: f.into(),
            value: value.into(),
        }
    }

    #[test]
    fn an_instant_fault_is_a_mark_a_healed_one_an_interval_an_open_one_stays_open() {
        let events = vec![
            // kill-consumer as Gauntlet's runs write it: both start events say instant.
            ev(
                1,
                OpType::Invoke,
                "kill-consumer",
                r#"{"fault":"kill-consumer","target":"","fault_id":0,"instant":true}"#,
            ),
            ev(
                2,
                OpType::Info,
                "kill-consumer",
                r#"{"process":4,"fault_id":0,"instant":true}"#,
            ),
            // A kill of a broker, healed by its start.
            ev(
                3,
                OpType::Invoke,
                "kill",
                r#"{"fault":"kill-broker","target":"n2","fault_id":1}"#,
            ),
            ev(4, OpType::Info, "kill", r#"{"node":"n2","fault_id":1}"#),
            ev(
                5,
                OpType::Invoke,
                "start",
                r#"{"target":"n2","fault_id":1}"#,
            ),
            ev(6, OpType::Info, "start", r#"{"node":"n2","fault_id":1}"#),
            // A partition nothing healed.
            ev(
                7,
                OpType::Invoke,
                "partition",
                r#"{"fault":"partition","target":"n1","fault_id":2}"#,
            ),
            ev(
                8,
                OpType::Info,
                "partition",
                r#"{"nodes":["n1"],"fault_id":2}"#,
            ),
        ];
        let got = faults(&events);
        let spans: Vec<(&str, u64, Option<u64>)> = got
            .intervals
            .iter()
            .map(|i| (i.f.as_str(), i.start_index, i.end_index))
            .collect();
        assert_eq!(spans, vec![("kill", 3, Some(5)), ("partition", 7, None)]);
        // The mark is the info, which names the process killed.
        assert_eq!(got.instants, vec![1]);
        assert_eq!(target_of(&events[1].value), "4");
        let open: Vec<&str> = got.open_at_end().map(|i| i.f.as_str()).collect();
        assert_eq!(open, vec!["partition"]);
    }

    #[test]
    fn a_consumer_kill_nothing_ended_is_an_instant_without_the_flag_too() {
        // As Gauntlet wrote it before the runs said "instant".
        let events = vec![
            ev(
                1,
                OpType::Invoke,
                "kill-consumer",
                r#"{"fault":"kill-consumer","target":"","fault_id":0}"#,
            ),
            ev(
                2,
                OpType::Info,
                "kill-consumer",
                r#"{"process":4,"fault_id":0}"#,
            ),
            ev(3, OpType::Info, "pause", r#"{"node":"n1"}"#),
        ];
        let got = faults(&events);
        assert_eq!(got.instants, vec![0]);
        assert_eq!(got.intervals.len(), 1);
        assert_eq!(got.intervals[0].f, "pause");
        // Near miss: one that was ended stays an interval (the first test of this file).
    }

    #[test]
    fn an_instant_flag_without_an_id_is_a_mark_once() {
        let events = vec![
            ev(
                1,
                OpType::Invoke,
                "bump",
                r#"{"instant":true,"target":"n1"}"#,
            ),
            ev(2, OpType::Info, "bump", r#"{"instant":true,"target":"n1"}"#),
        ];
        let got = faults(&events);
        assert!(got.intervals.is_empty());
        assert_eq!(got.instants, vec![0]);
    }
}
