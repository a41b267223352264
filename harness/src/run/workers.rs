//! Consumer workers: `gauntlet worker` processes whose stdout is relayed into
//! the run's history.
use super::events::{EventSink, RunEvent};
use super::scenario::Workload;
use crate::broker::BrokerKind;
use crate::error::HarnessError;
use gauntlet_history::{DrainEnd, MissingSource};
use gauntlet_workloads::log::LogConfig;
use gauntlet_workloads::queue::{MissingAnswer, QueueConfig, WireEvent, MISSING};
use gauntlet_workloads::worker_call::{LogSlot, WorkerCall};
use gauntlet_workloads::{Delivery, Recorder};
use std::path::PathBuf;
use std::process::Stdio;
use std::sync::Arc;
use std::time::Duration;
use tokio::io::{AsyncBufReadExt, BufReader};
use tokio::process::{Child, Command};

pub(super) type Pool = Arc<tokio::sync::Mutex<Vec<(String, Worker)>>>;

/// A consumer worker process and the relay that records what it reports.
pub(super) struct Worker {
    pub(super) child: Child,
    pub(super) relay: tokio::task::JoinHandle<()>,
    pub(super) process: u64,
    /// Told when the worker reports that it stalled where the nemesis asked.
    pub(super) stalled: Arc<tokio::sync::Notify>,
    /// A drain worker's report that the broker answered its stream, queue or
    /// topic does not exist (set by the relay).
    pub(super) missing: Arc<std::sync::Mutex<Option<MissingSource>>>,
}

/// How to start `gauntlet worker` processes.
#[derive(Clone)]
pub(super) struct WorkerSpec {
    pub(super) exe: PathBuf,
    pub(super) broker: BrokerKind,
    pub(super) addrs: Vec<String>,
    pub(super) delivery: Delivery,
    pub(super) cfg: QueueConfig,
    pub(super) workload: Workload,
    pub(super) log: LogConfig,
    /// The dedup store and how the consumers use it (seed D7); `None`: plain consumers.
    pub(super) dedup: Option<gauntlet_workloads::dedup::DedupCall>,
    /// Where a worker's unreadable lines are told.
    pub(super) events: EventSink,
}

impl WorkerSpec {
    pub(super) fn spawn(
        &self,
        recorder: &Arc<Recorder>,
        group: &str,
        drain: bool,
    ) -> Result<Worker, HarnessError> {
        self.spawn_in(recorder, group, drain, 0)
    }

    /// A worker in consumer slot `slot` (the log workload's `assign` shares partitions by slot).
    pub(super) fn spawn_in(
        &self,
        recorder: &Arc<Recorder>,
        group: &str,
        drain: bool,
        slot: usize,
    ) -> Result<Worker, HarnessError> {
        let process = recorder.new_process();
        let call = WorkerCall {
            broker: self.broker,
            addrs: self.addrs.clone(),
            group: group.to_string(),
            process,
            delivery: self.delivery.clone(),
            batch: self.cfg.batch,
            processing_ms: self.cfg.processing_ms,
            drain,
            log: (self.workload == Workload::Log).then_some(LogSlot {
                membership: self.log.membership,
                slot,
                slots: self.cfg.consumers.max(1),
            }),
            dedup: self.dedup.clone(),
        };
        let mut cmd = Command::new(&self.exe);
        cmd.args(call.to_args());
        cmd.stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .kill_on_drop(true);
        let mut child = cmd.spawn().map_err(|e| {
            HarnessError::Worker(format!("cannot start {}: {e}", self.exe.display()))
        })?;
        let stdout = child
            .stdout
            .take()
            .ok_or_else(|| HarnessError::Worker("worker has no stdout".into()))?;
        let rec = recorder.clone();
        let stalled = Arc::new(tokio::sync::Notify::new());
        let told = stalled.clone();
        let events = self.events.clone();
        let missing = Arc::new(std::sync::Mutex::new(None));
        let found = missing.clone();
        let group = group.to_string();
        let relay = tokio::spawn(async move {
            let mut lines = BufReader::new(stdout).lines();
            while let Ok(Some(line)) = lines.next_line().await {
                match serde_json::from_str::<WireEvent>(&line) {
                    Ok(w) if w.kind == gauntlet_workloads::stall::STALLED => told.notify_one(),
                    Ok(w) if w.kind == MISSING => {
                        let answer = w
                            .value
                            .and_then(|v| serde_json::from_value::<MissingAnswer>(v).ok());
                        match answer {
                            Some(a) => {
                                let confirmed = rec.now();
                                let source = MissingSource {
                                    group: group.clone(),
                                    what: a.what,
                                    answer: a.answer,
                                    first_answer: confirmed.saturating_sub(
                                        a.confirmed_after_ms.saturating_mul(1_000_000),
                                    ),
                                    confirmed,
                                };
                                if let Ok(mut m) = found.lock() {
                                    *m = Some(source);
                                }
                            }
                            None => events.send(RunEvent::WorkerUnreadable {
                                process,
                                error: "a `missing` line without what and answer".into(),
                                line,
                            }),
                        }
                    }
                    Ok(w) => {
                        if let Some(e) = w.into_event(process) {
                            let _ = rec.record(&e);
                        }
                    }
                    Err(e) => events.send(RunEvent::WorkerUnreadable {
                        process,
                        error: e.to_string(),
                        line,
                    }),
                }
            }
        });
        Ok(Worker {
            child,
            relay,
            process,
            stalled,
            missing,
        })
    }
}

