//! `gauntlet run [SCENARIO.toml]`: deploy a broker, run a workload, record, drain, check.
use anyhow::Context;
use clap::Args;
use gauntlet_harness::run::Scenario;
use std::io::Write;
use std::path::PathBuf;

#[derive(Debug, Args)]
pub struct RunArgs {
    /// Scenario file (TOML); without one, the default scenario (Redis Streams, at-least-once).
    pub scenario: Option<PathBuf>,
    /// Broker: rabbitmq, redis (more to come).
    #[arg(long)]
    pub broker: Option<String>,
    #[arg(long)]
    pub workload: Option<String>,
    /// How long producers send, e.g. 30s, 2m.
    #[arg(long)]
    pub time: Option<String>,
    /// Sends per second, all producers together.
    #[arg(long)]
    pub rate: Option<f64>,
    #[arg(long)]
    pub seed: Option<u64>,
    #[arg(long)]
    pub nodes: Option<usize>,
    /// Image by name instead of Gauntlet's local one (e.g. rabbitmq:4).
    #[arg(long)]
    pub image: Option<String>,
    /// Delivery mode: at-most-once, at-least-once, idempotent, exactly-once.
    #[arg(long)]
    pub mode: Option<String>,
    /// Guarantees the run claims, comma-separated.
    #[arg(long, value_delimiter = ',')]
    pub expect: Vec<String>,
    /// Where run folders go.
    #[arg(long)]
    pub results: Option<PathBuf>,
    /// Faults, comma-separated: kill-consumer[:before-ack|:after-ack], kill-broker[:leader],
    /// restart-broker[:mid-batch|:leader], pause[:leader], partition[:halves|:ring|:bridge|:leader];
    /// through the client proxy: ack-loss, partition-one-way, client-partition, latency[:MS],
    /// jitter[:MS], loss[:PCT], bandwidth[:KIB], reset, blackhole; netem[:MS] (needs sch_netem).
    /// See docs/nemesis.md.
    #[arg(long, value_delimiter = ',')]
    pub nemesis: Vec<String>,
    /// Replay the fault schedule of an earlier run (`<run>/schedule.toml`).
    #[arg(long)]
    pub replay: Option<PathBuf>,
}

fn scenario(args: &RunArgs) -> anyhow::Result<Scenario> {
    let mut s = match &args.scenario {
        Some(p) => {
            let text =
                std::fs::read_to_string(p).with_context(|| format!("reading {}", p.display()))?;
            Scenario::from_toml(&text).with_context(|| format!("in {}", p.display()))?
        }
        None => Scenario::default_scenario(),
    };
    if let Some(b) = &args.broker {
        s.broker = b.clone();
    }
    if let Some(w) = &args.workload {
        s.workload = w.clone();
    }
    if let Some(t) = &args.time {
        s.time = t.clone();
    }
    if let Some(r) = args.rate {
        s.rate = r;
    }
    if let Some(seed) = args.seed {
        s.seed = seed;
    }
    if let Some(n) = args.nodes {
        s.nodes = Some(n);
    }
    if let Some(i) = &args.image {
        s.image = Some(i.clone());
    }
    if let Some(m) = &args.mode {
        s.delivery.mode =
            serde_json::from_value(serde_json::Value::String(m.clone())).map_err(|_| {
                anyhow::anyhow!(
                    "--mode {m}: expected at-most-once, at-least-once, idempotent or exactly-once"
                )
            })?;
    }
    if !args.expect.is_empty() {
        s.expect = args.expect.clone();
    }
    if let Some(r) = &args.results {
        s.results = r.clone();
    }
    if !args.nemesis.is_empty() {
        s.nemesis = args.nemesis.clone();
    }
    if let Some(r) = &args.replay {
        s.replay = Some(r.clone());
    }
    if args.scenario.is_none() {
        // A scenario made of flags is named after what it runs.
        let mode = serde_json::to_value(s.delivery.mode)
            .ok()
            .and_then(|v| v.as_str().map(str::to_string))
            .unwrap_or_default();
        let faults = if s.nemesis.is_empty() {
            String::new()
        } else {
            format!("-{}", s.nemesis.join("+").replace(':', "_"))
        };
        s.name = format!("{}-{mode}{faults}", s.broker);
    }
    s.guarantees()?;
    s.duration()?;
    Ok(s)
}

pub fn run(args: RunArgs) -> anyhow::Result<i32> {
    let scenario = scenario(&args)?;
    let exe = std::env::current_exe().context("locating the gauntlet binary")?;
    let rt = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()?;
    let progress: gauntlet_harness::run::Progress = Box::new(|line: &str| {
        let mut err = std::io::stderr().lock();
        let _ = writeln!(err, "gauntlet run: {line}");
    });
    eprintln!(
        "gauntlet run: scenario `{}` on {}",
        scenario.name, scenario.broker
    );
    let outcome = rt.block_on(gauntlet_harness::run::run(&scenario, &exe, progress))?;
    print!(
        "{}",
        gauntlet_report::terminal::summary(
            &outcome.verdict,
            &outcome.dir.join("history.jsonl").display().to_string()
        )
    );
    println!("run folder: {}", outcome.dir.display());
    Ok(outcome.verdict.valid.exit_code())
}
