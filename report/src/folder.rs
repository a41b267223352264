//! A run folder (`results/<scenario>/<timestamp>/`): the one place that names
//! its files, and the one function that judges a history ([`judge`]) for
//! `gauntlet run`, `gauntlet check` and `gauntlet report`.
use crate::ReportError;
use gauntlet_checkers::{CheckOptions, Incomplete, Verdict};
use gauntlet_history::History;
use std::path::{Path, PathBuf};

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

/// The paths of a run folder's files.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RunFolder(PathBuf);

impl RunFolder {
    /// The run folder at `dir`.
    pub fn new(dir: impl Into<PathBuf>) -> RunFolder {
        RunFolder(dir.into())
    }
    /// The folder itself.
    pub fn dir(&self) -> &Path {
        &self.0
    }
    /// Its [`HISTORY`].
    pub fn history(&self) -> PathBuf {
        self.0.join(HISTORY)
    }
    /// Its [`VERDICT`].
    pub fn verdict(&self) -> PathBuf {
        self.0.join(VERDICT)
    }
    /// Its [`SCENARIO`].
    pub fn scenario(&self) -> PathBuf {
        self.0.join(SCENARIO)
    }
    /// Its [`SCHEDULE`].
    pub fn schedule(&self) -> PathBuf {
        self.0.join(SCHEDULE)
    }
    /// Its [`REPORT`].
    pub fn report(&self) -> PathBuf {
        self.0.join(REPORT)
    }
    /// Its [`JUNIT`].
    pub fn junit(&self) -> PathBuf {
        self.0.join(JUNIT)
    }
    /// Its [`NODES`] folder.
    pub fn nodes(&self) -> PathBuf {
        self.0.join(NODES)
    }
}

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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_run_folder_names_its_files() {
        let f = RunFolder::new("r/s/20261206T010203");
        assert_eq!(f.history(), Path::new("r/s/20261206T010203/history.jsonl"));
        assert_eq!(f.verdict(), Path::new("r/s/20261206T010203/verdict.json"));
        assert_eq!(f.scenario(), Path::new("r/s/20261206T010203/scenario.toml"));
        assert_eq!(f.schedule(), Path::new("r/s/20261206T010203/schedule.toml"));
        assert_eq!(f.report(), Path::new("r/s/20261206T010203/report.html"));
        assert_eq!(f.junit(), Path::new("r/s/20261206T010203/junit.xml"));
        assert_eq!(f.nodes(), Path::new("r/s/20261206T010203/nodes"));
    }
}
