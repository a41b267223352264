//! `gauntlet fuzz --seconds N`: mutation fuzzing of the history reader and the checker,
//! in-process, on stable Rust (cargo-fuzz needs nightly).
//!
//! A corpus of generated histories (every broker style, every injection) and the
//! files given is mutated (`gauntlet_testkit::mutate`: byte flips, truncations,
//! line swaps, deep nesting, huge numbers, long strings, ...); each input is read with
//! `read_bytes` and, when it reads, checked, under `catch_unwind`. Inputs that read are
//! sometimes kept in the corpus, so mutations pile up. A failure is a panic (of the
//! reader, or of a checker pass, which the verdict keeps as `unjudged`), an error
//! whose text is not `NAME:LINE: what`, or a verdict that does not serialise; each is
//! saved under `--out`. A watchdog reports (and saves) an input that runs longer than
//! `--hang-secs`. The figures: executions, speed, slowest input, peak memory.
use anyhow::{Context, Result};
use clap::Args;
use gauntlet_checkers::{check, CheckOptions, UnjudgedReason};
use gauntlet_history::{read_bytes, HistoryError};
use gauntlet_testkit::queue_gen::{generate_vec, GenConfig, Injection, Mode};
use gauntlet_testkit::{mutate, Rng};
use std::panic::{self, AssertUnwindSafe};
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

#[derive(Debug, Args)]
pub struct FuzzArgs {
    /// How long to fuzz, e.g. 60s, 10m (plain numbers are seconds).
    #[arg(long, alias = "seconds", default_value = "60s", value_parser = super::duration)]
    pub time: Duration,
    /// Seed of the mutations (the run is deterministic in it, except for timing).
    #[arg(long, default_value_t = 1)]
    pub seed: u64,
    /// Where failures, hangs and the slowest input are saved.
    #[arg(long, alias = "out", default_value = "results/fuzz")]
    pub results: PathBuf,
    /// An input running longer than this is reported as a hang.
    #[arg(long, alias = "hang-secs", default_value = "10s", value_parser = super::duration)]
    pub hang: Duration,
    /// Extra seed histories (JSON Lines files).
    pub files: Vec<PathBuf>,
}

const NAME: &str = "fuzz.jsonl";
const CORPUS_MAX: usize = 512;

/// What is wrong with the outcome of one input, if anything.
fn judge(input: &[u8]) -> Result<bool, String> {
    let lines = input.iter().filter(|&&c| c == b'\n').count() as u64 + 1;
    match read_bytes(NAME, input) {
        Ok(h) => {
            let v = check(&h, &CheckOptions::default());
            // The checker keeps a pass's panic in the verdict: still a failure.
            if let Some(u) = v
                .unjudged
                .iter()
                .find(|u| u.reason == UnjudgedReason::CheckerPanicked)
            {
                return Err(format!("panic: {}", u.detail));
            }
            serde_json::to_string(&v).map_err(|e| format!("verdict does not serialise: {e}"))?;
            Ok(true)
        }
        Err(e) => {
            let text = e.to_string();
            let rest = text
                .strip_prefix(NAME)
                .and_then(|r| r.strip_prefix(':'))
                .ok_or_else(|| format!("error text does not start with `{NAME}:`: {text}"))?;
            if let HistoryError::Line { line, .. } = &e {
                let digits: String = rest.chars().take_while(char::is_ascii_digit).collect();
                let after = &rest[digits.len()..];
                if digits.parse::<u64>().ok() != Some(*line)
                    || !after.starts_with(": ")
                    || after.len() <= 2
                {
                    return Err(format!("error text is not `{NAME}:LINE: what`: {text}"));
                }
                if *line == 0 || *line > lines {
                    return Err(format!("error names line {line} of {lines}: {text}"));
                }
            }
            Ok(false)
        }
    }
}

