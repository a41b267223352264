//! What every end-to-end test uses: run `gauntlet run`, read its verdict, check the
//! run folder and that no container of the run is left.
use serde_json::Value;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

pub struct Run {
    pub code: i32,
    pub verdict: Value,
    pub dir: PathBuf,
}

pub fn results_dir(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("gauntlet-e2e-{}-{name}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    dir
}

pub fn run(name: &str, args: &[&str]) -> Run {
    let results = results_dir(name);
    let child = Command::new(env!("CARGO_BIN_EXE_gauntlet"))
        .arg("run")
        .args(args)
        .arg("--results")
        .arg(&results)
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("start gauntlet");
    let pid = child.id();
    let out = child.wait_with_output().expect("wait for gauntlet");
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    let dir = stdout
        .lines()
        .find_map(|l| l.strip_prefix("run folder: "))
        .map(PathBuf::from)
        .unwrap_or_else(|| {
            panic!("no run folder in the output\nstdout:\n{stdout}\nstderr:\n{stderr}")
        });
    let verdict: Value = serde_json::from_str(
        &std::fs::read_to_string(dir.join(gauntlet_report::folder::VERDICT)).expect("verdict.json"),
    )
    .expect("verdict JSON");
    remember_pid(&dir, pid);
    Run {
        code: out.status.code().unwrap_or(-1),
        verdict,
        dir,
    }
}

pub fn count(r: &Run, anomaly: &str) -> u64 {
    r.verdict["anomalies"][anomaly]["count"]
        .as_u64()
        .unwrap_or(u64::MAX)
}

pub fn assert_run_folder(dir: &Path) {
    use gauntlet_report::folder;
    for f in [
        folder::HISTORY,
        folder::VERDICT,
        folder::SCENARIO,
        folder::SCHEDULE,
        folder::REPORT,
        folder::JUNIT,
    ] {
        assert!(dir.join(f).is_file(), "{} has no {f}", dir.display());
    }
    assert!(
        dir.join(folder::NODES).join("n1.log").is_file(),
        "no node log in {}",
        dir.display()
    );
    let latest = dir.parent().map(|p| p.join("latest")).expect("parent");
    assert!(latest.exists(), "no latest link beside {}", dir.display());
}

/// The run id (label `gauntlet.run`) of every labelled container on the machine, one per line.
pub fn labelled_runs() -> String {
    let out = Command::new("docker")
        .args([
            "ps",
            "-a",
            "--filter",
            "label=gauntlet.run",
            "--format",
            "{{.Label \"gauntlet.run\"}}",
        ])
        .output()
        .expect("docker ps");
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// The `gauntlet run` process that made each run folder: its pid ends the run id.
static RUN_PIDS: std::sync::Mutex<Vec<(PathBuf, u32)>> = std::sync::Mutex::new(Vec::new());

/// Notes that the run in `dir` was made by process `pid` ([`no_leftovers`]).
pub fn remember_pid(dir: &Path, pid: u32) {
    if let Ok(mut pids) = RUN_PIDS.lock() {
        pids.push((dir.to_path_buf(), pid));
    }
}

pub fn no_leftovers(dir: &Path) {
    // The run id is `<scenario>-<stamp>-<pid>` (harness/src/run/mod.rs): the
    // scenario and stamp are the results folder's, the pid is the `gauntlet run`
    // process's. Check by label that nothing of this run remains. Without the
    // pid (a folder this file did not run), `<scenario>-<stamp>` alone, which
    // another run of the same scenario started in the same second also matches
    // (other tests run beside this one).
    let text = labelled_runs();
    let name = |p: Option<&Path>| {
        p.and_then(|p| p.file_name())
            .and_then(|s| s.to_str())
            .unwrap_or("?")
            .to_string()
    };
    let scenario: String = name(dir.parent())
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || "-_.".contains(c) {
                c
            } else {
                '-'
            }
        })
        .collect();
    let pid = RUN_PIDS
        .lock()
        .ok()
        .and_then(|p| p.iter().rev().find(|(d, _)| d == dir).map(|(_, pid)| *pid));
    let stamp = format!("{scenario}-{}", name(Some(dir)));
    let ours = |label: &str| match pid {
        Some(pid) => label == format!("{stamp}-{pid}"),
        None => label.contains(&stamp),
    };
    assert!(
        !text.lines().any(ours),
        "containers of run {stamp} (process {pid:?}) left behind: {text}"
    );
}

/// Runs `gauntlet run SCENARIO.toml ARGS...` with the scenario given as text.
pub fn run_scenario(name: &str, toml: &str, args: &[&str]) -> Run {
    let file =
        std::env::temp_dir().join(format!("gauntlet-e2e-{}-{name}.toml", std::process::id()));
    std::fs::write(&file, toml).expect("write the scenario");
    let file = file.display().to_string();
    let mut all = vec![file.as_str()];
    all.extend_from_slice(args);
    run(name, &all)
}

/// A fault schedule to replay (`--replay`): (at ms, duration ms, fault, target, pick).
pub fn schedule_file(name: &str, faults: &[(u64, u64, &str, &str, u64)]) -> PathBuf {
    let mut text = String::from("seed = 0\n");
    for (at, dur, fault, target, pick) in faults {
        text.push_str(&format!(
            "\n[[fault]]\nat_ms = {at}\nduration_ms = {dur}\nfault = \"{fault}\"\ntarget = \"{target}\"\npick = {pick}\n"
        ));
    }
    let file = std::env::temp_dir().join(format!(
        "gauntlet-e2e-{}-{name}-schedule.toml",
        std::process::id()
    ));
    std::fs::write(&file, text).expect("write the schedule");
    file
}

