//! The SSH backend (Jepsen's model): hosts Gauntlet did not start, listed in an
//! inventory ([`inventory`]), driven with the system's OpenSSH client. It never
//! calls the Docker API. Every command it runs is built in [`commands`].
//!
//! Built so far: the inventory, the commands, and a [`Deployment`] and
//! [`Backend`] for brokers that already run on the hosts (`mode = "installed"`);
//! `mode = "install"` is refused at launch. `docs/backends.md` says what is left.
//!
//! This file holds the [`SshDeployment`] (with its [`NodeControl`] and
//! [`Deployment`]) and the [`SshBackend`]; [`remote`] reaches the hosts,
//! [`hosts`] knows each host's broker and heals them, [`plan`] records a run's
//! commands for `--plan`.
//!
//! May import: `backend` (the [`Backend`] trait and [`ClusterSpec`]),
//! `backend::http`, `broker`, `deployment`, `error` and the run id. Never the
//! run pipeline (`run`), never Docker (`backend::docker`, `images`): the
//! pipeline and the CLI call in here with what they need.
use crate::backend::Backend;
use crate::backend::ClusterSpec;
use crate::broker::{BrokerExt, BrokerKind, Capabilities, ClusterContext, Command, Probe};
use crate::deployment::{CtlResult, Deployment, Endpoint, ExecOutput, NodeControl};
use crate::error::{HarnessError, Result};
use crate::RunId;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, Instant};

pub mod commands;
pub mod hosts;
pub mod install;
pub mod inventory;
pub mod plan;
pub mod remote;

pub use hosts::{heal_hosts, ops, Ops};
pub use inventory::{BrokerSetup, Host, Inventory, KnownHosts};
pub use remote::{open, OpenSsh, Remote};

/// A broker that already runs on the inventory's hosts.
pub struct SshDeployment {
    inventory: Inventory,
    /// Per node, in node order.
    ops: Vec<Ops>,
    remote: Arc<dyn Remote>,
    run_id: RunId,
    logs_dir: Option<PathBuf>,
}

impl SshDeployment {
    /// The deployment of `inventory` for run `run_id`, acting through `remote`.
    pub fn new(
        inventory: Inventory,
        remote: Arc<dyn Remote>,
        run_id: RunId,
        logs_dir: Option<PathBuf>,
    ) -> Result<Self> {
        let ops = (0..inventory.hosts.len())
            .map(|i| ops(&inventory, i))
            .collect::<Result<Vec<_>>>()?;
        Ok(SshDeployment {
            inventory,
            ops,
            remote,
            run_id,
            logs_dir,
        })
    }

    fn ops_of(&self, node: &str) -> Result<&Ops> {
        let i: usize = node
            .strip_prefix('n')
            .and_then(|n| n.parse().ok())
            .filter(|&i| i >= 1 && i <= self.ops.len())
            .ok_or_else(|| HarnessError::UnknownNode(node.to_string()))?;
        Ok(&self.ops[i - 1])
    }

    fn host(&self, node: &str) -> Result<&Host> {
        self.inventory
            .host(node)
            .ok_or_else(|| HarnessError::UnknownNode(node.to_string()))
    }

    /// Runs `script` on `node`'s host (through sudo when the host says so);
    /// an error when it fails.
    async fn run_checked(&self, node: &str, script: &str, timeout: Duration) -> Result<String> {
        let host = self.host(node)?;
        let out = self
            .remote
            .run(host, &commands::privileged(host, script), timeout)
            .await?;
        if out.success() {
            Ok(out.stdout)
        } else {
            Err(HarnessError::CommandFailed {
                node: node.to_string(),
                cmd: script.to_string(),
                code: out.exit_code,
                output: out.combined(),
            })
        }
    }

