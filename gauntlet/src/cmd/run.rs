//! `gauntlet run [SCENARIO.toml]`: deploy a broker, run a workload, record, drain, check.
use super::{brokers, named};
use anyhow::Context;
use clap::Args;
use gauntlet_checkers::Guarantee;
use gauntlet_harness::broker::BrokerKind;
use gauntlet_harness::run::TICK;
use gauntlet_harness::run::{Scenario, Workload};
use gauntlet_workloads::log::Membership;
use gauntlet_workloads::settings::Mode;
use std::io::{IsTerminal, Write};
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};

#[derive(Debug, Args)]
pub struct RunArgs {
    /// Scenario file (TOML); without one, the default scenario (Redis Streams, at-least-once).
    pub scenario: Option<PathBuf>,
    /// Broker (Gauntlet's local image of it, or --image).
    #[arg(long, value_parser = named::<BrokerKind>(brokers()))]
    pub broker: Option<BrokerKind>,
    /// Workload: queue (every broker), log (Kafka protocol: partitions, offsets,
    /// consumer groups) or txn (Kafka transactions, consume-transform-produce).
    #[arg(long, value_parser = named::<Workload>(Workload::ALL.map(|w| w.name())))]
    pub workload: Option<Workload>,
    /// Log workload: how consumers get partitions, subscribe (group) or assign.
    #[arg(long, value_parser = named::<Membership>(Membership::ALL.map(|m| m.name())))]
    pub membership: Option<Membership>,
    /// How long producers send, e.g. 30s, 2m.
    #[arg(long)]
    pub time: Option<String>,
    /// Sends per second, all producers together.
    #[arg(long)]
    pub rate: Option<f64>,
    /// Seed of the fault schedule and of the producers' keys (the same seed draws
    /// the same schedule).
    #[arg(long)]
    pub seed: Option<u64>,
    /// Nodes of the cluster (the broker's default when absent: 3, or 1 for sqs).
    #[arg(long)]
    pub nodes: Option<usize>,
    /// Image by name instead of Gauntlet's local one (e.g. rabbitmq:4).
    #[arg(long)]
    pub image: Option<String>,
    /// Delivery mode (the preset of the producer's and consumer's settings).
    #[arg(long, value_parser = named::<Mode>(Mode::ALL.map(|m| m.name())))]
    pub mode: Option<Mode>,
    /// Guarantees the run claims, comma-separated (default: at-least-once).
    #[arg(long, value_delimiter = ',', value_parser = named::<Guarantee>(Guarantee::ALL.map(|g| g.name())))]
    pub expect: Vec<Guarantee>,
    /// Where run folders go.
    #[arg(long)]
    pub results: Option<PathBuf>,
    /// Faults, comma-separated: kill-consumer[:before-ack|:after-ack], kill-broker[:ROLE],
    /// restart-broker[:mid-batch|:ROLE], pause[:ROLE], partition[:halves|:ring|:bridge|:ROLE]
    /// (ROLE: leader, group-coordinator, txn-coordinator, storage);
    /// through the client proxy: ack-loss, partition-one-way, client-partition, latency[:MS],
    /// jitter[:MS], loss[:PCT], bandwidth[:KIB], reset, blackhole; netem[:MS] (needs sch_netem).
    /// See docs/nemesis.md. `none` for no fault. Without this flag, the default run
    /// (Redis, queue, at-least-once) kills consumers before their ack and restarts the
    /// primary mid-batch; with another --broker, --workload, --mode or --replay, no fault.
    #[arg(long, value_delimiter = ',')]
    pub nemesis: Vec<String>,
    /// Replay the fault schedule of an earlier run (`<run>/schedule.toml`).
    #[arg(long)]
    pub replay: Option<PathBuf>,
    /// Run against the hosts of this inventory over SSH instead of Docker
    /// containers (docs/backends.md): a broker already installed there.
    #[arg(long)]
    pub hosts: Option<PathBuf>,
    /// With --hosts: print every command the run would run on every host, step
    /// by step, and run none (no connection is opened).
    #[arg(long, requires = "hosts")]
    pub plan: bool,
}

