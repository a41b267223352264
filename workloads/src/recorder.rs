//! The recorder: one history file per run, appended and flushed event by event,
//! shared by every producer task, every consumer worker's relay and the nemesis.
//!
//! [`Recorder::discarding`] formats and "writes" every event exactly the same way
//! into a sink that drops the bytes: the benchmark's recorder-off case.
//!
//! **The first write error is latched.** A history that silently lost its tail
//! (a full disk in the middle of a run) would be judged as if it were whole, and
//! messages whose deliveries were never written could be called `lost`. So the
//! first error of the sink is kept ([`Recorder::write_error`]), every later event
//! is refused with an error (nothing is written after a failed line, so the file
//! is a prefix of the run, at most its last line cut off), and
//! [`Recorder::failed`] tells the workloads to stop.
use gauntlet_history::{Actor, Event, HistoryWriter, OpType};
use std::io::{self, Write};
use std::path::Path;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Mutex, OnceLock};
use std::time::{Duration, Instant};

/// The first error the history sink returned, and where the history stops.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WriteFailure {
    /// The sink's error, as text.
    pub error: String,
    /// The sink's error kind.
    pub kind: io::ErrorKind,
    /// The index of the last event written whole; `None` when none was.
    pub last_index: Option<u64>,
    /// Events refused since (the failed one included).
    pub refused: u64,
}

impl std::fmt::Display for WriteFailure {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self.last_index {
            Some(i) => write!(f, "writing the history failed after index {i}")?,
            None => write!(f, "writing the history failed before its first event")?,
        }
        write!(
            f,
            ": {} ({} event(s) not recorded)",
            self.error, self.refused
        )
    }
}

/// The writer and what became of it.
struct Sink {
    writer: HistoryWriter<Box<dyn Write + Send>>,
    last_index: Option<u64>,
    failure: Option<WriteFailure>,
}

/// Thread-safe history writer with the run's process numbering.
pub struct Recorder {
    writer: Mutex<Sink>,
    /// Set with the first write error (read without the lock by the workloads).
    failed: AtomicBool,
    next_process: AtomicU64,
    ops: AtomicU64,
    oks: AtomicU64,
    fails: AtomicU64,
    infos: AtomicU64,
    sends_ok: AtomicU64,
    /// When the first client op was recorded.
    first_op: OnceLock<Instant>,
    /// Send latencies in microseconds, when asked for ([`Recorder::keep_latencies`]).
    latencies: Option<Mutex<Vec<u32>>>,
}

/// Live counts of client completions, for progress display.
#[derive(Debug, Clone, Copy, Default)]
pub struct Counts {
    /// Client ops recorded (invokes and completions).
    pub ops: u64,
    /// Client completions `ok`.
    pub ok: u64,
    /// Client completions `fail`.
    pub fail: u64,
    /// Client completions `info`.
    pub info: u64,
    /// Sends completed `ok` (acknowledged), a part of `ok`.
    pub sends_ok: u64,
}

impl Recorder {
    /// A recorder that writes the history to `path` (created, or truncated).
    pub fn create(path: &Path) -> io::Result<Recorder> {
        Ok(Recorder::with_sink(Box::new(std::fs::File::create(path)?)))
    }

    /// A recorder whose every event goes through the same formatting and write
    /// path into `io::sink()`: nothing is kept.
    pub fn discarding() -> Recorder {
        Recorder::with_sink(Box::new(io::sink()))
    }

    /// A recorder writing into any sink (a file, a pipe, a test's failing writer).
    pub fn with_sink(out: Box<dyn Write + Send>) -> Recorder {
        Recorder {
            writer: Mutex::new(Sink {
                writer: HistoryWriter::new(out),
                last_index: None,
                failure: None,
            }),
            failed: AtomicBool::new(false),
            next_process: AtomicU64::new(0),
            ops: AtomicU64::new(0),
            oks: AtomicU64::new(0),
            fails: AtomicU64::new(0),
            infos: AtomicU64::new(0),
            sends_ok: AtomicU64::new(0),
            first_op: OnceLock::new(),
            latencies: None,
        }
    }

    /// Keeps every send's latency (for benchmarks).
    pub fn keep_latencies(mut self) -> Recorder {
        self.latencies = Some(Mutex::new(Vec::new()));
        self
    }

    /// Notes how long one send took (kept only after [`Recorder::keep_latencies`]).
    pub fn send_latency(&self, d: Duration) {
        if let Some(l) = &self.latencies {
            if let Ok(mut v) = l.lock() {
                v.push(u32::try_from(d.as_micros()).unwrap_or(u32::MAX));
            }
        }
    }

    /// The send latencies noted so far, in microseconds.
    pub fn latencies(&self) -> Vec<u32> {
        self.latencies
            .as_ref()
            .and_then(|l| l.lock().ok().map(|v| v.clone()))
            .unwrap_or_default()
    }

