//! Node control: the one trait the nemesis asks a deployment for
//! ([`NodeControl`]), which each backend implements directly (Docker, SSH, the
//! harness's fake), and the other capabilities a run hands the nemesis beside
//! it ([`Consumers`], [`Links`], [`Roles`], [`Readiness`]), gathered in
//! [`Cluster`].
//!
//! A backend reports its failures as its own error inside [`ControlError`]; the
//! harness maps it back to its error without losing it.
use crate::faults::{KillConsumerAt, LinkFault, Role};
use crate::{net, NemesisError};
use serde_json::Value;
use std::sync::atomic::{AtomicI64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// A command run inside a node.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Command {
    /// The program and its arguments (no shell unless the program is one).
    pub argv: Vec<String>,
    /// The user it runs as; `None`: the node's own user.
    pub user: Option<String>,
    /// More environment, `KEY=value` each.
    pub env: Vec<String>,
}

impl Command {
    /// The program and arguments `argv`, as the node's own user, no more environment.
    pub fn new<S: AsRef<str>>(argv: &[S]) -> Self {
        Command {
            argv: argv.iter().map(|s| s.as_ref().to_string()).collect(),
            ..Default::default()
        }
    }

    /// `sh -c SCRIPT`.
    pub fn shell(script: impl Into<String>) -> Self {
        Command {
            argv: vec!["sh".into(), "-c".into(), script.into()],
            ..Default::default()
        }
    }

    /// The same command, run as `user`.
    pub fn user(mut self, user: &str) -> Self {
        self.user = Some(user.to_string());
        self
    }

    /// The same command with one more variable, `kv` as `KEY=value`.
    pub fn env(mut self, kv: &str) -> Self {
        self.env.push(kv.to_string());
        self
    }

    /// The command as one line, for messages.
    pub fn display(&self) -> String {
        self.argv.join(" ")
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

/// Why a node-control call failed.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ControlError {
    /// A command inside a node ended with an error.
    #[error("`{cmd}` on node {node} exited {code}: {output}")]
    CommandFailed {
        /// The node it ran on.
        node: String,
        /// The command, as one line.
        cmd: String,
        /// Its exit status.
        code: i64,
        /// What it printed (stdout, then stderr).
        output: String,
    },
    /// The node cannot do what was asked (a disk fault on a node that does not
    /// run Gauntlet's filesystem); the reason.
    #[error("{0}")]
    Unsupported(String),
    /// The backend's own error (the harness's, with the Docker or SSH detail),
    /// kept whole so the harness can take it back.
    #[error(transparent)]
    Backend(Box<dyn std::error::Error + Send + Sync>),
}

/// Node control, by node name: process faults and commands on single nodes.
/// Every backend implements it (the harness's `Deployment` requires it).
#[async_trait::async_trait]
pub trait NodeControl: Send + Sync {
    /// SIGKILL the node's broker process (the node keeps its disk).
    async fn kill(&self, node: &str) -> Result<(), ControlError>;
    /// Stop gracefully (SIGTERM, then SIGKILL after `grace`).
    async fn stop(&self, node: &str, grace: Duration) -> Result<(), ControlError>;
    /// Start a stopped or killed node. Does not wait for readiness (the
    /// [`Readiness`] capability does).
    async fn start(&self, node: &str) -> Result<(), ControlError>;
    /// Stop and start.
    async fn restart(&self, node: &str, grace: Duration) -> Result<(), ControlError> {
        self.stop(node, grace).await?;
        self.start(node).await
    }
    /// Freeze every process of the node (SIGSTOP-like, via the cgroup freezer).
    async fn pause(&self, node: &str) -> Result<(), ControlError>;
    /// Resume every process [`NodeControl::pause`] froze.
    async fn unpause(&self, node: &str) -> Result<(), ControlError>;
    /// Run a command inside the node (as root with NET_ADMIN unless `command.user`
    /// says otherwise) and wait for it, at most `timeout`.
    async fn exec(
        &self,
        node: &str,
        command: &Command,
        timeout: Duration,
    ) -> Result<ExecOutput, ControlError>;

