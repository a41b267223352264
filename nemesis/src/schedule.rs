//! Fault schedules: generated from a seed (the same seed, faults and times give
//! the same schedule) or read from a file; every run writes the one it used, so
//! `gauntlet run --replay <run>/schedule.toml` repeats it.
use crate::faults::FaultKind;
use crate::NemesisError;
use serde::{Deserialize, Serialize};
use std::str::FromStr;
use std::time::Duration;

/// One fault at one moment.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ScheduledFault {
    /// Milliseconds after the workload starts.
    pub at_ms: u64,
    /// How long the fault lasts before it is healed, in milliseconds.
    pub duration_ms: u64,
    /// The fault's name, as on the command line.
    pub fault: String,
    /// The node it targets.
    pub target: String,
    /// Which consumer a kill-consumer fault picks (modulo the number of consumers).
    pub pick: u64,
}

impl ScheduledFault {
    /// The fault's kind, parsed from its name; an error for an unknown name.
    pub fn kind(&self) -> Result<FaultKind, NemesisError> {
        FaultKind::from_str(&self.fault)
    }
}

/// A whole schedule.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Schedule {
    /// The seed the schedule was generated from (kept in the file when replayed).
    pub seed: u64,
    /// The faults, one `[[fault]]` table each in TOML.
    #[serde(default, rename = "fault")]
    pub faults: Vec<ScheduledFault>,
}

struct SplitMix(u64);
impl SplitMix {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }
}

impl Schedule {
    /// Faults drawn from `kinds` every `interval` (jittered by up to a quarter),
    /// each lasting `duration`, over a workload of length `time`, on `nodes`.
    pub fn generate(
        seed: u64,
        kinds: &[FaultKind],
        nodes: &[String],
        time: Duration,
        interval: Duration,
        duration: Duration,
    ) -> Schedule {
        let mut rng = SplitMix(seed ^ 0x006E_656D_6573_6973);
        let mut faults = Vec::new();
        let (time, interval, duration) = (
            time.as_millis() as u64,
            interval.as_millis().max(1) as u64,
            duration.as_millis() as u64,
        );
        let mut at = interval;
        while !kinds.is_empty() && !nodes.is_empty() && at + duration < time {
            let jitter = rng.next() % (interval / 4 + 1);
            let kind = kinds[(rng.next() % kinds.len() as u64) as usize];
            let target = nodes[(rng.next() % nodes.len() as u64) as usize].clone();
            let dur = match kind {
                // A consumer kill is instant; the harness restarts the consumer at once.
                FaultKind::KillConsumer(_)
                | FaultKind::RestartBroker { .. }
                | FaultKind::OnRole(crate::faults::NodeFault::Restart, _) => 0,
                _ => duration,
            };
            faults.push(ScheduledFault {
                at_ms: at + jitter,
                duration_ms: dur,
                fault: kind.to_string(),
                target,
                pick: rng.next() % 1000,
            });
            at += interval + dur;
        }
        Schedule { seed, faults }
    }

    /// Reads a schedule from TOML (a run's `schedule.toml`); every fault name must parse.
    pub fn from_toml(text: &str) -> Result<Schedule, NemesisError> {
        let s: Schedule =
            toml::from_str(text).map_err(|e| NemesisError::Schedule(e.to_string()))?;
        for f in &s.faults {
            f.kind()?;
        }
        Ok(s)
    }

    /// The schedule as TOML, as a run writes it to `schedule.toml`.
    pub fn to_toml(&self) -> String {
        toml::to_string_pretty(self).unwrap_or_default()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn same_seed_same_schedule_and_round_trip() {
        let nodes: Vec<String> = ["n1", "n2", "n3"].iter().map(|s| s.to_string()).collect();
        let kinds = [
            FaultKind::KillBroker,
            FaultKind::Partition,
            FaultKind::Pause,
        ];
        let a = Schedule::generate(
            7,
            &kinds,
            &nodes,
            Duration::from_secs(60),
            Duration::from_secs(5),
            Duration::from_secs(3),
        );
        let b = Schedule::generate(
            7,
            &kinds,
            &nodes,
            Duration::from_secs(60),
            Duration::from_secs(5),
            Duration::from_secs(3),
        );
        let c = Schedule::generate(
            8,
            &kinds,
            &nodes,
            Duration::from_secs(60),
            Duration::from_secs(5),
            Duration::from_secs(3),
        );
        assert_eq!(a, b);
        assert_ne!(a, c);
        assert!(a.faults.len() >= 5);
        assert!(a
            .faults
            .windows(2)
            .all(|w| w[0].at_ms + w[0].duration_ms <= w[1].at_ms));
        assert!(a.faults.iter().all(|f| f.at_ms + f.duration_ms < 60_000));
        assert_eq!(Schedule::from_toml(&a.to_toml()).ok(), Some(a));
    }
}
