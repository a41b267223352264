//! What each broker needs to run as a cluster: its recipe, as data, free of any
//! container runtime. A deployment backend (Docker today) turns a recipe into nodes.
//!
//! May import: nothing of the crate. The recipes ([`crate::brokers`]) import
//! this file, and implement [`BrokerExt`] there; nothing here names a recipe,
//! an image builder or a backend.
use std::collections::BTreeMap;
use std::time::Duration;

pub use gauntlet_workloads::broker::{BrokerKind, UnknownBroker};

/// What the harness knows of each broker: its recipe and its local image.
/// Implemented for [`BrokerKind`] in [`crate::brokers`], beside the recipes.
pub trait BrokerExt {
    /// The recipe that deploys this broker.
    fn recipe(self) -> &'static dyn Recipe;
    /// The local image Gauntlet builds for this broker: `gauntlet/<broker>:<version>`.
    fn default_image(self) -> String;
}

/// Which conventions the image follows: Gauntlet's own Debian-based images, or the
/// broker's official image (`rabbitmq:4`, `nats:2.10`, `redis:7`, `apache/kafka:3.9`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Flavour {
    /// Gauntlet's own image (`gauntlet/<broker>:<version>`), built by [`crate::images`]
    /// from one Debian rootfs, with iptables, tc and tini.
    #[default]
    Gauntlet,
    /// The broker's official image, started the way its documentation says.
    Official,
}

/// The image a deployment uses, and its flavour.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ImageRef {
    /// The image's name and tag, as Docker knows it.
    pub name: String,
    /// Which conventions the image follows.
    pub flavour: Flavour,
}

impl ImageRef {
    /// Gauntlet's local image for `broker`.
    pub fn local(broker: BrokerKind) -> Self {
        ImageRef {
            name: broker.default_image(),
            flavour: Flavour::Gauntlet,
        }
    }

    /// An image given by name; names starting with `gauntlet/` are Gauntlet's flavour,
    /// anything else is taken to follow the official image's conventions.
    pub fn named(name: impl Into<String>) -> Self {
        let name = name.into();
        let flavour = if name.starts_with("gauntlet/") {
            Flavour::Gauntlet
        } else {
            Flavour::Official
        };
        ImageRef { name, flavour }
    }
}

/// What a broker (or a deployment of it) can do; nemesis and workloads consult this
/// instead of guessing.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, serde::Serialize)]
pub struct Capabilities {
    /// Largest number of nodes the recipe can form into one cluster.
    pub max_nodes: usize,
    /// Acknowledged data survives a SIGKILL and restart of a node.
    pub durable_across_restart: bool,
    /// Data is replicated across nodes.
    pub replicated: bool,
    /// Kafka-style transactions (EndTxn) are offered.
    pub transactions: bool,
    /// Nodes can be killed, stopped and started.
    pub process_faults: bool,
    /// Every process of a node can be frozen and thawed (a backend may kill
    /// without being able to pause: see docs/backends.md).
    pub pause: bool,
    /// Commands can be run inside a node with NET_ADMIN (iptables, tc).
    pub net_admin_exec: bool,
}

/// A client port a node offers, published on the host.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PortSpec {
    /// A short name: "amqp", "client", "kafka", "http".
    pub name: &'static str,
    /// The port inside the node.
    pub port: u16,
}

/// A command run inside a node (the nemesis's, which node control takes).
pub use gauntlet_nemesis::Command;

/// A readiness probe.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Probe {
    /// A command inside the node that exits 0, and prints `expect` if set.
    Exec {
        /// What runs inside the node.
        command: Command,
        /// Text its stdout must contain; `None`: exiting 0 is enough.
        expect: Option<String>,
    },
    /// An HTTP GET from the host to the node's published port `port` that answers
    /// 200, with `expect` in the body if set.
    Http {
        /// The recipe's name of the port ([`PortSpec::name`]).
        port: &'static str,
        /// The path asked for, e.g. `/healthz`.
        path: String,
        /// Text the body must contain; `None`: a 200 is enough.
        expect: Option<String>,
    },
}

impl Probe {
    /// Ready when `command` exits 0 inside the node.
    pub fn exits_zero(command: Command) -> Self {
        Probe::Exec {
            command,
            expect: None,
        }
    }

