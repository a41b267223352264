//! The faults: one table of their specifications ([`FAULTS`], one
//! [`FaultSpec`] per name), the typed fault ([`FaultKind`]) and what it does
//! ([`Fault::start`], [`Fault::stop`]).
//!
//! Everything about a fault that is not its body is here, once: its name and
//! syntax, how its argument parses and displays, what it needs from a
//! deployment, its history names, whether it is an instant or an interval,
//! how it is healed, where it acts (what `--plan` says of it). Its body is in
//! the family module beside this one: [`consumer`], [`node`] (and roles),
//! [`partition`], [`link`] (the client proxy). The harness has no list of
//! faults of its own: it asks the table.
use crate::{Cluster, NemesisError};
use futures_util::future::join_all;
use serde::{Deserialize, Deserializer, Serialize, Serializer};
use serde_json::{json, Value};
use std::fmt;
use std::str::FromStr;
use std::time::Duration;

pub mod consumer;
pub mod disk;
pub mod link;
pub mod node;
pub mod partition;
pub mod topic;

pub use consumer::KillConsumerAt;
pub use disk::Corruption;
pub use link::{LinkEffect, LinkFault, LinkToxic};
pub use node::{find_role, NodeFault, Role, Spread};
pub use partition::{apply_grudge, complete_grudge, grudge, heal_network, Grudge, Shape};

/// A fault, as named on the command line (`--nemesis kill-consumer:before-ack,partition`),
/// in a scenario's `nemesis` list and in a schedule's `fault` (serialized as that name).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FaultKind {
    /// SIGKILL one consumer worker, at the moment of its batch the argument says; the
    /// harness restarts it under a new process number, so the fault heals by itself.
    KillConsumer(KillConsumerAt),
    /// SIGKILL a broker node, start it again when the fault ends.
    KillBroker,
    /// SIGKILL then start at once; `mid_batch` waits until a send is in flight (seed D6).
    RestartBroker {
        /// Wait (up to 10 s) until a producer has a send in flight before the kill.
        mid_batch: bool,
    },
    /// Freeze a node (cgroup freezer), resume when the fault ends.
    Pause,
    /// Isolate one node from the others (iptables inside the nodes), heal when it ends.
    Partition,
    /// A fault on the client link of the target node (see [`LinkFault`]).
    Link(LinkFault),
    /// A link fault (one without an argument of its own) aimed at the node the
    /// deployment names for a role, found when the fault fires:
    /// `client-partition:dedup-store` cuts the consumers off their dedup store
    /// (seed D7), `ack-loss:leader` drops the leader's replies.
    LinkOnRole(LinkFault, Role),
    /// `tc qdisc add dev eth0 root netem delay MS` inside the target node, only where
    /// the kernel has `sch_netem` (refused as unsupported otherwise).
    Netem {
        /// Milliseconds added to every packet the node sends (100 by default).
        delay_ms: u32,
    },
    /// Cut the network in a shape (`partition:halves|ring|bridge`), from a grudge; >= 3 nodes.
    PartitionShape(Shape),
    /// A node fault aimed at the node the broker names for a role, asked when the
    /// fault fires (`kill-broker:leader`, `restart-broker:group-coordinator`, ...).
    OnRole(NodeFault, Role),
    /// A power failure of a node: its processes killed and every write it had
    /// not made durable dropped (`torn`: a random prefix of each file's kept),
    /// by Gauntlet's filesystem over its data; started again when it heals.
    PowerLoss {
        /// Keep a random prefix of each file's unsynced writes (a torn write).
        torn: bool,
    },
    /// A node's data files changed while it is down (bits flipped, or its
    /// newest data file cut); started again when it heals.
    Corrupt(Corruption),
    /// A node's data directory emptied while it is down (a disk replaced);
    /// started again when it heals.
    Wipe,
    /// A node fault on a count of broker nodes (`kill-broker:majority`,
    /// `pause:all`, ...): the schedule draws which nodes and names them; the
    /// fault is done on each at once and each is healed.
    OnNodes(NodeFault, Spread),
    /// Jepsen's `pause-kill` (needs >= 3 nodes): a minority paused, the next
    /// node crashed (by the node fault carried, `kill-broker` unless named:
    /// `pause-kill:restart-broker`), the rest paused and the minority resumed
    /// while the crashed node comes back, then the rest resumed. The schedule
    /// generator expands it into those faults on named nodes; it is never
    /// played itself.
    PauseKill(NodeFault),
    /// A transformer of the txn workload destroys its client in the middle of
    /// 20% of its transactions; the workload does it, never the schedule.
    CrashProducer,
    /// Add partitions to every topic of the run while the workload runs (seed O4;
    /// [`topic`]): in tansu's PostgreSQL storage, or by the broker's CreatePartitions.
    AddPartitions {
        /// How many partitions each topic gets more ([`topic::DEFAULT_ADDED`] unless named).
        added: u32,
    },
}

