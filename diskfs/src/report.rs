//! The JSON the daemon and its clients (the CLI, the harness) exchange.

use serde::{Deserialize, Serialize};

/// What a fault did: printed by `gauntlet-diskfs crash|power-loss|corrupt|wipe`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Report {
    /// `power-loss`, `power-loss:torn`, `crash`, `corrupt:bitflip`, `corrupt:truncate` or `wipe`.
    pub fault: String,
    /// The pids SIGKILLed.
    pub killed: Vec<i32>,
    /// Files that had pending writes.
    pub pending_files: u64,
    /// Bytes of pending writes (over all files).
    pub pending_bytes: u64,
    /// Of the pending bytes, those dropped.
    pub dropped_bytes: u64,
    /// Of the pending bytes, those written to the backing files.
    pub kept_bytes: u64,
    /// One per file that had pending writes, by path.
    pub files: Vec<FileReport>,
    /// What was changed in the backing files after the write-through.
    pub changes: Vec<Change>,
    /// The seed of the random choices, if the fault makes any.
    pub seed: Option<u64>,
}

impl Report {
    /// The report of `fault` before anything is counted: the pids it killed
    /// and its seed, every figure 0.
    pub fn new(fault: &str, killed: Vec<i32>, seed: Option<u64>) -> Self {
        Report {
            fault: fault.into(),
            killed,
            pending_files: 0,
            pending_bytes: 0,
            dropped_bytes: 0,
            kept_bytes: 0,
            files: Vec::new(),
            changes: Vec::new(),
            seed,
        }
    }
}

/// One file's pending writes at a fault.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct FileReport {
    /// Relative to the backing root.
    pub path: String,
    pub pending_bytes: u64,
    pub kept_bytes: u64,
    pub dropped_bytes: u64,
    /// Pending writes (after merging writes that continue one another).
    pub writes: u64,
    /// Writes kept whole or in part.
    pub writes_kept: u64,
}

/// One change a corruption or wipe made to a backing file.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(untagged)]
pub enum Change {
    /// A bit flipped.
    Bitflip { path: String, offset: u64, bit: u8 },
    /// A file cut short.
    Truncate {
        path: String,
        from_size: u64,
        to_size: u64,
    },
    /// A file removed by a wipe.
    Removed { path: String, removed_bytes: u64 },
}

/// What `gauntlet-diskfs status` prints.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Status {
    pub mounted: bool,
    pub mount: String,
    pub backing: String,
    pub pending_files: u64,
    pub pending_bytes: u64,
    pub child_pid: i32,
}

/// One request line on the control socket.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "op", rename_all = "kebab-case")]
pub enum Request {
    Status,
    Crash,
    PowerLoss {
        torn: bool,
        seed: Option<u64>,
    },
    CorruptBitflip {
        bits: u64,
        files: Vec<String>,
        seed: Option<u64>,
    },
    CorruptTruncate {
        files: Vec<String>,
        seed: Option<u64>,
    },
    Wipe,
}

/// One reply line on the control socket.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Reply {
    Status(Status),
    Report(Report),
    Error(String),
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn change_shapes_are_the_documented_ones() {
        let c = Change::Bitflip {
            path: "a".into(),
            offset: 3,
            bit: 7,
        };
        assert_eq!(
            serde_json::to_string(&c).unwrap_or_default(),
            r#"{"path":"a","offset":3,"bit":7}"#
        );
        let t: Change =
            serde_json::from_str(r#"{"path":"a","from_size":9,"to_size":2}"#).unwrap_or(c.clone());
        assert_eq!(
            t,
            Change::Truncate {
                path: "a".into(),
                from_size: 9,
                to_size: 2
            }
        );
        let w: Change = serde_json::from_str(r#"{"path":"a","removed_bytes":5}"#).unwrap_or(c);
        assert_eq!(
            w,
            Change::Removed {
                path: "a".into(),
                removed_bytes: 5
            }
        );
    }

    #[test]
    fn request_round_trips() {
        let r = Request::PowerLoss {
            torn: true,
            seed: Some(4),
        };
        let s = serde_json::to_string(&r).unwrap_or_default();
        assert_eq!(s, r#"{"op":"power-loss","torn":true,"seed":4}"#);
        let back: Request = serde_json::from_str(&s).unwrap_or(Request::Wipe);
        assert_eq!(back, r);
    }
}
