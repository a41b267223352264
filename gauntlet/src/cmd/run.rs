//! `gauntlet run [SCENARIO.toml]`: deploy a broker, run a workload, record, drain, check.
use super::{brokers, named};
use anyhow::Context;
use clap::Args;
use gauntlet_checkers::Guarantee;
use gauntlet_harness::broker::BrokerKind;
use gauntlet_harness::error::HarnessError;
use gauntlet_harness::run::{EventSink, Overrides, RunEvent, RunOutcome, Scenario, Workload};
use gauntlet_nemesis::FaultKind;
use gauntlet_workloads::log::Membership;
use gauntlet_workloads::settings::Mode;
use std::io::{IsTerminal, Write};
use std::path::PathBuf;
use std::str::FromStr;
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
    /// Sends per second, all producers together, or `max` (each producer sends as
    /// soon as a send of its window is free).
    #[arg(long, value_parser = gauntlet_harness::run::parse_rate)]
    pub rate: Option<f64>,
    /// Sends each producer keeps in flight on its client (`[queue] in-flight`).
    #[arg(long)]
    pub in_flight: Option<usize>,
    /// Which keys the sends go to (`[queue] key-distribution`): uniform, zipf:S
    /// (Zipf's law, exponent S > 0) or hot:SHARE (k0 takes SHARE of the sends).
    #[arg(long)]
    pub key_distribution: Option<gauntlet_workloads::keys::KeyDistribution>,
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
    #[arg(long, value_delimiter = ',', value_parser = named::<Guarantee>(Guarantee::ALL.into_iter().chain(Guarantee::PROCESSING).map(|g| g.name())))]
    pub expect: Vec<Guarantee>,
    /// Where run folders go.
    #[arg(long)]
    pub results: Option<PathBuf>,
    /// Faults, comma-separated, from the nemesis's table (the help lists their
    /// syntax from it; docs/nemesis.md). `none` for no fault.
    #[arg(long_help = nemesis_help())]
    #[arg(long, value_delimiter = ',', value_parser = nemesis_arg)]
    pub nemesis: Vec<NemesisArg>,
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

/// One name of `--nemesis`: a fault (parsed here, once), or `none`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum NemesisArg {
    /// `none`: no fault at all.
    None,
    /// A fault of the nemesis's table.
    Fault(FaultKind),
}

/// `--nemesis`'s help, from the nemesis's table of faults.
fn nemesis_help() -> String {
    format!(
        "Faults, comma-separated: {} (ROLE: {}; COUNT: {}, nodes drawn by the schedule; \
         CRASH: {}). Through the client proxy: {}; \
         netem needs sch_netem; crash-producer only with --workload txn; \
         add-partitions[:N] only on the Kafka protocol (not tansu's memory build). \
         See docs/nemesis.md. `none` for no fault. Without this flag, the default run \
         (Redis, queue, at-least-once) kills consumers before their ack and restarts the \
         primary mid-batch; with another --broker, --workload, --mode or --replay, no fault.",
        gauntlet_nemesis::faults::syntax().join(", "),
        gauntlet_nemesis::Role::ALL.map(|r| r.name()).join(", "),
        gauntlet_nemesis::Spread::ALL.map(|c| c.name()).join(", "),
        gauntlet_nemesis::faults::crashes().join(", "),
        gauntlet_nemesis::faults::FAULTS
            .iter()
            .filter(|f| f.acts == gauntlet_nemesis::Acts::ClientProxy)
            .map(|f| f.name)
            .collect::<Vec<_>>()
            .join(", ")
    )
}

fn nemesis_arg(s: &str) -> Result<NemesisArg, String> {
    if s.trim() == "none" {
        return Ok(NemesisArg::None);
    }
    FaultKind::from_str(s)
        .map(NemesisArg::Fault)
        .map_err(|e| e.to_string())
}

