//! A cluster of one broker in Docker containers: the [`DockerDeployment`],
//! its launch, its [`NodeControl`] and [`Deployment`]; its readiness probes
//! and logs are in `cluster/probe.rs`.
//!
//! May import: `backend` (the spec), `backend::docker`'s `image` and
//! `ports`, `broker`, `deployment`, `machine_lock` (the run network's
//! creation), `error` and the labels; never `run`.
mod addresses;
mod disk;
mod probe;

use super::image::ensure_image;
use super::labelled::{remove_labelled, remove_run_blocking};
use super::ports::free_ports;
use crate::backend::ClusterSpec;
use crate::broker::BrokerExt;
use crate::broker::{
    BrokerKind, Capabilities, ClusterContext, Command, DataDir, NodePlan, Probe, Recipe,
    DEDUP_STORE_NODE, STORAGE_NODE,
};
use crate::deployment::{CtlResult, Deployment, Endpoint, ExecOutput, NodeControl};
use crate::error::{docker_err, io_err, HarnessError, Result};
use crate::{RunId, LABEL_BROKER, LABEL_NODE, LABEL_RUN};
use bollard::container::LogOutput;
use bollard::exec::StartExecResults;
use bollard::models::{
    ContainerCreateBody, EndpointIpamConfig, EndpointSettings, ExecConfig, HostConfig,
    NetworkingConfig, PortBinding,
};
use bollard::query_parameters::{
    CreateContainerOptions, KillContainerOptions, StartContainerOptions, StopContainerOptions,
};
use bollard::Docker;
use futures_util::StreamExt;

/// The dedup store's port in its container (Redis's).
const DEDUP_STORE_PORT: u16 = 6379;

/// Ports a node publishes on the host: the exposed ports and their bindings.
type PortMap = (Vec<String>, HashMap<String, Option<Vec<PortBinding>>>);
use std::collections::{BTreeMap, HashMap};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

/// How often a pause is asked for when the cgroup freezer could not freeze the
/// node in time.
const PAUSE_ATTEMPTS: usize = 4;

/// The engine's answer when the cgroup freezer gave up (runc's "unable to
/// freeze"): the node is running again, as before the pause was asked for.
fn is_freeze_timeout(e: &bollard::errors::Error) -> bool {
    matches!(
        e,
        bollard::errors::Error::DockerResponseServerError { status_code: 500, message }
            if message.contains("unable to freeze")
    )
}

#[derive(Debug, Clone)]
struct Node {
    name: String,
    container: String,
    endpoints: Vec<Endpoint>,
}

/// A running cluster in Docker. Dropping it without [`Deployment::teardown`] still
/// removes its containers and network (also while unwinding from a panic).
pub struct DockerDeployment {
    docker: Docker,
    run_id: RunId,
    broker: BrokerKind,
    recipe: &'static dyn Recipe,
    ctx: ClusterContext,
    network: Option<String>,
    nodes: Vec<Node>,
    /// The storage node ([`Recipe::storage`]) and its readiness probe.
    storage: Option<(Node, Probe)>,
    /// The dedup store node (seed D7), its readiness probe, and its host port.
    dedup: Option<(Node, Probe)>,
    /// The host port kept for the dedup store.
    dedup_port: Option<u16>,
    logs_dir: Option<PathBuf>,
    ready_timeout: Duration,
    torn_down: AtomicBool,
    /// Gauntlet's filesystem on the host, when the run mounts it.
    diskfs: Option<PathBuf>,
    /// The nodes whose data it is mounted over, and where their data is.
    mounted: HashMap<String, DataDir>,
    /// The run network's subnet, when each container has a fixed address on it.
    addresses: Option<addresses::Addresses>,
    /// Each container's fixed address on the run's network, by node name.
    ips: HashMap<String, std::net::Ipv4Addr>,
    /// The leases of the host ports the nodes publish: no other run chooses
    /// them while this deployment lives.
    _host_ports: super::ports::HostPorts,
}

