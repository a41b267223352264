//! The backend-neutral face of a running cluster: a [`Deployment`] (named nodes,
//! client endpoints, logs, teardown) over [`NodeControl`] (process faults and
//! exec), the nemesis's trait, which each backend implements directly: Docker
//! in [`crate::backend::docker`], SSH in [`crate::backend::ssh`].
use crate::broker::{BrokerKind, Capabilities};
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

pub use gauntlet_nemesis::{ExecOutput, NodeControl};

/// What a [`NodeControl`] method returns: a backend maps its [`HarnessError`]
/// into the nemesis's [`gauntlet_nemesis::ControlError`] with `?` or `.into()`,
/// and the harness takes it back the same way.
///
/// [`HarnessError`]: crate::error::HarnessError
pub type CtlResult<T> = std::result::Result<T, gauntlet_nemesis::ControlError>;

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
    /// Whether Gauntlet's filesystem runs over the data of the nodes (the disk
    /// faults need it); none by default.
    fn disk_mounted(&self) -> bool {
        false
    }
    /// The node that stores the brokers' data, when it is not a broker
    /// (`storage` of a tansu cluster); [`NodeControl`] takes its name like a
    /// broker's, but it is not one of [`Deployment::nodes`].
    fn storage_node(&self) -> Option<String> {
        None
    }
    /// The idempotent consumers' dedup store (seed D7), when the run deployed
    /// one: its node (`dedup-store`, which [`NodeControl`] takes like a
    /// broker's, though it is not one of [`Deployment::nodes`]) and where
    /// clients reach it. None by default.
    fn dedup_store(&self) -> Option<Endpoint> {
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
