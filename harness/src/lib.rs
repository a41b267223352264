//! Harness: deployments (containers, clusters), node control, local broker images,
//! the client proxy and the run pipeline.
//!
//! The backend-neutral part is [`broker`] (what each broker needs, as data: one
//! recipe per broker in [`brokers`]), [`deployment`] (the [`Deployment`] and
//! [`NodeControl`] traits) and [`backend`] (the [`backend::Backend`] trait and
//! the [`backend::ClusterSpec`] it launches). The backends sit under it:
//! [`backend::docker`] implements them with the Docker Engine API,
//! [`backend::ssh`] on hosts reached with OpenSSH; [`backend::lab`] makes
//! Docker containers to try the SSH backend on. [`images`] builds Gauntlet's
//! own images without any registry, one file per concern.
//!
//! [`proxy`] is the client proxy: a TCP proxy between the clients and the nodes,
//! for the faults on that path. [`run`] is the run pipeline: a [`backend::Backend`]
//! ([`backend::docker::DockerBackend`] for [`local::run_with`]) launches the
//! deployment (the only backend-specific step), then `run_on` drives the
//! schedule, the nemesis, the workers, the final heal, the drain and the teardown
//! over `&dyn Deployment`, and the history is judged. [`matrix`] runs scenarios
//! against what each must show.
//!
//! # Layers: what each module may import
//!
//! Each file says it in its own doc comment; the whole, lowest first (a module
//! imports only from the rows above its own, and no two files of the crate
//! import each other, directly or around a circle):
//!
//! | module | may import (of this crate) |
//! |---|---|
//! | [`error`], [`labels`] | nothing |
//! | [`machine_lock`] | `error` (locks every Gauntlet process on the machine shares) |
//! | [`broker`] | nothing (the recipes' types; [`broker::BrokerExt`] is implemented in [`brokers`]) |
//! | [`images::rootfs`] | nothing (what the images are made of, as data) |
//! | [`brokers`] | `broker`, `images::rootfs`, `error` (tests: `backend::ClusterSpec`) |
//! | [`deployment`] | `broker`, `error`, `labels` |
//! | [`images`] (the builder) | `broker`, `brokers`, `images::*`, `machine_lock`, `error`, `labels` |
//! | [`backend`] (`mod.rs`, `http.rs`) | `broker`, `deployment`, `error`, `labels` |
//! | [`backend::docker`] | `backend`, `broker`, `deployment`, `images`, `machine_lock`, `error`, `labels` |
//! | [`backend::ssh`] | `backend`, `broker`, `deployment`, `error`, `labels`: never `run`, never Docker |
//! | [`backend::lab`] | `backend::docker`, `backend::ssh`, `images`, `error`, `labels` |
//! | [`proxy`] | `error` |
//! | [`run`] | `backend` (the trait and the spec), `broker`, `deployment`, `proxy`, `error`, `labels`; no backend: its files import each other only downward (`mod.rs` over the phases, the phases over `context`, `events`, `scenario`) |
//! | [`local`] | `run`, `backend::docker`: the run on the local Docker Engine |
//! | [`matrix`] | `run`, `backend::ssh`, `broker`, `error` |
//!
//! The harness builds on `history`, `checkers`, `report`, `workloads` and
//! `nemesis`. It must not depend on the CLI (the `gauntlet` crate): the CLI calls
//! in here, never the other way.
#![warn(missing_docs)]
pub mod backend;
pub mod broker;
pub mod brokers;
pub mod deployment;
pub mod diskfs;
pub mod error;
pub mod images;
pub mod labels;
pub mod local;
pub mod machine_lock;
pub mod matrix;
pub mod proxy;
pub mod run;

pub use broker::{BrokerKind, Capabilities, Command, Flavour, ImageRef, Recipe};
pub use deployment::{Deployment, Endpoint, ExecOutput, NodeControl};
pub use error::{HarnessError, Result};
pub use labels::{RunId, LABEL_BROKER, LABEL_NODE, LABEL_RUN};

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
