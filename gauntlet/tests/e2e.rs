//! End to end against real brokers in containers: `gauntlet run` deploys a
//! cluster, drives the queue workload with consumers as worker processes,
//! injects the seed's faults, drains and checks. Needs Docker and the local
//! images (`gauntlet images build`; built on demand when missing).
//!
//! Each test asserts the anomaly the seed predicts under the unsafe setting and
//! its absence under the safe one, plus the false-alarm check: a clean run is valid.
use serde_json::Value;
use std::path::{Path, PathBuf};
use std::process::Command;

struct Run {
    code: i32,
    verdict: Value,
    dir: PathBuf,
}

fn results_dir(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("gauntlet-e2e-{}-{name}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    dir
}

fn run(name: &str, args: &[&str]) -> Run {
    let results = results_dir(name);
    let out = Command::new(env!("CARGO_BIN_EXE_gauntlet"))
        .arg("run")
        .args(args)
        .arg("--results")
        .arg(&results)
        .output()
        .expect("start gauntlet");
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
        &std::fs::read_to_string(dir.join("verdict.json")).expect("verdict.json"),
    )
    .expect("verdict JSON");
    Run {
        code: out.status.code().unwrap_or(-1),
        verdict,
        dir,
    }
}

fn count(r: &Run, anomaly: &str) -> u64 {
    r.verdict["anomalies"][anomaly]["count"]
        .as_u64()
        .unwrap_or(u64::MAX)
}

fn assert_run_folder(dir: &Path) {
    for f in [
        "history.jsonl",
        "verdict.json",
        "scenario.toml",
        "schedule.toml",
        "report.html",
        "junit.xml",
    ] {
        assert!(dir.join(f).is_file(), "{} has no {f}", dir.display());
    }
    assert!(
        dir.join("nodes").join("n1.log").is_file(),
        "no node log in {}",
        dir.display()
    );
    let latest = dir.parent().map(|p| p.join("latest")).expect("parent");
    assert!(latest.exists(), "no latest link beside {}", dir.display());
}

fn no_leftovers(dir: &Path) {
    // The run id is the results folder's scenario/timestamp; check by label that nothing of ours remains.
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
    let stamp = dir
        .file_name()
        .and_then(|s| s.to_str())
        .unwrap_or("?")
        .to_string();
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        !text.lines().any(|l| l.contains(&stamp)),
        "containers of run {stamp} left behind: {text}"
    );
}

#[test]
fn redis_clean_run_is_valid_with_no_anomaly() {
    let r = run(
        "redis-clean",
        &["--broker", "redis", "--time", "8s", "--rate", "50"],
    );
    assert_eq!(r.code, 0, "{}", r.verdict);
    for a in [
        "lost",
        "unseen",
        "unexpected",
        "duplicate-write",
        "redelivered",
        "gap",
        "key-order",
        "inconsistent-offsets",
    ] {
        assert_eq!(count(&r, a), 0, "{a}: {}", r.verdict["anomalies"][a]);
    }
    assert!(r.verdict["stats"]["sends_ok"].as_u64().unwrap_or(0) > 100);
    assert_eq!(r.verdict["stats"]["drained"], Value::Bool(true));
    assert_run_folder(&r.dir);
    no_leftovers(&r.dir);
}

/// Seed D5: the consumer acknowledges before processing and is killed while processing.
#[test]
fn redis_ack_before_processing_and_kill_consumer_loses_messages() {
    let r = run(
        "redis-d5",
        &[
            "--broker",
            "redis",
            "--mode",
            "at-most-once",
            "--nemesis",
            "kill-consumer:after-ack",
            "--time",
            "14s",
            "--rate",
            "50",
        ],
    );
    assert_eq!(r.code, 1, "{}", r.verdict);
    assert!(count(&r, "lost") > 0, "{}", r.verdict["anomalies"]);
    assert_eq!(r.verdict["guarantees"]["at-least-once"], "violated");
    no_leftovers(&r.dir);
}

/// Seed D4: the consumer processes, is killed before acknowledging: redelivery, no loss.
#[test]
fn redis_ack_after_processing_and_kill_consumer_redelivers_without_loss() {
    let r = run(
        "redis-d4",
        &[
            "--broker",
            "redis",
            "--nemesis",
            "kill-consumer:before-ack",
            "--time",
            "14s",
            "--rate",
            "50",
        ],
    );
    assert_eq!(r.code, 0, "{}", r.verdict);
    assert!(count(&r, "redelivered") > 0, "{}", r.verdict["anomalies"]);
    assert_eq!(count(&r, "lost"), 0);
    assert_eq!(r.verdict["guarantees"]["at-most-once"], "violated");
    no_leftovers(&r.dir);
}

/// RabbitMQ: a clean run on a quorum queue, then the auto-ack hazard (seed D5 / at-most-once).
#[test]
fn rabbitmq_clean_and_auto_ack_kill_consumer() {
    let clean = run(
        "rabbit-clean",
        &[
            "--broker", "rabbitmq", "--nodes", "1", "--time", "8s", "--rate", "50",
        ],
    );
    assert_eq!(clean.code, 0, "{}", clean.verdict);
    assert_eq!(count(&clean, "lost"), 0);
    assert_eq!(count(&clean, "redelivered"), 0);
    let amo = run(
        "rabbit-d5",
        &[
            "--broker",
            "rabbitmq",
            "--nodes",
            "1",
            "--mode",
            "at-most-once",
            "--nemesis",
            "kill-consumer:after-ack",
            "--time",
            "14s",
            "--rate",
            "50",
        ],
    );
    assert_eq!(amo.code, 1, "{}", amo.verdict);
    assert!(count(&amo, "lost") > 0, "{}", amo.verdict["anomalies"]);
    no_leftovers(&amo.dir);
}
