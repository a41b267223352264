//! Where a run's nodes come from. A [`Backend`] turns the scenario's
//! [`ClusterSpec`] into a running [`Deployment`], and removes what it created
//! for a run that is interrupted. The run pipeline takes one
//! (`run::run_with_backend`) and names nothing else of this module. The
//! backends are beside each other under it: [`docker`]
//! ([`docker::DockerBackend`]: containers of the local Docker Engine) and
//! [`ssh`] ([`ssh::SshBackend`]: hosts reached with OpenSSH); Kubernetes would
//! be one more (`docs/backends.md`). [`lab`] makes Docker containers to try
//! the SSH backend on; [`http`] is the GET of the recipes' HTTP probes, which
//! both run.
//!
//! May import (this file and `http.rs`): `broker`, `deployment`, `error` and
//! the labels; never a backend (they import this file, not the other way).
pub mod docker;
pub mod http;
pub mod lab;
pub mod ssh;

use crate::broker::{BrokerExt, BrokerKind, Capabilities, ClusterContext, Durability, ImageRef};
use crate::deployment::Deployment;
use crate::error::{HarnessError, Result};
use crate::RunId;
use std::collections::BTreeMap;
use std::path::PathBuf;
use std::time::Duration;

/// Launches deployments for runs.
#[async_trait::async_trait]
pub trait Backend: Send + Sync {
    /// The backend's name in messages ("docker").
    fn name(&self) -> &'static str;

    /// Creates and starts the nodes `spec` asks for and waits until the cluster
    /// is ready. On an error, what it had created is removed again. What it
    /// creates carries `spec.run_id`, so [`Backend::remove_run`] finds it.
    async fn launch(&self, spec: ClusterSpec) -> Result<Box<dyn Deployment>>;

    /// Removes everything this backend created for `run`, without the
    /// deployment at hand (Ctrl-C, a crashed harness). Idempotent.
    async fn remove_run(&self, run: &RunId) -> Result<()>;

    /// Whether this backend can mount Gauntlet's filesystem in its nodes (the
    /// disk faults); the reason when it cannot. None can by default.
    fn disk_faults(&self) -> std::result::Result<(), String> {
        Err(format!(
            "the {} backend does not mount Gauntlet's filesystem in its nodes",
            self.name()
        ))
    }
}

/// What to deploy.
#[derive(Debug, Clone)]
pub struct ClusterSpec {
    /// The broker to deploy (its recipe comes with it).
    pub broker: BrokerKind,
    /// Number of nodes; the recipe's default when `None`.
    pub nodes: Option<usize>,
    /// The image every broker node runs.
    pub image: ImageRef,
    /// The run's id: the value of the `gauntlet.run` label and part of every name.
    pub run_id: RunId,
    /// Where teardown writes the node logs (`<dir>/<node>.log`), if anywhere.
    pub logs_dir: Option<PathBuf>,
    /// How long each node may take to become ready; the recipe's default when `None`.
    pub ready_timeout: Option<Duration>,
    /// Build Gauntlet's image when it is missing (as `gauntlet images build` would).
    pub build_missing_image: bool,
    /// Client-facing addresses by node index and port name, when clients reach the
    /// nodes through a proxy (recipes advertise them, see `ClusterContext::client_endpoint`).
    pub client_endpoints: Vec<BTreeMap<&'static str, (String, u16)>>,
    /// More environment for the storage node (`KEY=value`), where there is one.
    pub storage_env: Vec<String>,
    /// When an acknowledged write reaches the disk (the scenario's `[redis]`
    /// and `[nats]`); the recipes' own settings by default. A backend hands it
    /// to the recipe in [`ClusterContext::durability`] and refuses what the
    /// recipe cannot apply ([`ClusterSpec::check_durability`]).
    pub durability: Durability,
    /// Where a build of a missing image tells what it does (nowhere by default).
    pub image_progress: crate::images::SharedProgress,
    /// Gauntlet's filesystem (the `gauntlet-diskfs` binary), mounted over the
    /// data of every broker and storage node that has a data directory: set
    /// only for a run that schedules a disk fault.
    pub diskfs: Option<PathBuf>,
    /// Deploy a dedup store beside the broker for the idempotent consumers
    /// (the scenario's `[dedup]` table, seed D7): a Redis node of Gauntlet's
    /// Redis image. Only the Docker backend deploys one.
    pub dedup_store: bool,
}