/// The SSH backend of `--hosts`, with its control sockets in a short private folder.
pub fn ssh_backend(
    path: &std::path::Path,
) -> anyhow::Result<(
    gauntlet_harness::backend::ssh::Inventory,
    std::sync::Arc<gauntlet_harness::backend::ssh::OpenSsh>,
)> {
    Ok(gauntlet_harness::backend::ssh::open(path)?)
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
    if let Some(b) = args.broker {
        s.broker = b;
    }
    if let Some(w) = args.workload {
        s.workload = w;
    }
    if let Some(m) = args.membership {
        s.log.membership = m;
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
    if let Some(m) = args.mode {
        s.delivery.mode = m;
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
    if s.nemesis.iter().any(|n| n == "none") {
        // `--nemesis none`: no fault at all.
        s.nemesis.clear();
    }
    if let Some(r) = &args.replay {
        s.replay = Some(r.clone());
    }
    if args.scenario.is_none() && args.nemesis.is_empty() {
        // The default faults were chosen for the default broker, workload and mode
        // (Redis Streams at-least-once survives them); a run that changes one of
        // those, or replays a schedule, has no faults unless --nemesis names some.
        let d = Scenario::default_scenario();
        if s.broker != d.broker
            || s.workload != d.workload
            || s.delivery.mode != d.delivery.mode
            || s.replay.is_some()
        {
            s.nemesis.clear();
        }
    }
    if args.scenario.is_none() {
        // A scenario made of flags is named after what it runs.
        let mode = s.delivery.mode.name();
        let faults = if s.nemesis.is_empty() {
            String::new()
        } else {
            format!("-{}", s.nemesis.join("+").replace(':', "_"))
        };
        let workload = if s.workload == Workload::Queue {
            String::new()
        } else {
            format!("{}-", s.workload)
        };
        s.name = format!("{}-{workload}{mode}{faults}", s.broker);
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
    let progress = progress_printer(std::io::stderr().is_terminal());
    let faults = if scenario.replay.is_some() {
        ", faults replayed".to_string()
    } else if scenario.nemesis.is_empty() {
        ", no faults".to_string()
    } else {
        format!(
            ", faults {} (seed {})",
            scenario.nemesis.join(", "),
            scenario.seed
        )
    };
    eprintln!(
        "gauntlet run: scenario `{}` on {}{faults}",
        scenario.name, scenario.broker
    );
    let outcome = match &args.hosts {
        None => rt.block_on(gauntlet_harness::run::run(&scenario, &exe, progress))?,
        Some(path) if args.plan => {
            let inventory = gauntlet_harness::backend::ssh::Inventory::read(path)?;
            let control = std::env::temp_dir().join("gauntlet-ssh-PID");
            let text = rt.block_on(plan_on_hosts(
                &inventory,
                &scenario,
                &control.display().to_string(),
            ))?;
            println!(
                "# gauntlet run --plan: scenario `{}` on the {} host(s) of {}; nothing was run",
                scenario.name,
                inventory.hosts.len(),
                path.display()
            );
            print!("{text}");
            return Ok(0);
        }
        Some(path) => {
            let (inventory, remote) = ssh_backend(path)?;
            eprintln!(
                "gauntlet run: on the {} host(s) of {} over SSH",
                inventory.hosts.len(),
                path.display()
            );
            let backend = std::sync::Arc::new(gauntlet_harness::backend::ssh::SshBackend::new(
                inventory, remote,
            ));
            rt.block_on(gauntlet_harness::run::run_with_backend(
                backend,
                std::time::Instant::now(),
                &scenario,
                &exe,
                progress,
                gauntlet_harness::run::RunOptions::default(),
            ))?
        }
    };
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

/// Progress on stderr. On a terminal the periodic count lines redraw one line in
/// place as a bar; elsewhere (CI, tests, a pipe) every line is printed as it comes.
pub fn progress_printer(tty: bool) -> gauntlet_harness::run::Progress {
    let drawn = AtomicBool::new(false);
    Box::new(move |line: &str| {
        let mut err = std::io::stderr().lock();
        match line.strip_prefix(TICK) {
            Some(tick) if tty => {
                let _ = write!(err, "\r\x1b[K{}", bar_line(tick));
                let _ = err.flush();
                drawn.store(true, Ordering::Relaxed);
            }
            Some(tick) => {
                let _ = writeln!(err, "gauntlet run: {tick}");
            }
            None => {
                if drawn.swap(false, Ordering::Relaxed) {
                    let _ = write!(err, "\r\x1b[K");
                }
                let _ = writeln!(err, "gauntlet run: {line}");
            }
        }
    })
}

/// "12.5/20.0s  ops ..." -> "[#########.........]  12.5/20.0s  ops ...".
pub fn bar_line(tick: &str) -> String {
    const WIDTH: usize = 24;
    let fraction = tick
        .split_whitespace()
        .next()
        .and_then(|t| t.strip_suffix('s'))
        .and_then(|t| t.split_once('/'))
        .and_then(|(a, b)| Some((a.parse::<f64>().ok()?, b.parse::<f64>().ok()?)))
        .map(|(a, b)| {
            if b > 0.0 {
                (a / b).clamp(0.0, 1.0)
            } else {
                1.0
            }
        })
        .unwrap_or(0.0);
    let full = (fraction * WIDTH as f64).round() as usize;
    format!(
        "[{}{}] {:>3.0}%  {tick}",
        "#".repeat(full),
        ".".repeat(WIDTH - full),
        fraction * 100.0
    )
}

/// Every command a run of `scenario` would run on the hosts of `inventory`, step
/// by step, as `ssh` command lines (control sockets under `control_dir`): the
/// SSH backend records its launch and heal, the pipeline plays the faults
/// against the recording deployment. Runs none of them, opens no connection.
async fn plan_on_hosts(
    inventory: &gauntlet_harness::backend::ssh::Inventory,
    scenario: &gauntlet_harness::run::Scenario,
    control_dir: &str,
) -> Result<String, gauntlet_harness::HarnessError> {
    let plan = gauntlet_harness::backend::ssh::plan::HostPlan::launch(inventory).await?;
    gauntlet_harness::run::plan_faults(scenario, plan.deployment(), &|t| plan.title(t)).await?;
    plan.finish(control_dir).await
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::Parser;

    #[derive(Parser)]
    struct Cli {
        #[command(flatten)]
        run: RunArgs,
    }

    fn scenario_of(args: &[&str]) -> Scenario {
        let cli = Cli::try_parse_from(std::iter::once("run").chain(args.iter().copied()))
            .expect("arguments parse");
        scenario(&cli.run).expect("a scenario")
    }

    #[test]
    fn the_default_run_has_the_default_faults_and_other_subjects_have_none() {
        let faults: Vec<String> = gauntlet_harness::run::DEFAULT_FAULTS
            .iter()
            .map(|f| f.to_string())
            .collect();
        assert_eq!(scenario_of(&[]).nemesis, faults);
        assert_eq!(scenario_of(&["--time", "14s"]).nemesis, faults);
        assert_eq!(scenario_of(&["--broker", "redis"]).nemesis, faults);
        assert!(scenario_of(&["--nemesis", "none"]).nemesis.is_empty());
        assert!(scenario_of(&["--broker", "kafka"]).nemesis.is_empty());
        assert!(scenario_of(&["--workload", "log", "--broker", "kafka"])
            .nemesis
            .is_empty());
        assert!(scenario_of(&["--mode", "at-most-once"]).nemesis.is_empty());
        assert!(scenario_of(&["--replay", "x.toml"]).nemesis.is_empty());
        assert_eq!(
            scenario_of(&["--broker", "nats", "--nemesis", "pause"]).nemesis,
            vec!["pause".to_string()]
        );
    }

    #[test]
    fn the_bar_follows_the_elapsed_fraction() {
        let b = bar_line("5.0/20.0s  ops 10  ok 4  fail 0  info 1");
        assert!(
            b.starts_with("[######..................]  25%  5.0/20.0s"),
            "{b}"
        );
        assert!(b.ends_with("info 1"));
        assert!(bar_line("20.0/20.0s  ops 1").starts_with(&format!("[{}] 100%", "#".repeat(24))));
        assert!(bar_line("garbage").starts_with(&format!("[{}]   0%", ".".repeat(24))));
    }

    #[tokio::test]
    async fn a_plan_lists_every_command_per_step_and_runs_none() {
        let mut s = Scenario::default_scenario();
        s.broker = BrokerKind::Redis;
        s.nodes = Some(2);
        s.nemesis = vec!["partition".into(), "pause".into(), "kill-consumer".into()];
        s.nemesis_interval = "5s".into();
        s.time = "30s".into();
        let inventory = gauntlet_harness::backend::ssh::Inventory::parse(
            "[[host]]\naddress = \"10.0.0.11\"\n[[host]]\naddress = \"10.0.0.12\"\nsudo = true\ninterface = \"ens4\"\n\
             [broker]\nkind = \"redis\"\nmode = \"installed\"\npid = \"pgrep -x redis-server\"\n\
             start = \"redis-server /etc/redis.conf\"\nlog = \"/var/log/redis.log\"\nports = { client = 6379 }\n",
        )
        .expect("inventory");
        let text = plan_on_hosts(&inventory, &s, "/tmp/g").await.expect("plan");
        eprintln!("{text}");
        assert!(text.contains("\n# launch: "), "{text}");
        assert!(text.contains("# n1: ssh -o BatchMode=yes"), "{text}");
        assert!(
            text.contains("n1 (10.0.0.11): pgrep -x redis-server >/dev/null"),
            "{text}"
        );
        assert!(text.contains("iptables -A GAUNTLET -s 10.0.0.1"), "{text}");
        assert!(text.contains("kill -STOP"), "{text}");
        assert!(
            text.contains("kills a consumer process on this machine"),
            "{text}"
        );
        assert!(text.contains("# at the end"), "{text}");
        // n2 says sudo: its scripts go through `sudo -n`.
        assert!(text.contains("n2 (10.0.0.12): sudo -n sh -c"), "{text}");
    }
}
