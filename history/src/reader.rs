//! Streaming JSON Lines reader: one line at a time into the compact [`History`].
//!
//! [`read_path`] and [`read_bytes`] parse on several threads
//! ([`ReadOptions::threads`], by default one per core); the history, its errors
//! and warnings are the same as on one thread (see `parallel.rs`).
use crate::error::{HistoryError, Problem};
use crate::model::{Builder, History};
use crate::op::parse_op;
use std::fs::File;
use std::io::Read;
use std::path::{Path, PathBuf};

/// The longest line the reader takes (a poll of a million messages fits easily).
pub const MAX_LINE: usize = 256 << 20;

/// The environment variable that sets the default number of reading threads
/// ([`ReadOptions::default`]); `1` reads on the calling thread alone.
pub const READ_THREADS_ENV: &str = "GAUNTLET_READ_THREADS";

/// The default size of the chunks that reading threads take at a time: small
/// enough that a chunk and its parsed ops stay in a core's L2 cache (larger
/// chunks measured slower), large enough that handing them out costs little.
pub const DEFAULT_CHUNK_BYTES: usize = 128 << 10;

/// Inputs smaller than this are read on the calling thread alone (starting
/// threads would cost more than they save).
pub const MIN_PARALLEL_BYTES: u64 = 256 << 10;

/// The most threads [`ReadOptions::default`] picks: adding ops to the history
/// stays sequential (one thread at a time), which bounds the gain to a few times.
pub const MAX_DEFAULT_THREADS: usize = 8;

/// How [`read_path_with`], [`read_bytes_with`] and [`read_with`] read.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct ReadOptions {
    /// Threads that parse (the calling one among them); 0 counts as 1. With 1,
    /// the reader works as it always did, on the calling thread.
    pub threads: usize,
    /// About how many bytes of whole lines a thread parses at a time (at least 1,
    /// at most `MAX_LINE / 2`; a longer line makes its chunk longer). Each
    /// thread holds one chunk and its parsed ops (about three times the chunk):
    /// that times the threads is what reading on several threads adds to the memory.
    pub chunk_bytes: usize,
}

impl Default for ReadOptions {
    /// [`READ_THREADS_ENV`] where it is set to a number, else one thread per
    /// core (at most [`MAX_DEFAULT_THREADS`]); chunks of [`DEFAULT_CHUNK_BYTES`].
    fn default() -> Self {
        let threads = std::env::var(READ_THREADS_ENV)
            .ok()
            .and_then(|v| v.trim().parse::<usize>().ok())
            .unwrap_or_else(|| {
                std::thread::available_parallelism()
                    .map_or(1, |n| n.get())
                    .min(MAX_DEFAULT_THREADS)
            });
        ReadOptions {
            threads,
            chunk_bytes: DEFAULT_CHUNK_BYTES,
        }
    }
}

impl ReadOptions {
    /// These options with `threads` threads.
    pub fn with_threads(mut self, threads: usize) -> Self {
        self.threads = threads;
        self
    }

    /// These options with chunks of `bytes` bytes.
    pub fn with_chunk_bytes(mut self, bytes: usize) -> Self {
        self.chunk_bytes = bytes;
        self
    }

    /// Whether an input of `len` bytes (unknown: `None`) is read on several
    /// threads: with more than one thread, at least two chunks to share and at
    /// least [`MIN_PARALLEL_BYTES`].
    fn parallel_for(&self, len: Option<u64>) -> bool {
        let big_enough = match len {
            Some(n) => n >= MIN_PARALLEL_BYTES && n / 2 >= self.chunk_bytes.max(1) as u64,
            None => true,
        };
        self.threads > 1 && big_enough
    }
}

/// Reads and checks a history file, on [`ReadOptions::default`] threads.
///
/// A Jepsen `history.edn` (named `.edn`, or starting like EDN) is read by [`crate::edn`].
pub fn read_path(path: impl AsRef<Path>) -> Result<History, HistoryError> {
    read_path_with(path, &ReadOptions::default())
}

