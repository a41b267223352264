//! `gauntlet bench`: how fast and how small reading and checking big histories is.
//!
//! For each size, generates a history with anomalies injected at known places
//! (`gauntlet_testkit::queue_gen`, streamed to `results/bench/`, constant memory), then
//! measures it in a fresh child process (so one size's heap does not inflate the
//! next one's peak): resets the peak-RSS counter (`/proc/self/clear_refs`), reads
//! the file with `read_path_with` (parse only), checks it with `check` (single
//! thread), and reports ops/s, seconds, peak memory (`VmHWM`) and bytes per op, and
//! whether the verdict found exactly the injected counts.
//!
//! Each size is measured once per reading thread count (`--read-threads`, by
//! default 1 and the reader's default): the read's wall time and speedup over one
//! thread, and the verdicts, which must be byte-identical (serialized JSON) across
//! thread counts; the bench fails if they are not. On a shared machine,
//! `--read-repeat N` times each read N times (fresh children, thread counts
//! taking turns) and counts the fastest.
use anyhow::{bail, Context, Result};
use clap::Args;
use gauntlet_checkers::{check, AnomalyKind, CheckOptions};
use gauntlet_history::ReadOptions;
use gauntlet_testkit::queue_gen::{generate, Expected, GenConfig, Injection, Mode};
use serde_json::{json, Value};
use std::fs::File;
use std::io::BufWriter;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Instant;

/// Target of issue 2.
const TARGET_OPS_PER_S: f64 = 2_000_000.0;
/// Target of issue 25: peak memory (`VmHWM` of the measuring process) per op.
const TARGET_BYTES_PER_OP: f64 = 100.0;
/// Target of issue 16: reading on 2 threads at least this many times as fast as on 1 (at 10M ops).
const TARGET_READ_SPEEDUP_2: f64 = 1.7;

#[derive(Debug, Args)]
pub struct BenchArgs {
    /// What to measure; without one, `history` (its flags may then follow `bench` directly).
    #[command(subcommand)]
    pub sub: Option<BenchSub>,
    #[command(flatten)]
    pub history: HistoryBench,
}

/// `gauntlet bench history`: reading and checking generated histories.
#[derive(Debug, Clone, Args)]
pub struct HistoryBench {
    /// History sizes in ops, comma-separated (`1M`, `10M`, `500k` work too).
    #[arg(long, value_delimiter = ',', default_value = "1M,10M", value_parser = parse_size)]
    pub ops: Vec<u64>,
    /// Where the generated histories go.
    #[arg(long, alias = "dir", default_value = "results/bench")]
    pub results: PathBuf,
    /// Generator seed.
    #[arg(long, default_value_t = 1)]
    pub seed: u64,
    /// Broker style of the generated histories: offsets, ids or bare.
    #[arg(long, default_value = "offsets", value_parser = parse_mode)]
    pub mode: Mode,
    /// Consumer groups (every message is delivered once to each).
    #[arg(long, default_value_t = 2)]
    pub groups: u32,
    /// Reuse a history generated before with the same size, seed and shape.
    #[arg(long)]
    pub reuse: bool,
    /// Measure in this process instead of a child (peaks then include earlier sizes).
    #[arg(long)]
    pub in_process: bool,
    /// Older spelling of `gauntlet bench txn N`.
    #[arg(long, hide = true, value_parser = parse_size)]
    pub txn: Option<u64>,
    /// Reading threads to measure each size with, comma-separated (default: 1 and
    /// the reader's default, at least 2). The first is the base of the speedups.
    #[arg(long, value_delimiter = ',')]
    pub read_threads: Vec<usize>,
    /// Internal: measure one file and print the figures as JSON.
    #[arg(long, hide = true)]
    pub measure: Option<PathBuf>,
    /// Time each read this many times (each in a fresh child, the thread counts
    /// taking turns) and count the fastest: on a shared machine, the least
    /// disturbed. The check, the verdict and the peaks are those of the first.
    #[arg(long, default_value_t = 1)]
    pub read_repeat: u32,
    /// Internal: `--measure` only reads.
    #[arg(long, hide = true)]
    pub read_only: bool,
    /// Internal: the reading threads of `--measure` (default: the reader's default).
    #[arg(long, hide = true)]
    pub measure_threads: Option<usize>,
    /// Internal: where `--measure` writes the verdict (serialized JSON).
    #[arg(long, hide = true)]
    pub verdict_out: Option<PathBuf>,
}