fn seed_corpus(seed: u64) -> Vec<Vec<u8>> {
    let mut rng = Rng::new(seed);
    let mut out = Vec::new();
    for (i, mode) in [Mode::Offsets, Mode::Ids, Mode::Bare]
        .into_iter()
        .cycle()
        .take(48)
        .enumerate()
    {
        let injections = (0..rng.below(6))
            .map(|_| *rng.pick(&Injection::ALL))
            .collect();
        let cfg = GenConfig {
            seed: seed.wrapping_add(i as u64),
            mode,
            ops: [0, 10, 40, 150, 400, 1500][i % 6],
            producers: 1 + rng.below(4) as u32,
            consumers: 1 + rng.below(3) as u32,
            groups: 1 + rng.below(3) as u32,
            default_group: rng.chance(0.3),
            keys: 1 + rng.below(8) as u32,
            partitions: 1 + rng.below(4) as u32,
            txn_rate: 0.1,
            drained: rng.chance(0.8),
            injections,
            ..GenConfig::default()
        };
        out.push(generate_vec(&cfg).0);
    }
    out
}

/// CPU time of this thread in ns (`/proc/thread-self/schedstat`): the slowest input is
/// judged by it, since wall time on a shared machine also counts other processes' turns.
fn cpu_ns() -> u64 {
    std::fs::read_to_string("/proc/thread-self/schedstat")
        .ok()
        .and_then(|s| s.split_whitespace().next()?.parse().ok())
        .unwrap_or(0)
}

fn peak_rss() -> u64 {
    let status = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
    status
        .lines()
        .find(|l| l.starts_with("VmHWM:"))
        .and_then(|l| l.split_whitespace().nth(1))
        .and_then(|n| n.parse::<u64>().ok())
        .map_or(0, |kb| kb * 1024)
}

