//! Streaming JSON Lines reader: one line at a time into the compact [`History`].
use crate::error::{HistoryError, Problem};
use crate::model::{Builder, History};
use crate::op::parse_op;
use std::fs::File;
use std::io::{BufRead, BufReader, Read};
use std::path::{Path, PathBuf};

/// Reads and checks a history file.
pub fn read_path(path: impl AsRef<Path>) -> Result<History, HistoryError> {
    let path = path.as_ref();
    let file = File::open(path).map_err(|source| HistoryError::Io {
        path: path.to_path_buf(),
        source,
    })?;
    read(path, BufReader::with_capacity(1 << 20, file))
}

/// Reads a history held in memory; `name` stands for the file in errors.
pub fn read_bytes(name: impl AsRef<Path>, data: &[u8]) -> Result<History, HistoryError> {
    read(name.as_ref(), data)
}

/// Reads a history from any buffered reader; `name` stands for the file in errors.
///
/// Blank lines are skipped. A last line with no newline that does not parse is
/// taken as cut off by a crash while it was written: it is left out with a
/// warning, so an interrupted run still leaves a checkable history.
pub fn read<R: BufRead>(name: &Path, mut input: R) -> Result<History, HistoryError> {
    let mut builder = Builder::new();
    let mut buf: Vec<u8> = Vec::with_capacity(512);
    let mut line_no: u64 = 0;
    let mut warnings = Vec::new();
    let io_err = |source| HistoryError::Io {
        path: name.to_path_buf(),
        source,
    };
    loop {
        buf.clear();
        let n = input.read_until(b'\n', &mut buf).map_err(io_err)?;
        if n == 0 {
            break;
        }
        line_no += 1;
        let complete = buf.last() == Some(&b'\n');
        let mut line: &[u8] = &buf;
        while let [rest @ .., b'\n' | b'\r'] = line {
            line = rest;
        }
        if line.iter().all(|c| c.is_ascii_whitespace()) {
            continue;
        }
        let op = match parse_op(line) {
            Ok(op) => op,
            Err(problem) => {
                if !complete && at_eof(&mut input).map_err(io_err)? {
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
            .push(op, line_no)
            .map_err(|problem| line_error(name, line_no, problem))?;
    }
    let mut h = builder.finish();
    h.warnings.extend(warnings);
    Ok(h)
}

fn at_eof<R: Read>(input: &mut R) -> std::io::Result<bool> {
    let mut probe = [0u8; 1];
    Ok(input.read(&mut probe)? == 0)
}

fn line_error(path: &Path, line: u64, problem: Problem) -> HistoryError {
    HistoryError::Line {
        path: PathBuf::from(path),
        line,
        problem,
    }
}
