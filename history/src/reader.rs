//! Streaming JSON Lines reader: one line at a time into the compact [`History`].
use crate::error::{HistoryError, Problem};
use crate::model::{Builder, History};
use crate::op::parse_op;
use std::fs::File;
use std::io::Read;
use std::path::{Path, PathBuf};

/// The longest line the reader takes (a poll of a million messages fits easily).
pub const MAX_LINE: usize = 256 << 20;

/// Reads and checks a history file.
///
/// A Jepsen `history.edn` (named `.edn`, or starting like EDN) is read by [`crate::edn`].
pub fn read_path(path: impl AsRef<Path>) -> Result<History, HistoryError> {
    let path = path.as_ref();
    let mut file = File::open(path).map_err(|source| HistoryError::Io {
        path: path.to_path_buf(),
        source,
    })?;
    let mut head = [0u8; 64];
    let n = file.read(&mut head).unwrap_or(0);
    if crate::edn::looks_like(path, &head[..n]) {
        return crate::edn::read_path(path);
    }
    read(path, std::io::Read::chain(&head[..n], file))
}

/// Reads a history held in memory; `name` stands for the file in errors.
pub fn read_bytes(name: impl AsRef<Path>, data: &[u8]) -> Result<History, HistoryError> {
    let name = name.as_ref();
    if crate::edn::looks_like(name, &data[..data.len().min(64)]) {
        return crate::edn::read_bytes(name, data);
    }
    read(name, data)
}

/// Reads a history from any reader; `name` stands for the file in errors.
///
/// Blank lines are skipped. A last line with no newline that does not parse is
/// taken as cut off by a crash while it was written: it is left out with a
/// warning, so an interrupted run still leaves a checkable history.
///
/// Lines are parsed in place in a large buffer (no copy per line).
pub fn read<R: Read>(name: &Path, mut input: R) -> Result<History, HistoryError> {
    let mut builder = Builder::new();
    let mut buf: Vec<u8> = vec![0; 1 << 20];
    let (mut start, mut end) = (0usize, 0usize);
    let mut eof = false;
    let mut line_no: u64 = 0;
    let mut warnings = Vec::new();
    let io_err = |source| HistoryError::Io {
        path: name.to_path_buf(),
        source,
    };
    loop {
        // Most lines are the writer's layout: parsed in one pass that also finds the
        // line's end. The rest (and a line cut at the end of the buffer) below.
        let mut used = 0;
        if let Some(op) = crate::fast::parse_line(&buf[start..end], &mut used) {
            line_no += 1;
            start += used;
            builder
                .push(&op, line_no)
                .map_err(|problem| line_error(name, line_no, problem))?;
            continue;
        }
        let (line_end, next, complete) = match memchr::memchr(b'\n', &buf[start..end]) {
            Some(p) => (start + p, start + p + 1, true),
            None if eof => {
                if start == end {
                    break;
                }
                (end, end, false)
            }
            None => {
                // Move the partial line to the front, grow if one line fills the buffer, read more.
                buf.copy_within(start..end, 0);
                end -= start;
                start = 0;
                if end == buf.len() {
                    if buf.len() >= MAX_LINE {
                        return Err(line_error(
                            name,
                            line_no + 1,
                            Problem::LineTooLong { limit: MAX_LINE },
                        ));
                    }
                    buf.resize((buf.len() * 2).min(MAX_LINE), 0);
                }
                let n = loop {
                    match input.read(&mut buf[end..]) {
                        Ok(n) => break n,
                        Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
                        Err(e) => return Err(io_err(e)),
                    }
                };
                if n == 0 {
                    eof = true;
                }
                end += n;
                continue;
            }
        };
        line_no += 1;
        let mut line: &[u8] = &buf[start..line_end];
        start = next;
        if let [rest @ .., b'\r'] = line {
            line = rest;
        }
        if line.iter().all(|c| c.is_ascii_whitespace()) {
            continue;
        }
        let op = match parse_op(line) {
            Ok(op) => op,
            Err(problem) => {
                if !complete {
                    warnings.push(format!(
                        "{}:{line_no}: last line is cut off ({problem}); left out",
                        name.display()
                    ));
                    break;
                }
                return Err(line_error(name, line_no, problem));
            }
        };
        builder
            .push(&op, line_no)
            .map_err(|problem| line_error(name, line_no, problem))?;
    }
    let mut h = builder.finish();
    h.warnings.extend(warnings);
    Ok(h)
}

fn line_error(path: &Path, line: u64, problem: Problem) -> HistoryError {
    HistoryError::Line {
        path: PathBuf::from(path),
        line,
        problem,
    }
}