    /// Ready when `command` exits 0 inside the node with `expect` in its stdout.
    pub fn prints(command: Command, expect: &str) -> Self {
        Probe::Exec {
            command,
            expect: Some(expect.to_string()),
        }
    }

    /// Ready when `GET path` on the published port named `port` answers 200 (with
    /// `expect` in the body, if given).
    pub fn http(port: &'static str, path: &str, expect: Option<&str>) -> Self {
        Probe::Http {
            port,
            path: path.to_string(),
            expect: expect.map(str::to_string),
        }
    }

    /// The probe as one line, for messages.
    pub fn display(&self) -> String {
        match self {
            Probe::Exec { command, expect } => match expect {
                Some(e) => format!("`{}` printing {e:?}", command.display()),
                None => format!("`{}` exiting 0", command.display()),
            },
            Probe::Http { port, path, expect } => match expect {
                Some(e) => format!("GET {path} on port {port} answering 200 with {e:?}"),
                None => format!("GET {path} on port {port} answering 200"),
            },
        }
    }
}

/// How to ask a broker which node holds a role (the queue's leader, the primary): a
/// command run on each node in turn until `parse` names a node.
#[derive(Debug, Clone)]
pub struct RoleProbe {
    /// Run inside a node; what it prints goes to `parse`.
    pub command: Command,
    /// (the node the command ran on, what it printed) -> the node in the role, if any.
    pub parse: fn(&str, &str) -> Option<String>,
}

/// How one node is started.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct NodePlan {
    /// Entry point and arguments (replaces the image's own entry point when set).
    pub entrypoint: Option<Vec<String>>,
    /// Command (arguments to the entry point, or the whole command line).
    pub cmd: Vec<String>,
    /// The node's environment, `KEY=value` each.
    pub env: Vec<String>,
    /// The user the node runs as; `None`: the image's.
    pub user: Option<String>,
}

/// A step run after all nodes are up, on one node, to join them into a cluster.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct JoinStep {
    /// The node it runs on, by index (0-based).
    pub node: usize,
    /// What runs there; it must exit 0 (the Docker backend tries it three times).
    pub command: Command,
}

/// What a recipe knows about the deployment it plans for.
#[derive(Debug, Clone)]
pub struct ClusterContext {
    /// Node names, n1..nN, which are also the hostnames nodes reach each other by.
    pub nodes: Vec<String>,
    /// Host-side endpoint of each published port, by node index and port name
    /// (`127.0.0.1:PORT`); for brokers that advertise addresses to clients.
    pub host_endpoints: Vec<BTreeMap<&'static str, (String, u16)>>,
    /// Where clients reach each node's ports when that is not the published port
    /// (a proxy in front of the node); a recipe advertises these to clients.
    pub client_endpoints: Vec<BTreeMap<&'static str, (String, u16)>>,
    /// Which conventions the nodes' image follows.
    pub flavour: Flavour,
    /// A secret shared by the nodes of this run (e.g. the Erlang cookie).
    pub secret: String,
    /// The image the nodes run (a recipe may read a variant from its tag).
    pub image: String,
    /// The hostname of the deployment's storage node, when its recipe has one
    /// ([`Recipe::storage`]).
    pub storage: Option<String>,
    /// When an acknowledged write reaches the disk (the scenario's `[redis]` and
    /// `[nats]` tables); the default is what every recipe did before they existed.
    pub durability: Durability,
}

impl ClusterContext {
    /// A context with no nodes, made only to ask a recipe about an image (its
    /// storage node, its flavour's settings).
    pub fn for_image(flavour: Flavour, image: &str) -> Self {
        ClusterContext {
            nodes: Vec::new(),
            host_endpoints: Vec::new(),
            client_endpoints: Vec::new(),
            flavour,
            secret: String::new(),
            image: image.to_string(),
            storage: None,
            durability: Durability::default(),
        }
    }

    /// The number of broker nodes.
    pub fn len(&self) -> usize {
        self.nodes.len()
    }

    /// No broker nodes (a context made only to ask a recipe about an image).
    pub fn is_empty(&self) -> bool {
        self.nodes.is_empty()
    }

