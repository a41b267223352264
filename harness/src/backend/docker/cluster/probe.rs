//! A Docker deployment's readiness probes (a command in the node, or an HTTP
//! GET from here to its published port) and its nodes' logs.
//!
//! May import: its parent (`cluster.rs`), `backend::http`, `broker`, `error`.
use super::DockerDeployment;
use crate::backend::http::{http_get, tail_lines};
use crate::broker::Probe;
use crate::deployment::{Deployment, NodeControl};
use crate::error::{docker_err, HarnessError, Result};
use bollard::query_parameters::LogsOptions;
use futures_util::StreamExt;
use std::time::{Duration, Instant};

impl DockerDeployment {
    /// Every node's own probe, all nodes at once.
    pub(super) async fn wait_nodes_ready(&self, timeout: Duration) -> Result<()> {
        futures_util::future::try_join_all(
            self.nodes.iter().map(|n| self.wait_ready(&n.name, timeout)),
        )
        .await
        .map(|_| ())
    }

    /// Whether the container of `node` runs, and its exit status (-1 when
    /// Docker does not say).
    pub(super) async fn container_state(&self, node: &str) -> Result<(bool, i64)> {
        let n = self.node(node)?;
        let state = self
            .docker
            .inspect_container(&n.container, None)
            .await
            .map_err(docker_err(format!("inspecting node {node}")))?
            .state;
        let running = state.as_ref().and_then(|s| s.running).unwrap_or(false);
        let status = state.as_ref().and_then(|s| s.exit_code).unwrap_or(-1);
        Ok((running, status))
    }

    pub(super) async fn log_tail(&self, node: &str, lines: Option<usize>) -> Result<String> {
        let n = self.node(node)?;
        let mut stream = self.docker.logs(
            &n.container,
            Some(LogsOptions {
                stdout: true,
                stderr: true,
                tail: lines.map_or_else(|| "all".to_string(), |l| l.to_string()),
                ..Default::default()
            }),
        );
        let mut out = Vec::new();
        while let Some(chunk) = stream.next().await {
            match chunk {
                Ok(o) => out.extend_from_slice(&o.into_bytes()),
                Err(e) => return Err(docker_err(format!("reading the log of {node}"))(e)),
            }
        }
        Ok(String::from_utf8_lossy(&out).into_owned())
    }

    pub(super) async fn run_probe(&self, node: &str, probe: &Probe) -> Result<(bool, String)> {
        match probe {
            Probe::Exec { command, expect } => {
                let out = self.exec(node, command, Duration::from_secs(30)).await?;
                let ok = out.success()
                    && expect
                        .as_ref()
                        .is_none_or(|e| out.stdout.contains(e.as_str()));
                Ok((ok, out.combined()))
            }
            Probe::Http { port, path, expect } => {
                let i = self.index(node)?;
                let Some((host, p)) = self.ctx.host_endpoints[i].get(port).cloned() else {
                    return Ok((false, format!("node has no port named {port}")));
                };
                match http_get(&host, p, path).await {
                    Ok((status, body)) => {
                        let ok = status == 200
                            && expect.as_ref().is_none_or(|e| body.contains(e.as_str()));
                        Ok((ok, format!("HTTP {status}\n{body}")))
                    }
                    Err(e) => Ok((false, e)),
                }
            }
        }
    }

    pub(super) async fn wait_probe(
        &self,
        node: &str,
        probe: &Probe,
        timeout: Duration,
    ) -> Result<()> {
        let started = Instant::now();
        loop {
            let (running, status) = self.container_state(node).await?;
            if !running {
                if let Some(e) = self.fs_failure(node).await {
                    return Err(e);
                }
                let log_tail = self.log_tail(node, Some(40)).await.unwrap_or_default();
                return Err(HarnessError::NodeExited {
                    node: node.to_string(),
                    status,
                    log_tail,
                });
            }
            let last = match self.run_probe(node, probe).await {
                Ok((true, _)) => return Ok(()),
                Ok((false, out)) => out,
                Err(e) => e.to_string(),
            };
            if started.elapsed() >= timeout {
                let log_tail = self.log_tail(node, Some(40)).await.unwrap_or_default();
                return Err(HarnessError::NotReady {
                    node: node.to_string(),
                    waited: started.elapsed(),
                    probe: probe.display(),
                    probe_output: tail_lines(&last, 20),
                    log_tail,
                });
            }
            tokio::time::sleep(Duration::from_millis(500)).await;
        }
    }
}