impl std::fmt::Debug for DockerDeployment {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("DockerDeployment")
            .field("run_id", &self.run_id)
            .field("broker", &self.broker)
            .field("nodes", &self.nodes)
            .finish()
    }
}

impl DockerDeployment {
    /// Create the network and nodes, start them, join them into a cluster and wait
    /// until it is ready. On failure everything created so far is removed.
    pub async fn launch(docker: &Docker, spec: ClusterSpec) -> Result<Self> {
        let recipe = spec.broker.recipe();
        let flavour = spec.image.flavour;
        let secret = format!(
            "gauntletcookie{}",
            spec.run_id.as_str().replace(['-', '.'], "")
        );
        let n = spec.node_count();
        let caps = spec.capabilities();

        let names: Vec<String> = (1..=n).map(|i| format!("n{i}")).collect();
        let mut host_endpoints = Vec::with_capacity(n);
        let mut host_ports = free_ports(n * recipe.ports().len() + usize::from(spec.dedup_store))?;
        let mut ports = std::mem::take(&mut host_ports.ports).into_iter();
        for _ in 0..n {
            let mut m = BTreeMap::new();
            for p in recipe.ports() {
                let port = ports.next().ok_or_else(|| {
                    HarnessError::NoPort(std::io::Error::other("fewer free ports than asked"))
                })?;
                m.insert(p.name, ("127.0.0.1".to_string(), port));
            }
            host_endpoints.push(m);
        }
        let ctx = ClusterContext {
            nodes: names.clone(),
            host_endpoints,
            client_endpoints: spec.client_endpoints.clone(),
            flavour,
            secret,
            image: spec.image.name.clone(),
            storage: None,
            durability: spec.durability,
        };
        let mut ctx = ctx;
        if recipe.storage(&ctx).is_some() {
            ctx.storage = Some(STORAGE_NODE.to_string());
        }
        if n == 0 || n > caps.max_nodes {
            return Err(HarnessError::TooManyNodes {
                broker: spec.broker.to_string(),
                max: caps.max_nodes,
                asked: n,
            });
        }
        spec.check_durability()?;
        ensure_image(docker, &spec).await?;
        let mut dep = DockerDeployment {
            docker: docker.clone(),
            run_id: spec.run_id.clone(),
            broker: spec.broker,
            recipe,
            ctx,
            network: None,
            nodes: Vec::new(),
            storage: None,
            dedup: None,
            dedup_port: None,
            logs_dir: spec.logs_dir.clone(),
            ready_timeout: spec.ready_timeout.unwrap_or_else(|| recipe.ready_timeout()),
            torn_down: AtomicBool::new(false),
            diskfs: spec.diskfs.clone(),
            mounted: HashMap::new(),
            addresses: None,
            ips: HashMap::new(),
            _host_ports: host_ports,
        };
        if spec.dedup_store {
            dep.dedup_port = Some(ports.next().ok_or_else(|| {
                HarnessError::NoPort(std::io::Error::other("no free port for the dedup store"))
            })?);
        }
        if dep.diskfs.is_some() {
            spec.disk_faults().map_err(HarnessError::Scenario)?;
        }
        // From here on, an early return drops `dep`, which removes what exists.
        let launched = async {
            dep.create(&spec).await?;
            dep.form().await?;
            dep.reach_directly().await;
            Ok(())
        }
        .await;
        match launched {
            Ok(()) => Ok(dep),
            Err(cause) => Err(dep.keep_logs_of_failed_launch(cause).await),
        }
    }

    /// A launch failed: each node that was created leaves its log in the logs
    /// folder, and the error says where (the nodes go when `self` is dropped).
    async fn keep_logs_of_failed_launch(&self, cause: HarnessError) -> HarnessError {
        let Some(dir) = &self.logs_dir else {
            return cause;
        };
        if self.nodes.is_empty() && self.storage.is_none() {
            return cause;
        }
        match self.collect_logs(dir).await {
            Ok(written) if !written.is_empty() => HarnessError::LaunchFailed {
                cause: Box::new(cause),
                logs: dir.clone(),
            },
            _ => cause,
        }
    }

