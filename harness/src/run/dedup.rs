//! The scenario's `[dedup]` table (seed D7): consumers that remember what they
//! processed in a dedup store of their own, a Redis node deployed beside the
//! broker (`docs/workloads.md`, "The idempotent consumer"). A leaf of `run/`:
//! it imports nothing of it (`scenario.rs` imports it).
use crate::broker::BrokerKind;
use crate::error::HarnessError;
use gauntlet_workloads::dedup::{DedupCall, Mark, Policy};
use gauntlet_workloads::{AckPoint, Delivery};
use serde::{Deserialize, Serialize};
use std::time::Duration;

/// The brokers the idempotent consumer was made to work on (and shown to).
pub const DEDUP_BROKERS: [BrokerKind; 2] = [BrokerKind::Redis, BrokerKind::RabbitMq];

/// `[dedup]`: the consumers' dedup store and how they use it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case", deny_unknown_fields)]
pub struct DedupConfig {
    /// The store: `redis` (the only one).
    #[serde(default = "redis")]
    pub store: String,
    /// `after` (check, apply, mark: the documents' order) or `before` (claim, then apply).
    #[serde(default, with = "named_mark")]
    pub mark: Mark,
    /// `fail-open` (apply while the store does not answer) or `fail-closed`
    /// (neither apply nor acknowledge: the broker delivers it again).
    #[serde(default, with = "named_policy")]
    pub policy: Policy,
    /// How long a mark lives (`PX`), e.g. `"60s"`.
    #[serde(default = "sixty")]
    pub ttl: String,
}

fn redis() -> String {
    "redis".into()
}
fn sixty() -> String {
    "60s".into()
}

mod named_mark {
    use gauntlet_workloads::dedup::Mark;
    use serde::{Deserialize, Deserializer, Serializer};
    pub fn serialize<S: Serializer>(m: &Mark, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(m.name())
    }
    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Mark, D::Error> {
        String::deserialize(d)?
            .parse()
            .map_err(serde::de::Error::custom)
    }
}

mod named_policy {
    use gauntlet_workloads::dedup::Policy;
    use serde::{Deserialize, Deserializer, Serializer};
    pub fn serialize<S: Serializer>(p: &Policy, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(p.name())
    }
    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Policy, D::Error> {
        String::deserialize(d)?
            .parse()
            .map_err(serde::de::Error::custom)
    }
}

impl DedupConfig {
    /// The mark's time to live.
    pub fn ttl(&self) -> Result<Duration, HarnessError> {
        let s = self.ttl.trim();
        let bad = || {
            HarnessError::Scenario(format!(
                "[dedup] ttl = {s:?} is not a duration (e.g. 60s, 2m, 500ms)"
            ))
        };
        let (num, unit) = match s.find(|c: char| !c.is_ascii_digit()) {
            Some(i) => (&s[..i], &s[i..]),
            None => (s, "s"),
        };
        let n: u64 = num.parse().map_err(|_| bad())?;
        let t = match unit {
            "ms" => Duration::from_millis(n),
            "s" => Duration::from_secs(n),
            "m" => Duration::from_secs(n.saturating_mul(60)),
            "h" => Duration::from_secs(n.saturating_mul(3600)),
            _ => return Err(bad()),
        };
        if t < Duration::from_millis(1) {
            return Err(HarnessError::Scenario(format!(
                "[dedup] ttl = {:?}: a mark must live at least 1 ms",
                self.ttl
            )));
        }
        Ok(t)
    }

    /// Refuses what the broker or the workload cannot honour, naming the setting
    /// and the broker, before anything starts.
    pub fn check(
        &self,
        broker: BrokerKind,
        workload: &str,
        delivery: &Delivery,
    ) -> Result<(), HarnessError> {
        if self.store != "redis" {
            return Err(HarnessError::Scenario(format!(
                "[dedup] store = {:?}: the only dedup store is \"redis\"",
                self.store
            )));
        }
        if !DEDUP_BROKERS.contains(&broker) {
            return Err(HarnessError::Scenario(format!(
                "[dedup]: the idempotent consumer runs on {}, not on {broker}",
                DEDUP_BROKERS.map(|b| b.name()).join(" and ")
            )));
        }
        if workload != "queue" {
            return Err(HarnessError::Scenario(format!(
                "[dedup]: the idempotent consumer is the queue workload's, not the {workload} \
                 workload's"
            )));
        }
        let settings = delivery.resolve();
        if settings.ack_point != AckPoint::AfterProcessing || !settings.manual_ack {
            return Err(HarnessError::Scenario(format!(
                "[dedup] on {broker}: the idempotent consumer acknowledges after processing \
                 (at-least-once delivery); the [delivery] table acknowledges before it"
            )));
        }
        self.ttl()?;
        Ok(())
    }

    /// What a worker is handed: the store at `addr`.
    pub fn call(&self, addr: String) -> Result<DedupCall, HarnessError> {
        Ok(DedupCall {
            addr,
            mark: self.mark,
            policy: self.policy,
            ttl_ms: u64::try_from(self.ttl()?.as_millis()).unwrap_or(u64::MAX),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use gauntlet_workloads::Mode;

    fn cfg(text: &str) -> DedupConfig {
        toml::from_str(text).expect("a [dedup] table")
    }

    #[test]
    fn defaults_are_mark_after_fail_closed_sixty_seconds() {
        let c = cfg("");
        assert_eq!((c.mark, c.policy), (Mark::After, Policy::FailClosed));
        assert_eq!(c.ttl().ok(), Some(Duration::from_secs(60)));
        let c = cfg("mark = \"before\"\npolicy = \"fail-open\"\nttl = \"2s\"");
        assert_eq!((c.mark, c.policy), (Mark::Before, Policy::FailOpen));
        assert_eq!(
            c.call("127.0.0.1:9".into()).map(|c| c.ttl_ms).ok(),
            Some(2000)
        );
    }

    #[test]
    fn unknown_values_are_refused_by_name() {
        let e = toml::from_str::<DedupConfig>("policy = \"fail-sometimes\"")
            .expect_err("refused")
            .to_string();
        assert!(e.contains("fail-open or fail-closed"), "{e}");
        assert!(toml::from_str::<DedupConfig>("ordr = \"after\"").is_err());
    }

    #[test]
    fn what_a_broker_cannot_honour_is_refused_naming_setting_and_broker() {
        let q = "queue";
        let d = Delivery::default();
        assert!(cfg("").check(BrokerKind::Redis, q, &d).is_ok());
        assert!(cfg("").check(BrokerKind::RabbitMq, q, &d).is_ok());
        let e = cfg("")
            .check(BrokerKind::Nats, q, &d)
            .expect_err("nats")
            .to_string();
        assert!(e.contains("[dedup]") && e.contains("nats"), "{e}");
        let e = cfg("store = \"memcached\"")
            .check(BrokerKind::Redis, q, &d)
            .expect_err("store")
            .to_string();
        assert!(e.contains("[dedup] store"), "{e}");
        let amo = Delivery {
            mode: Mode::AtMostOnce,
            ..Delivery::default()
        };
        let e = cfg("")
            .check(BrokerKind::Redis, q, &amo)
            .expect_err("amo")
            .to_string();
        assert!(e.contains("[dedup] on redis"), "{e}");
        let e = cfg("ttl = \"soon\"")
            .check(BrokerKind::Redis, q, &d)
            .expect_err("ttl")
            .to_string();
        assert!(e.contains("[dedup] ttl"), "{e}");
    }
}