impl Worker {
    /// Asks the worker to finish its current op and exit (closes its stdin); kills it after `grace`.
    pub(super) async fn stop(mut self, grace: Duration) {
        drop(self.child.stdin.take());
        if tokio::time::timeout(grace, self.child.wait())
            .await
            .is_err()
        {
            let _ = self.child.kill().await;
        }
        let _ = self.relay.await;
    }

    pub(super) fn exited(&mut self) -> bool {
        matches!(self.child.try_wait(), Ok(Some(_)))
    }
}

/// One supervision pass: every worker that exited is replaced by a fresh one in
/// the same group and consumer slot, under a new process number. Returns how many
/// were replaced.
pub(super) async fn respawn_exited(
    pool: &Pool,
    spec: &WorkerSpec,
    recorder: &Arc<Recorder>,
    slots: usize,
) -> Result<usize, HarnessError> {
    let mut ws = pool.lock().await;
    let mut replaced = 0;
    for (i, (g, w)) in ws.iter_mut().enumerate() {
        if w.exited() {
            let fresh = spec.spawn_in(recorder, g, false, i % slots.max(1))?;
            let old = std::mem::replace(w, fresh);
            old.stop(Duration::from_millis(10)).await;
            replaced += 1;
        }
    }
    Ok(replaced)
}

/// Stops every worker of the pool (each asked first, killed after `grace`).
pub(super) async fn stop_all(pool: &Pool, grace: Duration) {
    let workers = std::mem::take(&mut *pool.lock().await);
    for (_, w) in workers {
        w.stop(grace).await;
    }
}

/// The final drain: one fresh consumer per group, each running until its own
/// empty polls end it, or until the broker answered (and still answered a while
/// later) that the group's stream, queue or topic does not exist. How it ended,
/// or `None` when a group did neither within `limit` (a drain that could not
/// finish: no `drained` marker).
pub(super) async fn drain(
    spec: &WorkerSpec,
    recorder: &Arc<Recorder>,
    groups: &[String],
    limit: Duration,
) -> Result<Option<DrainEnd>, HarnessError> {
    let mut drains = Vec::new();
    for g in groups {
        drains.push(spec.spawn(recorder, g, true)?);
    }
    let mut all_done = true;
    let mut missing = Vec::new();
    for mut d in drains {
        // `Child::wait` closes the child's stdin first, which a worker reads as "stop":
        // keep stdin open so the drain runs until its own empty polls end it.
        let _stdin = d.child.stdin.take();
        match tokio::time::timeout(limit, d.child.wait()).await {
            Ok(Ok(status)) if status.success() => {}
            _ => all_done = false,
        }
        let found = d.missing.clone();
        // Waits for the relay, so a `missing` line is in by now.
        d.stop(Duration::from_secs(1)).await;
        if let Some(m) = found.lock().ok().and_then(|mut m| m.take()) {
            missing.push(m);
        }
    }
    Ok(all_done.then(|| DrainEnd::with_missing(missing)))
}
