//! `gauntlet bench run`: each broker's workload throughput and send latency with the
//! recorder writing the history and with a recorder that discards it, and the time
//! from the start of a run to its first op.
//!
//! For each broker: two runs of the default queue workload (2 producers, 2
//! consumer workers) at `--rate` (`max`: producers send back to back), one with
//! the history written to the run folder (`history.jsonl`, flushed event by
//! event, as `gauntlet run` does), one with [`Recorder::discarding`]: the same
//! events formatted and written into `io::sink()`. Everything else (deploy,
//! workers, final heal, drain, teardown) runs the same; only the check is
//! skipped for the discarding run. Printed per run: sends/s over the workload
//! phase, p50/p99 send latency, time from the start of the run (before Docker
//! is contacted, images cached) to the first recorded op, and the CPU time of
//! this process and its worker children (not the broker containers').
//!
//! [`Recorder::discarding`]: gauntlet_workloads::Recorder::discarding
use anyhow::{bail, Context, Result};
use clap::Args;
use gauntlet_harness::broker::{BrokerExt, BrokerKind, Flavour};
use gauntlet_harness::local::run_with;
use gauntlet_harness::run::{RunOptions, Scenario};
use std::path::PathBuf;
use std::time::Duration;

/// Target of issue 4: the recorder costs at most this fraction of throughput.
const TARGET_RECORDER_COST: f64 = 0.05;
/// Target of issue 4: from `gauntlet run` to the first op, images cached, 3 nodes.
const TARGET_FIRST_OP: Duration = Duration::from_secs(30);

#[derive(Debug, Args)]
pub struct BenchRunArgs {
    /// Brokers, comma-separated.
    #[arg(
        long,
        value_delimiter = ',',
        default_value = "redis,rabbitmq,nats,kafka,sqs",
        value_parser = super::named::<BrokerKind>(super::brokers())
    )]
    pub broker: Vec<BrokerKind>,
    /// How long producers send in each run.
    #[arg(long, default_value = "10s")]
    pub time: String,
    /// Sends per second, all producers together, or `max` (back to back).
    #[arg(long, default_value = "max")]
    pub rate: String,
    /// Nodes per broker; default: 3 where the broker's local image supports 3, else its maximum.
    #[arg(long)]
    pub nodes: Option<usize>,
    /// Runs of each kind per broker, interleaved (off, on, off, on...).
    #[arg(long, default_value_t = 1)]
    pub repeat: usize,
    /// Where the run folders go.
    #[arg(long, default_value = "results/bench-run")]
    pub results: PathBuf,
}

/// CPU seconds (user + system) of this process and of its children that were waited for.
fn cpu_seconds() -> Option<f64> {
    let stat = std::fs::read_to_string("/proc/self/stat").ok()?;
    // Fields after the command name (which may contain spaces) start at field 3.
    let rest = stat.rsplit_once(") ")?.1;
    let f: Vec<&str> = rest.split_whitespace().collect();
    let ticks: f64 = f
        .get(11..15)?
        .iter()
        .map(|x| x.parse::<f64>().unwrap_or(0.0))
        .sum();
    // USER_HZ is 100 on Linux.
    Some(ticks / 100.0)
}

fn percentile(sorted: &[u32], p: f64) -> Option<f64> {
    if sorted.is_empty() {
        return None;
    }
    let i = ((sorted.len() as f64 - 1.0) * p).round() as usize;
    Some(f64::from(sorted[i.min(sorted.len() - 1)]) / 1000.0)
}

/// Microseconds per recorded event (a send's invoke or ok, as the producers write
/// them) through a recorder writing `path`, and through a discarding one.
fn recorder_cost_per_event(path: &std::path::Path) -> Result<(f64, f64)> {
    use gauntlet_history::{Actor, Event, OpType};
    use gauntlet_workloads::Recorder;
    const N: u64 = 200_000;
    let time = |r: &Recorder| -> Result<f64> {
        let t = std::time::Instant::now();
        for i in 0..N {
            let (kind, v) = if i % 2 == 0 {
                (OpType::Invoke, serde_json::json!({"key": "k3", "value": i}))
            } else {
                (
                    OpType::Ok,
                    serde_json::json!({"key": "k3", "value": i, "partition": 1, "offset": i}),
                )
            };
            r.record(&Event::new(Actor::Client(i % 4), kind, "send").value(v))?;
        }
        Ok(t.elapsed().as_secs_f64() * 1e6 / N as f64)
    };
    let file = time(&Recorder::create(path)?)?;
    let sink = time(&Recorder::discarding())?;
    let _ = std::fs::remove_file(path);
    Ok((file, sink))
}

struct Row {
    sends_per_s: f64,
    p50_ms: Option<f64>,
    p99_ms: Option<f64>,
    first_op_s: Option<f64>,
    cpu_s: Option<f64>,
}