/// What a fault needs from a deployment. A run refuses a fault whose needs the
/// deployment does not meet, with the reason, before anything is recorded.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Needs {
    /// At least this many broker nodes.
    pub nodes: usize,
    /// Kill, start, pause and unpause of nodes.
    pub process_faults: bool,
    /// Freezing and thawing nodes.
    pub pause: bool,
    /// Commands with NET_ADMIN inside the nodes: the tool the fault runs
    /// (`iptables` or `tc`).
    pub net_admin: Option<&'static str>,
    /// The node the fault is aimed at, by role (the storage node, or a node the
    /// broker names).
    pub role: Option<Role>,
    /// The harness's TCP proxy between the clients and the nodes.
    pub proxy: bool,
    /// Only this workload can do it (`crash-producer`: `txn`).
    pub workload: Option<&'static str>,
    /// Gauntlet's filesystem over the nodes' data (a disk fault): the nodes
    /// get FUSE, and every broker and storage node of the run is mounted.
    pub disk: bool,
}

const NOTHING: Needs = Needs {
    nodes: 0,
    process_faults: false,
    pause: false,
    net_admin: None,
    role: None,
    proxy: false,
    workload: None,
    disk: false,
};

/// When a fault ends, which decides its schedule duration and how the history
/// and the report show it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Ends {
    /// It heals by itself (the harness restarts what it killed): an instant, no
    /// end events; scheduled with duration 0.
    Itself,
    /// Healed right after its start (scheduled with duration 0): an interval
    /// from the start until the heal is done (a node restarted and ready).
    AtOnce,
    /// Healed after the schedule's fault duration: an interval.
    AfterDuration,
}

/// How a fault is healed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Heal {
    /// Nothing to heal.
    Nothing,
    /// Start each target node and wait until it is ready.
    StartNodes,
    /// Resume each target node.
    UnpauseNodes,
    /// Remove every DROP rule on every node.
    FlushNetwork,
    /// Every client link back to pass.
    PassLinks,
    /// Remove the netem delay of each target node.
    RemoveDelay,
}

/// Where a fault acts: what `--plan` says of it and which target fields its
/// events carry.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Acts {
    /// On the nodes the schedule names (or the node a role names): commands on
    /// the nodes. Its events name them (`node`, or `nodes` for several).
    Nodes,
    /// On the network of every node, in a shape drawn from `pick`: no one node.
    Network,
    /// On a consumer process of the machine running Gauntlet (chosen by `pick`).
    Consumer,
    /// In the client proxy on the machine running Gauntlet, on a node's link.
    ClientProxy,
    /// In the workload itself: never scheduled.
    Workload,
    /// A named sequence of other faults, which the schedule generator expands
    /// into them on named nodes (`pause-kill`): never played itself.
    Sequence,
    /// On the run's topics (`add-partitions`): in the storage node, or through
    /// the first broker node's own tool; the fault picks the node, not the schedule.
    Topic,
}

/// One fault's specification: everything about it but its body.
#[derive(Debug)]
pub struct FaultSpec {
    /// The name before any `:` (`kill-consumer`).
    pub name: &'static str,
    /// Its syntax as `--nemesis` takes it; empty when another entry of the same
    /// name lists it.
    pub syntax: &'static str,
    /// Whole names that mean this fault without its argument (`kill`).
    pub aliases: &'static [&'static str],
    /// The fault its argument (after the first `:`) makes, `None` when the
    /// argument is not one of this entry's.
    pub parse: fn(Option<&str>) -> Option<FaultKind>,
    /// What it needs from a deployment (a role target adds the role).
    pub needs: Needs,
    /// The `f` of its start and end events in the history.
    pub history: (&'static str, &'static str),
    /// When it ends.
    pub ends: Ends,
    /// How it is healed.
    pub heal: Heal,
    /// Where it acts.
    pub acts: Acts,
    /// What `--plan` prints for it when it runs nothing on the nodes (after
    /// `at T, FAULT on NODE: `).
    pub plan: &'static str,
}

impl FaultSpec {
    /// An instant: it ends by itself, so the history has no end events for it
    /// and its start events carry `"instant": true`.
    pub fn instant(&self) -> bool {
        self.ends == Ends::Itself
    }
}

fn role(arg: &str) -> Option<Role> {
    Role::ALL.into_iter().find(|r| r.name() == arg)
}