/// Faults as one line, joined by `sep`.
fn fault_line(faults: &[FaultKind], sep: &str) -> String {
    faults
        .iter()
        .map(ToString::to_string)
        .collect::<Vec<_>>()
        .join(sep)
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
    args.overrides().apply(&mut s)?;
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
            format!("-{}", fault_line(&s.nemesis, "+").replace(':', "_"))
        };
        let workload = if s.workload == Workload::Queue {
            String::new()
        } else {
            format!("{}-", s.workload)
        };
        s.name = format!("{}-{workload}{mode}{faults}", s.broker);
    }
    Ok(s)
}

impl RunArgs {
    /// What the flags change in the scenario (`--nemesis none`: no fault at
    /// all); the default faults of a flag-made run are [`scenario`]'s.
    pub fn overrides(&self) -> Overrides {
        Overrides {
            broker: self.broker,
            workload: self.workload,
            membership: self.membership,
            time: self.time.clone(),
            rate: self.rate,
            in_flight: self.in_flight,
            key_distribution: self.key_distribution,
            seed: self.seed,
            nodes: self.nodes,
            image: self.image.clone(),
            mode: self.mode,
            expect: self.expect.clone(),
            results: self.results.clone(),
            replay: self.replay.clone(),
            nemesis: (!self.nemesis.is_empty()).then(|| {
                if self.nemesis.contains(&NemesisArg::None) {
                    Vec::new()
                } else {
                    self.nemesis
                        .iter()
                        .filter_map(|n| match n {
                            NemesisArg::Fault(f) => Some(*f),
                            NemesisArg::None => None,
                        })
                        .collect()
                }
            }),
            ..Overrides::default()
        }
    }
}

pub fn run(args: RunArgs) -> anyhow::Result<i32> {
    let scenario = scenario(&args)?;
    let exe = std::env::current_exe().context("locating the gauntlet binary")?;
    let rt = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()?;
    let events = progress_printer(std::io::stderr().is_terminal());
    let faults = if scenario.replay.is_some() {
        ", faults replayed".to_string()
    } else if scenario.nemesis.is_empty() {
        ", no faults".to_string()
    } else {
        format!(
            ", faults {} (seed {})",
            fault_line(&scenario.nemesis, ", "),
            scenario.seed
        )
    };
    eprintln!(
        "gauntlet run: scenario `{}` on {}{faults}",
        scenario.name, scenario.broker
    );
    let outcome = match &args.hosts {
        None => rt.block_on(gauntlet_harness::local::run(&scenario, &exe, events)),
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
                events,
                gauntlet_harness::run::RunOptions::default(),
            ))
        }
    };
    finish(outcome)
}

/// Exit status of a run stopped by Ctrl-C (128 + SIGINT).
pub const EXIT_INTERRUPTED: i32 = 130;

/// The verdict's summary on stdout and the exit status: the verdict's, or 130
/// after Ctrl-C (with the verdict of what was recorded when there is one).
fn finish(outcome: Result<RunOutcome, HarnessError>) -> anyhow::Result<i32> {
    let outcome = match outcome {
        Ok(o) => o,
        // The run's events told what was removed and why there is no verdict.
        Err(HarnessError::Interrupted { .. }) => return Ok(EXIT_INTERRUPTED),
        Err(e) => return Err(e.into()),
    };
    print!(
        "{}",
        gauntlet_report::terminal::summary(
            &outcome.verdict,
            &outcome
                .dir
                .join(gauntlet_report::folder::HISTORY)
                .display()
                .to_string()
        )
    );
    println!("run folder: {}", outcome.dir.display());
    Ok(if outcome.interrupted {
        EXIT_INTERRUPTED
    } else {
        outcome.verdict.valid.exit_code()
    })
}

/// A run event as the terminal shows it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Line {
    /// The periodic counts, "elapsed/total s  ops N  ok N  fail N  info N".
    Tick(String),
    /// A line of the run ("gauntlet run: ..." alone, indented under the matrix).
    Run(String),
    /// A line of the process ("gauntlet: ..."): Ctrl-C and its cleanup.
    Process(String),
    /// A line shown as it is.
    Bare(String),
}