    /// Whether `node`'s broker runs and takes connections on its client ports.
    async fn ready_once(&self, node: &str) -> std::result::Result<(), String> {
        self.run_checked(
            node,
            &format!(
                "{} >/dev/null",
                self.ops_of(node).map_err(|e| e.to_string())?.pid
            ),
            Duration::from_secs(20),
        )
        .await
        .map_err(|e| e.to_string())?;
        for e in self.endpoints().iter().filter(|e| e.node == node) {
            let addr = e.addr();
            tokio::time::timeout(
                Duration::from_secs(5),
                tokio::net::TcpStream::connect(&addr),
            )
            .await
            .map_err(|_| format!("{addr}: no answer"))?
            .map_err(|err| format!("{addr}: {err}"))?;
        }
        // A broker Gauntlet installed is configured as the recipe's: its own
        // readiness probe applies.
        if self
            .ops_of(node)
            .map_err(|e| e.to_string())?
            .install
            .is_some()
        {
            let i = self.node_index(node).map_err(|e| e.to_string())?;
            let probe = self
                .inventory
                .broker
                .recipe()
                .node_ready(&self.context(), i);
            self.probe_once(node, &probe).await?;
        }
        Ok(())
    }

    fn node_index(&self, node: &str) -> Result<usize> {
        self.inventory
            .nodes()
            .iter()
            .position(|n| n == node)
            .ok_or_else(|| HarnessError::UnknownNode(node.to_string()))
    }

    /// The recipe's view of these nodes (names only: probes address nodes
    /// through [`Deployment::endpoint`]).
    fn context(&self) -> ClusterContext {
        let mut ctx = ClusterContext::for_image(crate::broker::Flavour::Gauntlet, "");
        ctx.nodes = self.inventory.nodes();
        ctx
    }

    /// One try of a recipe probe: a command on the host, or an HTTP GET from
    /// here to the node's port.
    async fn probe_once(&self, node: &str, probe: &Probe) -> std::result::Result<(), String> {
        match probe {
            Probe::Exec { command, expect } => {
                let out = self
                    .exec(node, command, STEP)
                    .await
                    .map_err(|e| e.to_string())?;
                let ok = out.success()
                    && expect
                        .as_ref()
                        .is_none_or(|e| out.stdout.contains(e.as_str()));
                if ok {
                    Ok(())
                } else {
                    Err(format!("{}: {}", command.display(), out.combined()))
                }
            }
            Probe::Http { port, path, expect } => {
                let e = self
                    .endpoint(node, port)
                    .ok_or_else(|| format!("node {node} has no port named {port}"))?;
                match crate::backend::http::http_get(&e.host, e.port, path).await {
                    Ok((200, body))
                        if expect.as_ref().is_none_or(|x| body.contains(x.as_str())) =>
                    {
                        Ok(())
                    }
                    Ok((status, body)) => Err(format!("GET {path}: HTTP {status}\n{body}")),
                    Err(err) => Err(format!("GET {path}: {err}")),
                }
            }
        }
    }

    /// `install` mode: on every host, the package when missing, the node's
    /// configuration, and the broker started when it is not running.
    async fn install_all(&self) -> Result<()> {
        for (i, node) in self.inventory.nodes().iter().enumerate() {
            let Some(p) = &self.ops[i].install else {
                continue;
            };
            let script = format!(
                "{} && {} && ({} >/dev/null || {})",
                p.install, p.configure, p.pid, p.start
            );
            self.run_checked(node, &script, Duration::from_secs(600))
                .await?;
        }
        Ok(())
    }
}

const STEP: Duration = Duration::from_secs(20);