    fn labels(&self, node: Option<&str>) -> HashMap<String, String> {
        let mut l = HashMap::from([
            (LABEL_RUN.to_string(), self.run_id.to_string()),
            (LABEL_BROKER.to_string(), self.broker.to_string()),
        ]);
        if let Some(n) = node {
            l.insert(LABEL_NODE.to_string(), n.to_string());
        }
        l
    }

    /// Creates (does not start) the container of node `name` on the run's
    /// network, reachable there by its name, with NET_ADMIN (for the nemesis's
    /// iptables and tc) and an init; `ports` publishes ports on the host.
    /// With `data` and the run's filesystem, the node starts under Gauntlet's
    /// filesystem mounted over its data (`disk.rs`). Returns its id; `what`
    /// names it in the error.
    #[allow(clippy::too_many_arguments)]
    async fn create_container(
        &mut self,
        name: &str,
        what: &str,
        image: String,
        plan: &NodePlan,
        env: Vec<String>,
        ports: Option<PortMap>,
        data: Option<DataDir>,
    ) -> Result<String> {
        let net_name = format!("gauntlet-{}", self.run_id);
        let container_name = format!("gauntlet-{}-{name}", self.run_id);
        let (exposed, bindings) = ports.unzip();
        let mut host_config = HostConfig {
            cap_add: Some(vec!["NET_ADMIN".into()]),
            port_bindings: bindings,
            network_mode: Some(net_name.clone()),
            init: Some(true),
            ..Default::default()
        };
        let ip = self.addresses.as_mut().and_then(|a| a.assign());
        if let Some(ip) = ip {
            self.ips.insert(name.to_string(), ip);
        }
        let mut entrypoint = plan.entrypoint.clone();
        if let (Some(fs), Some(data)) = (self.diskfs.clone(), data) {
            entrypoint = Some(disk::mount(&mut host_config, &fs, plan, &data, what)?);
            self.mounted.insert(name.to_string(), data);
        }
        let body = ContainerCreateBody {
            hostname: Some(name.to_string()),
            image: Some(image),
            entrypoint,
            cmd: Some(plan.cmd.clone()),
            env: Some(env),
            user: plan.user.clone(),
            labels: Some(self.labels(Some(name))),
            exposed_ports: exposed,
            host_config: Some(host_config),
            networking_config: Some(NetworkingConfig {
                endpoints_config: Some(HashMap::from([(
                    net_name,
                    EndpointSettings {
                        aliases: Some(vec![name.to_string()]),
                        // Kept across restarts: the clients connect to it.
                        ipam_config: ip.map(|ip| EndpointIpamConfig {
                            ipv4_address: Some(ip.to_string()),
                            ..Default::default()
                        }),
                        ..Default::default()
                    },
                )])),
            }),
            ..Default::default()
        };
        let created = self
            .docker
            .create_container(
                Some(CreateContainerOptions {
                    name: Some(container_name.clone()),
                    ..Default::default()
                }),
                body,
            )
            .await
            .map_err(docker_err(format!("creating {what} ({container_name})")))?;
        Ok(created.id)
    }

