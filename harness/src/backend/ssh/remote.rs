//! How the SSH backend reaches a host: a [`Remote`] runs a script there;
//! [`OpenSsh`] is the system's `ssh` (a recording one, for `--plan`, is in
//! [`super::plan`]).
//!
//! May import: the inventory and the commands of this backend, `deployment`
//! (for `ExecOutput`) and `error`; not the deployment in `mod.rs`.
use super::commands;
use super::inventory::{Host, Inventory};
use crate::deployment::ExecOutput;
use crate::error::{HarnessError, Result};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

/// Runs a script on a host. [`OpenSsh`] runs it; a recording one prints the plan.
#[async_trait::async_trait]
pub trait Remote: Send + Sync {
    /// Runs `script` with `sh -c` on `host`, at most `timeout`.
    async fn run(&self, host: &Host, script: &str, timeout: Duration) -> Result<ExecOutput>;
}

/// The system `ssh`, one master connection per host for the whole run.
pub struct OpenSsh {
    control_dir: PathBuf,
}

impl OpenSsh {
    /// Control sockets go in `control_dir` (it is created; keep the path short:
    /// a Unix socket path has about 100 bytes).
    pub fn new(control_dir: PathBuf) -> Result<Self> {
        std::fs::create_dir_all(&control_dir).map_err(crate::error::io_err(format!(
            "creating {}",
            control_dir.display()
        )))?;
        Ok(OpenSsh { control_dir })
    }
}

#[async_trait::async_trait]
impl Remote for OpenSsh {
    async fn run(&self, host: &Host, script: &str, timeout: Duration) -> Result<ExecOutput> {
        let argv = commands::ssh_argv(host, &self.control_dir.display().to_string(), script);
        let mut cmd = tokio::process::Command::new(&argv[0]);
        cmd.args(&argv[1..])
            .stdin(std::process::Stdio::null())
            .kill_on_drop(true);
        let out = tokio::time::timeout(timeout, cmd.output())
            .await
            .map_err(|_| HarnessError::Ssh {
                host: host.address.clone(),
                what: format!("no answer within {timeout:?} to: {script}"),
            })?
            .map_err(|e| HarnessError::Ssh {
                host: host.address.clone(),
                what: format!("running ssh: {e}"),
            })?;
        let exit_code = i64::from(out.status.code().unwrap_or(-1));
        let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
        // 255 is ssh's own failure (no connection, a refused key), not the script's.
        if exit_code == 255 {
            return Err(HarnessError::Ssh {
                host: host.address.clone(),
                what: stderr.trim().to_string(),
            });
        }
        Ok(ExecOutput {
            exit_code,
            stdout: String::from_utf8_lossy(&out.stdout).into_owned(),
            stderr,
        })
    }
}

/// The inventory at `path` and the system `ssh` to reach its hosts, with the
/// control sockets in this process's own folder under the temporary directory.
pub fn open(path: &Path) -> Result<(Inventory, Arc<OpenSsh>)> {
    let inventory = Inventory::read(path)?;
    let control = std::env::temp_dir().join(format!("gauntlet-ssh-{}", std::process::id()));
    Ok((inventory, Arc::new(OpenSsh::new(control)?)))
}