#[async_trait::async_trait]
impl NodeControl for SshDeployment {
    async fn kill(&self, node: &str) -> CtlResult<()> {
        self.run_checked(node, &commands::kill(&self.ops_of(node)?.pid), STEP)
            .await
            .map(|_| ())
            .map_err(Into::into)
    }
    async fn stop(&self, node: &str, grace: Duration) -> CtlResult<()> {
        let script = commands::stop(&self.ops_of(node)?.pid, grace.as_secs());
        self.run_checked(node, &script, grace + STEP)
            .await
            .map(|_| ())
            .map_err(Into::into)
    }
    async fn start(&self, node: &str) -> CtlResult<()> {
        self.run_checked(node, &self.ops_of(node)?.start.clone(), STEP)
            .await
            .map(|_| ())
            .map_err(Into::into)
    }
    async fn restart(&self, node: &str, grace: Duration) -> CtlResult<()> {
        self.stop(node, grace).await?;
        self.start(node).await
    }
    async fn pause(&self, node: &str) -> CtlResult<()> {
        self.run_checked(
            node,
            &commands::signal(&self.ops_of(node)?.pid, "STOP"),
            STEP,
        )
        .await
        .map(|_| ())
        .map_err(Into::into)
    }
    async fn unpause(&self, node: &str) -> CtlResult<()> {
        self.run_checked(
            node,
            &commands::signal(&self.ops_of(node)?.pid, "CONT"),
            STEP,
        )
        .await
        .map(|_| ())
        .map_err(Into::into)
    }
    async fn exec(
        &self,
        node: &str,
        command: &Command,
        timeout: Duration,
    ) -> CtlResult<ExecOutput> {
        let host = self.host(node)?;
        let line: Vec<String> = command.argv.iter().map(|a| commands::quote(a)).collect();
        let script = match &command.user {
            Some(u) => format!("sudo -n -u {} {}", commands::quote(u), line.join(" ")),
            None => commands::privileged(host, &line.join(" ")),
        };
        self.remote
            .run(host, &script, timeout)
            .await
            .map_err(Into::into)
    }
    async fn drop_traffic(&self, node: &str, ips: &[String], outbound: bool) -> CtlResult<()> {
        self.run_checked(node, &commands::drop_traffic(ips, outbound), STEP)
            .await
            .map(|_| ())
            .map_err(Into::into)
    }
    async fn heal_traffic(&self, node: &str) -> CtlResult<()> {
        self.run_checked(node, &commands::heal_traffic(), STEP)
            .await
            .map(|_| ())
            .map_err(Into::into)
    }
    async fn add_delay(&self, node: &str, ms: u32) -> CtlResult<()> {
        let i = self.host(node)?.interface.clone();
        self.run_checked(node, &commands::add_delay(&i, ms), STEP)
            .await
            .map(|_| ())
            .map_err(Into::into)
    }
    async fn remove_delay(&self, node: &str) -> CtlResult<()> {
        let i = self.host(node)?.interface.clone();
        self.run_checked(node, &commands::remove_delay(&i), STEP)
            .await
            .map(|_| ())
            .map_err(Into::into)
    }
    async fn node_ip(&self, node: &str) -> CtlResult<String> {
        let host = self.host(node)?;
        if host.address.parse::<std::net::Ipv4Addr>().is_ok() {
            return Ok(host.address.clone());
        }
        // A name: what this machine resolves it to, as the clients do.
        tokio::net::lookup_host((host.address.as_str(), host.port))
            .await
            .ok()
            .and_then(|mut a| a.find(|a| a.is_ipv4()))
            .map(|a| a.ip().to_string())
            .ok_or_else(|| {
                HarnessError::Ssh {
                    host: host.address.clone(),
                    what: "no IPv4 address for this name".into(),
                }
                .into()
            })
    }
}