pub fn run(args: BenchRunArgs) -> Result<i32> {
    let rate = if args.rate == "max" {
        1_000_000.0
    } else {
        args.rate
            .parse::<f64>()
            .with_context(|| format!("--rate {}: a number or `max`", args.rate))?
    };
    let exe = std::env::current_exe().context("locating the gauntlet binary")?;
    let rt = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()?;
    println!(
        "gauntlet bench run: {} per run, rate {}, {} run(s) of each kind per broker",
        args.time, args.rate, args.repeat
    );
    println!(
        "{:<9} {:>5} {:<9} {:>9} {:>9} {:>9} {:>10} {:>8} {:>11} {:>10}",
        "broker",
        "nodes",
        "recorder",
        "sends/s",
        "p50 ms",
        "p99 ms",
        "first op s",
        "cpu s",
        "cpu us/send",
        "events/send"
    );
    std::fs::create_dir_all(&args.results)
        .with_context(|| format!("creating {}", args.results.display()))?;
    let (file_us, sink_us) = recorder_cost_per_event(&args.results.join("recorder-cost.jsonl"))?;
    println!(
        "recorder alone: {file_us:.2} us/event writing a history file, {sink_us:.2} us/event discarding \
         (200k send events, one thread)"
    );
    let mut worst_cost: f64 = 0.0;
    let mut slow_start = false;
    for &kind in &args.broker {
        let b = kind.name();
        let max = kind
            .recipe()
            .capabilities(Flavour::Gauntlet)
            .max_nodes
            .max(1);
        let nodes = args.nodes.unwrap_or(3).min(max);
        let mut on = Vec::new();
        let mut off = Vec::new();
        for i in 0..args.repeat.max(1) {
            for discard in [true, false] {
                let mut s = Scenario::default_scenario();
                s.name = format!("bench-{b}-{}", if discard { "off" } else { "on" });
                gauntlet_harness::run::Overrides {
                    broker: Some(kind),
                    nodes: Some(nodes),
                    time: Some(args.time.clone()),
                    rate: Some(rate),
                    seed: Some(i as u64),
                    results: Some(args.results.clone()),
                    ..Default::default()
                }
                .apply(&mut s)?;
                // A benchmark measures the workload, not the default run's faults.
                s.nemesis.clear();
                let cpu0 = cpu_seconds();
                let outcome = rt
                    .block_on(run_with(
                        &s,
                        &exe,
                        gauntlet_harness::run::EventSink::discard(),
                        RunOptions {
                            discard_history: discard,
                            keep_latencies: true,
                        },
                    ))
                    .with_context(|| format!("bench run on {b}"))?;
                if outcome.interrupted {
                    return Ok(super::run::EXIT_INTERRUPTED);
                }
                let cpu = match (cpu0, cpu_seconds()) {
                    (Some(a), Some(z)) => Some(z - a),
                    _ => None,
                };
                let f = &outcome.figures;
                let mut lat = f.latencies_us.clone();
                lat.sort_unstable();
                let row = Row {
                    sends_per_s: outcome.sends as f64 / f.workload_time.as_secs_f64().max(1e-9),
                    p50_ms: percentile(&lat, 0.50),
                    p99_ms: percentile(&lat, 0.99),
                    first_op_s: f.first_op_after.map(|d| d.as_secs_f64()),
                    cpu_s: cpu,
                };
                let ms = |x: Option<f64>| x.map_or("-".to_string(), |v| format!("{v:.2}"));
                let sends = outcome.sends.max(1) as f64;
                println!(
                    "{:<9} {:>5} {:<9} {:>9.1} {:>9} {:>9} {:>10} {:>8} {:>11} {:>10.1}",
                    b,
                    nodes,
                    if discard { "discard" } else { "history" },
                    row.sends_per_s,
                    ms(row.p50_ms),
                    ms(row.p99_ms),
                    row.first_op_s.map_or("-".into(), |v| format!("{v:.1}")),
                    ms(row.cpu_s),
                    row.cpu_s
                        .map_or("-".into(), |c| format!("{:.0}", c * 1e6 / sends)),
                    f.counts.ops as f64 / sends,
                );
                if nodes >= 3
                    && row
                        .first_op_s
                        .is_some_and(|t| t > TARGET_FIRST_OP.as_secs_f64())
                {
                    slow_start = true;
                }
                if discard {
                    off.push(row);
                } else {
                    on.push(row);
                }
            }
        }
        let mean = |v: &[Row]| v.iter().map(|r| r.sends_per_s).sum::<f64>() / v.len() as f64;
        let (a, z) = (mean(&off), mean(&on));
        if a > 0.0 {
            let cost = (a - z) / a;
            worst_cost = worst_cost.max(cost);
            println!(
                "{b}: recorder cost {:+.1}% of throughput (history {z:.1} vs discard {a:.1} sends/s)",
                cost * 100.0
            );
        }
    }
    println!(
        "targets: recorder cost <= {:.0}% (worst {:+.1}%), first op <= {}s for 3 nodes ({})",
        TARGET_RECORDER_COST * 100.0,
        worst_cost * 100.0,
        TARGET_FIRST_OP.as_secs(),
        if slow_start { "missed" } else { "met" }
    );
    println!(
        "note: wall-clock figures on a shared machine; cpu s is this process and its \
         worker children, not the broker containers"
    );
    if args.broker.is_empty() {
        bail!("no broker given");
    }
    Ok(0)
}
