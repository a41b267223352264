//! The JSON Lines reader on several threads.
//!
//! Parsing a line costs about one and a half times as much as adding its op to
//! the [`Builder`] (interning, pairing, the contract's checks), and only the
//! adding has to follow file order. So each thread takes the next chunk of the
//! input (whole lines; a lock hands chunks out in file order, numbered), parses
//! it on its own into ops that borrow its buffer, waits until every earlier
//! chunk is in the builder, adds its ops, and takes the next chunk. The builder
//! sees the same ops in the same order with the same line numbers as on one
//! thread, so the history, its errors and its warnings are the same. A thread
//! holds one chunk and its ops at a time: memory grows by a few chunks' worth,
//! not with the file.
//!
//! Adding stays sequential, and storing the ops and the two cores' sharing of
//! caches and memory cost about a sixth more CPU time in all, which bounds the
//! gain: on 2 cores, about 1.65 to 1.75 times as fast as one thread (10M ops).
//!
//! Measured against it: one thread that adds every batch while the others only
//! parse kept the builder's tables in one core and its allocations in one
//! malloc arena, but was about a tenth slower (every op crosses cores, twice
//! with the reuse of its memory) and needs unsafe code for ops that outlive
//! their parser's borrow. The price of this design: the builder allocates from
//! each thread's arena, so what it frees on the way is spread over them, and a
//! checker that runs after the read may peak a few percent higher (seen: 0 to
//! 12% at 1M ops, nothing at 10M).
use crate::error::{HistoryError, Problem};
use crate::model::{Builder, History};
use crate::op::{parse_op, Op};
use std::io::Read;
use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Condvar, Mutex, MutexGuard, PoisonError};

/// Where the chunks come from.
pub(crate) enum Input<'d, R> {
    /// A history in memory: chunks are slices of it, no copy.
    Bytes(&'d [u8]),
    /// A stream: chunks are read into the taking thread's own buffer.
    Stream(R),
}

/// The input and how far it has been taken.
struct Source<'d, R> {
    input: Input<'d, R>,
    /// Bytes of [`Input::Bytes`] taken so far.
    pos: usize,
    /// The start of a line that the last chunk read from a stream did not end.
    carry: Vec<u8>,
    next_seq: u64,
    done: bool,
    chunk: usize,
    max_line: usize,
}

/// Whole lines of the input (and at its end, the last line without newline).
struct Chunk<'b> {
    seq: u64,
    data: &'b [u8],
    tail: Tail,
}

/// What comes after a chunk's lines when it is not the next chunk.
enum Tail {
    /// More chunks, or the end of the input.
    None,
    /// The next line is at least `max_line` bytes long.
    TooLong,
    /// Reading failed after the chunk's lines.
    Io(std::io::Error),
}

impl<'d, R: Read> Source<'d, R> {
    /// The next chunk, numbered; `None` at the end of the input.
    fn take<'b>(&mut self, buf: &'b mut Vec<u8>) -> Option<Chunk<'b>>
    where
        'd: 'b,
    {
        if self.done {
            return None;
        }
        let (data, last, tail) = match &mut self.input {
            Input::Bytes(all) => {
                let all: &'d [u8] = all;
                bytes_chunk(all, &mut self.pos, self.chunk, self.max_line)
            }
            Input::Stream(r) => stream_chunk(r, &mut self.carry, buf, self.chunk, self.max_line),
        };
        if last || !matches!(tail, Tail::None) {
            self.done = true;
        }
        if data.is_empty() && matches!(tail, Tail::None) {
            self.done = true;
            return None;
        }
        let seq = self.next_seq;
        self.next_seq += 1;
        Some(Chunk { seq, data, tail })
    }
}