/// A node fault's argument when it is a role (`leader`) or, for a node fault
/// that takes counts, a count of nodes (`majority`). Every node fault's entry
/// parses its argument through this, so a new [`NodeFault`] gets both.
fn aimed(f: NodeFault, arg: &str) -> Option<FaultKind> {
    if let Some(r) = role(arg) {
        return Some(FaultKind::OnRole(f, r));
    }
    Spread::from_name(arg)
        .filter(|_| f.takes_counts())
        .map(|s| FaultKind::OnNodes(f, s))
}

/// The crash of `pause-kill:CRASH`: a node fault that crashes a node, by the
/// name of its fault on one node (`kill-broker`, `restart-broker`).
fn crash(arg: &str) -> Option<NodeFault> {
    NodeFault::ALL
        .into_iter()
        .find(|f| f.crashes() && f.on_node().to_string() == arg)
}

/// The names `pause-kill:CRASH` takes (the unknown-fault error lists them).
pub fn crashes() -> Vec<String> {
    NodeFault::ALL
        .into_iter()
        .filter(|f| f.crashes())
        .map(|f| f.on_node().to_string())
        .collect()
}

/// A number argument (`latency:250`, `latency:250ms`), `default` when absent.
fn num(arg: Option<&str>, default: u32) -> Option<u32> {
    match arg {
        None => Some(default),
        Some(a) => a.trim_end_matches("ms").parse().ok(),
    }
}

static KILL_CONSUMER: FaultSpec = FaultSpec {
    name: "kill-consumer",
    syntax: "kill-consumer[:before-ack|:after-ack|:before-effect]",
    aliases: &[],
    parse: |a| {
        Some(FaultKind::KillConsumer(match a {
            None => KillConsumerAt::Any,
            Some("before-ack") => KillConsumerAt::BeforeAck,
            Some("after-ack" | "after-commit") => KillConsumerAt::AfterAck,
            Some("before-effect") => KillConsumerAt::BeforeEffect,
            Some(_) => return None,
        }))
    },
    needs: NOTHING,
    history: ("kill-consumer", "restart-consumer"),
    ends: Ends::Itself,
    heal: Heal::Nothing,
    acts: Acts::Consumer,
    plan: "kills a consumer process on this machine; nothing runs on the hosts",
};

const PROCESS: Needs = Needs {
    process_faults: true,
    ..NOTHING
};

static KILL_BROKER: FaultSpec = FaultSpec {
    name: "kill-broker",
    syntax: "kill-broker[:ROLE|:COUNT]",
    aliases: &["kill"],
    parse: |a| match a {
        None => Some(FaultKind::KillBroker),
        Some(a) => aimed(NodeFault::Kill, a),
    },
    needs: PROCESS,
    history: ("kill", "start"),
    ends: Ends::AfterDuration,
    heal: Heal::StartNodes,
    acts: Acts::Nodes,
    plan: "",
};

static RESTART_BROKER: FaultSpec = FaultSpec {
    name: "restart-broker",
    syntax: "restart-broker[:mid-batch|:ROLE|:COUNT]",
    aliases: &[],
    parse: |a| match a {
        None => Some(FaultKind::RestartBroker { mid_batch: false }),
        Some("mid-batch") => Some(FaultKind::RestartBroker { mid_batch: true }),
        Some(a) => aimed(NodeFault::Restart, a),
    },
    needs: PROCESS,
    history: ("restart", "restarted"),
    ends: Ends::AtOnce,
    heal: Heal::StartNodes,
    acts: Acts::Nodes,
    plan: "",
};

static PAUSE: FaultSpec = FaultSpec {
    name: "pause",
    syntax: "pause[:ROLE|:COUNT]",
    aliases: &[],
    parse: |a| match a {
        None => Some(FaultKind::Pause),
        Some(a) => aimed(NodeFault::Pause, a),
    },
    needs: Needs {
        pause: true,
        ..PROCESS
    },
    history: ("pause", "resume"),
    ends: Ends::AfterDuration,
    heal: Heal::UnpauseNodes,
    acts: Acts::Nodes,
    plan: "",
};

static PARTITION: FaultSpec = FaultSpec {
    name: "partition",
    syntax: "partition[:halves|:ring|:bridge|:ROLE]",
    aliases: &[],
    parse: |a| match a {
        None | Some("isolate") => Some(FaultKind::Partition),
        Some(r) => role(r).map(|r| FaultKind::OnRole(NodeFault::Isolate, r)),
    },
    needs: Needs {
        nodes: 2,
        net_admin: Some("iptables"),
        ..NOTHING
    },
    history: ("partition", "heal"),
    ends: Ends::AfterDuration,
    heal: Heal::FlushNetwork,
    acts: Acts::Nodes,
    plan: "",
};

