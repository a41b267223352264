//! What each disk fault did, node by node, from the nemesis events of a
//! history: the report of Gauntlet's filesystem that a disk fault's `info`
//! carries under `disk` (docs/history-format.md, "Disk faults"; for several
//! nodes, under `each[].disk`). A power loss says how many bytes of unsynced
//! writes it dropped and kept, in how many files; a corruption, which file,
//! which offsets, how many bytes; a wipe, what it removed.
use gauntlet_history::model::NemesisEvent;
use gauntlet_history::OpType;
use serde_json::Value;

/// One disk fault on one node, in words.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DiskEffect {
    /// Time of the event, in nanoseconds.
    pub time: u64,
    /// Its op index.
    pub index: u64,
    /// The fault (`power-loss:torn`, `corrupt:bitflip`).
    pub fault: String,
    /// The node.
    pub node: String,
    /// What it dropped or changed.
    pub words: String,
}

/// Bytes in words: `512 B`, `12.3 KiB`, `4.0 MiB`.
pub fn bytes(n: u64) -> String {
    match n {
        n if n < 1024 => format!("{n} B"),
        n if n < 1024 * 1024 => format!("{:.1} KiB", n as f64 / 1024.0),
        n => format!("{:.1} MiB", n as f64 / (1024.0 * 1024.0)),
    }
}

fn num(v: &Value, k: &str) -> u64 {
    v.get(k).and_then(Value::as_u64).unwrap_or(0)
}

fn plural(n: u64, one: &str, many: &str) -> String {
    format!("{n} {}", if n == 1 { one } else { many })
}

/// What the filesystem's report `r` says it did.
pub fn words(r: &Value) -> String {
    let fault = r.get("fault").and_then(Value::as_str).unwrap_or("");
    if r.get("mounted") == Some(&Value::Bool(false)) {
        return r
            .get("note")
            .and_then(Value::as_str)
            .unwrap_or("the node keeps no data on its own disk")
            .to_string();
    }
    let changes = r.get("changes").and_then(Value::as_array);
    let change_list = |f: &dyn Fn(&Value) -> String| -> String {
        let all: Vec<String> = changes.into_iter().flatten().take(5).map(f).collect();
        let more = changes.map_or(0, |c| c.len().saturating_sub(5));
        if more > 0 {
            format!("{} and {more} more", all.join("; "))
        } else {
            all.join("; ")
        }
    };
    let path = |c: &Value| {
        c.get("path")
            .and_then(Value::as_str)
            .unwrap_or("?")
            .to_string()
    };
    match fault {
        f if f.starts_with("power-loss") => {
            let (dropped, kept) = (num(r, "dropped_bytes"), num(r, "kept_bytes"));
            let files = num(r, "pending_files");
            if dropped == 0 && kept == 0 {
                "nothing was waiting for an fsync: nothing dropped".into()
            } else if kept == 0 {
                format!(
                    "dropped {} of unsynced writes in {}",
                    bytes(dropped),
                    plural(files, "file", "files")
                )
            } else {
                format!(
                    "dropped {} and kept {} (a torn prefix) of unsynced writes in {}",
                    bytes(dropped),
                    bytes(kept),
                    plural(files, "file", "files")
                )
            }
        }
        "corrupt:bitflip" if changes.is_none_or(Vec::is_empty) => {
            "no data file to corrupt: nothing changed".into()
        }
        "corrupt:bitflip" => format!(
            "flipped {}: {}",
            plural(changes.map_or(0, |c| c.len() as u64), "bit", "bits"),
            change_list(&|c| format!(
                "bit {} of byte {} of {}",
                num(c, "bit"),
                num(c, "offset"),
                path(c)
            ))
        ),
        "corrupt:truncate" if changes.is_none_or(Vec::is_empty) => {
            "no data file to cut: nothing changed".into()
        }
        "corrupt:truncate" => format!(
            "cut {}",
            change_list(&|c| {
                let (from, to) = (num(c, "from_size"), num(c, "to_size"));
                format!(
                    "{} from {from} to {to} bytes ({} gone)",
                    path(c),
                    bytes(from.saturating_sub(to))
                )
            })
        ),
        "wipe" => {
            let n = changes.map_or(0, |c| c.len() as u64);
            let total: u64 = changes
                .into_iter()
                .flatten()
                .map(|c| num(c, "removed_bytes"))
                .sum();
            format!(
                "removed {} ({}): the node came back on an empty data directory",
                plural(n, "file", "files"),
                bytes(total)
            )
        }
        other => format!("{other}: {r}"),
    }
}