#[async_trait::async_trait]
impl Deployment for SshDeployment {
    fn run_id(&self) -> &RunId {
        &self.run_id
    }
    fn broker(&self) -> BrokerKind {
        self.inventory.broker
    }
    fn nodes(&self) -> Vec<String> {
        self.inventory.nodes()
    }
    fn endpoints(&self) -> Vec<Endpoint> {
        self.inventory
            .nodes()
            .into_iter()
            .zip(&self.inventory.hosts)
            .zip(&self.ops)
            .flat_map(|((node, h), o)| {
                o.ports.iter().map(move |(name, port)| Endpoint {
                    node: node.clone(),
                    port_name: name.clone(),
                    host: h.address.clone(),
                    port: *port,
                })
            })
            .collect()
    }
    fn capabilities(&self) -> Capabilities {
        Capabilities {
            max_nodes: self.inventory.hosts.len(),
            // The broker's own disk: what it keeps is what it keeps.
            durable_across_restart: true,
            replicated: self.inventory.hosts.len() > 1,
            transactions: self.inventory.broker == BrokerKind::Kafka,
            process_faults: true,
            pause: true,
            net_admin_exec: true,
        }
    }
    async fn wait_ready(&self, node: &str, timeout: Duration) -> Result<()> {
        let started = Instant::now();
        loop {
            let last = match self.ready_once(node).await {
                Ok(()) => return Ok(()),
                Err(e) => e,
            };
            if started.elapsed() >= timeout {
                return Err(HarnessError::NotReady {
                    node: node.to_string(),
                    waited: started.elapsed(),
                    probe: "the broker's pid command, then a TCP connect to each client port"
                        .into(),
                    probe_output: last,
                    log_tail: self
                        .run_checked(
                            node,
                            &format!("tail -n 40 {}", commands::quote(&self.ops_of(node)?.log)),
                            STEP,
                        )
                        .await
                        .unwrap_or_default(),
                });
            }
            tokio::time::sleep(Duration::from_millis(500)).await;
        }
    }
    async fn wait_cluster_ready(&self, timeout: Duration) -> Result<()> {
        for n in self.nodes() {
            self.wait_ready(&n, timeout).await?;
        }
        if self.ops.iter().all(|o| o.install.is_none()) {
            return Ok(());
        }
        // What Gauntlet installed also shows a formed cluster.
        let started = Instant::now();
        for (i, probe) in install::cluster_probes(&self.inventory) {
            let node = format!("n{}", i + 1);
            loop {
                let last = match self.probe_once(&node, &probe).await {
                    Ok(()) => break,
                    Err(e) => e,
                };
                if started.elapsed() >= timeout {
                    return Err(HarnessError::NotReady {
                        node,
                        waited: started.elapsed(),
                        probe: probe.display(),
                        probe_output: last,
                        log_tail: String::new(),
                    });
                }
                tokio::time::sleep(Duration::from_millis(500)).await;
            }
        }
        Ok(())
    }
    async fn collect_logs(&self, dir: &Path) -> Result<Vec<PathBuf>> {
        tokio::fs::create_dir_all(dir)
            .await
            .map_err(crate::error::io_err(format!("creating {}", dir.display())))?;
        let mut written = Vec::new();
        for n in self.nodes() {
            // The last 8 MiB: a long-lived broker's log can be large.
            let text = self
                .run_checked(
                    &n,
                    &format!("tail -c 8388608 {}", commands::quote(&self.ops_of(&n)?.log)),
                    Duration::from_secs(60),
                )
                .await?;
            let path = dir.join(format!("{n}.log"));
            tokio::fs::write(&path, text)
                .await
                .map_err(crate::error::io_err(format!("writing {}", path.display())))?;
            written.push(path);
        }
        Ok(written)
    }
    async fn teardown(&self) -> Result<()> {
        // An installed broker stays; what the faults changed is undone.
        let logs = match &self.logs_dir {
            Some(d) => self.collect_logs(d).await.map(|_| ()),
            None => Ok(()),
        };
        heal_hosts(&self.inventory, self.remote.as_ref()).await?;
        // What Gauntlet installed goes: the broker stopped, its data,
        // configuration and log removed (the package stays).
        for (i, node) in self.inventory.nodes().iter().enumerate() {
            if let Some(p) = &self.ops[i].install {
                self.run_checked(node, &p.remove, STEP).await?;
            }
        }
        logs
    }
}

/// Brokers on the inventory's hosts.
pub struct SshBackend {
    inventory: Inventory,
    remote: Arc<dyn Remote>,
}

impl SshBackend {
    /// The backend of `inventory`, acting through `remote`.
    pub fn new(inventory: Inventory, remote: Arc<dyn Remote>) -> Self {
        SshBackend { inventory, remote }
    }
}

