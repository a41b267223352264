//! Fault schedules: generated from a seed (the same seed, faults and times give
//! the same schedule) or read from a file; every run writes the one it used, so
//! `gauntlet run --replay <run>/schedule.toml` repeats it.
use crate::faults::partition::RNG_SEED_MASK;
use crate::faults::{Ends, FaultKind};
use crate::NemesisError;
use gauntlet_history::rng::Rng;
use serde::{Deserialize, Serialize};
use std::time::Duration;

/// One fault at one moment, on one or several targets. Faults of a schedule may
/// overlap in time (a generated schedule's do not).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(try_from = "RawFault", into = "RawFault")]
pub struct ScheduledFault {
    /// Milliseconds after the workload starts.
    pub at_ms: u64,
    /// How long the fault lasts before it is healed, in milliseconds.
    pub duration_ms: u64,
    /// The fault (written as its name, as on the command line).
    pub fault: FaultKind,
    /// The nodes it targets: one as a rule (`target = "n1"` in TOML), several
    /// as `targets = ["n1", "n2"]`.
    pub targets: Vec<String>,
    /// Which consumer a kill-consumer fault picks (modulo the number of consumers).
    pub pick: u64,
}

/// [`ScheduledFault`] as TOML spells it: `target` for one node (every schedule
/// written so far), `targets` for several.
#[derive(Serialize, Deserialize)]
struct RawFault {
    at_ms: u64,
    duration_ms: u64,
    fault: FaultKind,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    target: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    targets: Option<Vec<String>>,
    pick: u64,
}

impl TryFrom<RawFault> for ScheduledFault {
    type Error = String;
    fn try_from(r: RawFault) -> Result<Self, String> {
        let targets = match (r.target, r.targets) {
            (Some(t), None) => vec![t],
            (None, Some(ts)) if !ts.is_empty() => ts,
            (None, Some(_)) => return Err("`targets` is empty".into()),
            (Some(_), Some(_)) => return Err("both `target` and `targets`: give one".into()),
            (None, None) => return Err("missing field `target`".into()),
        };
        Ok(ScheduledFault {
            at_ms: r.at_ms,
            duration_ms: r.duration_ms,
            fault: r.fault,
            targets,
            pick: r.pick,
        })
    }
}

impl From<ScheduledFault> for RawFault {
    fn from(f: ScheduledFault) -> Self {
        let (target, targets) = match <[String; 1]>::try_from(f.targets) {
            Ok([one]) => (Some(one), None),
            Err(many) => (None, Some(many)),
        };
        RawFault {
            at_ms: f.at_ms,
            duration_ms: f.duration_ms,
            fault: f.fault,
            target,
            targets,
            pick: f.pick,
        }
    }
}

impl ScheduledFault {
    /// The fault's kind.
    pub fn kind(&self) -> FaultKind {
        self.fault
    }
    /// The targets as one line: `n1`, or `n1+n2`.
    pub fn targets_line(&self) -> String {
        self.targets.join("+")
    }
    /// When the schedule means it to end, in milliseconds after the start.
    pub fn end_ms(&self) -> u64 {
        self.at_ms + self.duration_ms
    }
}

/// A whole schedule.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Schedule {
    /// The seed the schedule was generated from (kept in the file when replayed).
    pub seed: u64,
    /// The faults, one `[[fault]]` table each in TOML, in the order of `at_ms`.
    #[serde(default, rename = "fault")]
    pub faults: Vec<ScheduledFault>,
}