    /// Do a disk fault on `node` ([`DiskFault`]; docs/nemesis.md, "Disk
    /// faults"): the node's processes are killed, its filesystem drops, tears or
    /// changes what the fault says, and the node stays down until
    /// [`NodeControl::start`]. `seed` draws what the fault chooses (the torn
    /// prefixes, the bits, the cut). Returns the filesystem's report (what it
    /// dropped or changed, per file). By default unsupported: only nodes that
    /// run Gauntlet's filesystem over their data can do it.
    async fn disk_fault(
        &self,
        node: &str,
        fault: DiskFault,
        seed: u64,
    ) -> Result<Value, ControlError> {
        let _ = seed;
        Err(ControlError::Unsupported(format!(
            "{} on {node}: the node does not run Gauntlet's filesystem over its data",
            fault.name()
        )))
    }
    /// Drop what `node` receives from `ips` (and, with `outbound`, what it sends
    /// to them) until [`NodeControl::heal_traffic`]. By default the iptables
    /// commands of [`net`] through [`NodeControl::exec`]; a backend whose nodes
    /// share a host's firewall keeps its rules apart.
    async fn drop_traffic(
        &self,
        node: &str,
        ips: &[String],
        outbound: bool,
    ) -> Result<(), ControlError> {
        self.exec_checked(node, &net::drop_script(ips, outbound))
            .await
    }
    /// Remove every rule [`NodeControl::drop_traffic`] added on `node`.
    async fn heal_traffic(&self, node: &str) -> Result<(), ControlError> {
        self.exec_checked(node, net::HEAL_SCRIPT).await
    }
    /// Delay what `node` sends by `ms` until [`NodeControl::remove_delay`] (netem).
    async fn add_delay(&self, node: &str, ms: u32) -> Result<(), ControlError> {
        self.exec_checked(node, &net::delay_script(ms)).await
    }
    /// Remove the delay of [`NodeControl::add_delay`]; succeeds when there is none.
    async fn remove_delay(&self, node: &str) -> Result<(), ControlError> {
        self.exec_checked(node, net::UNDELAY_SCRIPT).await
    }
    /// The IPv4 address other nodes reach `node` at (what a partition drops).
    /// By default the first IPv4 address `hostname -i` prints inside the node,
    /// right for a container; a backend whose nodes are hosts knows better
    /// (`hostname -i` on a Debian host says 127.0.1.1).
    async fn node_ip(&self, node: &str) -> Result<String, ControlError> {
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
            .ok_or_else(|| ControlError::CommandFailed {
                node: node.to_string(),
                cmd: "hostname -i".into(),
                code: out.exit_code,
                output: format!("no IPv4 address in {:?}", out.combined()),
            })
    }
    /// Run a shell script in `node` (at most 20 s); an error when it fails.
    async fn exec_checked(&self, node: &str, script: &str) -> Result<(), ControlError> {
        let out = self
            .exec(node, &Command::shell(script), Duration::from_secs(20))
            .await?;
        if out.success() {
            Ok(())
        } else {
            Err(ControlError::CommandFailed {
                node: node.to_string(),
                cmd: script.to_string(),
                code: out.exit_code,
                output: out.combined(),
            })
        }
    }
}

/// A fault on a node's disk, done by Gauntlet's filesystem in the node.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DiskFault {
    /// Drop every write not made durable (`torn`: keep a random prefix of each
    /// file's unsynced writes).
    PowerLoss {
        /// Keep a random prefix of each file's unsynced writes (a torn write).
        torn: bool,
    },
    /// Flip a few bits in the node's data files.
    Bitflip,
    /// Cut the tail of the node's newest data file.
    Truncate,
    /// Remove everything in the node's data directory (a disk replaced).
    Wipe,
}

impl DiskFault {
    /// Its name as the fault's (`power-loss:torn`, `corrupt:bitflip`).
    pub fn name(self) -> &'static str {
        match self {
            DiskFault::PowerLoss { torn: false } => "power-loss",
            DiskFault::PowerLoss { torn: true } => "power-loss:torn",
            DiskFault::Bitflip => "corrupt:bitflip",
            DiskFault::Truncate => "corrupt:truncate",
            DiskFault::Wipe => "wipe",
        }
    }
}