    /// When the first client op was recorded, if one was.
    pub fn first_op(&self) -> Option<Instant> {
        self.first_op.get().copied()
    }

    /// A fresh client process number (a restarted client gets a new one).
    pub fn new_process(&self) -> u64 {
        self.next_process.fetch_add(1, Ordering::Relaxed)
    }

    /// Writes one event now; returns its index. After the sink's first error
    /// nothing more is written: this event and every later one are refused with
    /// an error (the first is kept, see [`Recorder::write_error`]).
    pub fn record(&self, e: &Event) -> io::Result<u64> {
        self.record_all(std::slice::from_ref(e))
    }

    /// Writes several events now, in order, as one write of the sink (a pipelined
    /// producer's invokes, or the completions that ended together); returns the
    /// index of the first. Refused as [`Recorder::record`] is after an error.
    /// When this write fails, a prefix of the batch may be in the file (the last
    /// line possibly cut); the history still stops there.
    pub fn record_all(&self, events: &[Event]) -> io::Result<u64> {
        let mut sink = self
            .writer
            .lock()
            .map_err(|_| io::Error::other("history writer lock poisoned"))?;
        if let Some(f) = sink.failure.as_mut() {
            f.refused += events.len() as u64;
            return Err(io::Error::new(
                f.kind,
                format!("history not recorded any more: {}", f.error),
            ));
        }
        let first = match sink.writer.append_all(events) {
            Ok(i) => i,
            Err(err) => {
                sink.failure = Some(WriteFailure {
                    error: err.to_string(),
                    kind: err.kind(),
                    last_index: sink.last_index,
                    refused: events.len() as u64,
                });
                self.failed.store(true, Ordering::Release);
                return Err(err);
            }
        };
        if !events.is_empty() {
            sink.last_index = Some(first + events.len() as u64 - 1);
        }
        drop(sink);
        for e in events {
            self.count(e);
        }
        Ok(first)
    }

    fn count(&self, e: &Event) {
        if let Actor::Client(_) = e.process {
            if self.first_op.get().is_none() {
                let _ = self.first_op.set(Instant::now());
            }
            self.ops.fetch_add(1, Ordering::Relaxed);
            match e.kind {
                OpType::Ok if e.f == "send" => {
                    self.sends_ok.fetch_add(1, Ordering::Relaxed);
                    self.oks.fetch_add(1, Ordering::Relaxed)
                }
                OpType::Ok => self.oks.fetch_add(1, Ordering::Relaxed),
                OpType::Fail => self.fails.fetch_add(1, Ordering::Relaxed),
                OpType::Info => self.infos.fetch_add(1, Ordering::Relaxed),
                OpType::Invoke => 0,
            };
        }
    }

    /// Whether writing the history has failed (cheap: the workloads' stop check).
    pub fn failed(&self) -> bool {
        self.failed.load(Ordering::Acquire)
    }

    /// The sink's first error, where the history stops and how much was refused since.
    pub fn write_error(&self) -> Option<WriteFailure> {
        match self.writer.lock() {
            Ok(s) => s.failure.clone(),
            Err(_) => Some(WriteFailure {
                error: "history writer lock poisoned".into(),
                kind: io::ErrorKind::Other,
                last_index: None,
                refused: 0,
            }),
        }
    }

    /// The index of the last event written whole, if any.
    pub fn last_index(&self) -> Option<u64> {
        self.writer.lock().ok().and_then(|s| s.last_index)
    }

    /// The history's clock now: the `time` an event recorded now gets (0 if the
    /// writer's lock is poisoned).
    pub fn now(&self) -> u64 {
        self.writer.lock().map(|s| s.writer.now()).unwrap_or(0)
    }

    /// The `drained` marker, with how the drain ended (its `drain` field,
    /// docs/history-format.md).
    pub fn drained(&self, end: &gauntlet_history::DrainEnd) -> io::Result<u64> {
        let mut e =
            Event::new(Actor::Harness, OpType::Info, "phase").value(serde_json::json!("drained"));
        e.drain = Some(end.to_json());
        self.record(&e)
    }

    /// A harness phase marker (`drain`, `drained`, ...).
    pub fn phase(&self, phase: &str) -> io::Result<u64> {
        self.record(
            &Event::new(Actor::Harness, OpType::Info, "phase").value(serde_json::json!(phase)),
        )
    }

