//! A deployment that is only bookkeeping, for the fast tests of the run pipeline:
//! it records what the pipeline asked of it, keeps each node's state (up, killed,
//! paused), and answers commands from a table. No Docker, no broker.
use crate::broker::BrokerExt;
use crate::broker::{BrokerKind, Capabilities, Command};
use crate::deployment::{CtlResult, Deployment, Endpoint, ExecOutput, NodeControl};
use crate::error::{HarnessError, Result};
use crate::RunId;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::Duration;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum NodeState {
    Up,
    Killed,
    Paused,
    /// Starts, and never becomes ready (a node that does not come back).
    Broken,
}

pub(super) struct FakeDeployment {
    run_id: RunId,
    broker: BrokerKind,
    nodes: Vec<String>,
    storage: Option<String>,
    caps: Capabilities,
    state: Mutex<BTreeMap<String, NodeState>>,
    /// Every call, in order: `kill n1`, `exec n2 iptables -F INPUT ...`, `teardown`.
    calls: Arc<Mutex<Vec<String>>>,
}

impl FakeDeployment {
    /// `n` broker nodes that can do everything (process faults, iptables and tc).
    pub(super) fn new(broker: BrokerKind, n: usize) -> Self {
        let nodes: Vec<String> = (1..=n).map(|i| format!("n{i}")).collect();
        let state = nodes.iter().map(|n| (n.clone(), NodeState::Up)).collect();
        FakeDeployment {
            run_id: RunId::from_name("fake"),
            broker,
            nodes,
            storage: None,
            caps: Capabilities {
                max_nodes: 9,
                durable_across_restart: true,
                replicated: true,
                transactions: false,
                process_faults: true,
                pause: true,
                net_admin_exec: true,
            },
            state: Mutex::new(state),
            calls: Arc::default(),
        }
    }

    pub(super) fn with_caps(mut self, f: impl FnOnce(&mut Capabilities)) -> Self {
        f(&mut self.caps);
        self
    }

    pub(super) fn with_storage(mut self) -> Self {
        self.storage = Some("storage".into());
        self.lock_state().insert("storage".into(), NodeState::Up);
        self
    }

    /// Records its calls into `calls` (a [`FakeBackend`]'s log, kept after the
    /// deployment is gone).
    pub(super) fn sharing_calls(mut self, calls: Arc<Mutex<Vec<String>>>) -> Self {
        self.calls = calls;
        self
    }

    pub(super) fn calls(&self) -> Vec<String> {
        self.calls.lock().map(|c| c.clone()).unwrap_or_default()
    }

    pub(super) fn state_of(&self, node: &str) -> Option<NodeState> {
        self.lock_state().get(node).copied()
    }

    pub(super) fn set_state(&self, node: &str, s: NodeState) {
        self.lock_state().insert(node.to_string(), s);
    }

    fn lock_state(&self) -> std::sync::MutexGuard<'_, BTreeMap<String, NodeState>> {
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }

    fn call(&self, c: String) {
        if let Ok(mut calls) = self.calls.lock() {
            calls.push(c);
        }
    }

    fn known(&self, node: &str) -> Result<()> {
        if self.lock_state().contains_key(node) {
            Ok(())
        } else {
            Err(HarnessError::Scenario(format!("no node {node}")))
        }
    }
}

#[async_trait::async_trait]
impl NodeControl for FakeDeployment {
    async fn kill(&self, node: &str) -> CtlResult<()> {
        self.known(node)?;
        self.call(format!("kill {node}"));
        self.set_state(node, NodeState::Killed);
        Ok(())
    }
    async fn stop(&self, node: &str, _grace: Duration) -> CtlResult<()> {
        self.known(node)?;
        self.call(format!("stop {node}"));
        self.set_state(node, NodeState::Killed);
        Ok(())
    }
    async fn start(&self, node: &str) -> CtlResult<()> {
        self.known(node)?;
        self.call(format!("start {node}"));
        if self.state_of(node) != Some(NodeState::Broken) {
            self.set_state(node, NodeState::Up);
        }
        Ok(())
    }
    async fn restart(&self, node: &str, grace: Duration) -> CtlResult<()> {
        self.stop(node, grace).await?;
        self.start(node).await
    }
    async fn pause(&self, node: &str) -> CtlResult<()> {
        self.known(node)?;
        self.call(format!("pause {node}"));
        self.set_state(node, NodeState::Paused);
        Ok(())
    }
    async fn unpause(&self, node: &str) -> CtlResult<()> {
        self.known(node)?;
        self.call(format!("unpause {node}"));
        if self.state_of(node) == Some(NodeState::Paused) {
            self.set_state(node, NodeState::Up);
        }
        Ok(())
    }
    async fn exec(
        &self,
        node: &str,
        command: &Command,
        _timeout: Duration,
    ) -> CtlResult<ExecOutput> {
        self.known(node)?;
        let script = command.argv.last().cloned().unwrap_or_default();
        self.call(format!("exec {node} {script}"));
        if self.state_of(node) != Some(NodeState::Up) {
            return Err(HarnessError::Scenario(format!("{node} is not running")).into());
        }
        let stdout = if script == "hostname -i" {
            let i = self.nodes.iter().position(|n| n == node).unwrap_or(99) + 1;
            format!("10.9.0.{i}\n")
        } else {
            String::new()
        };
        Ok(ExecOutput {
            exit_code: 0,
            stdout,
            stderr: String::new(),
        })
    }
}