static PARTITION_SHAPE: FaultSpec = FaultSpec {
    name: "partition",
    syntax: "",
    aliases: &[],
    parse: |a| {
        Some(FaultKind::PartitionShape(match a? {
            "halves" | "majority" => Shape::Halves,
            "ring" | "majorities-ring" => Shape::Ring,
            "bridge" => Shape::Bridge,
            _ => return None,
        }))
    },
    needs: Needs {
        nodes: 3,
        net_admin: Some("iptables"),
        ..NOTHING
    },
    history: ("partition", "heal"),
    ends: Ends::AfterDuration,
    heal: Heal::FlushNetwork,
    acts: Acts::Network,
    plan: "",
};

/// A client-proxy fault: its name is its history name (`<name>-end` at its end).
macro_rules! link_spec {
    ($id:ident, $name:literal, $syntax:literal, $parse:expr) => {
        static $id: FaultSpec = FaultSpec {
            name: $name,
            syntax: $syntax,
            aliases: &[],
            parse: $parse,
            needs: Needs {
                proxy: true,
                ..NOTHING
            },
            history: ($name, concat!($name, "-end")),
            ends: Ends::AfterDuration,
            heal: Heal::PassLinks,
            acts: Acts::ClientProxy,
            plan: "in the client proxy on this machine; nothing runs on the hosts",
        };
    };
}

/// A link fault without an argument of its own: on the node the schedule
/// draws, or (`:ROLE`) on the node in that role.
fn plain(a: Option<&str>, l: LinkFault) -> Option<FaultKind> {
    match a {
        None => Some(FaultKind::Link(l)),
        Some(r) => role(r).map(|r| FaultKind::LinkOnRole(l, r)),
    }
}

link_spec!(ACK_LOSS, "ack-loss", "ack-loss[:ROLE]", |a| plain(
    a,
    LinkFault::AckLoss
));
link_spec!(
    ONE_WAY,
    "partition-one-way",
    "partition-one-way[:ROLE]",
    |a| plain(a, LinkFault::OneWay)
);
link_spec!(
    CLIENT_PARTITION,
    "client-partition",
    "client-partition[:ROLE]",
    |a| plain(a, LinkFault::ClientPartition)
);
link_spec!(LATENCY, "latency", "latency[:MS]", |a| num(a, 200)
    .map(|ms| FaultKind::Link(LinkFault::Latency { ms })));
link_spec!(JITTER, "jitter", "jitter[:MS]", |a| num(a, 100)
    .map(|ms| FaultKind::Link(LinkFault::Jitter { ms })));
link_spec!(LOSS, "loss", "loss[:PCT]", |a| num(a, 5)
    .filter(|p| *p <= 100)
    .map(|percent| FaultKind::Link(LinkFault::Loss { percent })));
link_spec!(BANDWIDTH, "bandwidth", "bandwidth[:KIB]", |a| num(a, 16)
    .filter(|k| *k > 0)
    .map(|kib_per_sec| FaultKind::Link(LinkFault::Bandwidth {
        kib_per_sec
    })));
link_spec!(RESET, "reset", "reset[:ROLE]", |a| plain(
    a,
    LinkFault::Reset
));
link_spec!(BLACKHOLE, "blackhole", "blackhole[:ROLE]", |a| plain(
    a,
    LinkFault::Blackhole
));

static NETEM: FaultSpec = FaultSpec {
    name: "netem",
    syntax: "netem[:MS]",
    aliases: &[],
    parse: |a| num(a, 100).map(|delay_ms| FaultKind::Netem { delay_ms }),
    needs: Needs {
        net_admin: Some("tc"),
        ..NOTHING
    },
    history: ("netem", "netem-end"),
    ends: Ends::AfterDuration,
    heal: Heal::RemoveDelay,
    acts: Acts::Nodes,
    plan: "",
};

const DISK: Needs = Needs {
    disk: true,
    ..PROCESS
};

static POWER_LOSS: FaultSpec = FaultSpec {
    name: "power-loss",
    syntax: "power-loss[:torn|:ROLE|:COUNT]",
    aliases: &[],
    parse: |a| match a {
        None => Some(FaultKind::PowerLoss { torn: false }),
        Some("torn") => Some(FaultKind::PowerLoss { torn: true }),
        Some(a) => aimed(NodeFault::PowerLoss, a),
    },
    needs: DISK,
    history: ("power-loss", "power-on"),
    ends: Ends::AtOnce,
    heal: Heal::StartNodes,
    acts: Acts::Nodes,
    plan: "",
};

