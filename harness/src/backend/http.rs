//! A bare HTTP GET for the recipes' HTTP probes ([`crate::broker::Probe::Http`]),
//! which every backend runs from this machine to a node's port.
//!
//! May import: nothing of the crate (tokio only).
use std::time::Duration;
use tokio::io::{AsyncReadExt, AsyncWriteExt};

/// A bare HTTP/1.0 GET to a published port on the host; (status, body).
pub(crate) async fn http_get(
    host: &str,
    port: u16,
    path: &str,
) -> std::result::Result<(u16, String), String> {
    let io = async {
        let mut s = tokio::net::TcpStream::connect((host, port))
            .await
            .map_err(|e| format!("connect {host}:{port}: {e}"))?;
        let req = format!("GET {path} HTTP/1.0\r\nHost: {host}\r\n\r\n");
        s.write_all(req.as_bytes())
            .await
            .map_err(|e| format!("write: {e}"))?;
        let mut buf = Vec::new();
        s.read_to_end(&mut buf)
            .await
            .map_err(|e| format!("read: {e}"))?;
        Ok::<_, String>(String::from_utf8_lossy(&buf).into_owned())
    };
    let text = tokio::time::timeout(Duration::from_secs(5), io)
        .await
        .map_err(|_| format!("GET {path} on {host}:{port} timed out"))??;
    let (head, body) = text.split_once("\r\n\r\n").unwrap_or((&text, ""));
    let status = head
        .split_whitespace()
        .nth(1)
        .and_then(|s| s.parse().ok())
        .ok_or_else(|| format!("not an HTTP answer: {}", tail_lines(&text, 5)))?;
    Ok((status, body.to_string()))
}

/// The last `n` lines of `s`.
pub(crate) fn tail_lines(s: &str, n: usize) -> String {
    let lines: Vec<&str> = s.lines().collect();
    lines[lines.len().saturating_sub(n)..].join("\n")
}
