//! What the SSH backend knows and does per host, outside a deployment: how to
//! find, start and read the broker on each ([`Ops`]: the inventory's commands
//! or Gauntlet's install plan), and the heal that undoes what a run may have
//! left ([`heal_hosts`], also `gauntlet heal --hosts`).
//!
//! May import: this backend's commands, install, inventory and remote, and
//! `error`; not the deployment in `mod.rs`.
use super::commands;
use super::install;
use super::inventory::{BrokerSetup, Inventory};
use super::remote::Remote;
use crate::error::{HarnessError, Result};
use std::time::Duration;

/// How to find, start and read the broker on one host: the inventory's
/// commands (`installed`) or Gauntlet's own ([`install::InstallPlan`]).
#[derive(Debug, Clone)]
pub struct Ops {
    /// Prints the broker's pid.
    pub pid: String,
    /// Starts it.
    pub start: String,
    /// Its log file.
    pub log: String,
    /// Client ports by the recipe's port names.
    pub ports: std::collections::BTreeMap<String, u16>,
    /// Gauntlet's install plan, in `install` mode.
    pub install: Option<install::InstallPlan>,
}

/// The operations on node `index` (0-based) of `inventory`; an error when
/// Gauntlet cannot install its broker.
pub fn ops(inventory: &Inventory, index: usize) -> Result<Ops> {
    match &inventory.setup {
        BrokerSetup::Installed {
            pid,
            start,
            log,
            ports,
            ..
        } => Ok(Ops {
            pid: pid.clone(),
            start: start.clone(),
            log: log.clone(),
            ports: ports.clone(),
            install: None,
        }),
        BrokerSetup::Install { .. } => {
            let p = install::plan(inventory, index).ok_or_else(|| {
                HarnessError::Scenario(format!(
                    "mode = \"install\" is built for {} only; for {}, install it on the hosts and use mode = \"installed\"",
                    install::SUPPORTED
                        .iter()
                        .map(|b| b.to_string())
                        .collect::<Vec<_>>()
                        .join(", "),
                    inventory.broker
                ))
            })?;
            Ok(Ops {
                pid: p.pid.clone(),
                start: p.start.clone(),
                log: p.log.clone(),
                ports: p.ports.clone(),
                install: Some(p),
            })
        }
    }
}

/// Undoes on every host what a run may have left: Gauntlet's iptables chain,
/// a netem delay, a paused broker (SIGCONT), a stopped one (its start command).
/// For `gauntlet heal --hosts` after a harness was killed, and every teardown.
pub async fn heal_hosts(inventory: &Inventory, remote: &dyn Remote) -> Result<()> {
    let mut first_error = None;
    for (i, h) in inventory.hosts.iter().enumerate() {
        let mut script = vec![
            commands::heal_traffic(),
            commands::remove_delay(&h.interface),
        ];
        if let Ok(o) = ops(inventory, i) {
            script.push(format!(
                "(p=$({} | head -n 1); if [ -n \"$p\" ]; then kill -CONT \"$p\"; else ({}); fi)",
                o.pid, o.start
            ));
        }
        let s = commands::privileged(h, &script.join("; "));
        match remote.run(h, &s, Duration::from_secs(60)).await {
            Ok(out) if out.success() => {}
            Ok(out) => {
                first_error.get_or_insert(HarnessError::Ssh {
                    host: h.address.clone(),
                    what: format!("heal exited {}: {}", out.exit_code, out.combined()),
                });
            }
            Err(e) => {
                first_error.get_or_insert(e);
            }
        }
    }
    first_error.map_or(Ok(()), Err)
}