static CORRUPT: FaultSpec = FaultSpec {
    name: "corrupt",
    syntax: "corrupt[:bitflip|:truncate]",
    aliases: &[],
    parse: |a| {
        Some(FaultKind::Corrupt(match a.unwrap_or("bitflip") {
            "bitflip" => Corruption::Bitflip,
            "truncate" => Corruption::Truncate,
            _ => return None,
        }))
    },
    needs: DISK,
    history: ("corrupt", "corrupt-restarted"),
    ends: Ends::AtOnce,
    heal: Heal::StartNodes,
    acts: Acts::Nodes,
    plan: "",
};

static WIPE: FaultSpec = FaultSpec {
    name: "wipe",
    syntax: "wipe",
    aliases: &[],
    parse: |a| a.is_none().then_some(FaultKind::Wipe),
    needs: DISK,
    history: ("wipe", "wipe-restarted"),
    ends: Ends::AtOnce,
    heal: Heal::StartNodes,
    acts: Acts::Nodes,
    plan: "",
};

static PAUSE_KILL: FaultSpec = FaultSpec {
    name: "pause-kill",
    syntax: "pause-kill[:CRASH]",
    aliases: &[],
    parse: |a| match a {
        None => Some(FaultKind::PauseKill(NodeFault::Kill)),
        Some(a) => crash(a).map(FaultKind::PauseKill),
    },
    // The pauses' and the crash's needs are its parts' ([`FaultKind::expands_to`]).
    needs: Needs {
        nodes: 3,
        ..NOTHING
    },
    history: ("pause-kill", "pause-kill-end"),
    ends: Ends::AfterDuration,
    heal: Heal::Nothing,
    acts: Acts::Sequence,
    plan: "expanded by the schedule into its pauses and crash on named nodes; never played itself",
};

static CRASH_PRODUCER: FaultSpec = FaultSpec {
    name: "crash-producer",
    syntax: "crash-producer",
    aliases: &[],
    parse: |a| a.is_none().then_some(FaultKind::CrashProducer),
    needs: Needs {
        workload: Some("txn"),
        ..NOTHING
    },
    history: ("crash-producer", "crash-producer-end"),
    ends: Ends::Itself,
    heal: Heal::Nothing,
    acts: Acts::Workload,
    plan: "done by the txn workload's transformers (20% of their transactions); never scheduled",
};

static ADD_PARTITIONS: FaultSpec = FaultSpec {
    name: "add-partitions",
    syntax: "add-partitions[:N]",
    aliases: &[],
    parse: |a| {
        num(a, topic::DEFAULT_ADDED)
            .filter(|n| (1..=topic::MAX_ADDED).contains(n))
            .map(|added| FaultKind::AddPartitions { added })
    },
    // Which brokers can take it is the scenario's check (`Scenario::check_workload`):
    // the Kafka protocol, not tansu's memory build.
    needs: NOTHING,
    history: ("add-partitions", "add-partitions-end"),
    ends: Ends::Itself,
    heal: Heal::Nothing,
    acts: Acts::Topic,
    plan: "adds partitions to the run's topics: in tansu's PostgreSQL storage (the storage \
           node), or by CreatePartitions on the first broker node",
};

/// The table: every fault's specification, in the order the unknown-fault
/// error lists their syntax. Parsing tries the entries in this order.
pub static FAULTS: [&FaultSpec; 22] = [
    &KILL_CONSUMER,
    &KILL_BROKER,
    &RESTART_BROKER,
    &PAUSE,
    &PARTITION,
    &PARTITION_SHAPE,
    &ACK_LOSS,
    &ONE_WAY,
    &CLIENT_PARTITION,
    &LATENCY,
    &JITTER,
    &LOSS,
    &BANDWIDTH,
    &RESET,
    &BLACKHOLE,
    &NETEM,
    &POWER_LOSS,
    &CORRUPT,
    &WIPE,
    &PAUSE_KILL,
    &CRASH_PRODUCER,
    &ADD_PARTITIONS,
];

/// Every fault's syntax, as `--nemesis` takes it (the error of an unknown name lists them).
pub fn syntax() -> Vec<&'static str> {
    FAULTS
        .iter()
        .map(|s| s.syntax)
        .filter(|s| !s.is_empty())
        .collect()
}

