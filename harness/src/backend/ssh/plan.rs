//! `gauntlet run --hosts --plan`: every command a run would run on the hosts,
//! run nowhere. [`HostPlan`] records the launch's commands and, at the end, the
//! heal's; between the two, the caller (the CLI, with the pipeline's
//! `run::plan_faults`) plays the scenario's faults against
//! [`HostPlan::deployment`], under the titles it gives. This module does not
//! know the scenario or the pipeline: they call in here.
//!
//! May import: the SSH deployment (`super`), its remote, commands and
//! inventory, `deployment`, `error` and the run id; not `run`.
use super::inventory::Host;
use super::{commands, heal_hosts, Inventory, Remote, SshDeployment, STEP};
use crate::deployment::{Deployment, ExecOutput};
use crate::error::Result;
use crate::RunId;
use std::sync::Arc;
use std::time::Duration;

/// A remote that runs nothing (`--plan`): it keeps every script it is asked
/// to run, under the titles given between them, and answers each with exit 0
/// and no output.
#[derive(Default)]
pub struct Recording {
    lines: std::sync::Mutex<Vec<PlanLine>>,
}

/// One line of a plan.
#[derive(Debug, Clone)]
pub enum PlanLine {
    /// What the commands below it are for.
    Title(String),
    /// A script that would run on a host.
    Run {
        /// The host.
        host: Host,
        /// The script.
        script: String,
    },
}

impl Recording {
    /// Adds a title.
    pub fn title(&self, t: &str) {
        if let Ok(mut l) = self.lines.lock() {
            l.push(PlanLine::Title(t.to_string()));
        }
    }

    /// What was kept, in order.
    pub fn lines(&self) -> Vec<PlanLine> {
        self.lines.lock().map(|l| l.clone()).unwrap_or_default()
    }
}

#[async_trait::async_trait]
impl Remote for Recording {
    async fn run(&self, host: &Host, script: &str, _timeout: Duration) -> Result<ExecOutput> {
        if let Ok(mut l) = self.lines.lock() {
            l.push(PlanLine::Run {
                host: host.clone(),
                script: script.to_string(),
            });
        }
        Ok(ExecOutput {
            exit_code: 0,
            stdout: String::new(),
            stderr: String::new(),
        })
    }
}

/// A plan being recorded: the launch's commands are in it from
/// [`HostPlan::launch`]; the caller adds the faults' by acting on
/// [`HostPlan::deployment`] under its [`HostPlan::title`]s; [`HostPlan::finish`]
/// adds the final heal and writes the plan. Nothing runs and no connection is
/// opened.
pub struct HostPlan {
    inventory: Inventory,
    rec: Arc<Recording>,
    deployment: SshDeployment,
}

impl HostPlan {
    /// Records what the launch on `inventory`'s hosts would run.
    pub async fn launch(inventory: &Inventory) -> Result<Self> {
        let rec = Arc::new(Recording::default());
        let remote: Arc<dyn Remote> = rec.clone();
        let d = SshDeployment::new(inventory.clone(), remote, RunId::from_name("plan"), None)?;
        if d.ops.iter().any(|o| o.install.is_some()) {
            rec.title("launch: the package installed when missing, the configuration written, the broker started");
            d.install_all().await?;
        }
        rec.title("launch: the broker's pid on every host (then, from here, a TCP connect to its client ports)");
        for n in d.nodes() {
            d.run_checked(&n, &format!("{} >/dev/null", d.ops_of(&n)?.pid), STEP)
                .await?;
        }
        Ok(HostPlan {
            inventory: inventory.clone(),
            rec,
            deployment: d,
        })
    }

    /// The deployment whose commands are recorded, not run.
    pub fn deployment(&self) -> &dyn Deployment {
        &self.deployment
    }

    /// What the commands recorded next are for.
    pub fn title(&self, t: &str) {
        self.rec.title(t);
    }

    /// Adds the final heal and writes the plan: how each host is reached (the
    /// `ssh` command line, control sockets under `control_dir`), then each
    /// step's scripts, host by host.
    pub async fn finish(self, control_dir: &str) -> Result<String> {
        let HostPlan { inventory, rec, .. } = self;
        rec.title(
            "at the end, and on Ctrl-C or a failed run: every host healed (`gauntlet heal --hosts` runs the same)",
        );
        heal_hosts(&inventory, rec.as_ref()).await?;
        let node_of = |h: &Host| {
            inventory
                .hosts
                .iter()
                .position(|x| x == h)
                .map_or_else(|| "?".to_string(), |i| format!("n{}", i + 1))
        };
        // How each host is reached, once; then each step's scripts as they run there.
        let mut out = String::from(
            "# every script below runs on its host as: ssh OPTIONS HOST -- 'sh -c SCRIPT'\n",
        );
        for (i, h) in inventory.hosts.iter().enumerate() {
            let argv = commands::ssh_argv(h, control_dir, "SCRIPT");
            let shown: Vec<String> = argv[..argv.len() - 1]
                .iter()
                .map(|a| commands::quote(a))
                .collect();
            out.push_str(&format!(
                "# n{}: {} 'sh -c SCRIPT'\n",
                i + 1,
                shown.join(" ")
            ));
        }
        for line in rec.lines() {
            match line {
                PlanLine::Title(t) => out.push_str(&format!("\n# {t}\n")),
                PlanLine::Run { host, script } => {
                    out.push_str(&format!(
                        "{} ({}): {script}\n",
                        node_of(&host),
                        host.address
                    ));
                }
            }
        }
        Ok(out)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn the_heal_of_an_installed_nats_is_valid_shell() {
        let inv = Inventory::parse(
            "[[host]]\naddress = \"10.0.0.1\"\n[[host]]\naddress = \"10.0.0.2\"\n[broker]\nkind = \"nats\"\nmode = \"install\"\n",
        )
        .expect("inventory");
        let rec = Arc::new(Recording::default());
        heal_hosts(&inv, rec.as_ref()).await.expect("heal");
        let remote: Arc<dyn Remote> = rec.clone();
        let d = SshDeployment::new(inv.clone(), remote, RunId::from_name("t"), None)
            .expect("deployment");
        d.install_all().await.expect("install");
        for line in rec.lines() {
            if let PlanLine::Run { script, .. } = line {
                let out = std::process::Command::new("sh")
                    .args(["-n", "-c", &script])
                    .output()
                    .expect("sh");
                assert!(out.status.success(), "{script}: {out:?}");
                assert!(script.contains("setsid nats-server"), "{script}");
            }
        }
    }
}
