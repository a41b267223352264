//! Gauntlet's reports: one verdict, several readers. The verdict JSON of the
//! v1 contract and a terminal summary now; HTML and JUnit read the same verdict.
pub mod terminal;

use gauntlet_checkers::Verdict;

/// The verdict as the contract's JSON, pretty-printed, with a final newline.
pub fn verdict_json(v: &Verdict) -> String {
    let mut s =
        serde_json::to_string_pretty(v).unwrap_or_else(|e| format!("{{\"error\":\"{e}\"}}"));
    s.push('\n');
    s
}
