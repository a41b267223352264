//! The run id, and the labels every container and network Gauntlet creates
//! carries (the crate root re-exports them: `crate::RunId`).
//!
//! May import: nothing of the crate.
use std::fmt;
use std::sync::atomic::{AtomicU32, Ordering};
use std::time::{SystemTime, UNIX_EPOCH};

/// Label on every container and network Gauntlet creates; its value is the run id.
pub const LABEL_RUN: &str = "gauntlet.run";
/// Label naming the node (n1..nN) of a container.
pub const LABEL_NODE: &str = "gauntlet.node";
/// Label naming the broker of a container.
pub const LABEL_BROKER: &str = "gauntlet.broker";

/// Identifies one run; every object the run creates carries it as `gauntlet.run`.
#[derive(Debug, Clone, PartialEq, Eq, Hash, serde::Serialize)]
pub struct RunId(String);

impl RunId {
    /// A fresh id: `<unix seconds>-<pid>-<counter>`, unique on this machine.
    pub fn generate() -> Self {
        static COUNTER: AtomicU32 = AtomicU32::new(0);
        let secs = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map(|d| d.as_secs())
            .unwrap_or(0);
        let n = COUNTER.fetch_add(1, Ordering::Relaxed);
        RunId(format!("{secs}-{}-{n}", std::process::id()))
    }

    /// An id chosen by the caller (e.g. the results folder's name). Characters Docker
    /// does not accept in names are replaced by `-`.
    pub fn from_name(name: &str) -> Self {
        let clean: String = name
            .chars()
            .map(|c| {
                if c.is_ascii_alphanumeric() || c == '-' || c == '_' || c == '.' {
                    c
                } else {
                    '-'
                }
            })
            .collect();
        RunId(clean)
    }

    /// The id as text, as the labels and names carry it.
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl fmt::Display for RunId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}
