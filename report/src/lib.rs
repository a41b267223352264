//! Gauntlet's reports: one verdict, several readers.
//!
//! * [`verdict_json`]: the verdict JSON of the v1.1 contract (its schema is
//!   `docs/verdict.schema.json`).
//! * [`terminal::summary`]: the summary `gauntlet check` prints.
//! * [`html::render`]: one self-contained HTML page (inline CSS and SVG, no
//!   script, no network), bounded in size whatever the history's size.
//! * [`junit::junit_xml`]: JUnit XML for CI, a test case per guarantee and per
//!   anomaly type.
//! * [`index`] and [`serve`]: the index of a results folder and a small HTTP
//!   server for it on 127.0.0.1.
//!
//! [`write_run_reports`] writes `report.html` and `junit.xml` into a run folder;
//! [`rerender_run`] rebuilds them from the folder's history and verdict.
//! [`folder`] names a run folder's files and holds the one judge function.
//! [`nemesis`] pairs fault starts and ends for the timeline; [`scenario`] reads
//! what the report shows of a run's `scenario.toml`.
//!
//! Of Gauntlet's crates it depends on `gauntlet-history` and `gauntlet-checkers`
//! only. It never talks to a broker or Docker: everything it shows comes from a
//! history, a verdict and the files of a run folder.
#![warn(missing_docs)]
pub mod disk;
pub mod escape;
pub mod folder;
pub mod html;
pub mod index;
pub mod junit;
pub mod nemesis;
pub mod repartition;
pub mod scenario;
pub mod sentence;
pub mod serve;
pub mod terminal;

use gauntlet_checkers::{CheckOptions, Guarantee, Verdict};
use gauntlet_history::{History, HistoryError};
use std::path::{Path, PathBuf};

/// The verdict as the contract's JSON, pretty-printed, with a final newline.
pub fn verdict_json(v: &Verdict) -> String {
    let mut s =
        serde_json::to_string_pretty(v).unwrap_or_else(|e| format!("{{\"error\":\"{e}\"}}"));
    s.push('\n');
    s
}

/// Why a report could not be written.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ReportError {
    /// A file could not be written, or read.
    #[error("{path}: {source}")]
    Io {
        /// The file.
        path: PathBuf,
        /// The I/O error.
        #[source]
        source: std::io::Error,
    },
    /// The run folder's history could not be read.
    #[error(transparent)]
    History(#[from] HistoryError),
    /// The run folder's `verdict.json` is not a verdict of the contract.
    #[error("{path}: not a verdict of the v1.1 contract: {source}")]
    Verdict {
        /// The file.
        path: PathBuf,
        /// What the JSON parser said.
        #[source]
        source: serde_json::Error,
    },
    /// The run folder has no `history.jsonl`.
    #[error("{0}: no history.jsonl in this run folder")]
    NoHistory(PathBuf),
}

fn write_file(path: &Path, text: &str) -> Result<(), ReportError> {
    std::fs::write(path, text).map_err(|source| ReportError::Io {
        path: path.to_path_buf(),
        source,
    })
}

/// "scenario / timestamp" of a run folder (`results/<scenario>/<timestamp>`),
/// symlinks such as `latest` resolved.
pub fn run_title(run_dir: &Path) -> String {
    let real = run_dir
        .canonicalize()
        .unwrap_or_else(|_| run_dir.to_path_buf());
    let name = |p: Option<&Path>| {
        p.and_then(|p| p.file_name())
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default()
    };
    let ts = name(Some(&real));
    let scenario = name(real.parent());
    if scenario.is_empty() {
        ts
    } else {
        format!("{scenario} / {ts}")
    }
}

/// Writes `report.html` and `junit.xml` into a run folder (`gauntlet run` calls
/// this after writing `history.jsonl` and `verdict.json`). `scenario` is what
/// the typed scenario says; without it the page reads `scenario_toml` leniently.
pub fn write_run_reports(
    run_dir: &Path,
    history: &History,
    verdict: &Verdict,
    scenario_toml: Option<&str>,
    scenario: Option<&scenario::ScenarioInfo>,
) -> Result<(), ReportError> {
    let title = run_title(run_dir);
    let page = html::render(
        history,
        verdict,
        &html::HtmlOptions {
            title: &title,
            scenario_toml,
            scenario,
        },
    );
    write_file(&run_dir.join(folder::REPORT), &page)?;
    write_file(
        &run_dir.join(folder::JUNIT),
        &junit::junit_xml(verdict, &title),
    )
}

/// What [`rerender_run`] did.
#[derive(Debug, Clone)]
pub struct Rerendered {
    /// The verdict the reports show: the stored one, or the one computed again.
    pub verdict: Verdict,
    /// The verdict was computed again (no verdict.json, or asked to), and verdict.json written.
    pub rechecked: bool,
}

/// Re-renders a run folder's reports from its `history.jsonl` and `verdict.json`.
///
/// Without a verdict.json, or with `recheck`, the history is checked again
/// against `expect` (else the verdict's `expected`, else at-least-once) and
/// verdict.json is written.
///
/// `scenario` is what the folder's `scenario.toml` says when the caller could
/// read it as a typed scenario; else the page reads the file leniently (a
/// folder from an older Gauntlet, or written by hand).
pub fn rerender_run(
    run_dir: &Path,
    recheck: bool,
    expect: Option<Vec<Guarantee>>,
    scenario: Option<&scenario::ScenarioInfo>,
) -> Result<Rerendered, ReportError> {
    let hist_path = run_dir.join(folder::HISTORY);
    if !hist_path.is_file() {
        return Err(ReportError::NoHistory(run_dir.to_path_buf()));
    }
    let history = gauntlet_history::read_path(&hist_path)?;
    let verdict_path = run_dir.join(folder::VERDICT);
    let stored: Option<Verdict> = match std::fs::read(&verdict_path) {
        Ok(bytes) => {
            Some(
                serde_json::from_slice(&bytes).map_err(|source| ReportError::Verdict {
                    path: verdict_path.clone(),
                    source,
                })?,
            )
        }
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => None,
        Err(source) => {
            return Err(ReportError::Io {
                path: verdict_path,
                source,
            })
        }
    };
    let scenario_toml = std::fs::read_to_string(run_dir.join(folder::SCENARIO)).ok();
    let (verdict, rechecked) = match stored {
        Some(v) if !recheck && expect.is_none() => (v, false),
        stored => {
            let expect = expect
                .or_else(|| stored.map(|v| v.expected).filter(|e| !e.is_empty()))
                .unwrap_or_else(|| vec![Guarantee::AtLeastOnce]);
            let opts = CheckOptions {
                expect,
                ..CheckOptions::default()
            };
            let v = folder::judge(&history, &opts, None);
            write_file(&verdict_path, &verdict_json(&v))?;
            (v, true)
        }
    };
    write_run_reports(
        run_dir,
        &history,
        &verdict,
        scenario_toml.as_deref(),
        scenario,
    )?;
    Ok(Rerendered { verdict, rechecked })
}