impl Schedule {
    /// Faults drawn from `kinds` every `interval` (jittered by up to a quarter),
    /// each lasting `duration` (or 0 for a fault its table entry heals at once or
    /// lets heal by itself), over a workload of length `time`, on `nodes`; the next
    /// fault comes after the previous one's end, so generated faults never overlap.
    /// Faults the workload does itself (`crash-producer`) are not drawn.
    pub fn generate(
        seed: u64,
        kinds: &[FaultKind],
        nodes: &[String],
        time: Duration,
        interval: Duration,
        duration: Duration,
    ) -> Schedule {
        let kinds: Vec<FaultKind> = kinds
            .iter()
            .copied()
            .filter(|k| k.spec().acts != crate::faults::Acts::Workload)
            .collect();
        // The state the nemesis's SplitMix64 always started from (schedules
        // written and documented seeds depend on it).
        let mut rng = Rng::new(seed ^ 0x006E_656D_6573_6973 ^ RNG_SEED_MASK);
        let mut faults = Vec::new();
        let (time, interval, duration) = (
            time.as_millis() as u64,
            interval.as_millis().max(1) as u64,
            duration.as_millis() as u64,
        );
        let mut at = interval;
        while !kinds.is_empty() && !nodes.is_empty() && at + duration < time {
            let jitter = rng.next_u64() % (interval / 4 + 1);
            let kind = kinds[(rng.next_u64() % kinds.len() as u64) as usize];
            let target = nodes[(rng.next_u64() % nodes.len() as u64) as usize].clone();
            let dur = match kind.spec().ends {
                Ends::Itself | Ends::AtOnce => 0,
                Ends::AfterDuration => duration,
            };
            faults.push(ScheduledFault {
                at_ms: at + jitter,
                duration_ms: dur,
                fault: kind,
                targets: vec![target],
                pick: rng.next_u64() % 1000,
            });
            at += interval + dur;
        }
        Schedule { seed, faults }
    }

    /// Reads a schedule from TOML (a run's `schedule.toml`); a fault name that
    /// does not parse refuses the whole file (the error says which entry).
    pub fn from_toml(text: &str) -> Result<Schedule, NemesisError> {
        toml::from_str(text).map_err(|e| NemesisError::Schedule(e.to_string()))
    }

    /// The schedule as TOML, as a run writes it to `schedule.toml`.
    pub fn to_toml(&self) -> String {
        toml::to_string_pretty(self).unwrap_or_default()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::str::FromStr;

    fn nodes(n: usize) -> Vec<String> {
        (1..=n).map(|i| format!("n{i}")).collect()
    }

    #[test]
    fn same_seed_same_schedule_and_round_trip() {
        let kinds = [
            FaultKind::KillBroker,
            FaultKind::Partition,
            FaultKind::Pause,
        ];
        let gen = |seed| {
            Schedule::generate(
                seed,
                &kinds,
                &nodes(3),
                Duration::from_secs(60),
                Duration::from_secs(5),
                Duration::from_secs(3),
            )
        };
        let (a, b, c) = (gen(7), gen(7), gen(8));
        assert_eq!(a, b);
        assert_ne!(a, c);
        assert!(a.faults.len() >= 5);
        // Generated faults never overlap (the type allows it: see below).
        assert!(a.faults.windows(2).all(|w| w[0].end_ms() <= w[1].at_ms));
        assert!(a.faults.iter().all(|f| f.end_ms() < 60_000));
        assert_eq!(Schedule::from_toml(&a.to_toml()).ok(), Some(a));
    }

    /// The schedules of the code before the fault table and the shared
    /// generator (its own SplitMix64), kept in `tests/golden/schedules.toml`:
    /// the default run's seed 27 and two others over every family of fault.
    #[test]
    fn schedules_are_the_same_as_before_for_the_same_seed() {
        type Case = (u64, &'static [&'static str], usize, u64, u64, u64);
        let cases: [Case; 3] = [
            (
                27,
                &["kill-consumer:before-ack", "restart-broker:mid-batch"],
                3,
                20,
                5,
                3,
            ),
            (
                5,
                &[
                    "partition",
                    "pause",
                    "kill-broker",
                    "restart-broker:mid-batch",
                    "partition:ring",
                    "netem:50",
                    "kill-consumer:after-ack",
                    "ack-loss",
                    "kill-broker:leader",
                    "restart-broker:txn-coordinator",
                ],
                3,
                120,
                4,
                2,
            ),
            (
                123_456_789,
                &[
                    "latency:250",
                    "loss:10",
                    "partition:halves",
                    "pause:leader",
                    "kill-consumer",
                ],
                5,
                90,
                3,
                1,
            ),
        ];
        let mut out = String::new();
        for (seed, names, n, time, interval, dur) in cases {
            let kinds: Vec<FaultKind> = names
                .iter()
                .map(|s| FaultKind::from_str(s).expect("a fault"))
                .collect();
            let s = Schedule::generate(
                seed,
                &kinds,
                &nodes(n),
                Duration::from_secs(time),
                Duration::from_secs(interval),
                Duration::from_secs(dur),
            );
            out.push_str(&format!("# seed {seed}\n{}", s.to_toml()));
        }
        assert_eq!(out, include_str!("../tests/golden/schedules.toml"));
    }