    async fn create(&mut self, spec: &ClusterSpec) -> Result<()> {
        let net_name = format!("gauntlet-{}", self.run_id);
        let (net, addresses) =
            addresses::create_network(&self.docker, &net_name, self.labels(None)).await?;
        self.network = Some(net);
        self.addresses = addresses;

        if let Some(sp) = self.recipe.storage(&self.ctx) {
            // The storage node first, ready before any broker starts (a broker that
            // finds no storage may give up).
            let name = STORAGE_NODE.to_string();
            let image = sp.image.clone().unwrap_or_else(|| spec.image.name.clone());
            let env = sp
                .plan
                .env
                .iter()
                .chain(&spec.storage_env)
                .cloned()
                .collect();
            let id = self
                .create_container(
                    &name,
                    "the storage node",
                    image,
                    &sp.plan,
                    env,
                    None,
                    sp.data,
                )
                .await?;
            self.storage = Some((
                Node {
                    name: name.clone(),
                    container: id,
                    endpoints: Vec::new(),
                },
                sp.ready.clone(),
            ));
            self.docker
                .start_container(&self.storage_container()?, None::<StartContainerOptions>)
                .await
                .map_err(docker_err("starting the storage node".to_string()))?;
            self.wait_probe(&name, &sp.ready, self.ready_timeout)
                .await?;
        }

        if let Some(port) = self.dedup_port {
            self.create_dedup_store(port).await?;
        }

        let data = self.recipe.data_dir(&self.ctx);
        for (i, name) in self.ctx.nodes.clone().iter().enumerate() {
            let plan = self.recipe.node(&self.ctx, i);
            let mut bindings = HashMap::new();
            let mut exposed = Vec::new();
            let mut endpoints = Vec::new();
            for p in self.recipe.ports() {
                let (host, port) = self.ctx.host_endpoints[i][p.name].clone();
                let key = format!("{}/tcp", p.port);
                exposed.push(key.clone());
                bindings.insert(
                    key,
                    Some(vec![PortBinding {
                        host_ip: Some(host.clone()),
                        host_port: Some(port.to_string()),
                    }]),
                );
                endpoints.push(Endpoint {
                    node: name.clone(),
                    port_name: p.name.to_string(),
                    host,
                    port,
                });
            }
            let id = self
                .create_container(
                    name,
                    &format!("node {name}"),
                    spec.image.name.clone(),
                    &plan,
                    plan.env.clone(),
                    Some((exposed, bindings)),
                    data,
                )
                .await?;
            self.nodes.push(Node {
                name: name.clone(),
                container: id,
                endpoints,
            });
        }
        for node in &self.nodes {
            self.docker
                .start_container(&node.container, None::<StartContainerOptions>)
                .await
                .map_err(docker_err(format!("starting node {}", node.name)))?;
        }
        Ok(())
    }

    /// The dedup store (seed D7): Gauntlet's Redis image, `appendfsync always`,
    /// its port published on 127.0.0.1, started and ready before the brokers.
    async fn create_dedup_store(&mut self, port: u16) -> Result<()> {
        let name = DEDUP_STORE_NODE.to_string();
        let (plan, ready) = crate::brokers::redis::dedup_store_plan();
        let key = format!("{DEDUP_STORE_PORT}/tcp");
        let bindings = HashMap::from([(
            key.clone(),
            Some(vec![PortBinding {
                host_ip: Some("127.0.0.1".into()),
                host_port: Some(port.to_string()),
            }]),
        )]);
        let image = crate::broker::ImageRef::local(BrokerKind::Redis).name;
        let id = self
            .create_container(
                &name,
                "the dedup store",
                image,
                &plan,
                plan.env.clone(),
                Some((vec![key], bindings)),
                None,
            )
            .await?;
        self.dedup = Some((
            Node {
                name: name.clone(),
                container: id.clone(),
                endpoints: vec![Endpoint {
                    node: name.clone(),
                    port_name: "client".into(),
                    host: "127.0.0.1".into(),
                    port,
                }],
            },
            ready.clone(),
        ));
        self.docker
            .start_container(&id, None::<StartContainerOptions>)
            .await
            .map_err(docker_err("starting the dedup store".to_string()))?;
        self.wait_probe(&name, &ready, self.ready_timeout).await
    }