/// Waiting for a node to answer its readiness probe (after a start).
#[async_trait::async_trait]
pub trait Readiness: Send + Sync {
    /// Wait until `node` is ready again, at most `timeout`.
    async fn wait_ready(&self, node: &str, timeout: Duration) -> Result<(), ControlError>;
}

/// The run's consumer workers (for `kill-consumer`).
#[async_trait::async_trait]
pub trait Consumers: Send + Sync {
    /// SIGKILL one consumer worker (chosen by `pick`, modulo the number of workers),
    /// at the moment `at` says; returns what was killed (process number, pid).
    async fn kill_consumer(&self, pick: u64, at: KillConsumerAt) -> Result<Value, NemesisError>;
}

/// The links between the clients and the nodes (the harness's TCP proxy).
#[async_trait::async_trait]
pub trait Links: Send + Sync {
    /// Degrade the clients' link to `node`; returns what was done.
    async fn link(&self, node: &str, fault: LinkFault) -> Result<Value, NemesisError>;
    /// Every client link back to pass; returns what was healed.
    async fn heal_links(&self) -> Result<Value, NemesisError>;
}

/// Which node the broker names for a role.
#[async_trait::async_trait]
pub trait Roles: Send + Sync {
    /// The node the broker names for `role` right now (`None`: none, e.g. while it
    /// elects one, after waiting a little); `Unsupported` where the broker cannot tell.
    async fn leader(&self, role: Role) -> Result<Option<String>, NemesisError>;
}

/// Sends under way right now: a counter the run makes, the producers raise
/// around each send, and the nemesis reads (for mid-batch faults).
#[derive(Debug, Clone, Default)]
pub struct InFlight(Arc<AtomicI64>);

impl InFlight {
    /// A counter at zero.
    pub fn new() -> Self {
        InFlight::default()
    }
    /// A counter that always says a send is in flight (a plan waits for nothing).
    pub fn always() -> Self {
        InFlight(Arc::new(AtomicI64::new(1)))
    }
    /// The shared counter, for the producers (`fetch_add` before a send,
    /// `fetch_sub` after it).
    pub fn counter(&self) -> Arc<AtomicI64> {
        self.0.clone()
    }
    /// Sends in flight now.
    pub fn now(&self) -> i64 {
        self.0.load(Ordering::Relaxed)
    }
}

/// Everything the faults act on: the deployment's node control, and the
/// capabilities a run hands the nemesis beside it.
pub struct Cluster<'a> {
    /// The broker nodes, n1..nN.
    pub nodes: Vec<String>,
    /// The node that stores the brokers' data when it is not a broker (a tansu
    /// cluster's PostgreSQL); aimed at by role only, healed with the others.
    pub storage: Option<String>,
    /// The idempotent consumers' dedup store (seed D7), when the run has one;
    /// aimed at by role only, healed with the others.
    pub dedup_store: Option<String>,
    /// Node control (the deployment).
    pub control: &'a dyn NodeControl,
    /// Readiness of a node after a start (the deployment).
    pub ready: &'a dyn Readiness,
    /// The consumer workers; `None`: there are none to kill.
    pub consumers: Option<&'a dyn Consumers>,
    /// The client proxy; `None`: the run routes no client through one.
    pub links: Option<&'a dyn Links>,
    /// The role probe; `None`: no node can be named for a role.
    pub roles: Option<&'a dyn Roles>,
    /// Sends in flight (for `restart-broker:mid-batch`).
    pub in_flight: InFlight,
}

fn op_failed(op: &str, node: &str, e: impl std::fmt::Display) -> NemesisError {
    NemesisError::Failed {
        fault: op.to_string(),
        target: node.to_string(),
        why: e.to_string(),
    }
}