#[derive(Debug, clap::Subcommand)]
pub enum BenchSub {
    /// Reading and checking generated histories with injected anomalies: ops/s,
    /// peak memory, bytes per op, the reading speedup on more threads, and
    /// whether the verdict found exactly what was injected (the default).
    History(HistoryBench),
    /// A strict serializable transactional history of N transactions
    /// (`gauntlet_testkit::txn_gen`): generation, and the time and memory of its check.
    Txn(TxnBench),
    /// Each broker's workload throughput and p50/p99 send latency with the recorder
    /// writing the history and discarding it, and the time to the first op.
    Run(super::bench_run::BenchRunArgs),
}

/// `gauntlet bench txn`.
#[derive(Debug, Clone, Args)]
pub struct TxnBench {
    /// Transactions (`1M`, `500k` work too).
    #[arg(default_value = "1M", value_parser = parse_size)]
    pub size: u64,
    /// Where the generated history goes.
    #[arg(long, default_value = "results/bench")]
    pub results: PathBuf,
    /// Generator seed.
    #[arg(long, default_value_t = 1)]
    pub seed: u64,
    /// Reuse a history generated before with the same size and seed.
    #[arg(long)]
    pub reuse: bool,
    /// Measure in this process instead of a child.
    #[arg(long)]
    pub in_process: bool,
}

fn parse_size(s: &str) -> Result<u64, String> {
    let s = s.trim().to_ascii_lowercase().replace('_', "");
    let (num, mul) = match s.chars().last() {
        Some('k') => (&s[..s.len() - 1], 1_000),
        Some('m') => (&s[..s.len() - 1], 1_000_000),
        Some('g') => (&s[..s.len() - 1], 1_000_000_000),
        _ => (&s[..], 1),
    };
    num.parse::<u64>()
        .map(|n| n * mul)
        .map_err(|e| format!("`{s}` is not a size: {e}"))
}

fn parse_mode(s: &str) -> Result<Mode, String> {
    match s {
        "offsets" => Ok(Mode::Offsets),
        "ids" => Ok(Mode::Ids),
        "bare" => Ok(Mode::Bare),
        _ => Err(format!("`{s}`: expected offsets, ids or bare")),
    }
}

/// The shape of a benchmark history: a busy run with a few of every injection.
pub fn bench_config(ops: u64, seed: u64, mode: Mode, groups: u32) -> GenConfig {
    let mut injections = Vec::new();
    for _ in 0..5 {
        injections.extend_from_slice(&Injection::ALL);
    }
    GenConfig {
        seed,
        ops,
        producers: 8,
        consumers: 3,
        groups,
        default_group: false,
        keys: 256,
        partitions: 12,
        mode,
        max_batch: 10,
        fail_rate: 0.01,
        info_rate: 0.01,
        info_stored_rate: 0.5,
        txn_rate: 0.02,
        crash_rate: 0.001,
        nemesis_rate: 0.0005,
        rebalance_rate: 0.0005,
        drained: true,
        injections,
    }
}

fn expected_json(ex: &Expected) -> Value {
    let counts: serde_json::Map<String, Value> = ex
        .counts()
        .iter()
        .map(|(k, v)| ((*k).to_string(), json!(v)))
        .collect();
    json!({"ops": ex.ops, "sends": ex.sends, "sends_ok": ex.sends_ok,
           "deliveries": ex.deliveries, "counts": counts})
}

