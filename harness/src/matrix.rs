//! A matrix of scenarios, each with what its run must show: "safe config stays
//! safe" (the verdict is valid) or a negative control ("unsafe config gets
//! caught": the verdict is invalid and names the anomaly the unsafe setting
//! allows). A negative control that finds nothing fails too: the harness would
//! have lost its teeth.
//!
//! ```toml
//! [profiles.smoke]          # overrides for every scenario the profile runs
//! time = "10s"
//!
//! [[scenario]]
//! file = "scenarios/rabbitmq-auto-ack.toml"   # a `gauntlet run` scenario, relative to this file
//! profiles = ["smoke", "full"]
//! outcome = "violated"                        # or "valid" (the default)
//! must-find = ["lost"]                        # a negative control must find one of these
//! ```
//!
//! Judging a finished run against its declaration ([`judge`]) is pure; running the
//! matrix ([`run_matrix`]) deploys each scenario in turn with [`crate::run::run`].
use crate::error::HarnessError;
use crate::run::{self, EventSink, RunEvent, Scenario};
use gauntlet_checkers::{AnomalyKind, Validity, Verdict};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Instant;

/// What a scenario's run must show.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Expected {
    /// Every declared guarantee holds and nothing breaks integrity.
    #[default]
    Valid,
    /// A negative control: the verdict is invalid, with one of `must-find`.
    Violated,
}

/// One entry of the matrix.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case", deny_unknown_fields)]
pub struct Entry {
    /// The scenario file, relative to the matrix file.
    pub file: PathBuf,
    /// Profiles that run it; every profile when empty.
    #[serde(default)]
    pub profiles: Vec<String>,
    /// What its run must show; `valid` by default.
    #[serde(default)]
    pub outcome: Expected,
    /// Anomalies of which a negative control must find at least one.
    #[serde(default)]
    pub must_find: Vec<String>,
    /// Why this entry is in the matrix (shown in the summary).
    #[serde(default)]
    pub why: String,
    /// Run it on the SSH hosts of this inventory (relative to the matrix file)
    /// instead of Docker containers (`gauntlet lab up --dir ...` makes one).
    #[serde(default)]
    pub hosts: Option<PathBuf>,
}

/// Overrides a profile applies to every scenario it runs.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case", deny_unknown_fields)]
pub struct ProfileOverrides {
    /// Replaces the scenario's `time`.
    pub time: Option<String>,
    /// Replaces the scenario's `rate`.
    pub rate: Option<f64>,
    /// Replaces the scenario's `nemesis-interval`.
    pub nemesis_interval: Option<String>,
    /// Replaces the scenario's `nemesis-duration`.
    pub nemesis_duration: Option<String>,
}

impl ProfileOverrides {
    /// The profile's replacements as the run's [`run::Overrides`].
    pub fn overrides(&self) -> run::Overrides {
        run::Overrides {
            time: self.time.clone(),
            rate: self.rate,
            nemesis_interval: self.nemesis_interval.clone(),
            nemesis_duration: self.nemesis_duration.clone(),
            ..run::Overrides::default()
        }
    }
}

/// A matrix file.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case", deny_unknown_fields)]
pub struct Matrix {
    /// The profiles' overrides, by profile name (`[profiles.<name>]`).
    #[serde(default)]
    pub profiles: BTreeMap<String, ProfileOverrides>,
    /// The entries, in file order (`[[scenario]]`).
    #[serde(rename = "scenario")]
    pub scenarios: Vec<Entry>,
}

/// A scenario of the matrix, loaded and ready to run.
#[derive(Debug, Clone)]
pub struct Planned {
    /// Its entry in the matrix file.
    pub entry: Entry,
    /// The scenario, with the profile's overrides and the results folder applied.
    pub scenario: Scenario,
    /// The inventory of the SSH hosts it runs on (`hosts`, resolved).
    pub hosts: Option<PathBuf>,
}

