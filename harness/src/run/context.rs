//! What every phase of a run after the launch shares: the [`RunContext`], the
//! recording options and measurements, and what a workload phase leaves.
//!
//! A leaf of `run/`: the phases (`faults`, `queue`, `txn`) and `mod.rs` import
//! it; it imports none of them.
use super::events::EventSink;
use super::scenario::Scenario;
use crate::broker::{BrokerExt, BrokerKind};
use crate::deployment::Deployment;
use crate::proxy::Proxy;
use gauntlet_workloads::recorder::WriteFailure;
use gauntlet_workloads::Recorder;
use std::path::Path;
use std::time::{Duration, Instant};

/// Measurements of a run, for benchmarks.
#[derive(Debug, Clone, Default)]
pub struct Figures {
    /// From the start of [`crate::local::run_with`] (before the backend is contacted) to the first recorded client op.
    pub first_op_after: Option<Duration>,
    /// How long the producers ran.
    pub workload_time: Duration,
    /// Every send's latency in microseconds ([`RunOptions::keep_latencies`]).
    pub latencies_us: Vec<u32>,
    /// Client completions at the end of the workload phase.
    pub counts: gauntlet_workloads::recorder::Counts,
    /// What the reference said ([`BenchPart::Reference`]).
    pub reference: Option<ReferenceFigure>,
}

/// The reference a benchmark compares Gauntlet's producers with.
#[derive(Debug, Clone, PartialEq)]
pub struct ReferenceFigure {
    /// What ran: the broker's own benchmark tool's command line, or the bare
    /// client loop's description.
    pub what: String,
    /// Acknowledged sends (or the tool's requests) per second.
    pub per_s: f64,
}

/// Which part of the workload a run does (a benchmark's knob; `gauntlet run`
/// does all of it).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum BenchPart {
    /// Producers, consumers, faults, drain and check.
    #[default]
    Workload,
    /// The producers alone, for the scenario's time, with the history written
    /// (no consumer, no drain, no check).
    Producers,
    /// No Gauntlet workload: the broker's own benchmark tool where its image
    /// has one (`redis-benchmark`), else a bare loop of the same client with the
    /// same producers and window and no recording.
    Reference,
}

/// How a run records (the benchmark's knobs; the defaults are what `gauntlet run` does).
#[derive(Debug, Clone, Copy, Default)]
pub struct RunOptions {
    /// Format every event as usual but write it to a sink that drops it: no history,
    /// no check, no reports (the benchmark's recorder-off case).
    pub discard_history: bool,
    /// Keep each send's latency in [`Figures::latencies_us`].
    pub keep_latencies: bool,
    /// Which part of the workload runs.
    pub part: BenchPart,
}

/// What every phase of a run after the deployment is up needs. Nothing in it is
/// Docker's: any backend's [`Deployment`] plugs in here (`run_on`).
pub struct RunContext<'a> {
    /// The scenario being run.
    pub scenario: &'a Scenario,
    /// The deployment, up and ready; the run tears it down at the end.
    pub deployment: &'a dyn Deployment,
    /// The clients' proxy, when a fault needs one (its links already forward to
    /// the deployment's nodes).
    pub proxy: Option<&'a Proxy>,
    /// The run folder (`history.jsonl`, `schedule.toml`, `nodes/`).
    pub dir: &'a Path,
    /// The `gauntlet` binary, for worker processes.
    pub exe: &'a Path,
    /// Where the run's events go.
    pub events: &'a EventSink,
    /// When the run was entered (before any backend was contacted).
    pub entered: Instant,
    /// When the deployment was asked for (the "first op after" line).
    pub started: Instant,
    /// How the run records.
    pub opts: RunOptions,
}

impl RunContext<'_> {
    /// The addresses the clients use: the proxy's links, or the nodes' client ports.
    /// `host:port` of the dedup store (seed D7), when the deployment has one.
    /// Through the client proxy when the run has one.
    pub(super) fn dedup_addr(&self) -> Option<String> {
        let store = self.deployment.dedup_store()?;
        match self.proxy.and_then(|p| p.dedup.as_ref()) {
            Some(link) => Some(link.addr().to_string()),
            None => Some(store.addr()),
        }
    }

    pub(super) fn client_addrs(&self) -> Vec<String> {
        match self.proxy {
            Some(p) => p.addrs(),
            None => self.deployment.addrs(client_port(self.deployment.broker())),
        }
    }
}

/// The recipe's first port, the one the clients use.
pub(super) fn client_port(kind: BrokerKind) -> &'static str {
    kind.recipe()
        .ports()
        .first()
        .map(|p| p.name)
        .unwrap_or("client")
}

/// What a workload phase left besides the history file.
pub(crate) struct Driven {
    pub(crate) sends: u64,
    pub(crate) figures: Figures,
    /// The recorder's first write error: the history is a prefix of the run.
    pub(crate) write_failure: Option<WriteFailure>,
}

impl Driven {
    /// A phase whose only figure is its workload time, from `t0` to now (the
    /// txn and two-hop phases), with the recorder's first write error.
    pub(crate) fn timed(sends: u64, t0: Instant, recorder: &Recorder) -> Driven {
        Driven {
            sends,
            figures: Figures {
                workload_time: t0.elapsed(),
                ..Figures::default()
            },
            write_failure: recorder.write_error(),
        }
    }
}

/// Returns once writing the history has failed.
pub(super) async fn until_failed(recorder: &Recorder) {
    while !recorder.failed() {
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}
