//! A run folder (`results/<scenario>/<timestamp>/`): the one place that names
//! its files, and the one function that judges a history ([`judge`]) for
//! `gauntlet run`, `gauntlet check` and `gauntlet report`.
use crate::ReportError;
use gauntlet_checkers::{CheckOptions, Incomplete, Verdict};
use gauntlet_history::History;
use std::path::Path;

/// The history the run recorded (JSON Lines, contract v1.1).
pub const HISTORY: &str = "history.jsonl";
/// The verdict of the history (JSON, contract v1.1).
pub const VERDICT: &str = "verdict.json";
/// The effective scenario of the run (TOML).
pub const SCENARIO: &str = "scenario.toml";
/// The fault schedule the run played (TOML; `gauntlet run --replay` reads it).
pub const SCHEDULE: &str = "schedule.toml";
/// The self-contained HTML report.
pub const REPORT: &str = "report.html";
/// The JUnit XML of the verdict.
pub const JUNIT: &str = "junit.xml";
/// The folder of the nodes' logs.
pub const NODES: &str = "nodes";

/// Judges a history: the checkers against `opts`, and the verdict marked
/// `incomplete` when the run did not finish as planned. Every command that
/// judges a history goes through here.
pub fn judge(history: &History, opts: &CheckOptions, incomplete: Option<Incomplete>) -> Verdict {
    let mut verdict = gauntlet_checkers::check(history, opts);
    if let Some(i) = incomplete {
        verdict.mark_incomplete(i);
    }
    verdict
}

/// Writes a verdict into a run folder: [`VERDICT`], then the reports
/// ([`crate::write_run_reports`]).
pub fn write_verdict(
    dir: &Path,
    history: &History,
    verdict: &Verdict,
    scenario_toml: Option<&str>,
    scenario: Option<&crate::scenario::ScenarioInfo>,
) -> Result<(), ReportError> {
    let path = dir.join(VERDICT);
    std::fs::write(&path, crate::verdict_json(verdict))
        .map_err(|source| ReportError::Io { path, source })?;
    crate::write_run_reports(dir, history, verdict, scenario_toml, scenario)
}
