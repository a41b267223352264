use std::path::PathBuf;

/// What can go wrong in the filesystem daemon, its client and the bench.
#[derive(Debug, thiserror::Error)]
pub enum DiskfsError {
    /// A file or directory operation failed.
    #[error("{what} {path}: {source}")]
    Io {
        what: &'static str,
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    /// Mounting the filesystem failed.
    #[error("mounting {mount} over {backing}: {source}")]
    Mount {
        mount: PathBuf,
        backing: PathBuf,
        #[source]
        source: std::io::Error,
    },
    /// The control socket failed.
    #[error("control socket {path}: {source}")]
    Socket {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    /// The daemon answered with an error.
    #[error("the daemon refused: {0}")]
    Refused(String),
    /// A message on the control socket was not what it should be.
    #[error("bad message on the control socket: {0}")]
    Protocol(String),
    /// Starting or waiting for the child failed.
    #[error("child {cmd}: {source}")]
    Child {
        cmd: String,
        #[source]
        source: std::io::Error,
    },
    /// `--container` where pid 1 is not a container init.
    #[error("--container refused: /proc/1/comm is {0:?}, not docker-init or tini")]
    NotContainer(String),
    /// A bad argument.
    #[error("{0}")]
    Usage(String),
}

impl DiskfsError {
    pub(crate) fn io(what: &'static str, path: impl Into<PathBuf>, source: std::io::Error) -> Self {
        DiskfsError::Io {
            what,
            path: path.into(),
            source,
        }
    }
}