/// The text of a run event on the terminal; `None` for events it does not show.
pub fn event_line(e: &RunEvent) -> Option<Line> {
    Some(match e {
        RunEvent::Deploying {
            broker,
            nodes,
            settings,
        } => Line::Run(if settings.is_empty() {
            format!("deploying {broker} ({nodes} node(s))...")
        } else {
            format!(
                "deploying {broker} ({nodes} node(s); {})...",
                settings.join(", ")
            )
        }),
        RunEvent::ImageBuild { line } => Line::Bare(format!("[images] {line}")),
        RunEvent::BuildingDiskfs { command } => Line::Bare(format!(
            "building Gauntlet's filesystem for the disk faults (once): {command}"
        )),
        RunEvent::DeploymentReady { broker, after } => {
            Line::Run(format!("{broker} ready after {:.1}s", after.as_secs_f64()))
        }
        RunEvent::Proxy { addrs } => Line::Run(format!(
            "clients go through the harness's proxy: {}",
            addrs.join(",")
        )),
        RunEvent::WorkloadStarted {
            first_op_after,
            workload,
            time,
            rate,
        } => Line::Run(format!(
            "first op after {:.1}s; running the {workload} workload for {time:?} at {} sends/s",
            first_op_after.as_secs_f64(),
            gauntlet_harness::run::rate_text(*rate),
        )),
        RunEvent::TxnStarted {
            first_op_after,
            time,
            transformers,
            rate,
        } => Line::Run(format!(
            "first op after {:.1}s; running the txn workload for {time:?}: {transformers} transformer(s), {rate} inputs/s",
            first_op_after.as_secs_f64(),
        )),
        RunEvent::Tick {
            elapsed,
            total,
            counts: c,
            ok_per_s,
            in_flight,
        } => Line::Tick(format!(
            "{:.1}/{:.1}s  ops {}  ok {}  fail {}  info {}  {:.0} sends ok/s  in flight {}",
            elapsed.as_secs_f64(),
            total.as_secs_f64(),
            c.ops,
            c.ok,
            c.fail,
            c.info,
            ok_per_s,
            in_flight
        )),
        RunEvent::WorkerUnreadable {
            process,
            error,
            line,
        } => Line::Bare(format!("worker {process}: unreadable line ({error}): {line}")),
        RunEvent::FaultStarted { fault, detail } => {
            Line::Run(format!("nemesis: {fault} {detail}"))
        }
        RunEvent::FaultFailed { fault, error } => {
            Line::Run(format!("nemesis: {fault} failed: {error}"))
        }
        RunEvent::HealProblems { problems } => {
            Line::Run(format!("final heal: {}", problems.join("; ")))
        }
        RunEvent::TxnFinished {
            sends,
            committed,
            aborted,
            unknown,
            drained,
        } => Line::Run(format!(
            "txn workload: {sends} inputs sent, {committed} transactions committed, {aborted} aborted, {unknown} unknown; {drained} outputs drained"
        )),
        RunEvent::TwoHopFinished {
            inputs,
            outputs,
            delivered,
            crashes,
        } => Line::Run(format!(
            "two-hop workload: {inputs} inputs sent, {outputs} outputs sent, {delivered} outputs delivered; {crashes} transformer crash(es)"
        )),
        RunEvent::HistoryWriteFailed { failure } => {
            Line::Run(format!("{failure}; the workload stopped, no drain"))
        }
        RunEvent::Draining => Line::Run("draining with fresh consumers...".into()),
        RunEvent::DrainUnfinished => Line::Run(
            "drain did not finish: no `drained` marker (unacknowledged losses will be `unseen`)"
                .into(),
        ),
        RunEvent::SourceMissing { group, what, answer } => Line::Run(format!(
            "drain of {group}: the broker says {what} does not exist ({answer}), and still did {}s later: what it acknowledged there and nobody read is lost",
            gauntlet_workloads::queue::MISSING_CONFIRM.as_secs()
        )),
        RunEvent::TearingDown => Line::Run("tearing down...".into()),
        RunEvent::Warning(w) => Line::Run(w.clone()),
        RunEvent::VerdictUnknown { failure } => {
            Line::Run(format!("{failure}: the verdict is unknown"))
        }
        RunEvent::Interrupted { run, backend } => Line::Process(format!(
            "interrupted; removing what run {run} created ({backend})"
        )),
        RunEvent::CleanupFailed { error } => Line::Process(format!(
            "cleanup failed: {error} (run `gauntlet clean`)"
        )),
        RunEvent::NothingRecorded => {
            Line::Process("nothing was recorded yet; no verdict".into())
        }
        RunEvent::NoVerdict { error } => {
            Line::Process(format!("no verdict of the interrupted run: {error}"))
        }
        _ => return None,
    })
}