    /// Once the cluster is formed: the clients connect to each node's fixed
    /// address on the run's network and the recipe's own port, not through
    /// the published port and `docker-proxy` (`addresses.rs`), when the host
    /// reaches that network (Docker Engine on Linux does; Docker Desktop's
    /// virtual machine does not) and the broker does not tell its clients the
    /// addresses to use (Kafka's advertised listeners are the published ports).
    /// Else the published ports stay, as before.
    async fn reach_directly(&mut self) {
        if self.recipe.clients_learn_addresses() {
            return;
        }
        let port_of = |name: &str| {
            self.recipe
                .ports()
                .iter()
                .find(|p| p.name == name)
                .map(|p| p.port)
        };
        let direct = |node: &Node| -> Option<Vec<Endpoint>> {
            let ip = self.ips.get(&node.name)?;
            node.endpoints
                .iter()
                .map(|e| {
                    Some(Endpoint {
                        host: ip.to_string(),
                        port: port_of(&e.port_name)?,
                        ..e.clone()
                    })
                })
                .collect()
        };
        let Some(nodes) = self.nodes.iter().map(direct).collect::<Option<Vec<_>>>() else {
            return;
        };
        let Some(first) = nodes.first().and_then(|e| e.first()) else {
            return;
        };
        let reached = tokio::time::timeout(
            Duration::from_secs(3),
            tokio::net::TcpStream::connect(first.addr()),
        )
        .await;
        if !matches!(reached, Ok(Ok(_))) {
            return;
        }
        for (node, endpoints) in self.nodes.iter_mut().zip(nodes) {
            node.endpoints = endpoints;
        }
        if let Some((store, _)) = self.dedup.as_mut() {
            if let (Some(ip), Some(e)) = (self.ips.get(&store.name), store.endpoints.first_mut()) {
                e.host = ip.to_string();
                e.port = DEDUP_STORE_PORT;
            }
        }
    }

    async fn form(&self) -> Result<()> {
        self.wait_nodes_ready(self.ready_timeout).await?;
        for step in self.recipe.join(&self.ctx) {
            let node = &self.nodes[step.node];
            let mut attempt = 0;
            loop {
                attempt += 1;
                let out = self
                    .exec(&node.name, &step.command, self.ready_timeout)
                    .await?;
                if out.success() {
                    break;
                }
                if attempt >= 3 {
                    return Err(HarnessError::StepFailed {
                        node: node.name.clone(),
                        cmd: step.command.display(),
                        code: out.exit_code,
                        output: out.combined(),
                    });
                }
                tokio::time::sleep(Duration::from_secs(3)).await;
            }
        }
        self.wait_cluster_ready(self.ready_timeout).await
    }

    fn node(&self, name: &str) -> Result<&Node> {
        self.nodes
            .iter()
            .chain(self.storage.as_ref().map(|(n, _)| n))
            .chain(self.dedup.as_ref().map(|(n, _)| n))
            .find(|n| n.name == name)
            .ok_or_else(|| HarnessError::UnknownNode(name.to_string()))
    }

    fn storage_container(&self) -> Result<String> {
        self.storage
            .as_ref()
            .map(|(n, _)| n.container.clone())
            .ok_or_else(|| HarnessError::UnknownNode(STORAGE_NODE.to_string()))
    }

    fn index(&self, name: &str) -> Result<usize> {
        self.nodes
            .iter()
            .position(|n| n.name == name)
            .ok_or_else(|| HarnessError::UnknownNode(name.to_string()))
    }

    /// The container id of `node` (for tools that need it; nemesis should not).
    pub fn container_id(&self, node: &str) -> Result<&str> {
        Ok(&self.node(node)?.container)
    }

    /// The whole log of `node` (stdout and stderr).
    pub async fn logs(&self, node: &str) -> Result<String> {
        self.log_tail(node, None).await
    }

    async fn remove_all(&self) -> Result<()> {
        if self.torn_down.load(Ordering::SeqCst) {
            return Ok(());
        }
        remove_labelled(&self.docker, Some(&self.run_id)).await?;
        self.torn_down.store(true, Ordering::SeqCst);
        Ok(())
    }
}

#[async_trait::async_trait]
impl NodeControl for DockerDeployment {
    async fn kill(&self, node: &str) -> CtlResult<()> {
        let n = self.node(node)?;
        if self.mounted.contains_key(node) && self.crash_mounted(node).await? {
            return Ok(());
        }
        self.docker
            .kill_container(
                &n.container,
                Some(KillContainerOptions {
                    signal: "SIGKILL".into(),
                }),
            )
            .await
            .map_err(docker_err(format!("killing node {node}")))
            .map_err(Into::into)
    }

