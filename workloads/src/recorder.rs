//! The recorder: one history file per run, appended and flushed event by event,
//! shared by every producer task, every consumer worker's relay and the nemesis.
//!
//! [`Recorder::discarding`] formats and "writes" every event exactly the same way
//! into a sink that drops the bytes: the benchmark's recorder-off case.
use gauntlet_history::{Actor, Event, HistoryWriter, OpType};
use std::io::{self, Write};
use std::path::Path;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Mutex, OnceLock};
use std::time::{Duration, Instant};

/// Thread-safe history writer with the run's process numbering.
pub struct Recorder {
    writer: Mutex<HistoryWriter<Box<dyn Write + Send>>>,
    next_process: AtomicU64,
    ops: AtomicU64,
    oks: AtomicU64,
    fails: AtomicU64,
    infos: AtomicU64,
    /// When the first client op was recorded.
    first_op: OnceLock<Instant>,
    /// Send latencies in microseconds, when asked for ([`Recorder::keep_latencies`]).
    latencies: Option<Mutex<Vec<u32>>>,
}

/// Live counts of client completions, for progress display.
#[derive(Debug, Clone, Copy, Default)]
pub struct Counts {
    pub ops: u64,
    pub ok: u64,
    pub fail: u64,
    pub info: u64,
}

impl Recorder {
    pub fn create(path: &Path) -> io::Result<Recorder> {
        Ok(Recorder::with_sink(Box::new(std::fs::File::create(path)?)))
    }

    /// A recorder whose every event goes through the same formatting and write
    /// path into `io::sink()`: nothing is kept.
    pub fn discarding() -> Recorder {
        Recorder::with_sink(Box::new(io::sink()))
    }

    fn with_sink(out: Box<dyn Write + Send>) -> Recorder {
        Recorder {
            writer: Mutex::new(HistoryWriter::new(out)),
            next_process: AtomicU64::new(0),
            ops: AtomicU64::new(0),
            oks: AtomicU64::new(0),
            fails: AtomicU64::new(0),
            infos: AtomicU64::new(0),
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

    /// Writes one event now; returns its index.
    pub fn record(&self, e: &Event) -> io::Result<u64> {
        if let Actor::Client(_) = e.process {
            if self.first_op.get().is_none() {
                let _ = self.first_op.set(Instant::now());
            }
            self.ops.fetch_add(1, Ordering::Relaxed);
            match e.kind {
                OpType::Ok => self.oks.fetch_add(1, Ordering::Relaxed),
                OpType::Fail => self.fails.fetch_add(1, Ordering::Relaxed),
                OpType::Info => self.infos.fetch_add(1, Ordering::Relaxed),
                OpType::Invoke => 0,
            };
        }
        let mut w = self
            .writer
            .lock()
            .map_err(|_| io::Error::other("history writer lock poisoned"))?;
        w.append(e)
    }

    /// A harness phase marker (`drain`, `drained`, ...).
    pub fn phase(&self, phase: &str) -> io::Result<u64> {
        self.record(
            &Event::new(Actor::Harness, OpType::Info, "phase").value(serde_json::json!(phase)),
        )
    }

    pub fn counts(&self) -> Counts {
        Counts {
            ops: self.ops.load(Ordering::Relaxed),
            ok: self.oks.load(Ordering::Relaxed),
            fail: self.fails.load(Ordering::Relaxed),
            info: self.infos.load(Ordering::Relaxed),
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
}