/// The next chunk of a history in memory: about `chunk` bytes, up to and with the
/// newline of the line that the `chunk`-th byte is part of. Returns the chunk,
/// whether it ends the input, and what follows.
fn bytes_chunk<'d>(
    all: &'d [u8],
    pos: &mut usize,
    chunk: usize,
    max_line: usize,
) -> (&'d [u8], bool, Tail) {
    let rest = &all[(*pos).min(all.len())..];
    if rest.len() <= chunk {
        *pos = all.len();
        return (rest, true, Tail::None);
    }
    // Lines that end before byte `at` are shorter than `chunk`, so shorter than
    // `max_line`; only the line across `at` may be too long.
    let at = chunk - 1;
    let line_start = memchr::memrchr(b'\n', &rest[..at]).map_or(0, |p| p + 1);
    let newline = memchr::memchr(b'\n', &rest[at..]).map(|p| at + p);
    if newline.unwrap_or(rest.len()) - line_start >= max_line {
        *pos = all.len();
        return (&rest[..line_start], false, Tail::TooLong);
    }
    match newline {
        Some(nl) => {
            *pos += nl + 1;
            (&rest[..=nl], false, Tail::None)
        }
        None => {
            *pos = all.len();
            (rest, true, Tail::None)
        }
    }
}

/// The next chunk of a stream, read into `buf` after the `carry` of the last one:
/// at least `chunk` bytes where the input has them, cut after the last newline
/// (what follows it is carried to the next chunk). `buf` keeps its length (all
/// of it initialized) from chunk to chunk; it grows only for a line longer than
/// the chunk, up to `max_line` bytes, as the one-thread reader's buffer does.
fn stream_chunk<'b, R: Read>(
    r: &mut R,
    carry: &mut Vec<u8>,
    buf: &'b mut Vec<u8>,
    chunk: usize,
    max_line: usize,
) -> (&'b [u8], bool, Tail) {
    let want = chunk.clamp(1, max_line);
    let mut filled = carry.len();
    if buf.len() < want.max(filled) {
        buf.resize(want.max(filled), 0);
    }
    buf[..filled].copy_from_slice(carry);
    carry.clear();
    // A carried line start holds no newline.
    let mut last_newline: Option<usize> = None;
    let (end, last, tail) = loop {
        if filled >= want {
            if let Some(nl) = last_newline {
                break (nl + 1, false, Tail::None);
            }
        }
        if filled == buf.len() {
            // One line fills the whole buffer.
            if buf.len() >= max_line {
                break (0, false, Tail::TooLong);
            }
            let grown = (buf.len() * 2).min(max_line);
            buf.resize(grown, 0);
        }
        // Up to the chunk size; past it (a line longer than the chunk) a chunk more.
        let limit = if filled < want {
            want
        } else {
            (filled + want).min(buf.len())
        };
        match r.read(&mut buf[filled..limit]) {
            Ok(0) => break (filled, true, Tail::None),
            Ok(n) => {
                if let Some(p) = memchr::memrchr(b'\n', &buf[filled..filled + n]) {
                    last_newline = Some(filled + p);
                }
                filled += n;
            }
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
            Err(e) => break (last_newline.map_or(0, |nl| nl + 1), false, Tail::Io(e)),
        }
    };
    if !last && matches!(tail, Tail::None) {
        carry.extend_from_slice(&buf[end..filled]);
    }
    (&buf[..end], last, tail)
}

/// Why a chunk's lines end before its end, at a 1-based line of the chunk.
enum Stop {
    /// A line that does not parse.
    Error(u64, Problem),
    /// The input's last line, with no newline, does not parse: left out.
    CutOff(u64, Problem),
}

