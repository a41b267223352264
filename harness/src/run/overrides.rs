//! What `gauntlet run`'s flags, a matrix profile and the benchmark change in a
//! scenario: one [`Overrides`] value, applied in one place ([`Overrides::apply`]).
use super::scenario::{Scenario, Workload};
use crate::broker::BrokerKind;
use crate::error::HarnessError;
use gauntlet_checkers::Guarantee;
use gauntlet_workloads::log::Membership;
use gauntlet_workloads::settings::Mode;
use std::path::PathBuf;

/// Replacements for a scenario's fields; `None` (or empty) keeps the scenario's.
/// The faults are replaced here too; which default faults a run made of flags
/// keeps (no `--nemesis`) is the CLI's rule (`gauntlet run --nemesis`).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Overrides {
    /// `broker`.
    pub broker: Option<BrokerKind>,
    /// `workload`.
    pub workload: Option<Workload>,
    /// `[log] membership`.
    pub membership: Option<Membership>,
    /// `time`, e.g. "30s".
    pub time: Option<String>,
    /// `rate`, sends per second.
    pub rate: Option<f64>,
    /// `seed`.
    pub seed: Option<u64>,
    /// `nodes`.
    pub nodes: Option<usize>,
    /// `image`.
    pub image: Option<String>,
    /// `[delivery] mode`.
    pub mode: Option<Mode>,
    /// `expect`, when not empty.
    pub expect: Vec<Guarantee>,
    /// `results`.
    pub results: Option<PathBuf>,
    /// `nemesis-interval`.
    pub nemesis_interval: Option<String>,
    /// `nemesis-duration`.
    pub nemesis_duration: Option<String>,
    /// `replay`.
    pub replay: Option<PathBuf>,
    /// The faults (`Some(vec![])`: none at all).
    pub nemesis: Option<Vec<gauntlet_nemesis::FaultKind>>,
    /// `[queue] in-flight`.
    pub in_flight: Option<usize>,
    /// `[queue] key-distribution`.
    pub key_distribution: Option<gauntlet_workloads::keys::KeyDistribution>,
}

impl Overrides {
    /// Applies the replacements to `s`, then checks what they may have broken
    /// (the duration and the guarantees parse).
    pub fn apply(&self, s: &mut Scenario) -> Result<(), HarnessError> {
        fn set<T: Clone>(field: &mut T, value: &Option<T>) {
            if let Some(v) = value {
                *field = v.clone();
            }
        }
        set(&mut s.broker, &self.broker);
        set(&mut s.workload, &self.workload);
        set(&mut s.log.membership, &self.membership);
        set(&mut s.time, &self.time);
        set(&mut s.rate, &self.rate);
        set(&mut s.queue.in_flight, &self.in_flight);
        set(&mut s.queue.key_distribution, &self.key_distribution);
        set(&mut s.seed, &self.seed);
        if let Some(n) = self.nodes {
            s.nodes = Some(n);
        }
        if let Some(i) = &self.image {
            s.image = Some(i.clone());
        }
        set(&mut s.delivery.mode, &self.mode);
        if !self.expect.is_empty() {
            s.expect = self.expect.clone();
        }
        set(&mut s.results, &self.results);
        set(&mut s.nemesis_interval, &self.nemesis_interval);
        set(&mut s.nemesis_duration, &self.nemesis_duration);
        if let Some(r) = &self.replay {
            s.replay = Some(r.clone());
        }
        set(&mut s.nemesis, &self.nemesis);
        s.guarantees()?;
        s.duration()?;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_what_is_set_changes_and_a_bad_value_is_refused() {
        let base = Scenario::default_scenario();
        let mut s = base.clone();
        Overrides::default()
            .apply(&mut s)
            .expect("nothing to apply");
        assert_eq!(s.to_toml(), base.to_toml());

        let o = Overrides {
            time: Some("7s".into()),
            seed: Some(9),
            nodes: Some(2),
            expect: vec![Guarantee::AtMostOnce],
            nemesis_interval: Some("3s".into()),
            ..Overrides::default()
        };
        o.apply(&mut s).expect("applied");
        assert_eq!(
            (
                s.time.as_str(),
                s.seed,
                s.nodes,
                s.nemesis_interval.as_str()
            ),
            ("7s", 9, Some(2), "3s")
        );
        assert_eq!(s.expect, vec![Guarantee::AtMostOnce]);
        assert_eq!((s.rate, s.broker), (base.rate, base.broker), "kept");

        let bad = Overrides {
            time: Some("soon".into()),
            ..Overrides::default()
        };
        assert!(bad.apply(&mut s).is_err());
    }
}