#[async_trait::async_trait]
impl Deployment for FakeDeployment {
    fn run_id(&self) -> &RunId {
        &self.run_id
    }
    fn broker(&self) -> BrokerKind {
        self.broker
    }
    fn nodes(&self) -> Vec<String> {
        self.nodes.clone()
    }
    fn endpoints(&self) -> Vec<Endpoint> {
        let port = self
            .broker
            .recipe()
            .ports()
            .first()
            .map(|p| p.name)
            .unwrap_or("client");
        self.nodes
            .iter()
            .enumerate()
            .map(|(i, n)| Endpoint {
                node: n.clone(),
                port_name: port.to_string(),
                host: "127.0.0.1".into(),
                port: 40_000 + i as u16,
            })
            .collect()
    }
    fn capabilities(&self) -> Capabilities {
        self.caps
    }
    fn storage_node(&self) -> Option<String> {
        self.storage.clone()
    }
    async fn wait_ready(&self, node: &str, _timeout: Duration) -> Result<()> {
        self.known(node)?;
        match self.state_of(node) {
            Some(NodeState::Up) => Ok(()),
            s => Err(HarnessError::Scenario(format!("{node} is {s:?}"))),
        }
    }
    async fn wait_cluster_ready(&self, timeout: Duration) -> Result<()> {
        self.call("wait-cluster-ready".into());
        for n in self.nodes.iter().chain(&self.storage) {
            self.wait_ready(n, timeout).await?;
        }
        Ok(())
    }
    async fn collect_logs(&self, dir: &Path) -> Result<Vec<PathBuf>> {
        self.call("collect-logs".into());
        let mut out = Vec::new();
        for n in self.nodes.iter().chain(&self.storage) {
            let p = dir.join(format!("{n}.log"));
            std::fs::write(&p, format!("fake log of {n}\n"))
                .map_err(|e| HarnessError::RunFolder(e.to_string()))?;
            out.push(p);
        }
        Ok(out)
    }
    async fn teardown(&self) -> Result<()> {
        self.call("teardown".into());
        Ok(())
    }
}

/// A backend that launches [`FakeDeployment`]s: it logs each launch (broker,
/// node count, run id, logs folder) and each removal, and the deployments it
/// makes log their calls into the same list.
#[derive(Default)]
pub(super) struct FakeBackend {
    pub(super) calls: Arc<Mutex<Vec<String>>>,
    /// Launches fail with this message.
    pub(super) fail_launch: Option<String>,
}

impl FakeBackend {
    pub(super) fn calls(&self) -> Vec<String> {
        self.calls.lock().map(|c| c.clone()).unwrap_or_default()
    }
}

#[async_trait::async_trait]
impl crate::backend::Backend for FakeBackend {
    fn name(&self) -> &'static str {
        "fake"
    }
    async fn launch(&self, spec: crate::backend::ClusterSpec) -> Result<Box<dyn Deployment>> {
        if let Ok(mut c) = self.calls.lock() {
            c.push(format!(
                "launch {} x{} run {} logs {}",
                spec.broker,
                spec.node_count(),
                spec.run_id,
                spec.logs_dir
                    .as_ref()
                    .and_then(|d| d.file_name())
                    .map(|f| f.to_string_lossy().into_owned())
                    .unwrap_or_default()
            ));
        }
        if let Some(m) = &self.fail_launch {
            return Err(HarnessError::Scenario(m.clone()));
        }
        Ok(Box::new(
            FakeDeployment::new(spec.broker, spec.node_count()).sharing_calls(self.calls.clone()),
        ))
    }
    async fn remove_run(&self, run: &RunId) -> Result<()> {
        if let Ok(mut c) = self.calls.lock() {
            c.push(format!("remove-run {run}"));
        }
        Ok(())
    }
}
