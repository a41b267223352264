//! Typed errors of the harness. Each names the node and what it printed where that is known.
//!
//! May import: nothing of the crate (every other file imports this one).
use std::path::PathBuf;
use std::time::Duration;

/// Everything the harness can fail with.
#[derive(Debug, thiserror::Error)]
pub enum HarnessError {
    /// The Docker Engine could not be reached, or agreed on no API version.
    #[error("cannot reach the Docker Engine: {0}")]
    DockerConnect(#[source] bollard::errors::Error),
    /// A Docker API call failed.
    #[error("Docker API call failed while {what}: {source}")]
    Docker {
        /// What the harness was doing, e.g. `starting node n2`.
        what: String,
        /// The Engine's error.
        #[source]
        source: bollard::errors::Error,
    },
    /// A broker name Gauntlet does not know.
    #[error(transparent)]
    UnknownBroker(#[from] gauntlet_workloads::broker::UnknownBroker),
    /// A node count the broker cannot form into a cluster: none, or more than its maximum.
    #[error("broker {broker} supports at most {max} node(s), {asked} asked")]
    TooManyNodes {
        /// The broker, by name.
        broker: String,
        /// The most nodes its recipe and image can form into one cluster.
        max: usize,
        /// The nodes asked for.
        asked: usize,
    },
    /// A node name the deployment does not have (the name as given).
    #[error("no node named {0:?} in this deployment")]
    UnknownNode(String),
    /// The image is not on this machine and was not built.
    #[error(
        "image {image} is missing: run `gauntlet images build --broker {broker}` (or name an image you have)"
    )]
    ImageMissing {
        /// The image's name.
        image: String,
        /// The broker it is for, by name.
        broker: String,
    },
    /// A node did not pass its readiness probe in time.
    #[error("node {node} not ready after {waited:?}: {probe}\n--- last output of the probe ---\n{probe_output}\n--- last lines of the node's log ---\n{log_tail}")]
    NotReady {
        /// The node.
        node: String,
        /// How long it was given.
        waited: Duration,
        /// The probe, as one line.
        probe: String,
        /// The last lines the probe printed on its last try.
        probe_output: String,
        /// The last lines of the node's log.
        log_tail: String,
    },
    /// Launching a deployment failed after its nodes were created; their logs
    /// were kept (`<logs>/<node>.log`) before they were removed.
    #[error("{cause}\n(the log of every node it created is in {})", logs.display())]
    LaunchFailed {
        /// What failed.
        cause: Box<HarnessError>,
        /// The folder with each node's log.
        logs: PathBuf,
    },
    /// Gauntlet's filesystem failed in a node (its own crash, or a mount the
    /// node refused): a harness failure, never a finding about the broker.
    #[error("Gauntlet's filesystem failed in node {node}: {why} (a failure of the harness, not of the broker)")]
    DiskFs {
        /// The node.
        node: String,
        /// What the filesystem said, or what went wrong talking to it.
        why: String,
    },
    /// A node's container stopped while the harness waited for it to be ready.
    #[error("node {node} exited (status {status}) while starting\n--- last lines of the node's log ---\n{log_tail}")]
    NodeExited {
        /// The node.
        node: String,
        /// Its exit status (-1 when unknown).
        status: i64,
        /// The last lines of the node's log.
        log_tail: String,
    },
    /// A step that joins the nodes into a cluster ([`crate::broker::JoinStep`]) kept failing.
    #[error("cluster step on node {node} failed: `{cmd}` exited {code}\n{output}")]
    StepFailed {
        /// The node it ran on.
        node: String,
        /// The command, as one line.
        cmd: String,
        /// Its exit status on the last try.
        code: i64,
        /// What it printed on the last try (stdout, then stderr).
        output: String,
    },
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
    /// OpenSSH could not run a command on a host of the inventory (no
    /// connection, a refused key, no answer in time).
    #[error("ssh to {host}: {what}")]
    Ssh {
        /// The host's address.
        host: String,
        /// What went wrong, as ssh said it.
        what: String,
    },
    /// A command inside a node did not end in time.
    #[error("exec `{cmd}` on node {node} timed out after {waited:?}")]
    ExecTimeout {
        /// The node.
        node: String,
        /// The command, as one line.
        cmd: String,
        /// How long it was given.
        waited: Duration,
    },
    /// A program an image build runs (debootstrap, chroot, cargo, tar, ...) failed.
    #[error("image build step `{step}` failed: {detail} (log: {log})", log = log.display())]
    BuildStep {
        /// The program.
        step: String,
        /// Its exit status and last lines, or what went wrong.
        detail: String,
        /// Its log file, or the tree it worked on; empty when there is neither.
        log: PathBuf,
    },
    /// An image build lacks what it needs: root, a Debian mirror, a program.
    #[error("image build needs {what}: {detail}")]
    BuildPrerequisite {
        /// What is missing.
        what: String,
        /// Why it is needed, or what went wrong.
        detail: String,
    },
    /// A file, directory or process operation failed.
    #[error("I/O error while {what}: {source}")]
    Io {
        /// What the harness was doing, e.g. `writing <path>`.
        what: String,
        /// The operating system's error.
        #[source]
        source: std::io::Error,
    },
    /// No port on 127.0.0.1 could be bound (for a node's published port or a proxy link).
    #[error("no free port on 127.0.0.1: {0}")]
    NoPort(#[source] std::io::Error),
    /// A scenario file or flag that does not make sense.
    #[error("scenario: {0}")]
    Scenario(String),
    /// A consumer worker process could not be started or talked to.
    #[error("worker: {0}")]
    Worker(String),
    /// The run folder could not be written or read back.
    #[error("run folder: {0}")]
    RunFolder(String),
    /// The run was stopped by Ctrl-C before there was anything to judge (the
    /// run's events say what was removed and why there is no verdict).
    #[error("interrupted; no verdict in {}", dir.display())]
    Interrupted {
        /// The run folder.
        dir: PathBuf,
    },
    /// A node-control call failed without a harness error inside (a command
    /// that exited non-zero, in the default iptables/tc bodies).
    #[error(transparent)]
    Control(gauntlet_nemesis::ControlError),
}

/// A backend's error, carried through the nemesis's node control whole.
impl From<HarnessError> for gauntlet_nemesis::ControlError {
    fn from(e: HarnessError) -> Self {
        match e {
            HarnessError::Control(c) => c,
            other => gauntlet_nemesis::ControlError::Backend(Box::new(other)),
        }
    }
}

/// A node-control error back as the harness error it was made from.
impl From<gauntlet_nemesis::ControlError> for HarnessError {
    fn from(e: gauntlet_nemesis::ControlError) -> Self {
        match e {
            gauntlet_nemesis::ControlError::Backend(b) => match b.downcast::<HarnessError>() {
                Ok(h) => *h,
                Err(other) => HarnessError::Control(gauntlet_nemesis::ControlError::Backend(other)),
            },
            gauntlet_nemesis::ControlError::CommandFailed {
                node,
                cmd,
                code,
                output,
            } => HarnessError::CommandFailed {
                node,
                cmd,
                code,
                output,
            },
            other => HarnessError::Control(other),
        }
    }
}

/// Result with [`HarnessError`].
pub type Result<T, E = HarnessError> = std::result::Result<T, E>;

pub(crate) fn docker_err(
    what: impl Into<String>,
) -> impl FnOnce(bollard::errors::Error) -> HarnessError {
    let what = what.into();
    move |source| HarnessError::Docker { what, source }
}

/// Whether a Docker API error is a 404 (no such container, network or image).
pub(crate) fn is_not_found(e: &bollard::errors::Error) -> bool {
    matches!(
        e,
        bollard::errors::Error::DockerResponseServerError {
            status_code: 404,
            ..
        }
    )
}

pub(crate) fn io_err(what: impl Into<String>) -> impl FnOnce(std::io::Error) -> HarnessError {
    let what = what.into();
    move |source| HarnessError::Io { what, source }
}
