//! The backend-neutral face of a running cluster: a [`Deployment`] (named nodes,
//! client endpoints, logs, teardown) and [`NodeControl`] (process faults and exec).
//! Docker implements both in [`crate::backend::docker`]; Kubernetes or SSH can be added beside it.
use crate::broker::{BrokerKind, Capabilities, Command};
use crate::error::Result;
use crate::RunId;
use std::path::{Path, PathBuf};
use std::time::Duration;

/// One client endpoint of one node, reachable from the host running Gauntlet.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct Endpoint {
    /// Node name (n1..nN).
    pub node: String,
    /// Port name from the recipe ("amqp", "client", "kafka", "http", ...).
    pub port_name: String,
    /// The host clients connect to (`127.0.0.1` for Docker's published ports).
    pub host: String,
    /// The port clients connect to on `host`.
    pub port: u16,
}

impl Endpoint {
    /// `host:port`.
    pub fn addr(&self) -> String {
        format!("{}:{}", self.host, self.port)
    }
}

/// What a command run inside a node printed, and how it ended.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ExecOutput {
    /// The command's exit status (-1 when the backend could not tell).
    pub exit_code: i64,
    /// What it printed on stdout (lossy UTF-8).
    pub stdout: String,
    /// What it printed on stderr (lossy UTF-8).
    pub stderr: String,
}

impl ExecOutput {
    /// The command exited 0.
    pub fn success(&self) -> bool {
        self.exit_code == 0
    }

    /// stdout and stderr together, for messages.
    pub fn combined(&self) -> String {
        let mut s = self.stdout.clone();
        if !self.stderr.is_empty() {
            if !s.is_empty() && !s.ends_with('\n') {
                s.push('\n');
            }
            s.push_str(&self.stderr);
        }
        s
    }
}

/// Process-level faults and commands on single nodes, by node name.
#[async_trait::async_trait]
pub trait NodeControl: Send + Sync {
    /// SIGKILL the node's broker process (the node keeps its disk).
    async fn kill(&self, node: &str) -> Result<()>;
    /// Stop gracefully (SIGTERM, then SIGKILL after `grace`).
    async fn stop(&self, node: &str, grace: Duration) -> Result<()>;
    /// Start a stopped or killed node. Does not wait for readiness: see
    /// [`Deployment::wait_ready`].
    async fn start(&self, node: &str) -> Result<()>;
    /// Stop and start.
    async fn restart(&self, node: &str, grace: Duration) -> Result<()>;
    /// Freeze every process of the node (SIGSTOP-like, via the cgroup freezer).
    async fn pause(&self, node: &str) -> Result<()>;
    /// Resume every process [`NodeControl::pause`] froze.
    async fn unpause(&self, node: &str) -> Result<()>;
    /// Run a command inside the node (as root with NET_ADMIN unless `command.user`
    /// says otherwise) and wait for it, at most `timeout`.
    async fn exec(&self, node: &str, command: &Command, timeout: Duration) -> Result<ExecOutput>;

    /// Drop what `node` receives from `ips` (and, with `outbound`, what it sends
    /// to them) until [`NodeControl::heal_traffic`]. By default the iptables
    /// commands of `gauntlet_nemesis::net` through [`NodeControl::exec`]; a
    /// backend whose nodes share a host's firewall keeps its rules apart.
    async fn drop_traffic(&self, node: &str, ips: &[String], outbound: bool) -> Result<()> {
        self.exec_checked(node, &gauntlet_nemesis::net::drop_script(ips, outbound))
            .await
    }
    /// Remove every rule [`NodeControl::drop_traffic`] added on `node`.
    async fn heal_traffic(&self, node: &str) -> Result<()> {
        self.exec_checked(node, gauntlet_nemesis::net::HEAL_SCRIPT)
            .await
    }
    /// Delay what `node` sends by `ms` until [`NodeControl::remove_delay`] (netem).
    async fn add_delay(&self, node: &str, ms: u32) -> Result<()> {
        self.exec_checked(node, &gauntlet_nemesis::net::delay_script(ms))
            .await
    }
    /// Remove the delay of [`NodeControl::add_delay`]; succeeds when there is none.
    async fn remove_delay(&self, node: &str) -> Result<()> {
        self.exec_checked(node, gauntlet_nemesis::net::UNDELAY_SCRIPT)
            .await
    }
    /// The IPv4 address other nodes reach `node` at (what a partition drops).
    /// By default the first IPv4 address `hostname -i` prints inside the node,
    /// right for a container; a backend whose nodes are hosts knows better
    /// (`hostname -i` on a Debian host says 127.0.1.1).
    async fn node_ip(&self, node: &str) -> Result<String> {
        let out = self
            .exec(
                node,
                &Command::shell("hostname -i"),
                Duration::from_secs(20),
            )
            .await?;
        out.stdout
            .split_whitespace()
            .find(|w| w.parse::<std::net::Ipv4Addr>().is_ok())
            .map(str::to_string)
            .ok_or_else(|| crate::error::HarnessError::CommandFailed {
                node: node.to_string(),
                cmd: "hostname -i".into(),
                code: out.exit_code,
                output: format!("no IPv4 address in {:?}", out.combined()),
            })
    }
    /// Run a shell script in `node` (at most 20 s); an error when it fails.
    async fn exec_checked(&self, node: &str, script: &str) -> Result<()> {
        let out = self
            .exec(node, &Command::shell(script), Duration::from_secs(20))
            .await?;
        if out.success() {
            Ok(())
        } else {
            Err(crate::error::HarnessError::CommandFailed {
                node: node.to_string(),
                cmd: script.to_string(),
                code: out.exit_code,
                output: out.combined(),
            })
        }
    }
}

/// A running cluster of one broker.
#[async_trait::async_trait]
pub trait Deployment: NodeControl {
    /// The run this deployment belongs to (every object it creates carries it).
    fn run_id(&self) -> &RunId;
    /// The broker the nodes run.
    fn broker(&self) -> BrokerKind;
    /// Node names, n1..nN, stable for the life of the deployment (also across restarts).
    fn nodes(&self) -> Vec<String>;
    /// Every client endpoint of every node.
    fn endpoints(&self) -> Vec<Endpoint>;
    /// What this deployment supports.
    fn capabilities(&self) -> Capabilities;
    /// The node that stores the brokers' data, when it is not a broker
    /// (`storage` of a tansu cluster); [`NodeControl`] takes its name like a
    /// broker's, but it is not one of [`Deployment::nodes`].
    fn storage_node(&self) -> Option<String> {
        None
    }
    /// The endpoint of `node` for the recipe's port `port_name`.
    fn endpoint(&self, node: &str, port_name: &str) -> Option<Endpoint> {
        self.endpoints()
            .into_iter()
            .find(|e| e.node == node && e.port_name == port_name)
    }
    /// `host:port` of port `port_name` on every node, in node order.
    fn addrs(&self, port_name: &str) -> Vec<String> {
        self.endpoints()
            .into_iter()
            .filter(|e| e.port_name == port_name)
            .map(|e| e.addr())
            .collect()
    }
    /// Wait until `node` answers its readiness probe again (e.g. after a restart).
    async fn wait_ready(&self, node: &str, timeout: Duration) -> Result<()>;
    /// Wait until every node and the cluster as a whole are ready.
    async fn wait_cluster_ready(&self, timeout: Duration) -> Result<()>;
    /// Write each node's log into `dir` as `<node>.log`; returns the files written.
    async fn collect_logs(&self, dir: &Path) -> Result<Vec<PathBuf>>;
    /// Remove every node and network of the deployment. Idempotent.
    async fn teardown(&self) -> Result<()>;
}
