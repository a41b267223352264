//! Typed errors of the harness. Each names the node and what it printed where that is known.
use std::path::PathBuf;
use std::time::Duration;

/// Everything the harness can fail with.
#[derive(Debug, thiserror::Error)]
pub enum HarnessError {
    #[error("cannot reach the Docker Engine: {0}")]
    DockerConnect(#[source] bollard::errors::Error),
    #[error("Docker API call failed while {what}: {source}")]
    Docker {
        what: String,
        #[source]
        source: bollard::errors::Error,
    },
    #[error(transparent)]
    UnknownBroker(#[from] gauntlet_workloads::broker::UnknownBroker),
    #[error("broker {broker} supports at most {max} node(s), {asked} asked")]
    TooManyNodes {
        broker: String,
        max: usize,
        asked: usize,
    },
    #[error("no node named {0:?} in this deployment")]
    UnknownNode(String),
    #[error(
        "image {image} is missing: run `gauntlet images build --broker {broker}` (or name an image you have)"
    )]
    ImageMissing { image: String, broker: String },
    #[error("node {node} not ready after {waited:?}: {probe}\n--- last output of the probe ---\n{probe_output}\n--- last lines of the node's log ---\n{log_tail}")]
    NotReady {
        node: String,
        waited: Duration,
        probe: String,
        probe_output: String,
        log_tail: String,
    },
    #[error("node {node} exited (status {status}) while starting\n--- last lines of the node's log ---\n{log_tail}")]
    NodeExited {
        node: String,
        status: i64,
        log_tail: String,
    },
    #[error("cluster step on node {node} failed: `{cmd}` exited {code}\n{output}")]
    StepFailed {
        node: String,
        cmd: String,
        code: i64,
        output: String,
    },
    #[error("exec `{cmd}` on node {node} timed out after {waited:?}")]
    ExecTimeout {
        node: String,
        cmd: String,
        waited: Duration,
    },
    #[error("image build step `{step}` failed: {detail} (log: {log})", log = log.display())]
    BuildStep {
        step: String,
        detail: String,
        log: PathBuf,
    },
    #[error("image build needs {what}: {detail}")]
    BuildPrerequisite { what: String, detail: String },
    #[error("I/O error while {what}: {source}")]
    Io {
        what: String,
        #[source]
        source: std::io::Error,
    },
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
}

/// Result with [`HarnessError`].
pub type Result<T, E = HarnessError> = std::result::Result<T, E>;

pub(crate) fn docker_err(
    what: impl Into<String>,
) -> impl FnOnce(bollard::errors::Error) -> HarnessError {
    let what = what.into();
    move |source| HarnessError::Docker { what, source }
}

pub(crate) fn io_err(what: impl Into<String>) -> impl FnOnce(std::io::Error) -> HarnessError {
    let what = what.into();
    move |source| HarnessError::Io { what, source }
}