/// The nemesis's events of a run's history, in order.
pub fn nemesis_events(dir: &Path) -> Vec<Value> {
    let text =
        std::fs::read_to_string(dir.join(gauntlet_report::folder::HISTORY)).expect("history.jsonl");
    text.lines()
        .filter_map(|l| serde_json::from_str::<Value>(l).ok())
        .filter(|e| e["process"] == "nemesis")
        .collect()
}

/// Prints what a run showed (kept in the test output with --no-capture).
pub fn report(label: &str, r: &Run, started: std::time::Instant) {
    let counts: Vec<String> = [
        "lost",
        "duplicate-write",
        "redelivered",
        "key-order",
        "gap",
        "recovered",
    ]
    .iter()
    .map(|a| format!("{a} {}", count(r, a)))
    .collect();
    eprintln!(
        "{label}: exit {}, sends ok {}, {} ({:.0} s wall)",
        r.code,
        r.verdict["stats"]["sends_ok"],
        counts.join(", "),
        started.elapsed().as_secs_f64()
    );
}

/// Two runs at once, each on a thread of its own, for a test that compares them:
/// both see the same machine, and the test takes the longer of the two, not their
/// sum. (`.config/nextest.toml` counts such a test as two in its group.)
pub fn side_by_side<A: Send, B: Send>(
    a: impl FnOnce() -> A + Send,
    b: impl FnOnce() -> B + Send,
) -> (A, B) {
    std::thread::scope(|s| {
        let a = s.spawn(a);
        let b = s.spawn(b);
        // A panic in either (a failed assertion) is the test's.
        let a = a.join().unwrap_or_else(|e| std::panic::resume_unwind(e));
        let b = b.join().unwrap_or_else(|e| std::panic::resume_unwind(e));
        (a, b)
    })
}

/// Runs `gauntlet run ARGS...` expecting it to refuse: returns the exit code and stderr.
pub fn run_refused(name: &str, args: &[&str]) -> (i32, String) {
    let results = results_dir(name);
    let out = Command::new(env!("CARGO_BIN_EXE_gauntlet"))
        .arg("run")
        .args(args)
        .arg("--results")
        .arg(&results)
        .output()
        .expect("start gauntlet");
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

/// Polls `probe` (every 200 ms) until it returns `Some`, or panics once `within`
/// has passed, naming `what` and the deadline. The time it took is printed
/// ("`what`: after 12.3 s (deadline 120 s)"), so a slow machine shows how close it
/// came. Tests wait for the event itself with this, never with a fixed sleep.
pub fn wait_for<T>(what: &str, within: Duration, mut probe: impl FnMut() -> Option<T>) -> T {
    let started = Instant::now();
    loop {
        if let Some(v) = probe() {
            eprintln!(
                "{what}: after {:.1} s (deadline {} s)",
                started.elapsed().as_secs_f64(),
                within.as_secs()
            );
            return v;
        }
        assert!(
            started.elapsed() < within,
            "{what}: not within {} s",
            within.as_secs()
        );
        std::thread::sleep(Duration::from_millis(200));
    }
}

/// The history of the one run under `results` (`RESULTS/<scenario>/<stamp>/history.jsonl`),
/// once the run has created it.
pub fn history_under(results: &Path) -> Option<PathBuf> {
    std::fs::read_dir(results)
        .ok()?
        .flatten()
        .filter_map(|scenario| std::fs::read_dir(scenario.path()).ok())
        .flat_map(|runs| runs.flatten())
        .map(|run| run.path().join(gauntlet_report::folder::HISTORY))
        .find(|h| h.is_file())
}

/// The events of a history file that read whole (a line being written is left out).
pub fn history_events(path: &Path) -> Vec<Value> {
    std::fs::read_to_string(path)
        .unwrap_or_default()
        .lines()
        .filter_map(|l| serde_json::from_str::<Value>(l).ok())
        .collect()
}

/// Sends invoked while another send of the same producer was still open, and the
/// most a producer had open at once.
pub fn overlap(dir: &Path) -> (u64, i64) {
    let mut open: std::collections::HashMap<u64, i64> = Default::default();
    let mut producer_of: std::collections::HashMap<u64, u64> = Default::default();
    let (mut overlapped, mut most) = (0u64, 0i64);
    for v in history_events(&dir.join("history.jsonl")) {
        if v["f"] != "send" {
            continue;
        }
        let Some(p) = v["process"].as_u64() else {
            continue;
        };
        if v["type"] == "invoke" {
            let producer = v["producer"]
                .as_u64()
                .expect("a pipelined send names its producer");
            producer_of.insert(p, producer);
            let n = open.entry(producer).or_insert(0);
            if *n > 0 {
                overlapped += 1;
            }
            *n += 1;
            most = most.max(*n);
        } else if let Some(producer) = producer_of.get(&p) {
            *open.entry(*producer).or_insert(1) -= 1;
        }
    }
    (overlapped, most)
}