impl Matrix {
    /// Reads a matrix file. Every `must-find` must name an anomaly, and every negative
    /// control must list at least one.
    pub fn from_toml(text: &str) -> Result<Matrix, HarnessError> {
        let m: Matrix =
            toml::from_str(text).map_err(|e| HarnessError::Scenario(format!("matrix: {e}")))?;
        for e in &m.scenarios {
            for a in &e.must_find {
                // The contract's anomalies, the processing ones (seed D7), the
                // partition-count change's (seed O4) and the two-hop ones (seed O7).
                if AnomalyKind::ALL
                    .iter()
                    .chain(&AnomalyKind::PROCESSING)
                    .chain(AnomalyKind::REPARTITION.iter())
                    .chain(AnomalyKind::TWO_HOP.iter())
                    .all(|k| k.name() != a)
                {
                    return Err(HarnessError::Scenario(format!(
                        "matrix: {}: must-find `{a}` is not an anomaly",
                        e.file.display()
                    )));
                }
            }
            if e.outcome == Expected::Violated && e.must_find.is_empty() {
                return Err(HarnessError::Scenario(format!(
                    "matrix: {}: a negative control (outcome = \"violated\") must say what it must find (must-find)",
                    e.file.display()
                )));
            }
        }
        Ok(m)
    }

    /// The scenarios `profile` runs, loaded from their files (relative to `base`),
    /// with the profile's overrides applied and their results under `results`.
    pub fn plan(
        &self,
        base: &Path,
        profile: &str,
        results: &Path,
    ) -> Result<Vec<Planned>, HarnessError> {
        let overrides = self.profiles.get(profile);
        // A profile is one the file declares or an entry names; entries that name
        // none run in every profile.
        let known = self.profiles.contains_key(profile)
            || self
                .scenarios
                .iter()
                .any(|e| e.profiles.is_empty() || e.profiles.iter().any(|p| p == profile));
        if !known {
            return Err(HarnessError::Scenario(format!(
                "matrix: no profile `{profile}` (profiles: {})",
                self.profile_names().join(", ")
            )));
        }
        let mut out = Vec::new();
        for e in &self.scenarios {
            if !e.profiles.is_empty() && !e.profiles.iter().any(|p| p == profile) {
                continue;
            }
            let path = base.join(&e.file);
            let text = std::fs::read_to_string(&path).map_err(|err| {
                HarnessError::Scenario(format!("matrix: {}: {err}", path.display()))
            })?;
            let mut s = Scenario::from_toml(&text).map_err(|err| {
                HarnessError::Scenario(format!("matrix: {}: {err}", path.display()))
            })?;
            let mut o = overrides
                .map(ProfileOverrides::overrides)
                .unwrap_or_default();
            o.results = Some(results.to_path_buf());
            o.apply(&mut s)?;
            out.push(Planned {
                entry: e.clone(),
                scenario: s,
                hosts: e.hosts.as_ref().map(|h| base.join(h)),
            });
        }
        Ok(out)
    }

    /// Every profile the file declares or an entry names, declared ones first.
    pub fn profile_names(&self) -> Vec<String> {
        let mut names: Vec<String> = self.profiles.keys().cloned().collect();
        for e in &self.scenarios {
            for p in &e.profiles {
                if !names.contains(p) {
                    names.push(p.clone());
                }
            }
        }
        names
    }
}

/// How one scenario's run compared with its declaration.
#[derive(Debug, Clone, Serialize)]
pub struct Judgement {
    /// The run showed what was declared.
    pub pass: bool,
    /// One line: what was found against what was declared.
    pub why: String,
}

fn count(v: &Verdict, name: &str) -> u64 {
    v.anomalies
        .iter()
        .find(|(k, _)| k.name() == name)
        .map_or(0, |(_, a)| a.count)
}

