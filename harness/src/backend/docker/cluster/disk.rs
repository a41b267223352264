//! A Docker deployment's disk faults: nodes started under Gauntlet's
//! filesystem (`/dev/fuse`, `SYS_ADMIN`, the binary bind-mounted read-only),
//! their crash and disk faults done by it, and its own failure told apart
//! from the broker's.
//!
//! May import: its parent (`cluster.rs`), `broker`, `diskfs`, `error`.
use super::DockerDeployment;
use crate::broker::{DataDir, NodePlan};
use crate::deployment::NodeControl;
use crate::diskfs;
use crate::error::{HarnessError, Result};
use bollard::models::{DeviceMapping, HostConfig};
use gauntlet_nemesis::DiskFault;
use serde_json::{json, Value};
use std::path::Path;
use std::time::{Duration, Instant};

/// How long a node may take to stop after its filesystem was told to crash it.
const STOP_WAIT: Duration = Duration::from_secs(60);

/// Gives a container what Gauntlet's filesystem needs (FUSE, `SYS_ADMIN`, no
/// AppArmor profile that forbids mounts, the binary at [`diskfs::IN_NODE`])
/// and returns the entry point that starts the node under it.
pub(super) fn mount(
    host: &mut HostConfig,
    binary: &Path,
    plan: &NodePlan,
    data: &DataDir,
    what: &str,
) -> Result<Vec<String>> {
    let entry = plan.entrypoint.as_ref().ok_or_else(|| {
        HarnessError::Scenario(format!(
            "{what} starts with its image's own entry point, which Gauntlet's filesystem \
             cannot be put in front of"
        ))
    })?;
    host.cap_add
        .get_or_insert_with(Vec::new)
        .push("SYS_ADMIN".into());
    host.devices = Some(vec![DeviceMapping {
        path_on_host: Some("/dev/fuse".into()),
        path_in_container: Some("/dev/fuse".into()),
        cgroup_permissions: Some("rwm".into()),
    }]);
    host.security_opt = Some(vec!["apparmor:unconfined".into()]);
    host.binds = Some(vec![format!("{}:{}:ro", binary.display(), diskfs::IN_NODE)]);
    Ok(diskfs::wrap(entry, data))
}

impl DockerDeployment {
    /// Whether the container of `node` is running.
    async fn running(&self, node: &str) -> Result<bool> {
        Ok(self.container_state(node).await?.0)
    }

    /// Waits until the container of `node` has stopped (its filesystem ends
    /// it after a fault); SIGKILLs it after [`STOP_WAIT`].
    async fn wait_stopped(&self, node: &str) -> Result<Duration> {
        let started = Instant::now();
        while self.running(node).await? {
            if started.elapsed() >= STOP_WAIT {
                let n = self.node(node)?;
                let _ = self
                    .docker
                    .kill_container(
                        &n.container,
                        None::<bollard::query_parameters::KillContainerOptions>,
                    )
                    .await;
                return Err(HarnessError::DiskFs {
                    node: node.to_string(),
                    why: format!(
                        "the node was still running {} s after the filesystem was told to end it",
                        STOP_WAIT.as_secs()
                    ),
                });
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
        Ok(started.elapsed())
    }

    /// Runs the filesystem's `command` in `node` and waits until the node has
    /// stopped; the filesystem's report, or its failure.
    async fn through_fs(&self, node: &str, command: &crate::broker::Command) -> Result<Value> {
        let out = self.exec(node, command, STOP_WAIT).await;
        let printed = match &out {
            Ok(o) => o.combined(),
            Err(e) => e.to_string(),
        };
        let report = out
            .as_ref()
            .ok()
            .and_then(|o| diskfs::report(&o.stdout))
            .or_else(|| diskfs::report(&printed));
        // The filesystem refused (it did nothing and the node runs on): say
        // why at once; it ends the node only after a report.
        let refused = matches!(&out, Ok(o) if !o.success()) && report.is_none();
        if refused && self.running(node).await? {
            return Err(HarnessError::DiskFs {
                node: node.to_string(),
                why: format!("`{}` refused: {}", command.display(), printed.trim()),
            });
        }
        let stopped = self.wait_stopped(node).await?;
        let Some(mut report) = report else {
            let log = self.log_tail(node, Some(40)).await.unwrap_or_default();
            let why = diskfs::failure_in(&log).unwrap_or_else(|| {
                format!("`{}` gave no report: {}", command.display(), printed.trim())
            });
            return Err(HarnessError::DiskFs {
                node: node.to_string(),
                why,
            });
        };
        report["stopped_after_ms"] = json!(stopped.as_millis() as u64);
        Ok(report)
    }

    /// `kill` of a mounted node: its filesystem kills its processes and keeps
    /// what they wrote (a process crash keeps the OS's page cache). `false`
    /// when the filesystem does not answer (the node is down already): the
    /// caller kills the container.
    pub(super) async fn crash_mounted(&self, node: &str) -> Result<bool> {
        if !self.running(node).await? {
            return Ok(false);
        }
        match self.through_fs(node, &diskfs::crash()).await {
            Ok(_) => Ok(true),
            Err(HarnessError::DiskFs { .. }) if !self.running(node).await? => Ok(true),
            Err(e) => Err(e),
        }
    }

    /// A disk fault on `node` ([`NodeControl::disk_fault`]). A broker node that
    /// keeps nothing on its disk (a tansu broker, whose data is in PostgreSQL)
    /// takes a power loss as the process crash it is for it; corruption and
    /// wiping are refused there.
    pub(super) async fn strike_disk(
        &self,
        node: &str,
        fault: DiskFault,
        seed: u64,
    ) -> Result<Value> {
        let Some(data) = self.mounted.get(node) else {
            if let DiskFault::PowerLoss { .. } = fault {
                self.kill(node).await?;
                return Ok(json!({
                    "fault": fault.name(),
                    "mounted": false,
                    "note": format!("{node} keeps no data on its own disk: a power loss is a process crash there"),
                }));
            }
            return Err(HarnessError::Control(
                gauntlet_nemesis::ControlError::Unsupported(format!(
                    "{} on {node}: the node keeps no data on its own disk",
                    fault.name()
                )),
            ));
        };
        if !self.running(node).await? {
            return Err(HarnessError::DiskFs {
                node: node.to_string(),
                why: format!("{} asked while the node is down", fault.name()),
            });
        }
        let mut report = self
            .through_fs(node, &diskfs::command(fault, seed, data))
            .await?;
        report["data_dir"] = json!(data.path);
        Ok(report)
    }

    /// The filesystem's own failure in a stopped node's log, as the error to
    /// report instead of the node's exit.
    pub(super) async fn fs_failure(&self, node: &str) -> Option<HarnessError> {
        if !self.mounted.contains_key(node) {
            return None;
        }
        let log = self.log_tail(node, Some(200)).await.ok()?;
        diskfs::failure_in(&log).map(|why| HarnessError::DiskFs {
            node: node.to_string(),
            why,
        })
    }
}
