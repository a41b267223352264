//! Where a run's nodes come from. A [`Backend`] turns the scenario's
//! [`ClusterSpec`] into a running [`Deployment`], and removes what it created
//! for a run that is interrupted. The run pipeline takes one
//! (`run::run_with_backend`); Docker is the only one today
//! ([`DockerBackend`]), and SSH hosts or Kubernetes are additions beside it
//! (`docs/backends.md`).
pub mod docker;
pub mod ssh;

use crate::deployment::Deployment;
use docker::{ClusterSpec, DockerDeployment};
use crate::error::Result;
use crate::RunId;

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
            docker: docker::connect().await?,
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
        docker::remove_labelled(&self.docker, Some(run))
            .await
            .map(|_| ())
    }
}