pub fn run(args: FuzzArgs) -> Result<i32> {
    std::fs::create_dir_all(&args.results)
        .with_context(|| format!("creating {}", args.results.display()))?;
    let mut corpus = seed_corpus(args.seed);
    for f in &args.files {
        corpus.push(std::fs::read(f).with_context(|| format!("reading {}", f.display()))?);
    }
    let seeds = corpus.len();
    // Panics are failures we report ourselves: keep the default hook quiet, remember the message.
    let last_panic: Arc<Mutex<String>> = Arc::default();
    {
        let last = Arc::clone(&last_panic);
        panic::set_hook(Box::new(move |info| {
            let msg = match info.location() {
                Some(l) => format!("{info} at {}:{}", l.file(), l.line()),
                None => info.to_string(),
            };
            if let Ok(mut s) = last.lock() {
                *s = msg;
            }
        }));
    }
    // The watchdog: the input being run and since when.
    let current: Arc<Mutex<Vec<u8>>> = Arc::default();
    let started_ns = Arc::new(AtomicU64::new(0));
    let done = Arc::new(AtomicBool::new(false));
    let clock = Instant::now();
    let watchdog = {
        let (current, started_ns, done) = (current.clone(), started_ns.clone(), done.clone());
        let out = args.results.clone();
        let hang = args.hang.max(Duration::from_secs(1));
        std::thread::spawn(move || {
            let mut reported = 0u64;
            while !done.load(Ordering::Relaxed) {
                std::thread::sleep(Duration::from_millis(200));
                let s = started_ns.load(Ordering::Relaxed);
                let now = clock.elapsed().as_nanos() as u64;
                if s != 0 && s != reported && now.saturating_sub(s) > hang.as_nanos() as u64 {
                    reported = s;
                    let input = current.lock().map(|c| c.clone()).unwrap_or_default();
                    let path = out.join("hang.jsonl");
                    let _ = std::fs::write(&path, &input);
                    eprintln!(
                        "fuzz: an input has run for more than {} s ({} bytes), saved to {}",
                        hang.as_secs(),
                        input.len(),
                        path.display()
                    );
                }
            }
        })
    };

    let mut rng = Rng::new(args.seed ^ 0xFA22);
    let deadline = args.time;
    let t0 = Instant::now();
    let (mut execs, mut read_ok, mut read_err, mut failures) = (0u64, 0u64, 0u64, 0u64);
    let mut bytes_total = 0u64;
    // By CPU time; the longest wall time is kept apart.
    let mut slowest = (Duration::ZERO, 0usize);
    let mut slowest_wall = Duration::ZERO;
    let mut largest_ok = 0usize;
    let mut next_report = Duration::from_secs(30);
    while t0.elapsed() < deadline {
        let base = &corpus[rng.below(corpus.len() as u64) as usize];
        let input = mutate(&mut rng, base);
        if let Ok(mut c) = current.lock() {
            c.clear();
            c.extend_from_slice(&input);
        }
        started_ns.store(clock.elapsed().as_nanos() as u64, Ordering::Relaxed);
        let (t, c) = (Instant::now(), cpu_ns());
        let outcome = panic::catch_unwind(AssertUnwindSafe(|| judge(&input)));
        let took_cpu = Duration::from_nanos(cpu_ns().saturating_sub(c));
        let took = t.elapsed();
        slowest_wall = slowest_wall.max(took);
        started_ns.store(0, Ordering::Relaxed);
        execs += 1;
        bytes_total += input.len() as u64;
        if took_cpu > slowest.0 {
            slowest = (took_cpu, input.len());
            let _ = std::fs::write(args.results.join("slowest.jsonl"), &input);
        }
        let failure = match outcome {
            Ok(Ok(true)) => {
                read_ok += 1;
                largest_ok = largest_ok.max(input.len());
                // Keep some inputs that read, so mutations pile up on valid histories.
                if input.len() < 4 << 20 && rng.chance(0.02) {
                    if corpus.len() < CORPUS_MAX {
                        corpus.push(input);
                    } else {
                        let i = seeds + rng.below((CORPUS_MAX - seeds) as u64) as usize;
                        corpus[i] = input;
                    }
                }
                None
            }
            Ok(Ok(false)) => {
                read_err += 1;
                None
            }
            Ok(Err(why)) => Some((why, input)),
            Err(_) => {
                let msg = last_panic.lock().map(|s| s.clone()).unwrap_or_default();
                Some((format!("panic: {msg}"), input))
            }
        };
        if let Some((why, input)) = failure {
            failures += 1;
            let path = args.results.join(format!("failure-{failures}.jsonl"));
            let _ = std::fs::write(&path, &input);
            eprintln!(
                "fuzz: FAILURE {failures}: {why} ({} bytes, saved to {})",
                input.len(),
                path.display()
            );
        }
        if t0.elapsed() >= next_report {
            next_report += Duration::from_secs(30);
            eprintln!(
                "fuzz: {:>4.0} s  {execs} execs ({:.0}/s), {read_ok} read, {read_err} refused, {failures} failures, corpus {}, slowest {:.1} ms CPU, peak RSS {:.0} MiB",
                t0.elapsed().as_secs_f64(),
                execs as f64 / t0.elapsed().as_secs_f64(),
                corpus.len(),
                slowest.0.as_secs_f64() * 1e3,
                peak_rss() as f64 / (1024.0 * 1024.0)
            );
        }
    }
    done.store(true, Ordering::Relaxed);
    let _ = watchdog.join();
    let _ = panic::take_hook();
    let secs = t0.elapsed().as_secs_f64();
    println!("fuzz: {secs:.0} s, seed {}", args.seed);
    println!(
        "  executions: {execs} ({:.0}/s, {:.1} MiB of input)",
        execs as f64 / secs,
        bytes_total as f64 / (1024.0 * 1024.0)
    );
    println!("  read and checked: {read_ok}; refused with a line error: {read_err}");
    println!("  failures (panics, badly formed errors): {failures}");
    println!(
        "  slowest input: {:.2} ms of CPU, {} bytes (saved to {}); longest wall time of one input {:.2} ms",
        slowest.0.as_secs_f64() * 1e3,
        slowest.1,
        args.results.join("slowest.jsonl").display(),
        slowest_wall.as_secs_f64() * 1e3
    );
    println!(
        "  largest input that read: {largest_ok} bytes; corpus at the end: {} inputs",
        corpus.len()
    );
    println!(
        "  peak memory (VmHWM): {:.0} MiB",
        peak_rss() as f64 / (1024.0 * 1024.0)
    );
    Ok(if failures == 0 { 0 } else { 1 })
}