    #[test]
    fn crash_producer_is_never_drawn_and_draws_nothing_else_differently() {
        let with = Schedule::generate(
            27,
            &[
                FaultKind::from_str("kill-consumer:before-ack").expect("fault"),
                FaultKind::CrashProducer,
                FaultKind::from_str("restart-broker:mid-batch").expect("fault"),
            ],
            &nodes(3),
            Duration::from_secs(20),
            Duration::from_secs(5),
            Duration::from_secs(3),
        );
        let without = Schedule::generate(
            27,
            &[
                FaultKind::from_str("kill-consumer:before-ack").expect("fault"),
                FaultKind::from_str("restart-broker:mid-batch").expect("fault"),
            ],
            &nodes(3),
            Duration::from_secs(20),
            Duration::from_secs(5),
            Duration::from_secs(3),
        );
        assert_eq!(with, without);
        let only = Schedule::generate(
            1,
            &[FaultKind::CrashProducer],
            &nodes(3),
            Duration::from_secs(20),
            Duration::from_secs(5),
            Duration::from_secs(3),
        );
        assert!(only.faults.is_empty());
    }

    #[test]
    fn several_targets_and_overlapping_faults_round_trip() {
        let text = "seed = 3\n\n[[fault]]\nat_ms = 100\nduration_ms = 500\nfault = \"pause\"\n\
                    targets = [\"n1\", \"n2\"]\npick = 1\n\n[[fault]]\nat_ms = 200\n\
                    duration_ms = 100\nfault = \"kill-broker\"\ntarget = \"n3\"\npick = 2\n";
        let s = Schedule::from_toml(text).expect("schedule");
        assert_eq!(
            s.faults[0].targets,
            vec!["n1".to_string(), "n2".to_string()]
        );
        assert_eq!(s.faults[0].fault, FaultKind::Pause);
        assert_eq!(s.faults[1].targets, vec!["n3".to_string()]);
        assert!(s.faults[1].at_ms < s.faults[0].end_ms(), "they overlap");
        assert_eq!(Schedule::from_toml(&s.to_toml()).ok(), Some(s.clone()));
        assert!(
            s.to_toml().contains("target = \"n3\""),
            "one target stays `target`"
        );
    }

    #[test]
    fn a_schedule_with_a_name_it_cannot_read_is_refused_not_thinned() {
        let text =
            "seed = 3\n\n[[fault]]\nat_ms = 100\nduration_ms = 0\nfault = \"kill-consumer\"\n\
                    target = \"n1\"\npick = 1\n\n[[fault]]\nat_ms = 200\nduration_ms = 100\n\
                    fault = \"meteor-strike\"\ntarget = \"n3\"\npick = 2\n";
        let e = Schedule::from_toml(text).expect_err("refused").to_string();
        assert!(e.contains("unknown fault `meteor-strike`"), "{e}");
        assert!(e.contains("line 13"), "the entry is named: {e}");
        let both = "seed = 3\n[[fault]]\nat_ms = 1\nduration_ms = 0\nfault = \"pause\"\n\
                    target = \"n1\"\ntargets = [\"n2\"]\npick = 1\n";
        let e = Schedule::from_toml(both).expect_err("refused").to_string();
        assert!(e.contains("both `target` and `targets`"), "{e}");
    }
}