impl FaultKind {
    /// This fault's entry in the table (a fault aimed at a role: its node fault's).
    pub fn spec(self) -> &'static FaultSpec {
        match self {
            FaultKind::KillConsumer(_) => &KILL_CONSUMER,
            FaultKind::KillBroker => &KILL_BROKER,
            FaultKind::RestartBroker { .. } => &RESTART_BROKER,
            FaultKind::Pause => &PAUSE,
            FaultKind::Partition => &PARTITION,
            FaultKind::PartitionShape(_) => &PARTITION_SHAPE,
            FaultKind::Link(l) | FaultKind::LinkOnRole(l, _) => match l {
                LinkFault::AckLoss => &ACK_LOSS,
                LinkFault::OneWay => &ONE_WAY,
                LinkFault::ClientPartition => &CLIENT_PARTITION,
                LinkFault::Latency { .. } => &LATENCY,
                LinkFault::Jitter { .. } => &JITTER,
                LinkFault::Loss { .. } => &LOSS,
                LinkFault::Bandwidth { .. } => &BANDWIDTH,
                LinkFault::Reset => &RESET,
                LinkFault::Blackhole => &BLACKHOLE,
            },
            FaultKind::Netem { .. } => &NETEM,
            FaultKind::OnRole(f, _) | FaultKind::OnNodes(f, _) => f.on_node().spec(),
            FaultKind::PowerLoss { .. } => &POWER_LOSS,
            FaultKind::Corrupt(_) => &CORRUPT,
            FaultKind::Wipe => &WIPE,
            FaultKind::PauseKill(_) => &PAUSE_KILL,
            FaultKind::CrashProducer => &CRASH_PRODUCER,
            FaultKind::AddPartitions { .. } => &ADD_PARTITIONS,
        }
    }

    /// The faults a sequence is made of (`pause-kill`: the pause and its
    /// crash), each of whose needs the deployment must also meet; none for
    /// any other fault.
    pub fn expands_to(self) -> Vec<FaultKind> {
        match self {
            FaultKind::PauseKill(crash) => vec![FaultKind::Pause, crash.on_node()],
            _ => Vec::new(),
        }
    }

    /// What this fault needs from a deployment (a sequence: besides its
    /// parts' needs, [`FaultKind::expands_to`]).
    pub fn needs(self) -> Needs {
        let needs = self.spec().needs;
        match self {
            FaultKind::OnRole(_, role) | FaultKind::LinkOnRole(_, role) => Needs {
                role: Some(role),
                ..needs
            },
            _ => needs,
        }
    }

    /// The argument after the name, as [`fmt::Display`] writes it.
    fn arg(self) -> Option<String> {
        Some(match self {
            FaultKind::KillConsumer(KillConsumerAt::Any)
            | FaultKind::KillBroker
            | FaultKind::RestartBroker { mid_batch: false }
            | FaultKind::Pause
            | FaultKind::Partition
            | FaultKind::PowerLoss { torn: false }
            | FaultKind::Wipe
            | FaultKind::CrashProducer => return None,
            FaultKind::KillConsumer(KillConsumerAt::BeforeAck) => "before-ack".into(),
            FaultKind::KillConsumer(KillConsumerAt::AfterAck) => "after-ack".into(),
            FaultKind::KillConsumer(KillConsumerAt::BeforeEffect) => "before-effect".into(),
            FaultKind::RestartBroker { mid_batch: true } => "mid-batch".into(),
            FaultKind::PartitionShape(s) => s.name().into(),
            FaultKind::Link(l) => return l.arg(),
            FaultKind::Netem { delay_ms } => delay_ms.to_string(),
            FaultKind::OnRole(_, role) | FaultKind::LinkOnRole(_, role) => role.name().into(),
            FaultKind::PowerLoss { torn: true } => "torn".into(),
            FaultKind::Corrupt(c) => c.name().into(),
            FaultKind::OnNodes(_, spread) => spread.name().into(),
            FaultKind::PauseKill(NodeFault::Kill) => return None,
            FaultKind::PauseKill(crash) => crash.on_node().to_string(),
            FaultKind::AddPartitions { added } if added == topic::DEFAULT_ADDED => return None,
            FaultKind::AddPartitions { added } => added.to_string(),
        })
    }
}

impl FromStr for FaultKind {
    type Err = NemesisError;
    fn from_str(s: &str) -> Result<Self, NemesisError> {
        let s = s.trim();
        let (name, arg) = match s.split_once(':') {
            Some((n, a)) => (n, Some(a)),
            None => (s, None),
        };
        FAULTS
            .iter()
            .find_map(|spec| {
                if spec.aliases.contains(&s) {
                    (spec.parse)(None)
                } else if spec.name == name {
                    (spec.parse)(arg)
                } else {
                    None
                }
            })
            .ok_or_else(|| NemesisError::UnknownFault(s.to_string()))
    }
}

impl fmt::Display for FaultKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.spec().name)?;
        match self.arg() {
            Some(a) => write!(f, ":{a}"),
            None => Ok(()),
        }
    }
}

impl Serialize for FaultKind {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_str(self)
    }
}