#[async_trait::async_trait]
impl Backend for SshBackend {
    fn name(&self) -> &'static str {
        "ssh"
    }
    async fn launch(&self, spec: ClusterSpec) -> Result<Box<dyn Deployment>> {
        if spec.broker != self.inventory.broker {
            return Err(HarnessError::Scenario(format!(
                "the scenario is for {} and the inventory's broker is {}",
                spec.broker, self.inventory.broker
            )));
        }
        if !spec.durability.is_default() {
            // The hosts run the broker as installed: its configuration is theirs.
            return Err(HarnessError::Scenario(format!(
                "[redis] and [nats] durability settings are applied by the recipe's command \
                 line in a container; the SSH backend runs {} as its hosts have it configured",
                spec.broker
            )));
        }
        if let Some(n) = spec.nodes {
            if n != self.inventory.hosts.len() {
                return Err(HarnessError::Scenario(format!(
                    "the scenario asks for {n} nodes and the inventory has {} hosts",
                    self.inventory.hosts.len()
                )));
            }
        }
        let d = SshDeployment::new(
            self.inventory.clone(),
            self.remote.clone(),
            spec.run_id.clone(),
            spec.logs_dir.clone(),
        )?;
        let timeout = spec
            .ready_timeout
            .unwrap_or_else(|| crate::broker::BrokerExt::recipe(spec.broker).ready_timeout());
        let ready = async {
            d.install_all().await?;
            d.wait_cluster_ready(timeout).await
        }
        .await;
        if let Err(e) = ready {
            // The logs kept, the hosts healed, what was installed removed.
            let _ = d.teardown().await;
            return Err(e);
        }
        Ok(Box::new(d))
    }
    async fn remove_run(&self, _run: &RunId) -> Result<()> {
        heal_hosts(&self.inventory, self.remote.as_ref()).await?;
        // What Gauntlet installed for the run goes too.
        for (i, h) in self.inventory.hosts.iter().enumerate() {
            if let Some(p) = ops(&self.inventory, i).ok().and_then(|o| o.install) {
                let _ = self
                    .remote
                    .run(h, &commands::privileged(h, &p.remove), STEP)
                    .await;
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Mutex;

    /// Records every script with its host; answers from `pid` for pid commands.
    #[derive(Default)]
    struct Recording {
        runs: Mutex<Vec<(String, String)>>,
        fail_host: Option<String>,
    }

    impl Recording {
        fn runs(&self) -> Vec<(String, String)> {
            self.runs.lock().map(|r| r.clone()).unwrap_or_default()
        }
    }

    #[async_trait::async_trait]
    impl Remote for Recording {
        async fn run(&self, host: &Host, script: &str, _t: Duration) -> Result<ExecOutput> {
            if let Ok(mut r) = self.runs.lock() {
                r.push((host.address.clone(), script.to_string()));
            }
            if self.fail_host.as_deref() == Some(host.address.as_str()) {
                return Err(HarnessError::Ssh {
                    host: host.address.clone(),
                    what: "Connection refused".into(),
                });
            }
            Ok(ExecOutput {
                exit_code: 0,
                stdout: "4242\n".into(),
                stderr: String::new(),
            })
        }
    }

    fn inventory(sudo_on_second: bool) -> Inventory {
        Inventory::parse(&format!(
            "[[host]]\naddress = \"10.0.0.11\"\n[[host]]\naddress = \"10.0.0.12\"\nsudo = {sudo_on_second}\ninterface = \"ens4\"\n\
             [broker]\nkind = \"redis\"\nmode = \"installed\"\npid = \"pgrep -x redis-server\"\n\
             start = \"redis-server /etc/redis.conf\"\nlog = \"/var/log/redis.log\"\nports = {{ client = 6379 }}\n"
        ))
        .expect("inventory")
    }

    fn deployment(rec: &Arc<Recording>, sudo: bool) -> SshDeployment {
        let remote: Arc<dyn Remote> = rec.clone();
        SshDeployment::new(inventory(sudo), remote, RunId::from_name("t"), None)
            .expect("deployment")
    }

    #[tokio::test]
    async fn each_fault_runs_its_command_on_its_host_only() {
        let rec = Arc::new(Recording::default());
        let d = deployment(&rec, true);
        d.kill("n1").await.expect("kill");
        d.pause("n2").await.expect("pause");
        d.drop_traffic("n1", &["10.0.0.12".into()], false)
            .await
            .expect("drop");
        d.add_delay("n2", 80).await.expect("delay");
        let runs = rec.runs();
        assert_eq!(runs.len(), 4);
        assert_eq!(
            runs[0],
            ("10.0.0.11".into(), commands::kill("pgrep -x redis-server"))
        );
        assert_eq!(runs[1].0, "10.0.0.12");
        assert_eq!(
            runs[1].1,
            format!(
                "sudo -n sh -c {}",
                commands::quote(&commands::signal("pgrep -x redis-server", "STOP"))
            )
        );
        assert_eq!(
            runs[2],
            (
                "10.0.0.11".into(),
                commands::drop_traffic(&["10.0.0.12".into()], false)
            )
        );
        assert!(
            runs[3]
                .1
                .contains("tc qdisc add dev ens4 root netem delay 80ms"),
            "{:?}",
            runs[3]
        );
        assert!(d.kill("n3").await.is_err(), "no third host");
        assert_eq!(d.node_ip("n2").await.expect("ip"), "10.0.0.12");
        assert_eq!(
            d.endpoints().iter().map(Endpoint::addr).collect::<Vec<_>>(),
            vec!["10.0.0.11:6379", "10.0.0.12:6379"]
        );
    }

    #[tokio::test]
    async fn heal_reaches_every_host_and_reports_the_one_it_could_not() {
        let rec = Arc::new(Recording {
            fail_host: Some("10.0.0.11".into()),
            ..Recording::default()
        });
        let e = heal_hosts(&inventory(false), rec.as_ref())
            .await
            .expect_err("host 1 unreachable");
        assert!(e.to_string().contains("10.0.0.11"), "{e}");
        let runs = rec.runs();
        assert_eq!(runs.len(), 2, "the second host is healed all the same");
        let s = &runs[1].1;
        assert!(s.contains(&commands::heal_traffic()), "{s}");
        assert!(s.contains("tc qdisc del dev ens4 root netem"), "{s}");
        assert!(
            s.contains("kill -CONT") && s.contains("redis-server /etc/redis.conf"),
            "{s}"
        );
    }

    #[tokio::test]
    async fn the_backend_refuses_what_the_inventory_cannot_give() {
        let rec: Arc<dyn Remote> = Arc::new(Recording::default());
        let b = SshBackend::new(inventory(false), rec.clone());
        let e = b
            .launch(ClusterSpec::new(BrokerKind::RabbitMq))
            .await
            .err()
            .map(|e| e.to_string())
            .unwrap_or_default();
        assert!(e.contains("inventory's broker is redis"), "{e}");
        let e = b
            .launch(ClusterSpec::new(BrokerKind::Redis).nodes(3))
            .await
            .err()
            .map(|e| e.to_string())
            .unwrap_or_default();
        assert!(e.contains("2 hosts"), "{e}");
        let mut everysec = crate::broker::Durability::default();
        everysec.redis.appendfsync = crate::broker::AppendFsync::Everysec;
        let e = b
            .launch(ClusterSpec::new(BrokerKind::Redis).durability(everysec))
            .await
            .err()
            .map(|e| e.to_string())
            .unwrap_or_default();
        assert!(e.contains("[redis] and [nats]"), "{e}");
        let install = Inventory::parse(
            "[[host]]\naddress = \"h\"\n[broker]\nkind = \"redis\"\nmode = \"install\"\n",
        )
        .expect("inventory");
        let e = SshDeployment::new(install, rec, RunId::from_name("t"), None)
            .err()
            .map(|e| e.to_string())
            .unwrap_or_default();
        assert!(e.contains("built for nats only"), "{e}");
    }
}
