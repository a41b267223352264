//! The moments a run changed a topic's partition count (`add-partitions`, seed
//! O4), for the report: the timeline labels each one's mark, and a section
//! says when, how (in tansu's storage, or by the broker's CreatePartitions)
//! and what each topic went from and to. Nothing of this shows for a history
//! without an `add-partitions` event.
use crate::escape::html as esc;
use gauntlet_history::model::History;
use gauntlet_history::OpType;
use serde_json::Value;
use std::fmt::Write;

/// The nemesis `f` of a partition-count change.
pub const F: &str = "add-partitions";

/// The label on the timeline's mark of a change.
pub const LABEL: &str = "partitions added";

/// One change of a partition count, as the history recorded its completion.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Change {
    /// Op index of the event.
    pub index: u64,
    /// Its time, in nanoseconds.
    pub time: u64,
    /// `storage` (tansu's PostgreSQL storage) or `create-partitions`; "" when unnamed.
    pub via: String,
    /// Each topic: its name, the count before and after.
    pub topics: Vec<(String, u64, u64)>,
    /// Why it failed, when it did (no partition was added).
    pub error: Option<String>,
}

/// The history's partition-count changes: the `info` of each `add-partitions`.
pub fn changes(h: &History) -> Vec<Change> {
    h.nemesis
        .iter()
        .filter(|e| e.f == F && e.kind != OpType::Invoke)
        .map(|e| {
            let v: Value = serde_json::from_str(&e.value).unwrap_or(Value::Null);
            let topics = v
                .get("topics")
                .and_then(Value::as_array)
                .map(|ts| {
                    ts.iter()
                        .filter_map(|t| {
                            Some((
                                t.get("topic")?.as_str()?.to_string(),
                                t.get("partitions_before")?.as_u64()?,
                                t.get("partitions_after")?.as_u64()?,
                            ))
                        })
                        .collect()
                })
                .unwrap_or_default();
            Change {
                index: e.index,
                time: e.time,
                via: v
                    .get("via")
                    .and_then(Value::as_str)
                    .unwrap_or_default()
                    .to_string(),
                topics,
                error: v.get("error").and_then(Value::as_str).map(str::to_string),
            }
        })
        .collect()
}

/// One change in words; `at` formats its time.
pub fn describe(c: &Change, at: &dyn Fn(u64) -> String) -> String {
    if let Some(e) = &c.error {
        return format!(
            "at {} (op {}), adding partitions failed, so none was added: {e}",
            at(c.time),
            c.index
        );
    }
    let how = match c.via.as_str() {
        "storage" => {
            " in tansu's PostgreSQL storage (tansu 0.6.0 has no CreatePartitions; it reads \
             the count there on every Metadata request)"
        }
        "create-partitions" => " by the broker's CreatePartitions",
        _ => "",
    };
    let topics = if c.topics.is_empty() {
        String::new()
    } else {
        let each: Vec<String> = c
            .topics
            .iter()
            .map(|(t, a, b)| format!("{t} from {a} to {b}"))
            .collect();
        format!(": {}", each.join(", "))
    };
    format!(
        "at {} (op {}), partitions were added{how}{topics}",
        at(c.time),
        c.index
    )
}

/// The report's section on the changes, when the history has any.
pub fn section(out: &mut String, h: &History, at: &dyn Fn(u64) -> String) {
    let changes = changes(h);
    if changes.is_empty() {
        return;
    }
    out.push_str(
        "<section id=\"repartition\"><h2>Partitions added</h2><p class=\"note\">The timeline \
         marks each moment (a dashed line labelled <em>partitions added</em>). A key's \
         messages sent on either side of it may sit on two partitions, read by two consumers: \
         <code>repartition-key-order</code> judges their order across the group.</p><ul>",
    );
    for c in &changes {
        let _ = write!(out, "<li>{}</li>", esc(&describe(c, at)));
    }
    out.push_str("</ul></section>\n");
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_change_is_said_with_its_moment_its_way_and_its_counts() {
        let text = br#"{"index":0,"time":0,"process":0,"type":"invoke","f":"send","value":{"key":"k","value":0}}
{"index":1,"time":2000000000,"process":"nemesis","type":"invoke","f":"add-partitions","value":{"fault":"add-partitions","fault_id":0,"instant":true}}
{"index":2,"time":2500000000,"process":"nemesis","type":"info","f":"add-partitions","value":{"fault_id":0,"instant":true,"via":"storage","topics":[{"topic":"gauntlet","partitions_before":3,"partitions_after":5}]}}
{"index":3,"time":3000000000,"process":"nemesis","type":"info","f":"add-partitions","value":{"fault_id":1,"instant":true,"error":"exited 2","end":true}}
"#;
        let h = gauntlet_history::read_bytes("x.jsonl", text).expect("history");
        let cs = changes(&h);
        assert_eq!(cs.len(), 2);
        assert_eq!(cs[0].topics, vec![("gauntlet".to_string(), 3, 5)]);
        let at = |t: u64| format!("{:.1} s", t as f64 / 1e9);
        let first = describe(&cs[0], &at);
        assert_eq!(
            first,
            "at 2.5 s (op 2), partitions were added in tansu's PostgreSQL storage (tansu 0.6.0 \
             has no CreatePartitions; it reads the count there on every Metadata request): \
             gauntlet from 3 to 5"
        );
        assert!(describe(&cs[1], &at).contains("failed, so none was added: exited 2"));
        let mut out = String::new();
        section(&mut out, &h, &at);
        assert!(out.contains("<h2>Partitions added</h2>") && out.contains("gauntlet from 3 to 5"));
        // No change, no section.
        let plain = gauntlet_history::read_bytes(
            "y.jsonl",
            &text[..text.iter().position(|&b| b == b'\n').unwrap_or(0) + 1],
        )
        .expect("history");
        let mut none = String::new();
        section(&mut none, &plain, &at);
        assert!(none.is_empty());
    }
}