    /// The address clients use for port `port` of node `index`: the proxy's when the
    /// run puts one in front of the node, else the published host port.
    pub fn client_endpoint(&self, index: usize, port: &str) -> Option<(String, u16)> {
        self.client_endpoints
            .get(index)
            .and_then(|m| m.get(port))
            .or_else(|| self.host_endpoints.get(index).and_then(|m| m.get(port)))
            .cloned()
    }
}

/// The settings that decide when a broker's acknowledged write is on the disk,
/// as a recipe applies them (the scenario's `[redis]` and `[nats]` tables,
/// docs/brokers.md "Durability settings"). The default is each recipe's setting
/// from before these settings existed, so a scenario without the tables deploys
/// what it always did.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Durability {
    /// Redis's append-only file (`--appendonly`, `--appendfsync`).
    pub redis: RedisDurability,
    /// NATS JetStream's `sync_interval`; `None`: the server's default (2 minutes).
    pub nats_sync: Option<SyncInterval>,
}

impl Durability {
    /// Every setting as the recipes had it before the settings existed.
    pub fn is_default(&self) -> bool {
        *self == Durability::default()
    }
}

/// Redis's append-only file: whether there is one and when it is fsynced.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RedisDurability {
    /// `appendonly yes` (true) or `no`.
    pub appendonly: bool,
    /// `appendfsync`.
    pub appendfsync: AppendFsync,
}

impl Default for RedisDurability {
    /// `appendonly yes`, `appendfsync always`: the recipe's setting.
    fn default() -> Self {
        RedisDurability {
            appendonly: true,
            appendfsync: AppendFsync::Always,
        }
    }
}

/// Redis `appendfsync`: when the append-only file is fsynced.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, serde::Serialize)]
#[serde(rename_all = "lowercase")]
pub enum AppendFsync {
    /// After every write, before the reply (the recipe's default).
    #[default]
    Always,
    /// Once a second, in the background: a power loss loses up to a second of writes.
    Everysec,
    /// Never by Redis: the kernel writes the page cache back when it likes.
    No,
}

impl AppendFsync {
    /// Every value, safest first.
    pub const ALL: [AppendFsync; 3] = [AppendFsync::Always, AppendFsync::Everysec, AppendFsync::No];

    /// The value as Redis spells it.
    pub fn name(self) -> &'static str {
        match self {
            AppendFsync::Always => "always",
            AppendFsync::Everysec => "everysec",
            AppendFsync::No => "no",
        }
    }
}

/// One of Redis's names; anything else (a boolean too) is an error listing them.
impl<'de> serde::Deserialize<'de> for AppendFsync {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct Names;
        impl serde::de::Visitor<'_> for Names {
            type Value = AppendFsync;
            fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
                f.write_str("\"always\", \"everysec\" or \"no\"")
            }
            fn visit_str<E: serde::de::Error>(self, v: &str) -> Result<AppendFsync, E> {
                AppendFsync::ALL
                    .into_iter()
                    .find(|a| a.name() == v)
                    .ok_or_else(|| E::invalid_value(serde::de::Unexpected::Str(v), &self))
            }
        }
        d.deserialize_any(Names)
    }
}

/// NATS JetStream's `sync_interval` when it is set.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SyncInterval {
    /// `always`: an fsync after every write.
    Always,
    /// An fsync of the stream's files at this interval (more than zero).
    Every(Duration),
}

impl SyncInterval {
    /// The value in nats-server's configuration file (Go's duration syntax).
    pub fn config_value(self) -> String {
        match self {
            SyncInterval::Always => "always".to_string(),
            SyncInterval::Every(d) => {
                let ns = d.as_nanos();
                if ns % 1_000_000_000 == 0 {
                    format!("{}s", ns / 1_000_000_000)
                } else if ns % 1_000_000 == 0 {
                    format!("{}ms", ns / 1_000_000)
                } else {
                    format!("{ns}ns")
                }
            }
        }
    }
}

