//! `gauntlet lab up|down`: machines to try the SSH backend on, without having
//! any (containers from Gauntlet's SSH host image, reached only over SSH).
use anyhow::Context;
use clap::Subcommand;
use gauntlet_harness::backend::lab::{self, Lab};
use gauntlet_harness::{BrokerKind, RunId};
use std::path::PathBuf;

#[derive(Debug, Subcommand)]
pub enum LabCmd {
    /// Start the machines and write DIR/hosts.toml for `gauntlet run --hosts`.
    Up {
        /// Where the key, known_hosts and hosts.toml go.
        #[arg(long, default_value = "gauntlet-lab")]
        dir: PathBuf,
        /// How many machines.
        #[arg(long, default_value_t = 3)]
        nodes: usize,
        /// redis: started on the machines over SSH (mode = "installed"); nats:
        /// installed by each run (mode = "install").
        #[arg(long, default_value = "redis")]
        broker: String,
    },
    /// Remove the machines of the lab in DIR.
    Down {
        /// The lab's folder (as given to `up`).
        #[arg(long, default_value = "gauntlet-lab")]
        dir: PathBuf,
    },
}

pub fn run(cmd: LabCmd) -> anyhow::Result<i32> {
    let rt = tokio::runtime::Runtime::new().context("starting the async runtime")?;
    rt.block_on(async {
        let docker = gauntlet_harness::backend::docker::connect().await?;
        match cmd {
            LabCmd::Up { dir, nodes, broker } => {
                let kind: BrokerKind = broker.parse()?;
                let table = match kind {
                    BrokerKind::Redis => lab::LAB_REDIS,
                    BrokerKind::Nats => lab::LAB_NATS,
                    other => anyhow::bail!("the lab runs redis or nats, not {other}"),
                };
                let lab = Lab::up(&docker, &dir, nodes, &super::images::StderrProgress).await?;
                let hosts = dir.join("hosts.toml");
                std::fs::write(&hosts, lab.inventory(table))
                    .with_context(|| format!("writing {}", hosts.display()))?;
                std::fs::write(dir.join("addresses"), lab.addresses.join("\n") + "\n")
                    .context("writing the addresses")?;
                if kind == BrokerKind::Redis {
                    let (inventory, remote) = super::run::ssh_backend(&hosts)?;
                    lab::start_redis(&inventory, remote.as_ref()).await?;
                }
                println!(
                    "lab {}: {} machine(s) at {}; {kind} {}",
                    lab.run,
                    lab.addresses.len(),
                    lab.addresses.join(", "),
                    if kind == BrokerKind::Redis {
                        "running (n1 primary)"
                    } else {
                        "installed by each run"
                    }
                );
                println!("inventory: {}", hosts.display());
                println!(
                    "try: gauntlet run --hosts {} --broker {kind} --nemesis kill-consumer,partition",
                    hosts.display()
                );
                Ok(0)
            }
            LabCmd::Down { dir } => {
                let id = std::fs::read_to_string(dir.join("lab-run"))
                    .with_context(|| format!("no lab in {}", dir.display()))?;
                let removed = Lab::down(&docker, &RunId::from_name(id.trim())).await?;
                println!(
                    "removed lab {}: {} container(s), {} network(s)",
                    id.trim(),
                    removed.containers.len(),
                    removed.networks.len()
                );
                let _ = std::fs::remove_file(dir.join("lab-run"));
                Ok(0)
            }
        }
    })
}