/// Judges a finished run's verdict against its entry.
pub fn judge(entry: &Entry, v: &Verdict) -> Judgement {
    let found: Vec<String> = v
        .anomalies
        .iter()
        .filter(|(_, a)| a.count > 0)
        .map(|(k, a)| format!("{} {}", k.name(), a.count))
        .collect();
    let found_text = if found.is_empty() {
        "no anomaly".to_string()
    } else {
        found.join(", ")
    };
    match entry.outcome {
        Expected::Valid => match v.valid {
            Validity::True => Judgement {
                pass: true,
                why: format!("valid as declared ({found_text})"),
            },
            Validity::False => Judgement {
                pass: false,
                why: format!("declared valid, but the verdict is invalid: {found_text}"),
            },
            Validity::Unknown => Judgement {
                pass: false,
                why: format!(
                    "declared valid, but the verdict is unknown ({found_text}); see its warnings"
                ),
            },
        },
        Expected::Violated => {
            let hits: Vec<&String> = entry.must_find.iter().filter(|a| count(v, a) > 0).collect();
            if v.valid == Validity::False && !hits.is_empty() {
                Judgement {
                    pass: true,
                    why: format!("caught as declared: {found_text}"),
                }
            } else {
                Judgement {
                    pass: false,
                    why: format!(
                        "negative control found none of {} (verdict {}; {found_text}): the harness missed what this setting allows",
                        entry.must_find.join(", "),
                        match v.valid {
                            Validity::True => "valid",
                            Validity::False => "invalid",
                            Validity::Unknown => "unknown",
                        }
                    ),
                }
            }
        }
    }
}

/// The faults' names, as a scenario file writes them.
fn fault_names(faults: &[gauntlet_nemesis::FaultKind]) -> Vec<String> {
    faults.iter().map(|f| f.to_string()).collect()
}

/// One scenario of a matrix run.
#[derive(Debug)]
pub struct Row {
    /// The scenario's name.
    pub name: String,
    /// The scenario's broker.
    pub broker: crate::broker::BrokerKind,
    /// The scenario's faults, as named there.
    pub faults: Vec<String>,
    /// What the run had to show.
    pub expected: Expected,
    /// The entry's `why`.
    pub why_listed: String,
    /// The run folder, when the run got that far.
    pub dir: Option<PathBuf>,
    /// The run's verdict, when the run finished.
    pub verdict: Option<Verdict>,
    /// The run itself failed (deploy, workload, ...): the message.
    pub error: Option<String>,
    /// Whether the row passes, and why (a failed run fails).
    pub judgement: Judgement,
    /// How long the run took, in seconds.
    pub seconds: f64,
    /// The run was stopped by Ctrl-C (the matrix stops after this row).
    pub interrupted: bool,
}

/// What happens while a matrix runs, in order.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub enum MatrixEvent {
    /// A scenario's run begins.
    Started {
        /// Its place in the matrix, from 1.
        index: usize,
        /// Scenarios the matrix runs.
        total: usize,
        /// The scenario's name.
        name: String,
        /// Its broker.
        broker: crate::broker::BrokerKind,
        /// Its faults, as named there.
        faults: Vec<String>,
        /// What its run must show.
        expected: Expected,
        /// What a negative control must find.
        must_find: Vec<String>,
    },
    /// An event of the scenario's run.
    Run {
        /// The scenario's name.
        name: String,
        /// The event.
        event: RunEvent,
    },
    /// A scenario's run ended and was judged.
    Finished {
        /// Its place in the matrix, from 1.
        index: usize,
        /// Scenarios the matrix runs.
        total: usize,
        /// The scenario's name.
        name: String,
        /// Whether it showed what it declared.
        pass: bool,
        /// How long the run took, in seconds.
        seconds: f64,
        /// Why it passed or failed.
        why: String,
    },
}

/// Where a matrix's events go (clone it freely).
#[derive(Clone)]
pub struct MatrixSink(Arc<dyn Fn(MatrixEvent) + Send + Sync>);

impl std::fmt::Debug for MatrixSink {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("MatrixSink")
    }
}

impl MatrixSink {
    /// A sink that calls `f` with each event.
    pub fn new(f: impl Fn(MatrixEvent) + Send + Sync + 'static) -> MatrixSink {
        MatrixSink(Arc::new(f))
    }

    /// Sends one event.
    pub fn send(&self, e: MatrixEvent) {
        (self.0)(e)
    }
}

/// A scenario on the SSH hosts of the inventory at `path`.
async fn on_hosts(
    path: &Path,
    s: &Scenario,
    exe: &Path,
    events: EventSink,
) -> Result<run::RunOutcome, HarnessError> {
    let (inventory, remote) = crate::backend::ssh::open(path)?;
    let backend = std::sync::Arc::new(crate::backend::ssh::SshBackend::new(inventory, remote));
    run::run_with_backend(
        backend,
        Instant::now(),
        s,
        exe,
        events,
        run::RunOptions::default(),
    )
    .await
}