/// Every disk fault's effect, node by node, in history order.
pub fn effects(events: &[NemesisEvent]) -> Vec<DiskEffect> {
    let mut out = Vec::new();
    for e in events.iter().filter(|e| e.kind == OpType::Info) {
        let Ok(v) = serde_json::from_str::<Value>(&e.value) else {
            continue;
        };
        let mut push = |one: &Value| {
            if let Some(r) = one.get("disk") {
                out.push(DiskEffect {
                    time: e.time,
                    index: e.index,
                    fault: r
                        .get("fault")
                        .and_then(Value::as_str)
                        .unwrap_or(&e.f)
                        .to_string(),
                    node: one
                        .get("node")
                        .and_then(Value::as_str)
                        .unwrap_or("")
                        .to_string(),
                    words: words(r),
                });
            }
        };
        push(&v);
        for one in v
            .get("each")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
        {
            push(one);
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ev(index: u64, value: &str) -> NemesisEvent {
        NemesisEvent {
            index,
            time: index * 1_000_000_000,
            kind: OpType::Info,
            f: "power-loss".into(),
            value: value.into(),
        }
    }

    #[test]
    fn each_disk_fault_says_what_it_dropped_or_changed_per_node() {
        let events = [
            ev(
                1,
                r#"{"node":"n1","disk":{"fault":"power-loss","pending_files":2,"pending_bytes":5000,"dropped_bytes":5000,"kept_bytes":0}}"#,
            ),
            ev(
                2,
                r#"{"nodes":["n2","n3"],"each":[
                {"node":"n2","disk":{"fault":"power-loss:torn","pending_files":1,"dropped_bytes":2048,"kept_bytes":100}},
                {"node":"n3","disk":{"fault":"power-loss","pending_files":0,"dropped_bytes":0,"kept_bytes":0}}]}"#,
            ),
            ev(
                3,
                r#"{"node":"n1","disk":{"fault":"corrupt:bitflip","changes":[{"path":"a/1.blk","offset":40,"bit":3}]}}"#,
            ),
            ev(
                4,
                r#"{"node":"n1","disk":{"fault":"corrupt:truncate","changes":[{"path":"a/2.blk","from_size":4096,"to_size":1000}]}}"#,
            ),
            ev(
                5,
                r#"{"node":"n2","disk":{"fault":"wipe","changes":[{"path":"x","removed_bytes":10},{"path":"y","removed_bytes":20}]}}"#,
            ),
            ev(6, r#"{"node":"n1"}"#),
        ];
        let got: Vec<(String, String)> = effects(&events)
            .into_iter()
            .map(|d| (d.node, d.words))
            .collect();
        assert_eq!(
            got,
            [
                ("n1", "dropped 4.9 KiB of unsynced writes in 2 files"),
                (
                    "n2",
                    "dropped 2.0 KiB and kept 100 B (a torn prefix) of unsynced writes in 1 file"
                ),
                ("n3", "nothing was waiting for an fsync: nothing dropped"),
                ("n1", "flipped 1 bit: bit 3 of byte 40 of a/1.blk"),
                ("n1", "cut a/2.blk from 4096 to 1000 bytes (3.0 KiB gone)"),
                (
                    "n2",
                    "removed 2 files (30 B): the node came back on an empty data directory"
                ),
            ]
            .map(|(a, b)| (a.to_string(), b.to_string()))
        );
    }
}