    /// The client ops recorded so far.
    pub fn counts(&self) -> Counts {
        Counts {
            ops: self.ops.load(Ordering::Relaxed),
            ok: self.oks.load(Ordering::Relaxed),
            fail: self.fails.load(Ordering::Relaxed),
            info: self.infos.load(Ordering::Relaxed),
            sends_ok: self.sends_ok.load(Ordering::Relaxed),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_discarding_recorder_counts_like_the_file_one() {
        let dir = std::env::temp_dir().join(format!("gauntlet-rec-{}", std::process::id()));
        std::fs::create_dir_all(&dir).expect("dir");
        let path = dir.join("h.jsonl");
        let file = Recorder::create(&path).expect("create");
        let none = Recorder::discarding().keep_latencies();
        for r in [&file, &none] {
            assert!(r.first_op().is_none());
            r.phase("start").expect("phase");
            assert!(r.first_op().is_none(), "a phase marker is not a client op");
            let e = Event::new(Actor::Client(0), OpType::Invoke, "send");
            r.record(&e.clone().value(serde_json::json!({"key":"k","value":1})))
                .expect("invoke");
            r.record(
                &Event::new(Actor::Client(0), OpType::Ok, "send")
                    .value(serde_json::json!({"key":"k","value":1})),
            )
            .expect("ok");
            r.send_latency(Duration::from_micros(1500));
            assert!(r.first_op().is_some());
            let c = r.counts();
            assert_eq!((c.ops, c.ok, c.fail, c.info), (2, 1, 0, 0));
        }
        assert_eq!(none.latencies(), vec![1500]);
        assert!(file.latencies().is_empty());
        let text = std::fs::read_to_string(&path).expect("read");
        assert_eq!(text.lines().count(), 3);
        let _ = std::fs::remove_dir_all(&dir);
    }

    /// A disk that fills up: it takes `lines` whole lines, then `room` more bytes
    /// (of the write that does not fit, up to the limit, as `write` does), then
    /// refuses like a full disk. Counted in lines, not bytes: a line's length
    /// grows with its time field, which a busy machine makes longer.
    struct FullAfter {
        lines: usize,
        room: usize,
        kept: std::sync::Arc<Mutex<Vec<u8>>>,
    }

    impl Write for FullAfter {
        fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
            let mut n = 0;
            for &b in buf {
                if self.lines == 0 {
                    if self.room == 0 {
                        break;
                    }
                    self.room -= 1;
                } else if b == b'\n' {
                    self.lines -= 1;
                }
                n += 1;
            }
            if n == 0 && !buf.is_empty() {
                return Err(io::Error::new(
                    io::ErrorKind::StorageFull,
                    "No space left on device",
                ));
            }
            if let Ok(mut k) = self.kept.lock() {
                k.extend_from_slice(&buf[..n]);
            }
            Ok(n)
        }
        fn flush(&mut self) -> io::Result<()> {
            Ok(())
        }
    }

    fn send(i: i64) -> Event {
        Event::new(Actor::Client(0), OpType::Invoke, "send")
            .value(serde_json::json!({"key": "k", "value": i}))
    }

    #[test]
    fn the_first_write_error_is_latched_and_later_events_are_refused() {
        let kept = std::sync::Arc::new(Mutex::new(Vec::new()));
        // Room for two lines and 15 bytes of the third.
        let r = Recorder::with_sink(Box::new(FullAfter {
            lines: 2,
            room: 15,
            kept: kept.clone(),
        }));
        assert!(!r.failed());
        assert_eq!(r.record(&send(0)).ok(), Some(0));
        assert_eq!(r.record(&send(1)).ok(), Some(1));
        let mut errors = 0;
        for i in 2..10 {
            if r.record(&send(i)).is_err() {
                errors += 1;
            }
        }
        assert_eq!(errors, 8, "every event after the failure is refused");
        assert!(r.failed());
        assert!(r.phase("drained").is_err(), "no marker after the failure");
        let f = r.write_error().expect("the failure is kept");
        assert_eq!(f.kind, io::ErrorKind::StorageFull);
        assert_eq!(f.last_index, Some(1));
        assert_eq!(f.refused, 9);
        assert!(f.error.contains("No space left"), "{f:?}");
        assert!(
            f.to_string()
                .starts_with("writing the history failed after index 1: No space left"),
            "{f}"
        );
        assert_eq!(r.last_index(), Some(1));
        assert_eq!(r.counts().ops, 2, "refused events are not counted");
        // What reached the sink: two whole lines and a cut-off third, nothing after.
        let bytes = kept.lock().map(|k| k.clone()).unwrap_or_default();
        let text = String::from_utf8_lossy(&bytes);
        let lines: Vec<&str> = text.split_inclusive('\n').collect();
        assert_eq!(lines.len(), 3, "{text}");
        assert_eq!(lines[2].len(), 15, "{text}");
        assert!(lines[1].contains("\"index\":1,"), "{text}");
        assert!(!lines[2].ends_with('\n') && lines[2].contains("\"index\":2,"));
    }

    #[test]
    fn a_sink_that_fails_at_once_names_no_last_index() {
        let r = Recorder::with_sink(Box::new(FullAfter {
            lines: 0,
            room: 0,
            kept: std::sync::Arc::new(Mutex::new(Vec::new())),
        }));
        assert!(r.phase("start").is_err());
        let f = r.write_error().expect("failure");
        assert_eq!(f.last_index, None);
        assert!(f.to_string().contains("before its first event"), "{f}");
        assert!(r.last_index().is_none());
    }
}