impl ClusterSpec {
    /// The recipe's default size, Gauntlet's local image, a fresh run id.
    pub fn new(broker: BrokerKind) -> Self {
        ClusterSpec {
            broker,
            nodes: None,
            image: ImageRef::local(broker),
            run_id: RunId::generate(),
            logs_dir: None,
            ready_timeout: None,
            build_missing_image: false,
            client_endpoints: Vec::new(),
            storage_env: Vec::new(),
            durability: Durability::default(),
            image_progress: Default::default(),
            diskfs: None,
            dedup_store: false,
        }
    }

    /// What the image can do (the memory build of Kafka has one node and forgets
    /// on restart; the durable cluster does not).
    pub fn capabilities(&self) -> Capabilities {
        self.broker.recipe().capabilities_in(&self.image_context())
    }

    /// Refuses durability settings the recipe cannot apply to this image (a
    /// NATS `sync-interval` on the official image, Redis's settings on another
    /// broker), naming the setting.
    pub fn check_durability(&self) -> Result<()> {
        self.broker
            .recipe()
            .check_durability(&self.image_context())
            .map_err(HarnessError::Scenario)
    }

    /// A context with no nodes, for asking the recipe about the image and settings.
    fn image_context(&self) -> ClusterContext {
        let mut ctx = ClusterContext::for_image(self.image.flavour, &self.image.name);
        ctx.durability = self.durability;
        ctx
    }

    /// Whether the nodes of this spec can run Gauntlet's filesystem over their
    /// data (a disk fault); the reason when they cannot.
    pub fn disk_faults(&self) -> std::result::Result<(), String> {
        let recipe = self.broker.recipe();
        let ctx = ClusterContext::for_image(self.image.flavour, &self.image.name);
        if self.image.flavour != crate::broker::Flavour::Gauntlet {
            return Err(format!(
                "{} is not one of Gauntlet's images: Gauntlet's filesystem is started \
                 in front of the node's own entry point, which it knows only for its own images",
                self.image.name
            ));
        }
        let storage = recipe.storage(&ctx).and_then(|s| s.data);
        if recipe.data_dir(&ctx).is_none() && storage.is_none() {
            return Err(format!(
                "{} ({}) keeps no data on its nodes' disks that Gauntlet knows of",
                self.broker, self.image.name
            ));
        }
        Ok(())
    }

    /// The number of broker nodes: as asked, else the recipe's default within
    /// what the image can do.
    pub fn node_count(&self) -> usize {
        self.nodes.unwrap_or_else(|| {
            self.broker
                .recipe()
                .default_nodes()
                .min(self.capabilities().max_nodes)
        })
    }

    /// The same spec with `n` broker nodes.
    pub fn nodes(mut self, n: usize) -> Self {
        self.nodes = Some(n);
        self
    }

    /// The same spec with these durability settings.
    pub fn durability(mut self, d: Durability) -> Self {
        self.durability = d;
        self
    }

    /// The same spec with `image` instead of Gauntlet's local image.
    pub fn image(mut self, image: ImageRef) -> Self {
        self.image = image;
        self
    }

    /// The same spec under the run id `id`.
    pub fn run_id(mut self, id: RunId) -> Self {
        self.run_id = id;
        self
    }

    /// The same spec, whose teardown writes the node logs into `dir`.
    pub fn logs_dir(mut self, dir: impl Into<PathBuf>) -> Self {
        self.logs_dir = Some(dir.into());
        self
    }

    /// The same spec, building Gauntlet's image when it is missing if `yes`.
    pub fn build_missing_image(mut self, yes: bool) -> Self {
        self.build_missing_image = yes;
        self
    }

    /// Clients reach port `port` of node `i` at `addrs[i]` (a proxy), not the published port.
    pub fn client_endpoints(mut self, port: &'static str, addrs: &[std::net::SocketAddr]) -> Self {
        self.client_endpoints = addrs
            .iter()
            .map(|a| BTreeMap::from([(port, (a.ip().to_string(), a.port()))]))
            .collect();
        self
    }
}