    async fn stop(&self, node: &str, grace: Duration) -> CtlResult<()> {
        let n = self.node(node)?;
        self.docker
            .stop_container(
                &n.container,
                Some(StopContainerOptions {
                    t: Some(i32::try_from(grace.as_secs()).unwrap_or(i32::MAX)),
                    signal: None,
                }),
            )
            .await
            .map_err(docker_err(format!("stopping node {node}")))
            .map_err(Into::into)
    }

    async fn start(&self, node: &str) -> CtlResult<()> {
        let n = self.node(node)?;
        self.docker
            .start_container(&n.container, None::<StartContainerOptions>)
            .await
            .map_err(docker_err(format!("starting node {node}")))
            .map_err(Into::into)
    }

    async fn restart(&self, node: &str, grace: Duration) -> CtlResult<()> {
        self.stop(node, grace).await?;
        self.start(node).await
    }

    async fn pause(&self, node: &str) -> CtlResult<()> {
        let n = self.node(node)?;
        let mut attempt = 0;
        loop {
            attempt += 1;
            match self.docker.pause_container(&n.container).await {
                Ok(()) => return Ok(()),
                // The cgroup freezer gives up when a process of the node does not
                // stop in time (one waiting on the engine's storage, such as
                // fuse-overlayfs, on a loaded machine); runc thaws the node again
                // before it answers, so asking again is safe.
                Err(e) if attempt < PAUSE_ATTEMPTS && is_freeze_timeout(&e) => {
                    tokio::time::sleep(Duration::from_millis(250 * attempt as u64)).await;
                }
                Err(e) => return Err(docker_err(format!("pausing node {node}"))(e).into()),
            }
        }
    }

    async fn unpause(&self, node: &str) -> CtlResult<()> {
        let n = self.node(node)?;
        self.docker
            .unpause_container(&n.container)
            .await
            .map_err(docker_err(format!("unpausing node {node}")))
            .map_err(Into::into)
    }

    async fn disk_fault(
        &self,
        node: &str,
        fault: gauntlet_nemesis::DiskFault,
        seed: u64,
    ) -> CtlResult<serde_json::Value> {
        Ok(self.strike_disk(node, fault, seed).await?)
    }

    async fn exec(
        &self,
        node: &str,
        command: &Command,
        timeout: Duration,
    ) -> CtlResult<ExecOutput> {
        let n = self.node(node)?;
        let what = || format!("running `{}` on node {node}", command.display());
        let run = async {
            let created = self
                .docker
                .create_exec(
                    &n.container,
                    ExecConfig {
                        cmd: Some(command.argv.clone()),
                        env: Some(command.env.clone()),
                        user: command.user.clone(),
                        attach_stdout: Some(true),
                        attach_stderr: Some(true),
                        ..Default::default()
                    },
                )
                .await
                .map_err(docker_err(what()))?;
            let mut stdout = Vec::new();
            let mut stderr = Vec::new();
            if let StartExecResults::Attached { mut output, .. } = self
                .docker
                .start_exec(&created.id, None)
                .await
                .map_err(docker_err(what()))?
            {
                while let Some(chunk) = output.next().await {
                    match chunk.map_err(docker_err(what()))? {
                        LogOutput::StdErr { message } => stderr.extend_from_slice(&message),
                        LogOutput::StdOut { message } | LogOutput::Console { message } => {
                            stdout.extend_from_slice(&message)
                        }
                        LogOutput::StdIn { .. } => {}
                    }
                }
            }
            let inspected = self
                .docker
                .inspect_exec(&created.id)
                .await
                .map_err(docker_err(what()))?;
            Ok::<_, HarnessError>(ExecOutput {
                exit_code: inspected.exit_code.unwrap_or(-1),
                stdout: String::from_utf8_lossy(&stdout).into_owned(),
                stderr: String::from_utf8_lossy(&stderr).into_owned(),
            })
        };
        tokio::time::timeout(timeout, run)
            .await
            .map_err(|_| HarnessError::ExecTimeout {
                node: node.to_string(),
                cmd: command.display(),
                waited: timeout,
            })?
            .map_err(Into::into)
    }
}

