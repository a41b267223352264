//! The evidence of the processing anomalies (`duplicate-processing`,
//! `lost-processing`, `parked`: seed D7, `docs/checkers.md`, "Processing").
use serde::{Deserialize, Serialize};

/// One message of a group and what its idempotent consumers did with it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Processed {
    /// The message's value.
    pub value: i64,
    /// The consumer group ("" is the default group).
    pub group: String,
    /// Op indices of the `ok` completions of its effects (two or more: applied twice).
    pub effects: Vec<u64>,
    /// Op indices of the completions of the polls that delivered it to the group.
    pub delivered_by: Vec<u64>,
    /// The store's answers to the calls that decided whether to apply it, in
    /// order, each `"<step> <answer> (op N)"`, e.g. `"claim unavailable (op 41)"`.
    pub answers: Vec<String>,
}