impl Cluster<'_> {
    /// Node names, n1..nN.
    pub fn nodes(&self) -> Vec<String> {
        self.nodes.clone()
    }
    /// The storage node, when there is one.
    pub fn storage_node(&self) -> Option<String> {
        self.storage.clone()
    }
    /// SIGKILL a node's broker.
    pub async fn kill_node(&self, node: &str) -> Result<(), NemesisError> {
        self.control
            .kill(node)
            .await
            .map_err(|e| op_failed("kill", node, e))
    }
    /// Start a killed or stopped node and wait until it is ready again (90 s at most).
    pub async fn start_node(&self, node: &str) -> Result<(), NemesisError> {
        self.control
            .start(node)
            .await
            .map_err(|e| op_failed("start", node, e))?;
        self.ready
            .wait_ready(node, Duration::from_secs(90))
            .await
            .map_err(|e| op_failed("start", node, e))
    }
    /// [`NodeControl::disk_fault`]: the filesystem's report.
    pub async fn disk_fault(
        &self,
        node: &str,
        fault: DiskFault,
        seed: u64,
    ) -> Result<Value, NemesisError> {
        self.control
            .disk_fault(node, fault, seed)
            .await
            .map_err(|e| match e {
                ControlError::Unsupported(why) => NemesisError::Unsupported {
                    fault: fault.name().to_string(),
                    why,
                },
                e => op_failed(fault.name(), node, e),
            })
    }
    /// Freeze a node.
    pub async fn pause_node(&self, node: &str) -> Result<(), NemesisError> {
        self.control
            .pause(node)
            .await
            .map_err(|e| op_failed("pause", node, e))
    }
    /// Resume a frozen node.
    pub async fn unpause_node(&self, node: &str) -> Result<(), NemesisError> {
        self.control
            .unpause(node)
            .await
            .map_err(|e| op_failed("resume", node, e))
    }
    /// The node's address on the cluster's own network (for partitions).
    pub async fn node_ip(&self, node: &str) -> Result<String, NemesisError> {
        self.control
            .node_ip(node)
            .await
            .map_err(|e| op_failed("node-ip", node, e))
    }
    /// [`NodeControl::drop_traffic`].
    pub async fn drop_traffic(
        &self,
        node: &str,
        ips: &[String],
        outbound: bool,
    ) -> Result<(), NemesisError> {
        self.control
            .drop_traffic(node, ips, outbound)
            .await
            .map_err(|e| op_failed("drop-traffic", node, e))
    }
    /// [`NodeControl::heal_traffic`].
    pub async fn heal_traffic(&self, node: &str) -> Result<(), NemesisError> {
        self.control
            .heal_traffic(node)
            .await
            .map_err(|e| op_failed("heal-traffic", node, e))
    }
    /// [`NodeControl::add_delay`].
    pub async fn add_delay(&self, node: &str, ms: u32) -> Result<(), NemesisError> {
        self.control
            .add_delay(node, ms)
            .await
            .map_err(|e| op_failed("add-delay", node, e))
    }
    /// [`NodeControl::remove_delay`].
    pub async fn remove_delay(&self, node: &str) -> Result<(), NemesisError> {
        self.control
            .remove_delay(node)
            .await
            .map_err(|e| op_failed("remove-delay", node, e))
    }
    /// [`Consumers::kill_consumer`]; a failure when the run has no consumers.
    pub async fn kill_consumer(
        &self,
        pick: u64,
        at: KillConsumerAt,
    ) -> Result<Value, NemesisError> {
        match self.consumers {
            Some(c) => c.kill_consumer(pick, at).await,
            None => Err(op_failed("kill-consumer", "-", "no consumer is running")),
        }
    }
    /// [`Links::link`]; unsupported when the run has no client proxy.
    pub async fn link(&self, node: &str, fault: LinkFault) -> Result<Value, NemesisError> {
        match self.links {
            Some(l) => l.link(node, fault).await,
            None => Err(NemesisError::Unsupported {
                fault: fault.to_string(),
                why: format!("no client proxy in front of {node}"),
            }),
        }
    }
    /// [`Links::heal_links`]; nothing to heal without a proxy.
    pub async fn heal_links(&self) -> Result<Value, NemesisError> {
        match self.links {
            Some(l) => l.heal_links().await,
            None => Ok(Value::Null),
        }
    }
    /// [`Roles::leader`]; the storage node is known without asking the broker.
    pub async fn leader(&self, role: Role) -> Result<Option<String>, NemesisError> {
        if role == Role::Storage {
            return Ok(self.storage.clone());
        }
        if role == Role::DedupStore {
            return Ok(self.dedup_store.clone());
        }
        match self.roles {
            Some(r) => r.leader(role).await,
            None => Err(NemesisError::Unsupported {
                fault: format!("targeting the {role}"),
                why: "this cluster cannot name the node in that role".into(),
            }),
        }
    }
    /// Wait until a producer has a send in flight, at most `limit`.
    pub async fn wait_send_in_flight(&self, limit: Duration) -> bool {
        let until = Instant::now() + limit;
        loop {
            if self.in_flight.now() > 0 {
                return true;
            }
            if Instant::now() >= until {
                return false;
            }
            tokio::time::sleep(Duration::from_millis(1)).await;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Node control that does nothing and answers every command with `10.0.0.N`.
    struct Quiet;

    #[async_trait::async_trait]
    impl NodeControl for Quiet {
        async fn kill(&self, _: &str) -> Result<(), ControlError> {
            Ok(())
        }
        async fn stop(&self, _: &str, _: Duration) -> Result<(), ControlError> {
            Ok(())
        }
        async fn start(&self, _: &str) -> Result<(), ControlError> {
            Ok(())
        }
        async fn pause(&self, _: &str) -> Result<(), ControlError> {
            Ok(())
        }
        async fn unpause(&self, _: &str) -> Result<(), ControlError> {
            Ok(())
        }
        async fn exec(
            &self,
            node: &str,
            command: &Command,
            _: Duration,
        ) -> Result<ExecOutput, ControlError> {
            let exit_code = i64::from(command.display().contains("false"));
            Ok(ExecOutput {
                exit_code,
                stdout: format!("fe80::1 10.0.0.{}\n", node.trim_start_matches('n')),
                stderr: String::new(),
            })
        }
    }

    #[async_trait::async_trait]
    impl Readiness for Quiet {
        async fn wait_ready(&self, _: &str, _: Duration) -> Result<(), ControlError> {
            Ok(())
        }
    }

    fn cluster(in_flight: InFlight) -> Cluster<'static> {
        Cluster {
            nodes: vec!["n1".into(), "n2".into()],
            storage: None,
            dedup_store: None,
            control: &Quiet,
            ready: &Quiet,
            consumers: None,
            links: None,
            roles: None,
            in_flight,
        }
    }

    #[tokio::test]
    async fn a_send_in_flight_is_seen_through_the_handle_the_run_passes() {
        let in_flight = InFlight::new();
        let c = cluster(in_flight.clone());
        assert!(!c.wait_send_in_flight(Duration::from_millis(20)).await);
        in_flight.counter().fetch_add(1, Ordering::Relaxed);
        assert!(c.wait_send_in_flight(Duration::from_millis(20)).await);
        assert!(
            cluster(InFlight::always())
                .wait_send_in_flight(Duration::ZERO)
                .await
        );
    }

    #[tokio::test]
    async fn the_capabilities_a_run_does_not_hand_over_are_refused_with_the_reason() {
        let c = cluster(InFlight::new());
        let e = c
            .kill_consumer(0, KillConsumerAt::Any)
            .await
            .expect_err("no consumers");
        assert_eq!(e.to_string(), "kill-consumer on -: no consumer is running");
        let e = c
            .link("n1", LinkFault::AckLoss)
            .await
            .expect_err("no proxy");
        assert_eq!(
            e.to_string(),
            "ack-loss is not supported here: no client proxy in front of n1"
        );
        assert_eq!(c.heal_links().await.ok(), Some(Value::Null));
        assert!(c.leader(Role::Leader).await.is_err());
        assert_eq!(c.leader(Role::Storage).await.ok(), Some(None));
        // The defaults of node control: `hostname -i`'s IPv4 address, exec_checked.
        assert_eq!(c.node_ip("n2").await.ok().as_deref(), Some("10.0.0.2"));
        let e = Quiet.exec_checked("n1", "false").await.expect_err("exit 1");
        assert!(
            matches!(e, ControlError::CommandFailed { code: 1, .. }),
            "{e}"
        );
    }
}