/// A broker's cluster recipe: how to configure and join nodes, how to know they are
/// ready, which client ports they offer. Pure data; no container runtime in here.
pub trait Recipe: Send + Sync {
    /// The broker this recipe deploys.
    fn kind(&self) -> BrokerKind;
    /// Broker version in Gauntlet's local image.
    fn version(&self) -> &'static str;
    /// Client ports each node offers (published on the host).
    fn ports(&self) -> &'static [PortSpec];
    /// Nodes a cluster has when the caller does not say.
    fn default_nodes(&self) -> usize;
    /// Whether the broker tells its clients which addresses to connect to
    /// (Kafka's advertised listeners, built from the context's endpoints), so
    /// that the clients must connect where it says; else a backend may give
    /// them a shorter way to the nodes than the published ports.
    fn clients_learn_addresses(&self) -> bool {
        false
    }
    /// What a deployment of this broker can do with an image of `flavour`.
    fn capabilities(&self, flavour: Flavour) -> Capabilities;
    /// How to start node `index` (0-based).
    fn node(&self, ctx: &ClusterContext, index: usize) -> NodePlan;
    /// When node `index` alone is up (used again after every restart).
    fn node_ready(&self, ctx: &ClusterContext, index: usize) -> Probe;
    /// Steps that join the nodes, run in order once every node is ready.
    fn join(&self, _ctx: &ClusterContext) -> Vec<JoinStep> {
        Vec::new()
    }
    /// Probes that pass once the cluster as a whole is formed, by node index.
    fn cluster_ready(&self, _ctx: &ClusterContext) -> Vec<(usize, Probe)> {
        Vec::new()
    }
    /// How to find the node in `role`; `None` where the broker cannot tell.
    fn role_probe(&self, _role: gauntlet_nemesis::Role) -> Option<RoleProbe> {
        None
    }
    /// How long a node may take to become ready.
    fn ready_timeout(&self) -> Duration {
        Duration::from_secs(90)
    }
    /// A node that is not a broker but stores the brokers' data (tansu's
    /// PostgreSQL): named [`STORAGE_NODE`], started and ready before the brokers,
    /// its log collected, aimed at by role (`kill-broker:storage`), never drawn at
    /// random. `None` (the default): the brokers keep their own data.
    fn storage(&self, _ctx: &ClusterContext) -> Option<StoragePlan> {
        None
    }
    /// Where a broker node keeps its data, for Gauntlet's filesystem (the disk
    /// faults: docs/nemesis.md, "Disk faults"); `None` (the default): it keeps
    /// nothing on its own disk, or the recipe does not say.
    fn data_dir(&self, _ctx: &ClusterContext) -> Option<DataDir> {
        None
    }
    /// What the deployment `ctx` plans can do (a recipe whose image variants
    /// differ overrides this); by default, what its flavour can.
    fn capabilities_in(&self, ctx: &ClusterContext) -> Capabilities {
        self.capabilities(ctx.flavour)
    }
    /// Refuses durability settings ([`ClusterContext::durability`]) this recipe
    /// cannot apply to the deployment `ctx` plans, with the reason. By default
    /// only the default settings are accepted: a recipe that applies a setting
    /// overrides this.
    fn check_durability(&self, ctx: &ClusterContext) -> Result<(), String> {
        if ctx.durability.is_default() {
            Ok(())
        } else {
            Err(format!(
                "{} takes no durability settings ([redis] is Redis's, [nats] is NATS's)",
                self.kind()
            ))
        }
    }
}

/// The name (and hostname) of a deployment's storage node.
pub const STORAGE_NODE: &str = "storage";
/// The name of the idempotent consumers' dedup store node (seed D7).
pub const DEDUP_STORE_NODE: &str = "dedup-store";

/// How to start a storage node and when it is ready.
#[derive(Debug, Clone)]
pub struct StoragePlan {
    /// The image it runs; `None`: the brokers' image.
    pub image: Option<String>,
    /// How it is started (the scenario's `[storage]` settings add to its environment).
    pub plan: NodePlan,
    /// When it is ready; the brokers start after that.
    pub ready: Probe,
    /// Where it keeps its data, for Gauntlet's filesystem (disk faults).
    pub data: Option<DataDir>,
}

/// Where a node keeps its data: the directory Gauntlet's filesystem is mounted
/// over when a run schedules a disk fault, and the files `corrupt` changes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct DataDir {
    /// The directory (made empty at the first start; a path the node's start
    /// script may remove or recreate must be one level below it).
    pub path: &'static str,
    /// The data files `corrupt` may change, as globs relative to `path` (`*`
    /// within a name, `**` any depth): `corrupt:truncate` cuts the newest.
    pub files: &'static [&'static str],
}
