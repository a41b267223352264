//! The Docker backend: a private bridge network per run, one container per node,
//! client ports published on 127.0.0.1, everything labelled `gauntlet.run=<id>`.
//!
//! This file holds the [`DockerBackend`] and the Ctrl-C cleanup; the deployment
//! is in `cluster.rs`, what carries the run's label (listing, removing) in
//! `labelled.rs`, the host ports in `ports.rs`, the image check in `image.rs`.
//!
//! May import: `backend` (the [`Backend`] trait and [`ClusterSpec`]), `broker`,
//! `deployment`, `images` (to build a missing image), `error` and the labels.
//! Never the run pipeline (`run`) or the SSH backend. No file of this module
//! imports this one.
mod cluster;
mod image;
mod labelled;
mod ports;

pub use cluster::DockerDeployment;
pub use labelled::{connect, list_labelled, remove_labelled, remove_run_blocking, Labelled};

use crate::backend::{Backend, ClusterSpec};
use crate::deployment::Deployment;
use crate::error::Result;
use crate::RunId;

/// On Ctrl-C, removes the run's containers and network; the task then ends with
/// the cleanup's result (the caller tells the user and exits). Call once per
/// run, from inside a tokio runtime.
pub fn remove_on_ctrl_c(run: RunId) -> tokio::task::JoinHandle<Result<()>> {
    tokio::spawn(async move {
        if tokio::signal::ctrl_c().await.is_err() {
            // No signal handler: nothing will ever ask for the cleanup.
            std::future::pending::<()>().await;
        }
        let docker = connect().await?;
        remove_labelled(&docker, Some(&run)).await.map(|_| ())
    })
}

/// Nodes as containers of the local Docker Engine, on a network of their own.
pub struct DockerBackend {
    docker: bollard::Docker,
}

impl DockerBackend {
    /// Connects to the Docker Engine (as `docker` would: `DOCKER_HOST` or the
    /// local socket) and checks that it answers.
    pub async fn connect() -> Result<Self> {
        Ok(DockerBackend {
            docker: connect().await?,
        })
    }
}

#[async_trait::async_trait]
impl Backend for DockerBackend {
    fn name(&self) -> &'static str {
        "docker"
    }

    async fn launch(&self, spec: ClusterSpec) -> Result<Box<dyn Deployment>> {
        Ok(Box::new(
            DockerDeployment::launch(&self.docker, spec).await?,
        ))
    }

    async fn remove_run(&self, run: &RunId) -> Result<()> {
        remove_labelled(&self.docker, Some(run)).await.map(|_| ())
    }

    /// Containers get `/dev/fuse` and `SYS_ADMIN` for the run; whether the
    /// mount works is tried for real when the nodes start (a node whose mount
    /// is refused exits with the filesystem's reason).
    fn disk_faults(&self) -> std::result::Result<(), String> {
        Ok(())
    }
}
