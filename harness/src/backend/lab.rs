//! Gauntlet's SSH lab: machines to try the SSH backend on without having any.
//! Three (or more) containers from Gauntlet's SSH host image on a network of
//! their own, each running OpenSSH's server with a key made here, and an
//! inventory that reaches them only as SSH hosts: their addresses, port 22, the
//! key, and a known_hosts file filled by `ssh-keyscan` (strict checking). The
//! containers carry the `gauntlet.run` label of the lab, so `gauntlet lab down`
//! and `gauntlet clean` remove them. `gauntlet lab up`; the SSH backend's tests.
//!
//! May import: `backend::docker` (its labelled objects), `backend::ssh` (the
//! inventory and remote it fills), `images` (the SSH host image), `error` and
//! the labels. Neither backend imports this file.
use crate::error::{docker_err, io_err, HarnessError, Result};
use crate::{RunId, LABEL_NODE, LABEL_RUN};
use bollard::models::{ContainerCreateBody, HostConfig, NetworkCreateRequest};
use bollard::query_parameters::{CreateContainerOptions, StartContainerOptions};
use bollard::Docker;
use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

/// What each lab machine runs: its own host keys, the lab's public key for
/// root, and sshd in the foreground (under tini).
const BOOT: &str = "ssh-keygen -A >/dev/null && install -d -m 700 /root/.ssh /run/sshd && \
    printf '%s\\n' \"$KEY\" > /root/.ssh/authorized_keys && chmod 600 /root/.ssh/authorized_keys && \
    exec /usr/sbin/sshd -D -e";

/// A running lab.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Lab {
    /// Where the key, known_hosts and `lab-run` (the lab's run id) are.
    pub dir: PathBuf,
    /// The label value of its containers and network.
    pub run: RunId,
    /// The machines' addresses, n1 first.
    pub addresses: Vec<String>,
}

fn run_cmd(program: &str, args: &[&str]) -> Result<String> {
    let out = std::process::Command::new(program)
        .args(args)
        .output()
        .map_err(io_err(format!("running {program}")))?;
    if !out.status.success() {
        return Err(HarnessError::Scenario(format!(
            "{program} {}: {}",
            args.join(" "),
            String::from_utf8_lossy(&out.stderr).trim()
        )));
    }
    Ok(String::from_utf8_lossy(&out.stdout).into_owned())
}

impl Lab {
    /// Starts `n` machines; their key and known_hosts go in `dir`. A build of
    /// the machines' image tells `progress` what it does.
    pub async fn up(
        docker: &Docker,
        dir: &Path,
        n: usize,
        progress: &dyn crate::images::Progress,
    ) -> Result<Lab> {
        std::fs::create_dir_all(dir).map_err(io_err(format!("creating {}", dir.display())))?;
        let key = dir.join("id");
        let _ = std::fs::remove_file(&key);
        let _ = std::fs::remove_file(dir.join("id.pub"));
        let key_s = key.display().to_string();
        run_cmd(
            "ssh-keygen",
            &[
                "-q",
                "-t",
                "ed25519",
                "-N",
                "",
                "-C",
                "gauntlet-lab",
                "-f",
                &key_s,
            ],
        )?;
        let public = std::fs::read_to_string(dir.join("id.pub"))
            .map_err(io_err("reading the lab's public key"))?;
        let image = crate::images::ssh_host_image();
        crate::images::ensure_ssh_host_image(
            docker,
            &crate::images::BuildOptions::default(),
            progress,
        )
        .await?;
        let run = RunId::from_name(&format!("lab-{}", RunId::generate()));
        std::fs::write(dir.join("lab-run"), run.as_str())
            .map_err(io_err("writing the lab's run id"))?;
        let labels = |node: Option<String>| {
            let mut l = HashMap::from([(LABEL_RUN.to_string(), run.to_string())]);
            if let Some(n) = node {
                l.insert(LABEL_NODE.to_string(), n);
            }
            l
        };
        let net = format!("gauntlet-{run}");
        docker
            .create_network(NetworkCreateRequest {
                name: net.clone(),
                driver: Some("bridge".into()),
                labels: Some(labels(None)),
                ..Default::default()
            })
            .await
            .map_err(docker_err(format!("creating network {net}")))?;
        let mut addresses = Vec::new();
        for i in 1..=n {
            let name = format!("gauntlet-{run}-h{i}");
            let created = docker
                .create_container(
                    Some(CreateContainerOptions {
                        name: Some(name.clone()),
                        ..Default::default()
                    }),
                    ContainerCreateBody {
                        hostname: Some(format!("h{i}")),
                        image: Some(image.clone()),
                        entrypoint: Some(vec!["/usr/bin/tini".into(), "--".into()]),
                        cmd: Some(vec!["sh".into(), "-c".into(), BOOT.into()]),
                        env: Some(vec![format!("KEY={}", public.trim())]),
                        labels: Some(labels(Some(format!("n{i}")))),
                        host_config: Some(HostConfig {
                            cap_add: Some(vec!["NET_ADMIN".into()]),
                            network_mode: Some(net.clone()),
                            ..Default::default()
                        }),
                        ..Default::default()
                    },
                )
                .await
                .map_err(docker_err(format!("creating {name}")))?;
            docker
                .start_container(&created.id, None::<StartContainerOptions>)
                .await
                .map_err(docker_err(format!("starting {name}")))?;
            let info = docker
                .inspect_container(&created.id, None)
                .await
                .map_err(docker_err(format!("inspecting {name}")))?;
            let ip = info
                .network_settings
                .and_then(|s| s.networks)
                .and_then(|m| m.get(&net).and_then(|e| e.ip_address.clone()))
                .filter(|ip| !ip.is_empty())
                .ok_or_else(|| HarnessError::Scenario(format!("{name} has no address on {net}")))?;
            addresses.push(ip);
        }
        // Host keys, as an operator records them before trusting machines.
        let mut known = String::new();
        for ip in &addresses {
            let t = Instant::now();
            loop {
                let text =
                    run_cmd("ssh-keyscan", &["-T", "2", "-t", "ed25519", ip]).unwrap_or_default();
                if !text.trim().is_empty() {
                    known.push_str(&text);
                    break;
                }
                if t.elapsed() > Duration::from_secs(60) {
                    return Err(HarnessError::Scenario(format!(
                        "no sshd answered on {ip} within 60 s"
                    )));
                }
                tokio::time::sleep(Duration::from_millis(300)).await;
            }
        }
        std::fs::write(dir.join("known_hosts"), known).map_err(io_err("writing known_hosts"))?;
        Ok(Lab {
            dir: dir.to_path_buf(),
            run,
            addresses,
        })
    }