/// Runs every planned scenario in turn; a scenario whose run fails is a failed row,
/// and the matrix goes on with the next one. A run stopped by Ctrl-C is the last
/// row ([`Row::interrupted`]).
pub async fn run_matrix(plan: Vec<Planned>, exe: &Path, events: &MatrixSink) -> Vec<Row> {
    let mut rows = Vec::new();
    let total = plan.len();
    for (i, p) in plan.into_iter().enumerate() {
        let s = &p.scenario;
        events.send(MatrixEvent::Started {
            index: i + 1,
            total,
            name: s.name.clone(),
            broker: s.broker,
            faults: fault_names(&s.nemesis),
            expected: p.entry.outcome,
            must_find: p.entry.must_find.clone(),
        });
        let t0 = Instant::now();
        let name = s.name.clone();
        // The run's own events, under the scenario's name.
        let inner = {
            let (outer, name) = (events.clone(), name.clone());
            EventSink::new(move |event| {
                outer.send(MatrixEvent::Run {
                    name: name.clone(),
                    event,
                })
            })
        };
        let result = match &p.hosts {
            None => crate::local::run(s, exe, inner).await,
            Some(path) => on_hosts(path, s, exe, inner).await,
        };
        let seconds = t0.elapsed().as_secs_f64();
        let interrupted = match &result {
            Ok(o) => o.interrupted,
            Err(e) => matches!(e, HarnessError::Interrupted { .. }),
        };
        let row = match result {
            Ok(outcome) => {
                let judgement = judge(&p.entry, &outcome.verdict);
                Row {
                    name,
                    broker: s.broker,
                    faults: fault_names(&s.nemesis),
                    expected: p.entry.outcome,
                    why_listed: p.entry.why.clone(),
                    dir: Some(outcome.dir),
                    verdict: Some(outcome.verdict),
                    error: None,
                    judgement,
                    seconds,
                    interrupted,
                }
            }
            Err(e) => Row {
                name,
                broker: s.broker,
                faults: fault_names(&s.nemesis),
                expected: p.entry.outcome,
                why_listed: p.entry.why.clone(),
                dir: None,
                verdict: None,
                error: Some(e.to_string()),
                judgement: Judgement {
                    pass: false,
                    why: format!("the run failed: {e}"),
                },
                seconds,
                interrupted,
            },
        };
        events.send(MatrixEvent::Finished {
            index: i + 1,
            total,
            name: row.name.clone(),
            pass: row.judgement.pass,
            seconds: row.seconds,
            why: row.judgement.why.clone(),
        });
        rows.push(row);
        if interrupted {
            break;
        }
    }
    rows
}

#[cfg(test)]
mod tests {
    use super::*;
    use gauntlet_checkers::{check, CheckOptions, Guarantee};
    use gauntlet_history::read_bytes;

    fn verdict(lines: &str, expect: &[Guarantee]) -> Verdict {
        let h = read_bytes("t.jsonl", lines.as_bytes()).expect("history");
        check(
            &h,
            &CheckOptions {
                expect: expect.to_vec(),
                max_examples: 3,
            },
        )
    }

    const CLEAN: &str = r#"{"index":0,"time":1,"process":0,"type":"invoke","f":"send","value":{"key":"a","value":1}}
{"index":1,"time":2,"process":0,"type":"ok","f":"send","value":{"key":"a","value":1}}
{"index":2,"time":3,"process":1,"type":"invoke","f":"poll"}
{"index":3,"time":4,"process":1,"type":"ok","f":"poll","value":[{"key":"a","value":1}]}
{"index":4,"time":5,"process":"harness","type":"info","f":"phase","value":"drained"}
"#;
    const LOST: &str = r#"{"index":0,"time":1,"process":0,"type":"invoke","f":"send","value":{"key":"a","value":1}}
{"index":1,"time":2,"process":0,"type":"ok","f":"send","value":{"key":"a","value":1}}
{"index":2,"time":3,"process":1,"type":"invoke","f":"poll"}
{"index":3,"time":4,"process":1,"type":"ok","f":"poll","value":[]}
{"index":4,"time":5,"process":"harness","type":"info","f":"phase","value":"drained"}
"#;

