//! Runs that do not finish as planned still answer, and never with a false
//! verdict: Ctrl-C in the middle of a run (judged as recorded, marked
//! interrupted, exit 130) and a disk that fills up under the history (the
//! workload stops, the verdict is unknown, never invalid).
use crate::common::*;
use serde_json::Value;
use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// The run folder a `gauntlet run` printed on stdout.
fn run_folder(stdout: &str, stderr: &str) -> PathBuf {
    stdout
        .lines()
        .find_map(|l| l.strip_prefix("run folder: "))
        .map(PathBuf::from)
        .unwrap_or_else(|| panic!("no run folder\nstdout:\n{stdout}\nstderr:\n{stderr}"))
}

/// Starts `gauntlet run ARGS --results RESULTS` and returns once its workload
/// has started (stderr says "first op after"), with the child and its stderr so far.
fn start_run(args: &[&str], results: &Path) -> (std::process::Child, String) {
    let mut child = Command::new(env!("CARGO_BIN_EXE_gauntlet"))
        .arg("run")
        .args(args)
        .arg("--results")
        .arg(results)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("start gauntlet");
    let stderr = child.stderr.take().expect("stderr");
    let mut lines = BufReader::new(stderr).lines();
    let mut seen = String::new();
    for line in lines.by_ref() {
        let line = line.expect("stderr line");
        seen.push_str(&line);
        seen.push('\n');
        if line.contains("first op after") {
            break;
        }
    }
    assert!(
        seen.contains("first op after"),
        "the run did not start:\n{seen}"
    );
    // Keep draining stderr so the child never blocks on a full pipe.
    std::thread::spawn(move || lines.for_each(drop));
    (child, seen)
}

/// Ctrl-C four seconds into a 60 s run: the containers go, what was recorded is
/// judged and written (verdict.json, report.html) marked interrupted, exit 130.
/// No `drained` marker, so at-least-once cannot hold.
#[test]
fn ctrl_c_mid_run_writes_an_interrupted_verdict_and_exits_130() {
    let results = results_dir("interrupted");
    let t = Instant::now();
    let (mut child, seen) = start_run(
        &[
            "--broker",
            "redis",
            "--nemesis",
            "none",
            "--time",
            "60s",
            "--rate",
            "50",
        ],
        &results,
    );
    std::thread::sleep(Duration::from_secs(4));
    let status = Command::new("kill")
        .args(["-INT", &child.id().to_string()])
        .status()
        .expect("kill -INT");
    assert!(status.success());
    let mut stdout = String::new();
    std::io::Read::read_to_string(&mut child.stdout.take().expect("stdout"), &mut stdout)
        .expect("stdout");
    let code = child.wait().expect("wait").code();
    assert_eq!(code, Some(130), "stdout:\n{stdout}\nstderr:\n{seen}");
    assert!(
        t.elapsed() < Duration::from_secs(50),
        "the run went on after Ctrl-C: {:?}",
        t.elapsed()
    );
    let dir = run_folder(&stdout, &seen);
    let verdict: Value = serde_json::from_str(
        &std::fs::read_to_string(dir.join("verdict.json")).expect("verdict.json"),
    )
    .expect("verdict JSON");
    assert_eq!(verdict["incomplete"]["reason"], "interrupted", "{verdict}");
    assert_eq!(verdict["stats"]["drained"], Value::Bool(false));
    // No drained marker: a message acknowledged but not read yet is `unseen`, and
    // at-least-once is then unknown (not violated: nothing is proven lost); if
    // every acknowledged message was read already, it holds.
    let lost = verdict["anomalies"]["lost"]["count"].as_u64();
    let unseen = verdict["anomalies"]["unseen"]["count"].as_u64();
    assert_eq!(lost, Some(0), "{verdict}");
    let expected = if unseen > Some(0) { "unknown" } else { "holds" };
    assert_eq!(
        verdict["guarantees"]["at-least-once"], expected,
        "{verdict}"
    );
    assert!(
        verdict["stats"]["sends_ok"].as_u64().unwrap_or(0) > 50,
        "{verdict}"
    );
    let html = std::fs::read_to_string(dir.join("report.html")).expect("report.html");
    assert!(
        html.contains("run interrupted"),
        "report.html is not marked"
    );
    assert!(stdout.contains("run interrupted"), "{stdout}");
    no_leftovers(&dir);
    let _ = std::fs::remove_dir_all(&results);
}

/// A tmpfs mounted for one test, unmounted when dropped.
struct Tmpfs(PathBuf);

impl Drop for Tmpfs {
    fn drop(&mut self) {
        let _ = Command::new("umount").arg(&self.0).status();
        let _ = std::fs::remove_dir(&self.0);
    }
}

/// The history fills a 48 KiB tmpfs within a second or two of a 60 s run: the
/// recorder latches the write error, the workload stops at once (no drain), and
/// the verdict is unknown with the reason, never invalid (exit 2), though the
/// history lacks the deliveries of messages it saw sent. Needs root (mount).
#[test]
fn a_full_disk_stops_the_run_and_its_verdict_is_unknown_never_invalid() {
    let uid = Command::new("id").arg("-u").output().expect("id -u");
    if String::from_utf8_lossy(&uid.stdout).trim() != "0" {
        eprintln!("skipped: mounting a tmpfs needs root (CI runs as root)");
        return;
    }
    let mnt = std::env::temp_dir().join(format!("gauntlet-e2e-{}-tinyfs", std::process::id()));
    std::fs::create_dir_all(&mnt).expect("mount point");
    let mounted = Command::new("mount")
        .args(["-t", "tmpfs", "-o", "size=48k", "tmpfs"])
        .arg(&mnt)
        .status()
        .expect("mount");
    assert!(
        mounted.success(),
        "cannot mount a tmpfs at {}",
        mnt.display()
    );
    let _guard = Tmpfs(mnt.clone());
    let t = Instant::now();
    let out = Command::new(env!("CARGO_BIN_EXE_gauntlet"))
        .args([
            "run",
            "--broker",
            "redis",
            "--nemesis",
            "none",
            "--time",
            "60s",
            "--rate",
            "200",
        ])
        .arg("--results")
        .arg(&mnt)
        .output()
        .expect("gauntlet run");
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(
        out.status.code(),
        Some(2),
        "unknown, not invalid\nstdout:\n{stdout}\nstderr:\n{stderr}"
    );
    assert!(
        t.elapsed() < Duration::from_secs(45),
        "the workload went on after the disk filled: {:?}\n{stderr}",
        t.elapsed()
    );
    assert!(
        stderr.contains("writing the history failed after index")
            && stderr.contains("No space left on device"),
        "{stderr}"
    );
    assert!(stdout.contains("verdict: UNKNOWN"), "{stdout}");
    assert!(stdout.contains("not judged"), "{stdout}");
    let dir = run_folder(&stdout, &stderr);
    // The history on disk is a prefix of the run: it reads (a cut-off last line
    // is left out) and holds sends.
    let check = Command::new(env!("CARGO_BIN_EXE_gauntlet"))
        .arg("check")
        .arg(dir.join("history.jsonl"))
        .output()
        .expect("gauntlet check");
    let text = String::from_utf8_lossy(&check.stdout);
    assert!(
        matches!(check.status.code(), Some(0..=2)),
        "the prefix does not read: {}\n{text}",
        String::from_utf8_lossy(&check.stderr)
    );
    assert!(text.contains("send"), "{text}");
    no_leftovers(&dir);
}