    /// An inventory of the lab's machines (as root, strict host keys) with
    /// this `[broker]` table.
    pub fn inventory(&self, broker: &str) -> String {
        let mut text = String::new();
        for ip in &self.addresses {
            text.push_str(&format!(
                "[[host]]\naddress = \"{ip}\"\nuser = \"root\"\nidentity = \"{}\"\nknown_hosts_file = \"{}\"\n\n",
                self.dir.join("id").display(),
                self.dir.join("known_hosts").display()
            ));
        }
        text.push_str(broker);
        text
    }

    /// Removes the lab's containers and network (by its label).
    pub async fn down(docker: &Docker, run: &RunId) -> Result<crate::backend::docker::Labelled> {
        crate::backend::docker::remove_labelled(docker, Some(run)).await
    }
}

/// The `[broker]` table of Redis started on the lab by [`start_redis`].
pub const LAB_REDIS: &str =
    "[broker]\nkind = \"redis\"\nmode = \"installed\"\npid = \"pgrep -x redis-server\"\n\
start = \"redis-server /etc/gauntlet-redis.conf\"\nlog = \"/var/log/gauntlet-redis.log\"\n\
ports = { client = 6379 }\n";

/// The `[broker]` table of NATS that Gauntlet installs on the lab.
pub const LAB_NATS: &str = "[broker]\nkind = \"nats\"\nmode = \"install\"\n";

/// Starts Redis on every machine of an inventory over SSH, as an operator
/// would before a `mode = "installed"` run: n1 the primary, the others its
/// replicas, append-only with `appendfsync always`. Waits for the replicas.
pub async fn start_redis(
    inventory: &crate::backend::ssh::Inventory,
    remote: &dyn crate::backend::ssh::Remote,
) -> Result<()> {
    let first = inventory
        .hosts
        .first()
        .map(|h| h.address.clone())
        .ok_or_else(|| HarnessError::Scenario("no host".into()))?;
    for (i, h) in inventory.hosts.iter().enumerate() {
        let mut conf = String::from(
            "bind 0.0.0.0\nprotected-mode no\nport 6379\ndaemonize yes\n\
             logfile /var/log/gauntlet-redis.log\ndir /var/lib/redis\n\
             appendonly yes\nappendfsync always\n",
        );
        if i > 0 {
            conf.push_str(&format!("replicaof {first} 6379\n"));
        }
        let script = format!(
            "printf '%s' {} > /etc/gauntlet-redis.conf && install -d /var/lib/redis && \
             (pgrep -x redis-server >/dev/null || redis-server /etc/gauntlet-redis.conf)",
            crate::backend::ssh::commands::quote(&conf)
        );
        let out = remote.run(h, &script, Duration::from_secs(30)).await?;
        if !out.success() {
            return Err(HarnessError::Ssh {
                host: h.address.clone(),
                what: format!("starting redis: {}", out.combined()),
            });
        }
    }
    let want = format!("connected_slaves:{}", inventory.hosts.len() - 1);
    let t = Instant::now();
    let Some(h) = inventory.hosts.first() else {
        return Ok(());
    };
    loop {
        let out = remote
            .run(h, "redis-cli info replication", Duration::from_secs(10))
            .await?;
        if out.stdout.contains(&want) {
            return Ok(());
        }
        if t.elapsed() > Duration::from_secs(30) {
            return Err(HarnessError::Ssh {
                host: h.address.clone(),
                what: format!("the replicas did not join: {}", out.stdout),
            });
        }
        tokio::time::sleep(Duration::from_millis(300)).await;
    }
}
