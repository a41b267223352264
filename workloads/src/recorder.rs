//! The recorder: one history file per run, appended and flushed event by event,
//! shared by every producer task, every consumer worker's relay and the nemesis.
use gauntlet_history::{Actor, Event, HistoryWriter, OpType};
use std::fs::File;
use std::io;
use std::path::Path;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Mutex;

/// Thread-safe history writer with the run's process numbering.
pub struct Recorder {
    writer: Mutex<HistoryWriter<File>>,
    next_process: AtomicU64,
    ops: AtomicU64,
    oks: AtomicU64,
    fails: AtomicU64,
    infos: AtomicU64,
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
        Ok(Recorder {
            writer: Mutex::new(HistoryWriter::create(path)?),
            next_process: AtomicU64::new(0),
            ops: AtomicU64::new(0),
            oks: AtomicU64::new(0),
            fails: AtomicU64::new(0),
            infos: AtomicU64::new(0),
        })
    }

    /// A fresh client process number (a restarted client gets a new one).
    pub fn new_process(&self) -> u64 {
        self.next_process.fetch_add(1, Ordering::Relaxed)
    }

    /// Writes one event now; returns its index.
    pub fn record(&self, e: &Event) -> io::Result<u64> {
        if let Actor::Client(_) = e.process {
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