#[async_trait::async_trait]
impl Deployment for DockerDeployment {
    fn run_id(&self) -> &RunId {
        &self.run_id
    }

    fn broker(&self) -> BrokerKind {
        self.broker
    }

    fn nodes(&self) -> Vec<String> {
        self.nodes.iter().map(|n| n.name.clone()).collect()
    }

    fn endpoints(&self) -> Vec<Endpoint> {
        self.nodes
            .iter()
            .flat_map(|n| n.endpoints.iter().cloned())
            .collect()
    }

    fn capabilities(&self) -> Capabilities {
        let mut caps = self.recipe.capabilities_in(&self.ctx);
        caps.max_nodes = self.nodes.len();
        caps
    }

    fn storage_node(&self) -> Option<String> {
        self.storage.as_ref().map(|(n, _)| n.name.clone())
    }

    fn dedup_store(&self) -> Option<Endpoint> {
        self.dedup
            .as_ref()
            .and_then(|(n, _)| n.endpoints.first().cloned())
    }

    fn disk_mounted(&self) -> bool {
        !self.mounted.is_empty()
    }

    async fn wait_ready(&self, node: &str, timeout: Duration) -> Result<()> {
        if let Some((n, probe)) = &self.storage {
            if n.name == node {
                return self.wait_probe(node, probe, timeout).await;
            }
        }
        if let Some((n, probe)) = &self.dedup {
            if n.name == node {
                return self.wait_probe(node, probe, timeout).await;
            }
        }
        let i = self.index(node)?;
        let probe = self.recipe.node_ready(&self.ctx, i);
        self.wait_probe(node, &probe, timeout).await
    }

    async fn wait_cluster_ready(&self, timeout: Duration) -> Result<()> {
        self.wait_nodes_ready(timeout).await?;
        for (i, probe) in self.recipe.cluster_ready(&self.ctx) {
            self.wait_probe(&self.nodes[i].name, &probe, timeout)
                .await?;
        }
        Ok(())
    }

    async fn collect_logs(&self, dir: &Path) -> Result<Vec<PathBuf>> {
        tokio::fs::create_dir_all(dir)
            .await
            .map_err(io_err(format!("creating {}", dir.display())))?;
        let mut written = Vec::new();
        for node in self
            .nodes
            .iter()
            .chain(self.storage.as_ref().map(|(n, _)| n))
            .chain(self.dedup.as_ref().map(|(n, _)| n))
        {
            let text = self.logs(&node.name).await?;
            let path = dir.join(format!("{}.log", node.name));
            tokio::fs::write(&path, text)
                .await
                .map_err(io_err(format!("writing {}", path.display())))?;
            written.push(path);
        }
        Ok(written)
    }

    async fn teardown(&self) -> Result<()> {
        if self.torn_down.load(Ordering::SeqCst) {
            return Ok(());
        }
        let logs = match &self.logs_dir {
            Some(dir) => self.collect_logs(dir).await.map(|_| ()),
            None => Ok(()),
        };
        self.remove_all().await?;
        logs
    }
}

impl Drop for DockerDeployment {
    fn drop(&mut self) {
        if self.torn_down.swap(true, Ordering::SeqCst) {
            return;
        }
        // Nothing to tell it to here: who needs the outcome calls `teardown`
        // (a run after Ctrl-C also asks its backend to remove the run, and
        // reports a failure); what is left, `gauntlet clean` finds by label.
        let _ = remove_run_blocking(&self.run_id);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_the_freezers_timeout_is_asked_again() {
        let server =
            |status_code: u16, message: &str| bollard::errors::Error::DockerResponseServerError {
                status_code,
                message: message.to_string(),
            };
        // As Docker 20.10 answered on a loaded machine (the broker tests, 2026-12-07).
        assert!(is_freeze_timeout(&server(
            500,
            "Cannot pause container 020fe6e2: OCI runtime pause failed: unable to freeze: unknown"
        )));
        assert!(!is_freeze_timeout(&server(
            409,
            "Container 020fe6e2 is not running"
        )));
        assert!(!is_freeze_timeout(&server(500, "no such process")));
    }
}
