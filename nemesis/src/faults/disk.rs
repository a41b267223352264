//! Faults on a node's disk: `power-loss[:torn]`, `corrupt:bitflip`,
//! `corrupt:truncate` and `wipe`. Gauntlet's filesystem in the node does them
//! (docs/nemesis.md, "Disk faults"); each kills the node's processes and leaves
//! it down, and the fault's heal starts it again on what is left.
use super::{failed, FaultKind};
use crate::control::DiskFault;
use crate::{Cluster, NemesisError};
use serde_json::{json, Value};

/// What `corrupt` does to a node's data files.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Corruption {
    /// A few single bits flipped at random offsets of its data files.
    Bitflip,
    /// The tail of its newest data file cut.
    Truncate,
}

impl Corruption {
    /// The argument after `corrupt:`.
    pub fn name(self) -> &'static str {
        match self {
            Corruption::Bitflip => "bitflip",
            Corruption::Truncate => "truncate",
        }
    }
}

impl FaultKind {
    /// The disk fault this is, if it is one.
    pub fn disk(self) -> Option<DiskFault> {
        match self {
            FaultKind::PowerLoss { torn } => Some(DiskFault::PowerLoss { torn }),
            FaultKind::Corrupt(Corruption::Bitflip) => Some(DiskFault::Bitflip),
            FaultKind::Corrupt(Corruption::Truncate) => Some(DiskFault::Truncate),
            FaultKind::Wipe => Some(DiskFault::Wipe),
            _ => None,
        }
    }
}

/// Does `fault` on `target` through its node control; the history's value
/// carries the filesystem's report under `disk`.
pub(super) async fn strike(
    cluster: &Cluster<'_>,
    kind: FaultKind,
    fault: DiskFault,
    target: &str,
    pick: u64,
) -> Result<Value, NemesisError> {
    if target.is_empty() {
        return Err(failed(kind, "-", "a disk fault needs a node"));
    }
    let report = cluster.disk_fault(target, fault, pick).await?;
    Ok(json!({"node": target, "disk": report}))
}