/// Parses a chunk's lines into `ops` (each with its line in the chunk) as the
/// one-thread reader does: blank lines are counted and skipped, a `\r` before
/// the newline is dropped. Returns how many lines the chunk has (up to a stop)
/// and the stop, if any.
fn parse_chunk<'a>(data: &'a [u8], ops: &mut Vec<(Op<'a>, u32)>) -> (u64, Option<Stop>) {
    let mut start = 0;
    let mut line: u64 = 0;
    while start < data.len() {
        let mut used = 0;
        if let Some(op) = crate::fast::parse_line(&data[start..], &mut used) {
            line += 1;
            start += used;
            ops.push((op, line as u32));
            continue;
        }
        let (line_end, next, complete) = match memchr::memchr(b'\n', &data[start..]) {
            Some(p) => (start + p, start + p + 1, true),
            // Only the input's last chunk ends without a newline.
            None => (data.len(), data.len(), false),
        };
        line += 1;
        let mut text: &[u8] = &data[start..line_end];
        start = next;
        if let [rest @ .., b'\r'] = text {
            text = rest;
        }
        if text.iter().all(|c| c.is_ascii_whitespace()) {
            continue;
        }
        match parse_op(text) {
            Ok(op) => ops.push((op, line as u32)),
            Err(problem) if complete => return (line, Some(Stop::Error(line, problem))),
            Err(problem) => return (line, Some(Stop::CutOff(line, problem))),
        }
    }
    (line, None)
}

/// The builder and what the chunks added so far leave for the next one.
struct Turn {
    /// The chunk whose ops go in next.
    next: u64,
    /// Lines of the chunks before it.
    lines: u64,
    builder: Builder,
    warnings: Vec<String>,
    error: Option<HistoryError>,
}

struct Shared<'n, 'd, R> {
    name: &'n Path,
    max_line: usize,
    source: Mutex<Source<'d, R>>,
    turn: Mutex<Turn>,
    turn_changed: Condvar,
    /// Set (with `turn` locked) when the read ends early: an error, or a thread panicked.
    stop: AtomicBool,
}

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(PoisonError::into_inner)
}

/// An empty vector with `v`'s allocation, for ops of another lifetime: each
/// thread reuses one for all its chunks (a fresh one per chunk costs page
/// faults). Collecting a vector's own iterator into one of the same layout
/// keeps its allocation.
fn recycle<'x>(mut v: Vec<(Op<'_>, u32)>) -> Vec<(Op<'x>, u32)> {
    v.clear();
    v.into_iter()
        .map(|_| unreachable!("the vector is empty"))
        .collect()
}

/// Stops the other threads when one panics, so that none waits for a chunk forever.
struct PanicStop<'s, 'n, 'd, R>(&'s Shared<'n, 'd, R>);

impl<R> Drop for PanicStop<'_, '_, '_, R> {
    fn drop(&mut self) {
        if std::thread::panicking() {
            let _turn = lock(&self.0.turn);
            self.0.stop.store(true, Ordering::SeqCst);
            self.0.turn_changed.notify_all();
        }
    }
}

