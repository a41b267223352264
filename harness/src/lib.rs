//! Harness: deployments (containers, clusters), node control, local broker images,
//! the client proxy and the run pipeline.
//!
//! The backend-neutral part is [`broker`] (what each broker needs, as data: one
//! recipe per broker in [`brokers`]) and [`deployment`] (the [`Deployment`] and
//! [`NodeControl`] traits). [`docker`] implements them with the Docker Engine API,
//! and [`images`] builds Gauntlet's own images without any registry.
//!
//! [`proxy`] is the client proxy: a TCP proxy between the clients and the nodes,
//! for the faults on that path. [`run`] is the run pipeline: a [`backend::Backend`]
//! ([`backend::DockerBackend`] for [`run::run_with`]) launches the deployment (the
//! only backend-specific step), then `run_on` drives the
//! schedule, the nemesis, the workers, the final heal, the drain and the teardown
//! over `&dyn Deployment`, and the history is judged. [`matrix`] runs scenarios
//! against what each must show.
//!
//! The harness builds on `history`, `checkers`, `report`, `workloads` and
//! `nemesis`. It must not depend on the CLI (the `gauntlet` crate): the CLI calls
//! in here, never the other way.
#![warn(missing_docs)]
pub mod backend;
pub mod broker;
pub mod brokers;
pub mod deployment;
pub mod error;
pub mod images;
pub mod matrix;
pub mod proxy;
pub mod run;

pub use broker::{BrokerKind, Capabilities, Command, Flavour, ImageRef, Recipe};
pub use deployment::{Deployment, Endpoint, ExecOutput, NodeControl};
pub use error::{HarnessError, Result};

use std::fmt;
use std::sync::atomic::{AtomicU32, Ordering};
use std::time::{SystemTime, UNIX_EPOCH};

/// Label on every container and network Gauntlet creates; its value is the run id.
pub const LABEL_RUN: &str = "gauntlet.run";
/// Label naming the node (n1..nN) of a container.
pub const LABEL_NODE: &str = "gauntlet.node";
/// Label naming the broker of a container.
pub const LABEL_BROKER: &str = "gauntlet.broker";

/// Identifies one run; every object the run creates carries it as `gauntlet.run`.
#[derive(Debug, Clone, PartialEq, Eq, Hash, serde::Serialize)]
pub struct RunId(String);

impl RunId {
    /// A fresh id: `<unix seconds>-<pid>-<counter>`, unique on this machine.
    pub fn generate() -> Self {
        static COUNTER: AtomicU32 = AtomicU32::new(0);
        let secs = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map(|d| d.as_secs())
            .unwrap_or(0);
        let n = COUNTER.fetch_add(1, Ordering::Relaxed);
        RunId(format!("{secs}-{}-{n}", std::process::id()))
    }

    /// An id chosen by the caller (e.g. the results folder's name). Characters Docker
    /// does not accept in names are replaced by `-`.
    pub fn from_name(name: &str) -> Self {
        let clean: String = name
            .chars()
            .map(|c| {
                if c.is_ascii_alphanumeric() || c == '-' || c == '_' || c == '.' {
                    c
                } else {
                    '-'
                }
            })
            .collect();
        RunId(clean)
    }

    /// The id as text, as the labels and names carry it.
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl fmt::Display for RunId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::broker::BrokerExt;

    #[test]
    fn run_ids_are_unique_and_docker_safe() {
        let a = RunId::generate();
        let b = RunId::generate();
        assert_ne!(a, b);
        assert_eq!(RunId::from_name("run 1/x").as_str(), "run-1-x");
    }

    #[test]
    fn broker_names_round_trip() {
        for b in BrokerKind::ALL {
            assert_eq!(b.name().parse::<BrokerKind>().ok(), Some(b));
            assert!(b.default_image().starts_with("gauntlet/"));
        }
        assert!("kafkaa".parse::<BrokerKind>().is_err());
    }

    #[test]
    fn image_flavour_follows_the_name() {
        assert_eq!(ImageRef::named("rabbitmq:4").flavour, Flavour::Official);
        assert_eq!(
            ImageRef::named("gauntlet/nats:2.15.1").flavour,
            Flavour::Gauntlet
        );
    }
}
