//! `gauntlet serve`: a small HTTP/1.1 server on 127.0.0.1 for a results folder.
//!
//! `/` is the index of runs ([`crate::index`]); any other path is a file inside
//! the results folder. Paths with `..`, `.`, backslashes or NUL are refused (403),
//! and a path whose real location (symlinks resolved) is outside the folder is
//! refused too (403). Only GET and HEAD; every response closes the connection.
use crate::index;
use std::io::{self, BufRead, BufReader, Read, Write};
use std::net::{TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::time::Duration;

/// The longest request head read.
const MAX_HEAD: usize = 16 << 10;

/// Why a path is not served.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Refusal {
    /// 400: the path is not `/...`, or not valid percent-encoded UTF-8.
    BadRequest,
    /// 403: the path has `..`, `.`, `:`, a backslash or NUL, or leads outside the folder.
    Forbidden,
    /// 404: no such file.
    NotFound,
}

impl Refusal {
    fn status(self) -> &'static str {
        match self {
            Refusal::BadRequest => "400 Bad Request",
            Refusal::Forbidden => "403 Forbidden",
            Refusal::NotFound => "404 Not Found",
        }
    }
}

fn percent_decode(s: &str) -> Option<String> {
    let b = s.as_bytes();
    let mut out = Vec::with_capacity(b.len());
    let mut i = 0;
    while i < b.len() {
        if b[i] == b'%' {
            let hex = std::str::from_utf8(b.get(i + 1..i + 3)?).ok()?;
            out.push(u8::from_str_radix(hex, 16).ok()?);
            i += 3;
        } else {
            out.push(b[i]);
            i += 1;
        }
    }
    String::from_utf8(out).ok()
}

/// Maps a request path to a file inside `root` (which must be canonical).
pub fn resolve(root: &Path, url: &str) -> Result<PathBuf, Refusal> {
    let path = url.split(['?', '#']).next().unwrap_or("");
    let decoded = percent_decode(path).ok_or(Refusal::BadRequest)?;
    if !decoded.starts_with('/') {
        return Err(Refusal::BadRequest);
    }
    if decoded.contains(['\\', '\0']) {
        return Err(Refusal::Forbidden);
    }
    let mut p = root.to_path_buf();
    for seg in decoded.split('/').filter(|s| !s.is_empty()) {
        if seg == ".." || seg == "." || seg.contains(':') {
            return Err(Refusal::Forbidden);
        }
        p.push(seg);
    }
    let real = p.canonicalize().map_err(|_| Refusal::NotFound)?;
    if !real.starts_with(root) {
        return Err(Refusal::Forbidden);
    }
    let real = if real.is_dir() {
        real.join(crate::folder::REPORT)
    } else {
        real
    };
    if real.is_file() {
        Ok(real)
    } else {
        Err(Refusal::NotFound)
    }
}

fn content_type(p: &Path) -> &'static str {
    match p.extension().and_then(|e| e.to_str()).unwrap_or("") {
        "html" => "text/html; charset=utf-8",
        "json" => "application/json",
        "xml" => "application/xml",
        "png" => "image/png",
        "svg" => "image/svg+xml",
        _ => "text/plain; charset=utf-8",
    }
}

fn head(out: &mut impl Write, status: &str, ctype: &str, len: u64) -> io::Result<()> {
    write!(
        out,
        "HTTP/1.1 {status}\r\nContent-Type: {ctype}\r\nContent-Length: {len}\r\nConnection: close\r\nX-Content-Type-Options: nosniff\r\nCache-Control: no-store\r\n\r\n"
    )
}

/// Answers one request on `stream`; `root` must be canonical.
pub fn handle(stream: TcpStream, root: &Path) -> io::Result<()> {
    stream.set_read_timeout(Some(Duration::from_secs(10)))?;
    let mut reader = BufReader::new(stream.try_clone()?);
    let mut request = String::new();
    reader
        .by_ref()
        .take(MAX_HEAD as u64)
        .read_line(&mut request)?;
    // Read (and ignore) the headers.
    let mut total = request.len();
    loop {
        let mut line = String::new();
        let n = reader.by_ref().take(MAX_HEAD as u64).read_line(&mut line)?;
        total += n;
        if n == 0 || line == "\r\n" || line == "\n" || total > MAX_HEAD {
            break;
        }
    }
    let mut out = io::BufWriter::new(stream);
    let mut parts = request.split_whitespace();
    let (method, target) = (parts.next().unwrap_or(""), parts.next().unwrap_or(""));
    let send_body = method == "GET";
    if method != "GET" && method != "HEAD" {
        let msg = "only GET and HEAD\n";
        head(
            &mut out,
            "405 Method Not Allowed",
            "text/plain",
            msg.len() as u64,
        )?;
        out.write_all(msg.as_bytes())?;
        return out.flush();
    }
    let path_only = target.split(['?', '#']).next().unwrap_or("");
    if path_only == "/" || path_only == "/index.html" {
        let page = index::index_html(&index::scan(root), &root.display().to_string());
        head(
            &mut out,
            "200 OK",
            "text/html; charset=utf-8",
            page.len() as u64,
        )?;
        if send_body {
            out.write_all(page.as_bytes())?;
        }
        return out.flush();
    }
    match resolve(root, target) {
        Ok(file) => {
            let mut f = std::fs::File::open(&file)?;
            let len = f.metadata()?.len();
            head(&mut out, "200 OK", content_type(&file), len)?;
            if send_body {
                io::copy(&mut f, &mut out)?;
            }
        }
        Err(r) => {
            let msg = format!("{}\n", r.status());
            head(&mut out, r.status(), "text/plain", msg.len() as u64)?;
            out.write_all(msg.as_bytes())?;
        }
    }
    out.flush()
}

/// Serves `root` on `listener` until the process ends, one thread per connection.
pub fn serve(listener: TcpListener, root: &Path) -> io::Result<()> {
    let root = root.canonicalize()?;
    for stream in listener.incoming() {
        let Ok(stream) = stream else { continue };
        let root = root.clone();
        std::thread::spawn(move || {
            let _ = handle(stream, &root);
        });
    }
    Ok(())
}