impl<R: Read> Shared<'_, '_, R> {
    /// One thread's work: take a chunk, parse it, add it in its turn, until the end.
    fn work(&self) {
        let _guard = PanicStop(self);
        let mut buf: Vec<u8> = Vec::new();
        let mut spare: Vec<(Op<'static>, u32)> = Vec::new();
        loop {
            if self.stop.load(Ordering::SeqCst) {
                return;
            }
            let Some(chunk) = lock(&self.source).take(&mut buf) else {
                return;
            };
            let mut ops = recycle(spare);
            let (lines, stop) = parse_chunk(chunk.data, &mut ops);
            let mut turn = lock(&self.turn);
            while turn.next != chunk.seq && !self.stop.load(Ordering::SeqCst) {
                turn = self
                    .turn_changed
                    .wait(turn)
                    .unwrap_or_else(PoisonError::into_inner);
            }
            if self.stop.load(Ordering::SeqCst) {
                return;
            }
            if !self.add(&mut turn, &ops, lines, stop, chunk.tail) {
                self.stop.store(true, Ordering::SeqCst);
            }
            turn.next += 1;
            drop(turn);
            self.turn_changed.notify_all();
            // The ops are dropped here, out of the lock.
            spare = recycle(ops);
        }
    }

    /// Adds one chunk's ops; `false` when the read ends with it (an error).
    fn add(
        &self,
        turn: &mut Turn,
        ops: &[(Op<'_>, u32)],
        lines: u64,
        stop: Option<Stop>,
        tail: Tail,
    ) -> bool {
        let base = turn.lines;
        for (op, line) in ops {
            let line = base + u64::from(*line);
            if let Err(problem) = turn.builder.push(op, line) {
                turn.error = Some(crate::reader::line_error(self.name, line, problem));
                return false;
            }
        }
        turn.lines += lines;
        match stop {
            Some(Stop::Error(line, problem)) => {
                turn.error = Some(crate::reader::line_error(self.name, base + line, problem));
                return false;
            }
            Some(Stop::CutOff(line, problem)) => {
                turn.warnings.push(crate::reader::cut_off_warning(
                    self.name,
                    base + line,
                    &problem,
                ));
            }
            None => {}
        }
        match tail {
            Tail::None => true,
            Tail::TooLong => {
                turn.error = Some(crate::reader::line_error(
                    self.name,
                    turn.lines + 1,
                    Problem::LineTooLong {
                        limit: self.max_line,
                    },
                ));
                false
            }
            Tail::Io(source) => {
                turn.error = Some(HistoryError::Io {
                    path: self.name.to_path_buf(),
                    source,
                });
                false
            }
        }
    }
}

/// Reads JSON Lines from `input` on `threads` threads (the calling one among
/// them) in chunks of about `chunk` bytes (at most `max_line / 2`); the same
/// history, errors and warnings as [`crate::reader::read`].
pub(crate) fn read<R: Read + Send>(
    name: &Path,
    input: Input<'_, R>,
    threads: usize,
    chunk: usize,
    max_line: usize,
) -> Result<History, HistoryError> {
    let shared = Shared {
        name,
        max_line,
        source: Mutex::new(Source {
            input,
            pos: 0,
            carry: Vec::new(),
            next_seq: 0,
            done: false,
            chunk: chunk.clamp(1, (max_line / 2).max(1)),
            max_line,
        }),
        turn: Mutex::new(Turn {
            next: 0,
            lines: 0,
            builder: Builder::new(),
            warnings: Vec::new(),
            error: None,
        }),
        turn_changed: Condvar::new(),
        stop: AtomicBool::new(false),
    };
    std::thread::scope(|scope| {
        for i in 1..threads.max(1) {
            let spawned = std::thread::Builder::new()
                .name(format!("read-{i}"))
                .spawn_scoped(scope, || shared.work());
            // Fewer threads read the same history, only slower.
            if spawned.is_err() {
                break;
            }
        }
        shared.work();
    });
    let turn = shared
        .turn
        .into_inner()
        .unwrap_or_else(PoisonError::into_inner);
    if let Some(e) = turn.error {
        return Err(e);
    }
    let mut h = turn.builder.finish();
    h.warnings.extend(turn.warnings);
    Ok(h)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::reader::read_one_thread;
    // Only bytes come from the test kit: its history types are another copy of
    // this crate's (see history/Cargo.toml). Its `Rng` is that copy's, the one
    // `mutate` takes; the streams below use it too (the same generator).
    use gauntlet_testkit::queue_gen::{generate_vec, GenConfig, Injection, Mode};
    use gauntlet_testkit::{mutate, Rng};

    const NAME: &str = "h.jsonl";

    /// The whole outcome of a read, to compare: the history's every field, or the error.
    fn outcome(r: Result<History, HistoryError>) -> String {
        match r {
            Ok(h) => format!("{h:?}"),
            Err(e) => format!("error at line {:?}: {e}", e.line()),
        }
    }

    /// A stream that gives at most `max` bytes a read, and fails after `fail_at` bytes.
    struct Trickle<'a> {
        data: &'a [u8],
        pos: usize,
        rng: Rng,
        max: u64,
        fail_at: Option<usize>,
    }

    impl Read for Trickle<'_> {
        fn read(&mut self, out: &mut [u8]) -> std::io::Result<usize> {
            if self.fail_at.is_some_and(|f| self.pos >= f) {
                return Err(std::io::Error::other("disk on fire"));
            }
            if self.rng.below(4) == 0 {
                return Err(std::io::ErrorKind::Interrupted.into());
            }
            let end = self.fail_at.unwrap_or(usize::MAX).min(self.data.len());
            let n = (1 + self.rng.below(self.max) as usize)
                .min(out.len())
                .min(end - self.pos);
            out[..n].copy_from_slice(&self.data[self.pos..self.pos + n]);
            self.pos += n;
            Ok(n)
        }
    }

    /// Reads `data` on one thread and on several, from memory and from streams,
    /// with chunks of many sizes; every read must give the one-thread outcome.
    fn same_everywhere(data: &[u8], max_line: usize) -> String {
        let name = Path::new(NAME);
        let want = outcome(read_one_thread(name, data, max_line));
        for (i, &chunk) in [1, 7, 64, 333, 4096, 1 << 20].iter().enumerate() {
            for threads in [2, 3] {
                let got = outcome(read::<std::io::Empty>(
                    name,
                    Input::Bytes(data),
                    threads,
                    chunk,
                    max_line,
                ));
                assert_eq!(got, want, "bytes, {threads} threads, chunks of {chunk}");
                let stream = Trickle {
                    data,
                    pos: 0,
                    rng: Rng::new(i as u64),
                    max: [3, 100, 5000][i % 3],
                    fail_at: None,
                };
                let got = outcome(read(name, Input::Stream(stream), threads, chunk, max_line));
                assert_eq!(got, want, "stream, {threads} threads, chunks of {chunk}");
            }
        }
        want
    }

    fn generated(seed: u64, ops: u64) -> Vec<u8> {
        generate_vec(&GenConfig {
            seed,
            ops,
            mode: [Mode::Offsets, Mode::Ids, Mode::Bare][seed as usize % 3],
            injections: Injection::ALL.to_vec(),
            ..GenConfig::default()
        })
        .0
    }

    #[test]
    fn generated_histories_read_the_same_on_several_threads() {
        for seed in 0..4 {
            let data = generated(seed, 1500);
            let got = same_everywhere(&data, crate::reader::MAX_LINE);
            assert!(!got.starts_with("error"), "{got}");
        }
        let txns = gauntlet_testkit::txn_gen::generate_txns_vec(
            &gauntlet_testkit::txn_gen::TxnGenConfig {
                txns: 500,
                ..Default::default()
            },
        )
        .0;
        same_everywhere(&txns, crate::reader::MAX_LINE);
    }

    #[test]
    fn crlf_blank_lines_and_a_cut_off_last_line() {
        let data = generated(5, 600);
        let crlf: Vec<u8> = data
            .split_inclusive(|&c| c == b'\n')
            .enumerate()
            .flat_map(|(i, line)| {
                let mut l = line.to_vec();
                if i % 3 == 0 {
                    l.pop();
                    l.extend_from_slice(b"\r\n");
                }
                if i % 7 == 0 {
                    l.extend_from_slice(b"\n  \r\n\t\n");
                }
                l
            })
            .collect();
        let got = same_everywhere(&crlf, crate::reader::MAX_LINE);
        assert!(!got.starts_with("error"), "{got}");
        // Cut anywhere in the last line: left out with a warning (or read whole).
        let last_start = data[..data.len() - 1]
            .iter()
            .rposition(|&c| c == b'\n')
            .map_or(0, |p| p + 1);
        let mut warned = 0;
        for cut in (last_start + 1..data.len()).step_by(9) {
            let got = same_everywhere(&data[..cut], crate::reader::MAX_LINE);
            warned += usize::from(got.contains("last line is cut off"));
        }
        assert!(warned > 0);
        // A blank last line without newline.
        let mut blank = data.clone();
        blank.extend_from_slice(b"  \r");
        same_everywhere(&blank, crate::reader::MAX_LINE);
    }

    #[test]
    fn errors_have_the_same_line_on_several_threads() {
        let data = generated(6, 800);
        let mut rng = Rng::new(11);
        let mut errors = 0;
        for _ in 0..60 {
            let bad = mutate(&mut rng, &data);
            let got = same_everywhere(&bad, crate::reader::MAX_LINE);
            errors += usize::from(got.starts_with("error"));
        }
        assert!(errors > 20, "{errors} of 60 mutated histories fail");
        // A bad line in the middle.
        let lines: Vec<&[u8]> = data.split_inclusive(|&c| c == b'\n').collect();
        let mut bad = Vec::new();
        for (i, l) in lines.iter().enumerate() {
            bad.extend_from_slice(if i == lines.len() / 2 {
                b"{\"index\":\n"
            } else {
                l
            });
        }
        let got = same_everywhere(&bad, crate::reader::MAX_LINE);
        let want = format!("error at line {:?}", Some(lines.len() / 2 + 1));
        assert!(got.starts_with(&want), "{got}");
    }

    #[test]
    fn lines_longer_than_a_chunk_or_than_the_limit() {
        let data = generated(7, 300);
        let mut long = Vec::new();
        for (i, l) in data.split_inclusive(|&c| c == b'\n').enumerate() {
            if i == 40 {
                // White space after the op: a valid line of some 40 kB.
                long.extend_from_slice(&l[..l.len() - 1]);
                long.extend_from_slice(&[b' '; 40_000]);
                long.push(b'\n');
                continue;
            }
            long.extend_from_slice(l);
        }
        same_everywhere(&long, crate::reader::MAX_LINE);
        // Over the limit: the line's number, wherever it is, with or without newline.
        for max_line in [300, 1000, 40_000] {
            let got = same_everywhere(&long, max_line);
            assert!(got.contains("line is longer than"), "{max_line}: {got}");
        }
        let got = same_everywhere(&long, 50_000);
        assert!(!got.starts_with("error"), "{got}");
        let mut tail = data.clone();
        tail.extend_from_slice(&[b' '; 2000]);
        let got = same_everywhere(&tail, 1000);
        assert!(got.contains("line is longer than"), "{got}");
        tail.truncate(data.len() + 999);
        let got = same_everywhere(&tail, 1000);
        assert!(!got.starts_with("error"), "{got}");
    }

    #[test]
    fn a_read_error_comes_after_the_lines_before_it() {
        let data = generated(8, 400);
        let name = Path::new(NAME);
        for fail_at in [0, 1, 500, data.len() / 2, data.len() - 1] {
            let stream = |seed| Trickle {
                data: &data,
                pos: 0,
                rng: Rng::new(seed),
                max: 700,
                fail_at: Some(fail_at),
            };
            let want = outcome(read_one_thread(name, stream(1), crate::reader::MAX_LINE));
            assert!(want.contains("disk on fire"), "{want}");
            for chunk in [1, 100, 4096] {
                let got = outcome(read(name, Input::Stream(stream(2)), 2, chunk, 1 << 20));
                assert_eq!(got, want);
            }
        }
    }

    #[test]
    fn empty_and_tiny_inputs() {
        for data in [&b""[..], b"\n", b"\r\n", b" ", b"{", b"\n\n{\"index\""] {
            same_everywhere(data, crate::reader::MAX_LINE);
        }
    }

    #[test]
    fn recycled_vectors_keep_their_allocation() {
        let line = b"{\"index\":1,\"time\":1,\"process\":0,\"type\":\"invoke\",\"f\":\"poll\"}\n";
        let mut ops = Vec::with_capacity(100);
        parse_chunk(line, &mut ops);
        assert_eq!(ops.len(), 1);
        let again: Vec<(Op<'static>, u32)> = recycle(ops);
        assert!(again.is_empty() && again.capacity() >= 100);
    }
}