/// (`VmHWM`, `VmRSS`, `VmSwap`) in bytes.
fn memory() -> (u64, u64, u64) {
    let status = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
    let field = |name: &str| {
        status
            .lines()
            .find(|l| l.starts_with(name))
            .and_then(|l| l.split_whitespace().nth(1))
            .and_then(|n| n.parse::<u64>().ok())
            .map_or(0, |kb| kb * 1024)
    };
    (field("VmHWM:"), field("VmRSS:"), field("VmSwap:"))
}

/// CPU time this thread has run, in seconds (`/proc/thread-self/schedstat`, ns): on a
/// shared machine, wall time also counts the time other processes had the core.
fn cpu_seconds() -> f64 {
    std::fs::read_to_string("/proc/thread-self/schedstat")
        .ok()
        .and_then(|s| s.split_whitespace().next()?.parse::<u64>().ok())
        .map_or(f64::NAN, |ns| ns as f64 / 1e9)
}

/// CPU time of the whole process (all its threads, also those that ended), in
/// seconds (`/proc/self/stat`, clock ticks of 10 ms).
fn process_cpu_seconds() -> f64 {
    let stat = std::fs::read_to_string("/proc/self/stat").unwrap_or_default();
    // The fields after the command (which may hold spaces), from the 3rd on.
    let rest = stat.rsplit_once(')').map_or("", |(_, r)| r);
    let ticks: u64 = rest
        .split_whitespace()
        .skip(11)
        .take(2)
        .filter_map(|t| t.parse::<u64>().ok())
        .sum();
    ticks as f64 / 100.0
}

fn reset_peak() -> bool {
    std::fs::write("/proc/self/clear_refs", "5").is_ok()
}

/// One size read on so many threads: the figures, and whether the verdict found
/// exactly the injected counts.
type PerThreads = (usize, Value, bool);

/// Reads (on `threads` threads, or the reader's default) and checks one file; the
/// figures as JSON. The verdict goes to `verdict_out` as JSON where given.
/// With `read_only`, only the read is measured (for `--read-repeat`): the
/// figures of the read alone.
fn measure(
    path: &Path,
    threads: Option<usize>,
    read_only: bool,
    verdict_out: Option<&Path>,
) -> Result<Value> {
    let mut opts = ReadOptions::default();
    if let Some(t) = threads {
        opts = opts.with_threads(t);
    }
    let peak_reset = reset_peak();
    let (_, rss_before, _) = memory();
    let (t0, c0, p0) = (Instant::now(), cpu_seconds(), process_cpu_seconds());
    let h = gauntlet_history::read_path_with(path, &opts)?;
    let (parse_wall, c1, p1) = (
        t0.elapsed().as_secs_f64(),
        cpu_seconds(),
        process_cpu_seconds(),
    );
    let (parse, parse_process) = (c1 - c0, p1 - p0);
    if read_only {
        return Ok(json!({"parse_s": parse, "parse_wall_s": parse_wall,
                         "parse_process_cpu_s": parse_process}));
    }
    let (hwm_parse, _, _) = memory();
    let t1 = Instant::now();
    let v = check(&h, &CheckOptions::default());
    let (check_wall, c2) = (t1.elapsed().as_secs_f64(), cpu_seconds());
    let check_s = c2 - c1;
    let (hwm, _, swap) = memory();
    let counts: serde_json::Map<String, Value> = AnomalyKind::ALL
        .iter()
        .map(|k| (k.name().to_string(), json!(v.count(*k))))
        .collect();
    let txn_counts: serde_json::Map<String, Value> = AnomalyKind::TXN
        .iter()
        .filter(|k| v.anomalies.contains_key(k))
        .map(|k| (k.name().to_string(), json!(v.count(*k))))
        .collect();
    let bytes = std::fs::metadata(path).map(|m| m.len()).unwrap_or(0);
    if let Some(out) = verdict_out {
        let text = serde_json::to_vec(&v).context("serializing the verdict")?;
        std::fs::write(out, text).with_context(|| format!("writing {}", out.display()))?;
    }
    Ok(json!({
        "ops": h.counts.ops, "sends": h.sends.len(), "deliveries": h.deliveries.len(),
        "file_bytes": bytes, "parse_s": parse, "check_s": check_s,
        "parse_wall_s": parse_wall, "check_wall_s": check_wall,
        "read_threads": opts.threads, "parse_process_cpu_s": parse_process,
        "rss_before": rss_before, "hwm_parse": hwm_parse, "hwm": hwm, "swap": swap,
        "peak_reset": peak_reset, "valid": v.valid.name(), "counts": counts,
        "txns": h.txns.len(), "txn_counts": txn_counts, "warnings": v.warnings,
        "exactly_once": v.status(gauntlet_checkers::Guarantee::ExactlyOnce).name(),
    }))
}

