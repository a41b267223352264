//! What happens during a run, as data: one stream of [`RunEvent`]s sent to the
//! [`EventSink`] the caller gives the run. The library never prints; the CLI
//! renders the stream on the terminal (a progress bar for the ticks), the
//! matrix prefixes it with the scenario's name, and tests collect it
//! ([`EventSink::collect`]).
use crate::broker::BrokerKind;
use gauntlet_workloads::recorder::Counts;
use std::path::PathBuf;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use super::scenario::Workload;

/// One thing that happened during a run, in the order it happened.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub enum RunEvent {
    /// The run folder was made (with the effective `scenario.toml`).
    FolderCreated {
        /// The run folder.
        dir: PathBuf,
    },
    /// The deployment was asked for.
    Deploying {
        /// The broker.
        broker: BrokerKind,
        /// How many broker nodes.
        nodes: usize,
        /// The durability settings that differ from the default, `key=value`
        /// each (`appendfsync=everysec`, `sync_interval=always`, `fsync=off`);
        /// empty when all are the default ([`super::scenario::Scenario::settings_line`]).
        settings: Vec<String>,
    },
    /// A line of the build of an image the deployment needs and did not find.
    ImageBuild {
        /// What the build is doing.
        line: String,
    },
    /// Gauntlet's filesystem is being built from the source tree the running
    /// `gauntlet` was built from (once: a run with a disk fault needs it).
    BuildingDiskfs {
        /// The command.
        command: String,
    },
    /// The deployment is up and ready.
    DeploymentReady {
        /// The broker.
        broker: BrokerKind,
        /// From asking for the deployment to its being ready.
        after: Duration,
    },
    /// The clients go through the harness's proxy, at these addresses.
    Proxy {
        /// The proxy's client-side addresses, one per node.
        addrs: Vec<String>,
    },
    /// The queue or log workload began (its first op is about to be sent).
    WorkloadStarted {
        /// From asking for the deployment to the first op.
        first_op_after: Duration,
        /// The workload.
        workload: Workload,
        /// How long producers send.
        time: Duration,
        /// Sends per second, all producers together.
        rate: f64,
    },
    /// The txn workload began.
    TxnStarted {
        /// From asking for the deployment to the first op.
        first_op_after: Duration,
        /// How long the transformers run.
        time: Duration,
        /// Transformers.
        transformers: u32,
        /// Inputs per second.
        rate: u32,
    },
    /// The periodic counts while the workload runs (about twice a second).
    Tick {
        /// Time since the workload began (at most `total`).
        elapsed: Duration,
        /// How long the workload runs.
        total: Duration,
        /// Client completions so far.
        counts: Counts,
        /// Sends acknowledged (`ok`) per second since the tick before.
        ok_per_s: f64,
        /// Sends invoked and not yet completed, now.
        in_flight: i64,
    },
    /// Consumer workers that had exited were replaced by fresh ones.
    WorkersRestarted {
        /// How many.
        count: usize,
    },
    /// A worker wrote a line that is not an event of the wire format.
    WorkerUnreadable {
        /// The worker's process number in the history.
        process: u64,
        /// Why it could not be read.
        error: String,
        /// The line.
        line: String,
    },
    /// A fault of the schedule started.
    FaultStarted {
        /// The fault, as the schedule names it.
        fault: String,
        /// What it did (the value recorded in the history), as text.
        detail: String,
    },
    /// A fault of the schedule could not be started.
    FaultFailed {
        /// The fault, as the schedule names it.
        fault: String,
        /// Why.
        error: String,
    },
    /// A fault of the schedule was healed.
    FaultEnded {
        /// The fault, as the schedule names it.
        fault: String,
    },
    /// The final heal found problems (it undoes every fault before the drain).
    HealProblems {
        /// What could not be undone, one entry per problem.
        problems: Vec<String>,
    },
    /// The txn workload ended.
    TxnFinished {
        /// Inputs the seeder sent.
        sends: u64,
        /// Transactions committed.
        committed: u64,
        /// Transactions aborted.
        aborted: u64,
        /// Transactions of unknown outcome.
        unknown: u64,
        /// Outputs read by the drain.
        drained: u64,
    },
    /// The history could no longer be written: the workload stopped, no drain.
    HistoryWriteFailed {
        /// The recorder's first write error.
        failure: String,
    },
    /// The final drain with fresh consumers started.
    Draining,
    /// The drain did not finish: no `drained` marker.
    DrainUnfinished,
    /// The broker answered the drain of `group` that its stream, queue or topic
    /// does not exist, and still did a while later: what it acknowledged there
    /// and no group read is lost.
    SourceMissing {
        /// The group whose drain got the answer.
        group: String,
        /// What is missing, in words.
        what: String,
        /// The broker's answer.
        answer: String,
    },
    /// The deployment is being torn down.
    TearingDown,
    /// Something worth telling that does not stop the run.
    Warning(String),
    /// The verdict is unknown because the history could not be written whole.
    VerdictUnknown {
        /// The recorder's first write error.
        failure: String,
    },
    /// Ctrl-C: what the backend created for the run is being removed; what was
    /// recorded will be judged, marked interrupted.
    Interrupted {
        /// The run's id (the label of what the backend created).
        run: String,
        /// The backend's name.
        backend: String,
    },
    /// Removing what the run created after Ctrl-C failed.
    CleanupFailed {
        /// Why.
        error: String,
    },
    /// Interrupted before anything was recorded: no verdict.
    NothingRecorded,
    /// Interrupted, and what was recorded could not be judged.
    NoVerdict {
        /// Why.
        error: String,
    },
    /// The run folder's verdict and reports were written.
    Judged {
        /// The run folder.
        dir: PathBuf,
    },
    /// The two-hop workload ended (its pipeline drained).
    TwoHopFinished {
        /// Inputs sent `ok` to stream A.
        inputs: u64,
        /// Outputs sent `ok` to stream B.
        outputs: u64,
        /// Outputs the consumers received.
        delivered: u64,
        /// Transformer crashes (`[two-hop] crash-rate`).
        crashes: u64,
    },
}

/// Where a run's events go: a function the caller provides, shared by the run's
/// tasks (clone it freely).
#[derive(Clone)]
pub struct EventSink(Arc<dyn Fn(RunEvent) + Send + Sync>);

impl std::fmt::Debug for EventSink {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("EventSink")
    }
}

/// An image build's lines as [`RunEvent::ImageBuild`] events.
impl crate::images::Progress for EventSink {
    fn line(&self, line: &str) {
        self.send(RunEvent::ImageBuild {
            line: line.to_string(),
        })
    }
}

impl EventSink {
    /// A sink that calls `f` with each event.
    pub fn new(f: impl Fn(RunEvent) + Send + Sync + 'static) -> EventSink {
        EventSink(Arc::new(f))
    }

    /// A sink that drops every event.
    pub fn discard() -> EventSink {
        EventSink::new(|_| {})
    }

    /// A sink that keeps every event, and the list it keeps them in.
    pub fn collect() -> (EventSink, Arc<Mutex<Vec<RunEvent>>>) {
        let kept = Arc::new(Mutex::new(Vec::new()));
        let into = kept.clone();
        let sink = EventSink::new(move |e| {
            if let Ok(mut v) = into.lock() {
                v.push(e);
            }
        });
        (sink, kept)
    }

    /// Sends one event.
    pub fn send(&self, e: RunEvent) {
        (self.0)(e)
    }
}