    fn entry(outcome: Expected, must_find: &[&str]) -> Entry {
        Entry {
            file: "x.toml".into(),
            profiles: vec![],
            outcome,
            must_find: must_find.iter().map(|s| s.to_string()).collect(),
            why: String::new(),
            hosts: None,
        }
    }

    #[test]
    fn a_safe_scenario_passes_only_when_valid() {
        let e = entry(Expected::Valid, &[]);
        assert!(judge(&e, &verdict(CLEAN, &[Guarantee::AtLeastOnce])).pass);
        let j = judge(&e, &verdict(LOST, &[Guarantee::AtLeastOnce]));
        assert!(!j.pass);
        assert!(j.why.contains("lost 1"), "{}", j.why);
    }

    #[test]
    fn a_negative_control_must_catch_what_it_declares() {
        let e = entry(Expected::Violated, &["lost"]);
        assert!(judge(&e, &verdict(LOST, &[Guarantee::AtLeastOnce])).pass);
        // Found nothing: the harness lost its teeth.
        let j = judge(&e, &verdict(CLEAN, &[Guarantee::AtLeastOnce]));
        assert!(!j.pass);
        assert!(j.why.contains("found none of lost"), "{}", j.why);
        // Invalid, but not for the declared reason.
        let e = entry(Expected::Violated, &["duplicate-write"]);
        assert!(!judge(&e, &verdict(LOST, &[Guarantee::AtLeastOnce])).pass);
    }

    #[test]
    fn matrix_files_are_checked() {
        let m = Matrix::from_toml(
            r#"
[profiles.smoke]
time = "5s"
[[scenario]]
file = "a.toml"
profiles = ["smoke"]
[[scenario]]
file = "b.toml"
outcome = "violated"
must-find = ["lost", "gap"]
"#,
        )
        .expect("matrix");
        assert_eq!(m.scenarios.len(), 2);
        assert_eq!(m.profile_names(), vec!["smoke".to_string()]);
        for bad in [
            "[[scenario]]\nfile = \"a.toml\"\noutcome = \"violated\"\n",
            "[[scenario]]\nfile = \"a.toml\"\noutcome = \"violated\"\nmust-find = [\"lots\"]\n",
            "[[scenario]]\nfile = \"a.toml\"\nexpect = \"valid\"\n",
        ] {
            assert!(Matrix::from_toml(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn the_shipped_matrix_loads_with_every_scenario() {
        let base = Path::new(env!("CARGO_MANIFEST_DIR")).join("../ci");
        let text = std::fs::read_to_string(base.join("matrix.toml")).expect("ci/matrix.toml");
        let m = Matrix::from_toml(&text).expect("ci/matrix.toml parses");
        for profile in ["smoke", "full"] {
            let plan = m
                .plan(&base, profile, Path::new("results/matrix-test"))
                .expect("plan");
            assert!(!plan.is_empty(), "profile {profile} runs nothing");
            // Every negative control's scenario claims what its unsafe setting breaks.
            for p in &plan {
                if p.entry.outcome == Expected::Violated {
                    assert!(!p.scenario.expect.is_empty(), "{}", p.scenario.name);
                }
            }
        }
        let full = m.plan(&base, "full", Path::new("r")).expect("full");
        let smoke = m.plan(&base, "smoke", Path::new("r")).expect("smoke");
        assert!(full.len() >= smoke.len());
        assert!(full.iter().any(|p| p.entry.outcome == Expected::Violated));
        assert!(full.iter().any(|p| p.entry.outcome == Expected::Valid));
        // The SSH rows run on the lab's inventory, beside the matrix file, and
        // only in the full profile (CI's smoke run starts no lab).
        let on_hosts: Vec<&Planned> = full.iter().filter(|p| p.hosts.is_some()).collect();
        assert_eq!(on_hosts.len(), 2);
        for p in on_hosts {
            assert_eq!(
                p.hosts.as_deref(),
                Some(base.join("lab/hosts.toml").as_path())
            );
        }
        assert!(smoke.iter().all(|p| p.hosts.is_none()));
    }
}
