//! Reaching the Docker Engine, and what carries a run's `gauntlet.run` label:
//! listing and removing it (also blocking, from `Drop`).
//!
//! May import: `error` and the labels.
use crate::error::{docker_err, is_not_found, HarnessError, Result};
use crate::{RunId, LABEL_RUN};
use bollard::query_parameters::{
    ListContainersOptions, ListNetworksOptions, RemoveContainerOptions,
};
use bollard::Docker;
use std::collections::HashMap;

/// Connect to the local Docker Engine (`DOCKER_HOST` or the default socket) and
/// agree on an API version it speaks (Docker 20.10 speaks at most 1.41).
pub async fn connect() -> Result<Docker> {
    let docker = Docker::connect_with_local_defaults().map_err(HarnessError::DockerConnect)?;
    docker
        .negotiate_version()
        .await
        .map_err(HarnessError::DockerConnect)
}

/// Objects found (or removed) by label.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Labelled {
    /// (id, name) of each container.
    pub containers: Vec<(String, String)>,
    /// (id, name) of each network.
    pub networks: Vec<(String, String)>,
}

impl Labelled {
    /// No container and no network.
    pub fn is_empty(&self) -> bool {
        self.containers.is_empty() && self.networks.is_empty()
    }
}

fn label_filter(run: Option<&RunId>) -> HashMap<String, Vec<String>> {
    let value = match run {
        Some(id) => format!("{LABEL_RUN}={id}"),
        None => LABEL_RUN.to_string(),
    };
    HashMap::from([("label".to_string(), vec![value])])
}

/// The object's own labels carry `gauntlet.run` (with `run`'s value, if given).
fn carries_run(labels: Option<&HashMap<String, String>>, run: Option<&RunId>) -> bool {
    labels
        .and_then(|l| l.get(LABEL_RUN))
        .is_some_and(|v| run.is_none_or(|r| v == r.as_str()))
}

/// Containers and networks carrying `gauntlet.run` (any run, or just `run`).
/// Nothing without the label is ever listed.
pub async fn list_labelled(docker: &Docker, run: Option<&RunId>) -> Result<Labelled> {
    let containers = docker
        .list_containers(Some(ListContainersOptions {
            all: true,
            filters: Some(label_filter(run)),
            ..Default::default()
        }))
        .await
        .map_err(docker_err("listing labelled containers"))?;
    let networks = docker
        .list_networks(Some(ListNetworksOptions {
            filters: Some(label_filter(run)),
        }))
        .await
        .map_err(docker_err("listing labelled networks"))?;
    let mut found = Labelled::default();
    for c in containers {
        // The daemon filtered by label already; check again, so that an engine that
        // ignored the filter can never make us remove someone else's container.
        if let (true, Some(id)) = (carries_run(c.labels.as_ref(), run), c.id) {
            let name = c
                .names
                .and_then(|n| n.into_iter().next())
                .unwrap_or_default();
            found
                .containers
                .push((id, name.trim_start_matches('/').to_string()));
        }
    }
    for n in networks {
        if let (true, Some(id)) = (carries_run(n.labels.as_ref(), run), n.id) {
            found.networks.push((id, n.name.unwrap_or_default()));
        }
    }
    Ok(found)
}

/// Remove the labelled containers (with their anonymous volumes) and networks of
/// one run, or of every run when `run` is `None`. Returns what was removed.
pub async fn remove_labelled(docker: &Docker, run: Option<&RunId>) -> Result<Labelled> {
    let found = list_labelled(docker, run).await?;
    let mut first_error = None;
    for (id, name) in &found.containers {
        let r = docker
            .remove_container(
                id,
                Some(RemoveContainerOptions {
                    force: true,
                    v: true,
                    ..Default::default()
                }),
            )
            .await;
        if let Err(e) = r {
            if !is_not_found(&e) && first_error.is_none() {
                first_error = Some(docker_err(format!("removing container {name}"))(e));
            }
        }
    }
    for (id, name) in &found.networks {
        if let Err(e) = docker.remove_network(id).await {
            if !is_not_found(&e) && first_error.is_none() {
                first_error = Some(docker_err(format!("removing network {name}"))(e));
            }
        }
    }
    match first_error {
        Some(e) => Err(e),
        None => Ok(found),
    }
}

/// Blocking cleanup of one run, safe to call from `Drop` (also while panicking and
/// from inside a tokio runtime): runs on its own thread with its own runtime.
pub fn remove_run_blocking(run: &RunId) -> Result<Labelled> {
    let run = run.clone();
    let handle = std::thread::spawn(move || -> Result<Labelled> {
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .map_err(crate::error::io_err("starting a cleanup runtime"))?;
        rt.block_on(async {
            let docker = connect().await?;
            remove_labelled(&docker, Some(&run)).await
        })
    });
    match handle.join() {
        Ok(r) => r,
        Err(_) => Err(HarnessError::Io {
            what: "cleaning up".into(),
            source: std::io::Error::other("cleanup thread panicked"),
        }),
    }
}
