//! The client side of the control socket.

use std::io::{BufRead, BufReader, Write};
use std::os::unix::net::UnixStream;
use std::path::Path;
use std::time::Duration;

use crate::report::{Reply, Request};
use crate::DiskfsError;

/// Sends one request and reads the daemon's reply.
pub fn request(socket: &Path, req: &Request) -> Result<Reply, DiskfsError> {
    let err = |source| DiskfsError::Socket {
        path: socket.to_path_buf(),
        source,
    };
    let mut stream = UnixStream::connect(socket).map_err(err)?;
    // A fault kills, writes and changes files before it answers.
    stream
        .set_read_timeout(Some(Duration::from_secs(300)))
        .map_err(err)?;
    let mut line = serde_json::to_string(req).map_err(|e| DiskfsError::Protocol(e.to_string()))?;
    line.push('\n');
    stream.write_all(line.as_bytes()).map_err(err)?;
    let mut answer = String::new();
    BufReader::new(&stream)
        .read_line(&mut answer)
        .map_err(err)?;
    if answer.trim().is_empty() {
        return Err(DiskfsError::Protocol(
            "the daemon closed without a reply".into(),
        ));
    }
    let reply: Reply = serde_json::from_str(answer.trim())
        .map_err(|e| DiskfsError::Protocol(format!("{e} in {answer:?}")))?;
    match reply {
        Reply::Error(e) => Err(DiskfsError::Refused(e)),
        r => Ok(r),
    }
}