fn f(v: &Value, k: &str) -> f64 {
    v.get(k).and_then(Value::as_f64).unwrap_or(0.0)
}

fn mib(b: f64) -> f64 {
    b / (1024.0 * 1024.0)
}

pub fn run(args: BenchArgs) -> Result<i32> {
    match args.sub {
        Some(BenchSub::Run(r)) => super::bench_run::run(r),
        Some(BenchSub::Txn(t)) => run_txn(&t),
        Some(BenchSub::History(h)) => run_history(h),
        None => run_history(args.history),
    }
}

fn run_history(args: HistoryBench) -> Result<i32> {
    if let Some(path) = &args.measure {
        let m = measure(
            path,
            args.measure_threads,
            args.read_only,
            args.verdict_out.as_deref(),
        )?;
        println!("{m}");
        return Ok(0);
    }
    if let Some(size) = args.txn {
        return run_txn(&TxnBench {
            size,
            results: args.results.clone(),
            seed: args.seed,
            reuse: args.reuse,
            in_process: args.in_process,
        });
    }
    std::fs::create_dir_all(&args.results)
        .with_context(|| format!("creating {}", args.results.display()))?;
    let threads = if args.read_threads.is_empty() {
        vec![1, ReadOptions::default().threads.max(2)]
    } else {
        args.read_threads.clone()
    };
    // Per size: the expected counts, then per thread count its figures and whether
    // the verdict found exactly the injected counts.
    let mut rows: Vec<(u64, Value, Vec<PerThreads>)> = Vec::new();
    let mut verdicts_differ = Vec::new();
    for &ops in &args.ops {
        let cfg = bench_config(ops, args.seed, args.mode, args.groups);
        let stem = format!(
            "bench-{ops}-{:?}-g{}-s{}",
            args.mode, args.groups, args.seed
        )
        .to_ascii_lowercase();
        let path = args.results.join(format!("{stem}.jsonl"));
        let sidecar = args.results.join(format!("{stem}.expected.json"));
        let expected: Value = match std::fs::read(&sidecar) {
            Ok(b) if args.reuse && path.exists() => serde_json::from_slice(&b)
                .with_context(|| format!("reading {}", sidecar.display()))?,
            _ => {
                eprintln!("bench: generating {} ...", path.display());
                let t = Instant::now();
                let file =
                    File::create(&path).with_context(|| format!("creating {}", path.display()))?;
                let ex = generate(&cfg, BufWriter::with_capacity(1 << 20, file))
                    .with_context(|| format!("writing {}", path.display()))?;
                let e = expected_json(&ex);
                std::fs::write(&sidecar, e.to_string())
                    .with_context(|| format!("writing {}", sidecar.display()))?;
                eprintln!(
                    "bench: generated {} ops in {:.1} s (peak RSS of the generator so far {:.0} MiB)",
                    ex.ops,
                    t.elapsed().as_secs_f64(),
                    mib(memory().0 as f64)
                );
                e
            }
        };
        let mut per_threads = Vec::new();
        let mut first_verdict: Option<(usize, PathBuf, Vec<u8>)> = None;
        for &t in &threads {
            eprintln!(
                "bench: reading ({t} thread{}) and checking {} ...",
                if t == 1 { "" } else { "s" },
                path.display()
            );
            let verdict_path = args.results.join(format!("{stem}.verdict-{t}t.json"));
            let m = measure_child(&path, args.in_process, Some(t), false, Some(&verdict_path))?;
            let verdict = std::fs::read(&verdict_path)
                .with_context(|| format!("reading {}", verdict_path.display()))?;
            match &first_verdict {
                None => first_verdict = Some((t, verdict_path, verdict)),
                Some((t0, p0, v0)) => {
                    if *v0 == verdict {
                        std::fs::remove_file(&verdict_path).ok();
                    } else {
                        verdicts_differ.push(format!(
                            "{ops} ops: the verdict read on {t} threads differs from the one on {t0}: {} vs {}",
                            verdict_path.display(),
                            p0.display()
                        ));
                    }
                }
            }
            let same = expected.get("counts") == m.get("counts");
            per_threads.push((t, m, same));
        }
        if let Some((_, p0, _)) = &first_verdict {
            if verdicts_differ.is_empty() {
                std::fs::remove_file(p0).ok();
            }
        }
        // More reads, timed only, the thread counts taking turns: the fastest counts.
        for round in 1..args.read_repeat {
            for (t, m, _) in &mut per_threads {
                eprintln!(
                    "bench: reading again ({t} threads, {} of {}) ...",
                    round + 1,
                    args.read_repeat
                );
                let again = measure_child(&path, args.in_process, Some(*t), true, None)?;
                let (first, wall) = (f(m, "parse_wall_s"), f(&again, "parse_wall_s"));
                let Some(o) = m.as_object_mut() else {
                    continue;
                };
                let walls = o.entry("parse_walls_s").or_insert_with(|| json!([first]));
                if let Some(w) = walls.as_array_mut() {
                    w.push(json!(wall));
                }
                if wall < first {
                    for k in ["parse_wall_s", "parse_s", "parse_process_cpu_s"] {
                        o.insert(k.to_string(), json!(f(&again, k)));
                    }
                }
            }
        }
        rows.push((ops, expected, per_threads));
    }

    println!(
        "{:>10} {:>9} {:>7} {:>8} {:>8} {:>8} {:>8} {:>12} {:>12} {:>9} {:>8} {:>6} {:>6}",
        "ops",
        "file MiB",
        "threads",
        "read s",
        "speedup",
        "read s",
        "check s",
        "read op/s",
        "total op/s",
        "peak MiB",
        "B/op",
        "swap",
        "exact"
    );
    println!(
        "{:>10} {:>9} {:>7} {:>8} {:>8} {:>8} {:>8} {:>12} {:>12}",
        "", "", "", "(wall)", "(wall)", "(cpu)", "(cpu)", "(wall)", "(per core)"
    );
    let mut all_ok = true;
    for (_, _, per_threads) in &rows {
        let base_wall = per_threads
            .first()
            .map_or(0.0, |(_, m, _)| f(m, "parse_wall_s"));
        for (t, m, same) in per_threads {
            let ops = f(m, "ops");
            let wall = f(m, "parse_wall_s");
            // All threads' CPU time (in 10 ms ticks).
            let cpu = f(m, "parse_process_cpu_s");
            let chk = f(m, "check_s");
            println!(
                "{:>10} {:>9.0} {:>7} {:>8.2} {:>7.2}x {:>8.2} {:>8.2} {:>12.0} {:>12.0} {:>9.0} {:>8.1} {:>6.0} {:>6}",
                ops,
                mib(f(m, "file_bytes")),
                t,
                wall,
                base_wall / wall,
                cpu,
                chk,
                ops / wall,
                ops / (cpu + chk),
                mib(f(m, "hwm")),
                f(m, "hwm") / ops,
                mib(f(m, "swap")),
                if *same { "yes" } else { "NO" }
            );
            all_ok &= *same;
        }
    }
    println!();
    for (ops_asked, expected, per_threads) in &rows {
        let Some((_, m, same)) = per_threads.first() else {
            continue;
        };
        let ops = f(m, "ops");
        let total = ops / (f(m, "parse_s") + f(m, "check_s"));
        let bpo = f(m, "hwm") / ops;
        let net = (f(m, "hwm") - f(m, "rss_before")) / ops;
        println!(
            "{ops:.0} ops: {:.2}M ops/s parse+check ({}; target >= 2M), {bpo:.0} B/op peak ({}; target <= {TARGET_BYTES_PER_OP}), {net:.0} B/op above the process baseline, peak after parse alone {:.0} MiB",
            total / 1e6,
            if total >= TARGET_OPS_PER_S { "meets" } else { "MISSES" },
            if bpo <= TARGET_BYTES_PER_OP { "meets" } else { "MISSES" },
            mib(f(m, "hwm_parse")),
        );
        for (t, mt, _) in per_threads.iter().skip(1) {
            let speedup = f(m, "parse_wall_s") / f(mt, "parse_wall_s");
            let verdict = if *t == 2 && *ops_asked >= 10_000_000 {
                if speedup >= TARGET_READ_SPEEDUP_2 {
                    " (meets; target >= 1.7x on 2 threads at 10M ops)"
                } else {
                    " (MISSES; target >= 1.7x on 2 threads at 10M ops)"
                }
            } else {
                ""
            };
            println!(
                "  read on {t} threads: {:.2} s wall vs {:.2} s on {}, {speedup:.2}x{verdict}; {:.0} B/op peak (peak after parse alone {:.0} MiB); verdict byte-identical: {}",
                f(mt, "parse_wall_s"),
                f(m, "parse_wall_s"),
                per_threads[0].0,
                f(mt, "hwm") / ops,
                mib(f(mt, "hwm_parse")),
                if verdicts_differ.is_empty() { "yes" } else { "NO" },
            );
        }
        for (t, mt, _) in per_threads {
            if let Some(w) = mt.get("parse_walls_s").and_then(Value::as_array) {
                let w: Vec<String> = w
                    .iter()
                    .filter_map(Value::as_f64)
                    .map(|x| format!("{x:.2}"))
                    .collect();
                println!(
                    "  read on {t} thread{}: fastest of {} s",
                    if *t == 1 { "" } else { "s" },
                    w.join(", ")
                );
            }
        }
        if m.get("peak_reset") != Some(&Value::Bool(true)) {
            println!(
                "  (note: /proc/self/clear_refs not writable: peak includes the process start)"
            );
        }
        if !same {
            println!(
                "  the verdict's counts differ from the injected ones:\n  expected {}\n  got      {}",
                expected.get("counts").unwrap_or(&Value::Null),
                m.get("counts").unwrap_or(&Value::Null)
            );
        }
        // Our own figure per million sends only: another checker's figure is
        // printed nowhere, as none was measured here with a date and a command
        // to run again (docs/checkers.md, "Performance").
        let sends = f(m, "sends");
        if sends > 0.0 {
            let secs = f(m, "parse_s") + f(m, "check_s");
            let per_m = secs * 1e6 / sends;
            println!(
                "  {sends:.0} sends read and checked in {secs:.2} s (CPU) = {per_m:.2} s per 1M sends, {:.0} MiB peak",
                mib(f(m, "hwm"))
            );
        }
    }
    if !verdicts_differ.is_empty() {
        for d in &verdicts_differ {
            eprintln!("bench: ERROR: {d}");
        }
        bail!("the verdicts differ between reading thread counts");
    }
    Ok(if all_ok { 0 } else { 1 })
}