/// Reads and checks a history file as `options` say; the result does not
/// depend on them (see [`read`] for what is read).
pub fn read_path_with(
    path: impl AsRef<Path>,
    options: &ReadOptions,
) -> Result<History, HistoryError> {
    let path = path.as_ref();
    let io_err = |source| HistoryError::Io {
        path: path.to_path_buf(),
        source,
    };
    let mut file = File::open(path).map_err(io_err)?;
    let mut head = [0u8; 64];
    let n = file.read(&mut head).unwrap_or(0);
    if crate::edn::looks_like(path, &head[..n]) {
        return crate::edn::read_path(path);
    }
    let len = file.metadata().ok().map(|m| m.len());
    let input = std::io::Read::chain(&head[..n], file);
    if options.parallel_for(len) {
        crate::parallel::read(
            path,
            crate::parallel::Input::Stream(input),
            options.threads,
            options.chunk_bytes,
            MAX_LINE,
        )
    } else {
        read(path, input)
    }
}

/// Reads a history held in memory, on [`ReadOptions::default`] threads; `name`
/// stands for the file in errors.
pub fn read_bytes(name: impl AsRef<Path>, data: &[u8]) -> Result<History, HistoryError> {
    read_bytes_with(name, data, &ReadOptions::default())
}

/// Reads a history held in memory as `options` say; `name` stands for the file
/// in errors. The result does not depend on the options.
pub fn read_bytes_with(
    name: impl AsRef<Path>,
    data: &[u8],
    options: &ReadOptions,
) -> Result<History, HistoryError> {
    let name = name.as_ref();
    if crate::edn::looks_like(name, &data[..data.len().min(64)]) {
        return crate::edn::read_bytes(name, data);
    }
    if options.parallel_for(Some(data.len() as u64)) {
        crate::parallel::read::<std::io::Empty>(
            name,
            crate::parallel::Input::Bytes(data),
            options.threads,
            options.chunk_bytes,
            MAX_LINE,
        )
    } else {
        read(name, data)
    }
}

/// Reads JSON Lines from any reader as `options` say (JSON Lines only: no EDN
/// detection); `name` stands for the file in errors. The result is that of [`read`].
pub fn read_with<R: Read + Send>(
    name: &Path,
    input: R,
    options: &ReadOptions,
) -> Result<History, HistoryError> {
    if options.parallel_for(None) {
        crate::parallel::read(
            name,
            crate::parallel::Input::Stream(input),
            options.threads,
            options.chunk_bytes,
            MAX_LINE,
        )
    } else {
        read(name, input)
    }
}

/// Reads a history from any reader; `name` stands for the file in errors.
///
/// Blank lines are skipped. A last line with no newline that does not parse is
/// taken as cut off by a crash while it was written: it is left out with a
/// warning, so an interrupted run still leaves a checkable history.
///
/// Lines are parsed in place in a large buffer (no copy per line), on the
/// calling thread ([`read_with`] reads on several).
pub fn read<R: Read>(name: &Path, input: R) -> Result<History, HistoryError> {
    read_one_thread(name, input, MAX_LINE)
}

/// [`read`], with lines of up to `max_line` bytes.
pub(crate) fn read_one_thread<R: Read>(
    name: &Path,
    mut input: R,
    max_line: usize,
) -> Result<History, HistoryError> {
    let mut builder = Builder::new();
    let mut buf: Vec<u8> = vec![0; (1 << 20).min(max_line)];
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
                    if buf.len() >= max_line {
                        return Err(line_error(
                            name,
                            line_no + 1,
                            Problem::LineTooLong { limit: max_line },
                        ));
                    }
                    buf.resize((buf.len() * 2).min(max_line), 0);
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
                    warnings.push(cut_off_warning(name, line_no, &problem));
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

/// The warning for a last line that is cut off.
pub(crate) fn cut_off_warning(name: &Path, line: u64, problem: &Problem) -> String {
    format!(
        "{}:{line}: last line is cut off ({problem}); left out",
        name.display()
    )
}

pub(crate) fn line_error(path: &Path, line: u64, problem: Problem) -> HistoryError {
    HistoryError::Line {
        path: PathBuf::from(path),
        line,
        problem,
    }
}