impl<'de> Deserialize<'de> for FaultKind {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let name = String::deserialize(d)?;
        FaultKind::from_str(&name).map_err(serde::de::Error::custom)
    }
}

/// One fault in action: what `start` did, so `stop` can undo it.
#[derive(Debug, Clone)]
pub struct Fault {
    /// The fault done; a fault aimed at a role is stored as the node fault it became.
    pub kind: FaultKind,
    /// The nodes it was done on (none for a consumer kill or a partition shape).
    pub targets: Vec<String>,
}

/// The `f` names recorded in the history for start and stop.
pub fn history_names(kind: FaultKind) -> (&'static str, &'static str) {
    kind.spec().history
}

pub(super) fn failed(kind: FaultKind, target: &str, e: impl fmt::Display) -> NemesisError {
    NemesisError::Failed {
        fault: kind.to_string(),
        target: target.to_string(),
        why: e.to_string(),
    }
}

/// Why a sequence is not played: the schedule generator expands it.
fn not_played(kind: FaultKind) -> NemesisError {
    NemesisError::Unsupported {
        fault: kind.to_string(),
        why: "a sequence is expanded into its faults on named nodes when a schedule is \
              generated; a schedule lists those, never the sequence"
            .into(),
    }
}

/// `n1, n2`, or `no node`.
fn node_list(nodes: &[String]) -> String {
    if nodes.is_empty() {
        "no node".into()
    } else {
        nodes.join(", ")
    }
}

/// `{"node": n}` for one node, `{"nodes": [...]}` for several, `{}` for none.
pub fn node_fields(nodes: &[String]) -> Value {
    match nodes {
        [] => json!({}),
        [one] => json!({ "node": one }),
        many => json!({ "nodes": many }),
    }
}

impl Fault {
    /// Injects the fault on `targets` (node names; ignored by kill-consumer, which
    /// uses `pick`, by partition shapes, which shuffle the nodes by `pick`, and by
    /// faults aimed at a role, which ask the cluster for the node). A fault aimed at
    /// a role comes back as the plain node fault on the node found, which is what
    /// `stop` heals; a fault on a count of nodes as the plain node fault on the
    /// nodes the schedule drew. On several targets the fault is done on all of
    /// them at once; when it fails on one, those it was done on are healed
    /// before the error comes back.
    pub async fn start(
        kind: FaultKind,
        cluster: &Cluster<'_>,
        targets: &[String],
        pick: u64,
    ) -> Result<(Fault, Value), NemesisError> {
        let kind = match kind {
            FaultKind::OnNodes(f, _) => f.on_node(),
            k => k,
        };
        // A fault aimed at a role: the fault it is, on the node in that role now.
        let on_role = match kind {
            FaultKind::OnRole(f, role) => Some((f.on_node(), role)),
            FaultKind::LinkOnRole(l, role) => Some((FaultKind::Link(l), role)),
            _ => None,
        };
        if let Some((done, role)) = on_role {
            let node = find_role(cluster, kind, role).await?;
            let mut value = Fault::start_on(done, cluster, &node, pick).await?;
            value["role"] = json!(role.to_string());
            let targets = vec![node];
            return Ok((
                Fault {
                    kind: done,
                    targets,
                },
                value,
            ));
        }
        match kind.spec().acts {
            Acts::Consumer | Acts::Network | Acts::Workload | Acts::Topic => {
                let value = Fault::start_on(kind, cluster, "", pick).await?;
                return Ok((
                    Fault {
                        kind,
                        targets: Vec::new(),
                    },
                    value,
                ));
            }
            Acts::Sequence => return Err(not_played(kind)),
            Acts::Nodes | Acts::ClientProxy => {}
        }
        let fault = Fault {
            kind,
            targets: targets.to_vec(),
        };
        match targets {
            [one] => Ok((fault, Fault::start_on(kind, cluster, one, pick).await?)),
            many => {
                let results =
                    join_all(many.iter().map(|t| Fault::start_on(kind, cluster, t, pick))).await;
                let mut each = Vec::new();
                let mut done = Vec::new();
                let mut first_error = None;
                for (t, r) in many.iter().zip(results) {
                    match r {
                        Ok(v) => {
                            each.push(v);
                            done.push(t.clone());
                        }
                        Err(e) => {
                            first_error.get_or_insert(e);
                        }
                    }
                }
                let Some(e) = first_error else {
                    return Ok((fault, json!({ "nodes": many, "each": each })));
                };
                // Undo it where it was done, so no node stays down unrecorded.
                let partial = Fault {
                    kind,
                    targets: done,
                };
                let healed = match partial.stop(cluster).await {
                    Ok(_) => format!("healed on {}", node_list(&partial.targets)),
                    Err(h) => format!("healing {} failed: {h}", node_list(&partial.targets)),
                };
                Err(NemesisError::Failed {
                    fault: kind.to_string(),
                    target: many.join("+"),
                    why: if partial.targets.is_empty() {
                        e.to_string()
                    } else {
                        format!("{e} (done on the others, then {healed})")
                    },
                })
            }
        }
    }