/// Target of issue 8: a million transactions checked in at most this many seconds.
const TARGET_TXN_SECONDS: f64 = 5.0;

/// Measures one file in a child process (or in this one): read on `threads`
/// threads (or the reader's default), checked, the verdict written to `verdict_out`.
fn measure_child(
    path: &Path,
    in_process: bool,
    threads: Option<usize>,
    read_only: bool,
    verdict_out: Option<&Path>,
) -> Result<Value> {
    if in_process {
        return measure(path, threads, read_only, verdict_out);
    }
    let exe = std::env::current_exe().context("finding the gauntlet binary")?;
    let mut cmd = Command::new(exe);
    cmd.arg("bench").arg("--measure").arg(path);
    if let Some(t) = threads {
        cmd.arg("--measure-threads").arg(t.to_string());
    }
    if let Some(out) = verdict_out {
        cmd.arg("--verdict-out").arg(out);
    }
    if read_only {
        cmd.arg("--read-only");
    }
    let out = cmd.output().context("running the measuring child")?;
    if !out.status.success() {
        bail!(
            "measuring {} failed: {}",
            path.display(),
            String::from_utf8_lossy(&out.stderr)
        );
    }
    serde_json::from_slice(&out.stdout).context("reading the child's figures")
}

/// `gauntlet bench --txn N`: the transaction checker on N transactions.
fn run_txn(args: &TxnBench) -> Result<i32> {
    use gauntlet_testkit::txn_gen::{generate_txns, TxnGenConfig};
    let n = args.size;
    std::fs::create_dir_all(&args.results)
        .with_context(|| format!("creating {}", args.results.display()))?;
    let cfg = TxnGenConfig {
        seed: args.seed,
        txns: n,
        ..TxnGenConfig::default()
    };
    let path = args
        .results
        .join(format!("bench-txn-{n}-s{}.jsonl", args.seed));
    if !(args.reuse && path.exists()) {
        eprintln!("bench: generating {} ...", path.display());
        let t = Instant::now();
        let file = File::create(&path).with_context(|| format!("creating {}", path.display()))?;
        let s = generate_txns(&cfg, BufWriter::with_capacity(1 << 20, file))
            .with_context(|| format!("writing {}", path.display()))?;
        eprintln!(
            "bench: generated {} transactions ({} committed, {} ops) in {:.1} s",
            s.txns,
            s.committed,
            s.ops,
            t.elapsed().as_secs_f64()
        );
    }
    eprintln!("bench: reading and checking {} ...", path.display());
    let m = measure_child(&path, args.in_process, None, false, None)?;
    let txns = f(&m, "txns");
    let (parse, chk) = (f(&m, "parse_s"), f(&m, "check_s"));
    let clean = m
        .get("txn_counts")
        .and_then(Value::as_object)
        .is_some_and(|c| c.values().all(|x| x.as_u64() == Some(0)));
    println!(
        "{txns:.0} transactions ({:.0} ops, {:.0} MiB file): read {parse:.2} s, check {chk:.2} s (CPU; wall {:.2} s + {:.2} s), {:.0} txns/s checked, {:.0} txns/s read+checked, peak RSS {:.0} MiB ({:.0} B/txn)",
        f(&m, "ops"),
        mib(f(&m, "file_bytes")),
        f(&m, "parse_wall_s"),
        f(&m, "check_wall_s"),
        txns / chk,
        txns / (parse + chk),
        mib(f(&m, "hwm")),
        f(&m, "hwm") / txns.max(1.0),
    );
    let per_m = (parse + chk) * 1e6 / txns.max(1.0);
    println!(
        "  {per_m:.2} s per 1M transactions read+checked ({}; target <= {TARGET_TXN_SECONDS} s); transaction anomalies: {} ({}), exactly-once: {}",
        if per_m <= TARGET_TXN_SECONDS { "meets" } else { "MISSES" },
        m.get("txn_counts").unwrap_or(&Value::Null),
        if clean { "clean, as generated" } else { "NOT CLEAN" },
        m.get("exactly_once").and_then(Value::as_str).unwrap_or("?"),
    );
    if let Some(w) = m
        .get("warnings")
        .and_then(Value::as_array)
        .filter(|w| !w.is_empty())
    {
        println!("  warnings: {}", Value::Array(w.clone()));
    }
    Ok(if clean { 0 } else { 1 })
}