/// The run's events on stderr. On a terminal the periodic counts redraw one
/// line in place as a bar; elsewhere (CI, tests, a pipe) every line is printed
/// as it comes.
pub fn progress_printer(tty: bool) -> EventSink {
    let drawn = AtomicBool::new(false);
    EventSink::new(move |e| {
        let Some(line) = event_line(&e) else { return };
        let mut err = std::io::stderr().lock();
        if let Line::Tick(tick) = &line {
            if tty {
                let _ = write!(err, "\r\x1b[K{}", bar_line(tick));
                let _ = err.flush();
                drawn.store(true, Ordering::Relaxed);
                return;
            }
        }
        if drawn.swap(false, Ordering::Relaxed) {
            let _ = write!(err, "\r\x1b[K");
        }
        let _ = match line {
            Line::Tick(t) | Line::Run(t) => writeln!(err, "gauntlet run: {t}"),
            Line::Process(t) => writeln!(err, "gauntlet: {t}"),
            Line::Bare(t) => writeln!(err, "{t}"),
        };
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
        let faults: Vec<FaultKind> = gauntlet_harness::run::DEFAULT_FAULTS
            .iter()
            .map(|f| FaultKind::from_str(f).expect("a fault"))
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
            vec![FaultKind::Pause]
        );
        // An unknown name is refused by the argument parser, naming what exists.
        let e = Cli::try_parse_from(["run", "--nemesis", "pause,meteor"])
            .err()
            .map(|e| e.to_string())
            .unwrap_or_default();
        assert!(e.contains("unknown fault `meteor`"), "{e}");
        // crash-producer is a fault of the table (the txn workload takes it).
        assert_eq!(
            scenario_of(&[
                "--workload",
                "txn",
                "--broker",
                "kafka",
                "--nemesis",
                "crash-producer"
            ])
            .nemesis,
            vec![FaultKind::CrashProducer]
        );
    }

    #[test]
    fn run_events_read_as_the_lines_the_terminal_showed() {
        use gauntlet_workloads::recorder::Counts;
        use std::time::Duration;
        let run = |e: RunEvent| event_line(&e);
        assert_eq!(
            run(RunEvent::Deploying {
                broker: BrokerKind::Redis,
                nodes: 3,
                settings: Vec::new(),
            }),
            Some(Line::Run("deploying redis (3 node(s))...".into()))
        );
        assert_eq!(
            run(RunEvent::Deploying {
                broker: BrokerKind::Redis,
                nodes: 3,
                settings: vec!["appendonly=no".into(), "appendfsync=everysec".into()],
            }),
            Some(Line::Run(
                "deploying redis (3 node(s); appendonly=no, appendfsync=everysec)...".into()
            ))
        );
        assert_eq!(
            run(RunEvent::DeploymentReady {
                broker: BrokerKind::Redis,
                after: Duration::from_millis(2345)
            }),
            Some(Line::Run("redis ready after 2.3s".into()))
        );
        assert_eq!(
            run(RunEvent::WorkloadStarted {
                first_op_after: Duration::from_millis(3000),
                workload: Workload::Queue,
                time: Duration::from_secs(20),
                rate: 200.0
            }),
            Some(Line::Run(
                "first op after 3.0s; running the queue workload for 20s at 200 sends/s".into()
            ))
        );
        assert_eq!(
            run(RunEvent::Tick {
                elapsed: Duration::from_millis(5000),
                total: Duration::from_secs(20),
                counts: Counts {
                    ops: 10,
                    ok: 4,
                    fail: 0,
                    info: 1,
                    sends_ok: 3,
                },
                ok_per_s: 8.0,
                in_flight: 3,
            }),
            Some(Line::Tick(
                "5.0/20.0s  ops 10  ok 4  fail 0  info 1  8 sends ok/s  in flight 3".into()
            ))
        );
        assert_eq!(
            run(RunEvent::FaultStarted {
                fault: "pause".into(),
                detail: r#"{"node":"n1"}"#.into()
            }),
            Some(Line::Run(r#"nemesis: pause {"node":"n1"}"#.into()))
        );
        assert_eq!(
            run(RunEvent::Interrupted {
                run: "r1".into(),
                backend: "docker".into()
            }),
            Some(Line::Process(
                "interrupted; removing what run r1 created (docker)".into()
            ))
        );
        assert_eq!(
            run(RunEvent::FaultEnded {
                fault: "pause".into()
            }),
            None
        );
        assert_eq!(run(RunEvent::WorkersRestarted { count: 1 }), None);
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
        s.nemesis = ["partition", "pause", "kill-consumer"]
            .map(|f| f.parse().expect("a fault"))
            .to_vec();
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

    #[tokio::test]
    async fn a_plan_lists_the_nodes_a_count_and_pause_kill_drew_and_heals_every_host() {
        let mut s = Scenario::default_scenario();
        s.nodes = Some(3);
        s.nemesis = ["kill-broker:majority", "pause-kill"]
            .map(|f| f.parse().expect("a fault"))
            .to_vec();
        s.time = "40s".into();
        let hosts: String = (1..=3)
            .map(|i| format!("[[host]]\naddress = \"10.0.0.1{i}\"\n"))
            .collect();
        let inventory = gauntlet_harness::backend::ssh::Inventory::parse(&format!(
            "{hosts}[broker]\nkind = \"redis\"\nmode = \"installed\"\npid = \"pgrep -x redis-server\"\n\
             start = \"redis-server /etc/redis.conf\"\nlog = \"/var/log/redis.log\"\nports = {{ client = 6379 }}\n"
        ))
        .expect("inventory");
        let text = plan_on_hosts(&inventory, &s, "/tmp/g").await.expect("plan");
        eprintln!("{text}");
        // The schedule names the nodes it drew; the plan lists them, and the
        // commands of each (a kill per node), then its heal on the same nodes.
        let kill = text
            .lines()
            .find(|l| l.contains("kill-broker:majority on n"))
            .expect("a majority kill");
        let nodes: Vec<&str> = kill
            .split(" on ")
            .nth(1)
            .and_then(|r| r.split(',').next())
            .map(|t| t.split('+').collect())
            .unwrap_or_default();
        assert_eq!(nodes.len(), 2, "{kill}");
        assert!(
            text.contains(&format!("then its heal on {}:", nodes.join("+"))),
            "{text}"
        );
        // pause-kill: a pause, a kill-broker on one node, a pause, each listed.
        assert!(text.lines().any(|l| l.contains(", pause on n")), "{text}");
        assert!(
            text.lines().any(|l| l.contains(", kill-broker on n")),
            "{text}"
        );
        assert!(
            !text.contains("pause-kill"),
            "the sequence is never played itself: {text}"
        );
        // At the end (also `gauntlet heal --hosts` and Ctrl-C): every host resumed or started.
        let end = text.split("# at the end").nth(1).expect("the end");
        for i in 1..=3 {
            assert!(
                end.contains(&format!("n{i} (10.0.0.1{i}):")) && end.contains("kill -CONT"),
                "n{i}: {end}"
            );
        }
    }
}
