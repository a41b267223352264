//! `gauntlet clean`: remove containers and networks left by crashed runs (labelled ones only).
//! `gauntlet heal --hosts`: undo on SSH hosts what a killed run left there.
use anyhow::Context;
use clap::Args;
use gauntlet_harness::RunId;

#[derive(Debug, Args)]
pub struct CleanArgs {
    /// Only the objects of this run id (label `gauntlet.run=ID`).
    #[arg(long)]
    pub run: Option<String>,
    /// List what would be removed, remove nothing.
    #[arg(long)]
    pub dry_run: bool,
}

pub fn run(args: CleanArgs) -> anyhow::Result<i32> {
    let rt = tokio::runtime::Runtime::new().context("starting the async runtime")?;
    rt.block_on(async {
        let docker = gauntlet_harness::backend::docker::connect().await?;
        let run = args.run.as_deref().map(RunId::from_name);
        let found = if args.dry_run {
            gauntlet_harness::backend::docker::list_labelled(&docker, run.as_ref()).await?
        } else {
            gauntlet_harness::backend::docker::remove_labelled(&docker, run.as_ref()).await?
        };
        let verb = if args.dry_run {
            "would remove"
        } else {
            "removed"
        };
        for (_, name) in &found.containers {
            println!("{verb} container {name}");
        }
        for (_, name) in &found.networks {
            println!("{verb} network {name}");
        }
        println!(
            "{verb} {} container(s), {} network(s) labelled gauntlet.run{}",
            found.containers.len(),
            found.networks.len(),
            run.map(|r| format!("={r}")).unwrap_or_default()
        );
        Ok(0)
    })
}

#[derive(Debug, Args)]
pub struct HealArgs {
    /// The inventory of the hosts (hosts.toml).
    #[arg(long)]
    pub hosts: std::path::PathBuf,
}

/// Removes Gauntlet's iptables chain and netem delay on every host of the
/// inventory, and resumes (SIGCONT) or starts its broker.
pub fn heal(args: HealArgs) -> anyhow::Result<i32> {
    let (inventory, remote) = super::run::ssh_backend(&args.hosts)?;
    let rt = tokio::runtime::Runtime::new().context("starting the async runtime")?;
    rt.block_on(gauntlet_harness::backend::ssh::heal_hosts(
        &inventory,
        remote.as_ref(),
    ))?;
    println!(
        "healed {} host(s) of {}",
        inventory.hosts.len(),
        args.hosts.display()
    );
    Ok(0)
}