    /// The body of a fault on one target.
    async fn start_on(
        kind: FaultKind,
        cluster: &Cluster<'_>,
        target: &str,
        pick: u64,
    ) -> Result<Value, NemesisError> {
        Ok(match kind {
            FaultKind::KillConsumer(at) => cluster.kill_consumer(pick, at).await?,
            FaultKind::KillBroker => {
                cluster.kill_node(target).await?;
                json!({"node": target})
            }
            FaultKind::RestartBroker { mid_batch } => {
                let in_flight = if mid_batch {
                    cluster.wait_send_in_flight(Duration::from_secs(10)).await
                } else {
                    false
                };
                // How many sends were under way as the node went down.
                let sends_in_flight = cluster.in_flight.now().max(0);
                cluster.kill_node(target).await?;
                json!({
                    "node": target,
                    "mid_batch": mid_batch,
                    "send_in_flight": in_flight,
                    "sends_in_flight": sends_in_flight,
                })
            }
            FaultKind::Pause => {
                cluster.pause_node(target).await?;
                json!({"node": target})
            }
            FaultKind::Partition => partition::isolate(cluster, kind, target).await?,
            FaultKind::Link(l) => cluster.link(target, l).await?,
            FaultKind::Netem { delay_ms } => node::netem(cluster, kind, target, delay_ms).await?,
            FaultKind::PartitionShape(shape) => {
                let g = grudge(shape, &cluster.nodes(), pick)?;
                apply_grudge(cluster, kind, &g).await?;
                json!({"shape": kind.to_string(), "grudge": g})
            }
            FaultKind::PowerLoss { .. } | FaultKind::Corrupt(_) | FaultKind::Wipe => {
                let disk = kind
                    .disk()
                    .ok_or_else(|| failed(kind, target, "not a disk fault"))?;
                disk::strike(cluster, kind, disk, target, pick).await?
            }
            FaultKind::CrashProducer => {
                return Err(NemesisError::Unsupported {
                    fault: kind.to_string(),
                    why: "the txn workload's transformers do it; it is never scheduled".into(),
                })
            }
            FaultKind::OnRole(..) | FaultKind::LinkOnRole(..) => {
                return Err(failed(kind, target, "a role is resolved by `start`"))
            }
            FaultKind::OnNodes(f, _) => {
                return Err(failed(
                    kind,
                    target,
                    format!("a count of nodes is done by `start` as {}", f.on_node()),
                ))
            }
            FaultKind::PauseKill(_) => return Err(not_played(kind)),
            FaultKind::AddPartitions { added } => {
                topic::add_partitions(cluster, kind, added).await?
            }
        })
    }

    /// Heals the fault, as its table entry says ([`FaultSpec::heal`]). Several
    /// nodes are healed at once, each of them even when another fails (the
    /// first error comes back).
    pub async fn stop(&self, cluster: &Cluster<'_>) -> Result<Value, NemesisError> {
        let nodes = node_fields(&self.targets);
        match self.kind.spec().heal {
            Heal::Nothing => Ok(json!({})),
            Heal::StartNodes => {
                each_node(&self.targets, |t| cluster.start_node(t)).await?;
                Ok(nodes)
            }
            Heal::UnpauseNodes => {
                each_node(&self.targets, |t| cluster.unpause_node(t)).await?;
                Ok(nodes)
            }
            Heal::FlushNetwork => {
                heal_network(cluster).await?;
                Ok(json!({"healed": cluster.nodes()}))
            }
            Heal::PassLinks => {
                let healed = cluster.heal_links().await?;
                let mut v = nodes;
                v["healed"] = healed;
                Ok(v)
            }
            Heal::RemoveDelay => {
                each_node(&self.targets, |t| cluster.remove_delay(t)).await?;
                Ok(nodes)
            }
        }
    }
}

/// `op` on every node at once; all of them are tried, the first error comes back.
async fn each_node<'a, F, Fut>(nodes: &'a [String], op: F) -> Result<(), NemesisError>
where
    F: Fn(&'a str) -> Fut,
    Fut: std::future::Future<Output = Result<(), NemesisError>>,
{
    join_all(nodes.iter().map(|n| op(n)))
        .await
        .into_iter()
        .collect()
}

#[cfg(test)]
mod tests;
