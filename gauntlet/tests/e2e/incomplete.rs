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

/// Ctrl-C in the middle of a 60 s run, once more than 50 sends are acknowledged in
/// its history: the containers go, what was recorded is judged and written
/// (verdict.json, report.html) marked interrupted, exit 130, and the workload
/// stops at the signal instead of going on to its end. No `drained` marker, so
/// at-least-once cannot hold.
#[test]
fn ctrl_c_mid_run_writes_an_interrupted_verdict_and_exits_130() {
    let results = results_dir("interrupted");
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
    let first_op = Instant::now();
    // The event the test needs before the signal: acknowledged sends on record
    // (not a fixed time, which a loaded machine fills with fewer of them).
    let history = wait_for("the run's history", Duration::from_secs(60), || {
        history_under(&results)
    });
    let acked = |events: &[Value]| {
        events
            .iter()
            .filter(|e| e["f"] == "send" && e["type"] == "ok")
            .count()
    };
    wait_for(
        "more than 50 sends acknowledged",
        Duration::from_secs(120),
        || Some(()).filter(|_| acked(&history_events(&history)) > 50),
    );
    let signalled = Instant::now();
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
    let into_run = signalled.duration_since(first_op).as_secs_f64();
    eprintln!(
        "Ctrl-C {into_run:.1} s after the first op; exit {:.1} s after it",
        signalled.elapsed().as_secs_f64()
    );
    // The workload stopped at the signal: its last client op came within 20 s
    // of it (generous for a loaded machine), not at the 60 s the run was given.
    let events = history_events(&history);
    let times: Vec<u64> = events
        .iter()
        .filter(|e| e["process"].is_u64())
        .filter_map(|e| e["time"].as_u64())
        .collect();
    let span = (times.iter().max().copied().unwrap_or(0) - times.iter().min().copied().unwrap_or(0))
        as f64
        / 1e9;
    eprintln!("client ops span {span:.1} s of the history (60 s planned)");
    assert!(
        span < into_run + 20.0 && span < 60.0,
        "the run went on after Ctrl-C: client ops span {span:.1} s, Ctrl-C came {into_run:.1} s after the first op"
    );
    let dir = run_folder(&stdout, &seen);
    remember_pid(&dir, child.id());
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

/// The history fills a 48 KiB tmpfs within a second or two of the workload: the
/// recorder latches the write error, the workload stops at once (no drain), and
/// the verdict is unknown with the reason, never invalid (exit 2), though the
/// history lacks the deliveries of messages it saw sent. Needs root (mount).
///
/// The run is given 120 s; it must end within 60 s of its first op (the disk fills
/// in a few seconds even on a loaded machine, whose deployment time before the
/// first op does not count), which a workload that went on cannot.
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
    let mut child = Command::new(env!("CARGO_BIN_EXE_gauntlet"))
        .args([
            "run",
            "--broker",
            "redis",
            "--nemesis",
            "none",
            "--time",
            "120s",
            "--rate",
            "200",
        ])
        .arg("--results")
        .arg(&mnt)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("gauntlet run");
    // stderr read as it comes, to note when the workload began.
    let err = child.stderr.take().expect("stderr");
    let reader = std::thread::spawn(move || {
        let mut text = String::new();
        let mut first_op = None;
        for line in BufReader::new(err).lines().map_while(Result::ok) {
            if first_op.is_none() && line.contains("first op after") {
                first_op = Some(Instant::now());
            }
            text.push_str(&line);
            text.push('\n');
        }
        (text, first_op)
    });
    let mut stdout = String::new();
    std::io::Read::read_to_string(&mut child.stdout.take().expect("stdout"), &mut stdout)
        .expect("stdout");
    let status = child.wait().expect("wait");
    let ended = Instant::now();
    let (stderr, first_op) = reader.join().expect("stderr reader");
    assert_eq!(
        status.code(),
        Some(2),
        "unknown, not invalid\nstdout:\n{stdout}\nstderr:\n{stderr}"
    );
    let first_op = first_op.unwrap_or_else(|| panic!("the workload never began:\n{stderr}"));
    let ran = ended.duration_since(first_op);
    eprintln!(
        "full disk: the run ended {:.1} s after its first op (deadline 60 s, 120 s planned)",
        ran.as_secs_f64()
    );
    assert!(
        ran < Duration::from_secs(60),
        "the workload went on after the disk filled: {ran:?}\n{stderr}"
    );
    assert!(
        stderr.contains("writing the history failed after index")
            && stderr.contains("No space left on device"),
        "{stderr}"
    );
    assert!(stdout.contains("verdict: UNKNOWN"), "{stdout}");
    assert!(stdout.contains("not judged"), "{stdout}");
    let dir = run_folder(&stdout, &stderr);
    remember_pid(&dir, child.id());
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

/// The labelled containers and networks of `run` (`docker ps -a` / `docker network ls`).
fn objects_of(run: &str) -> Vec<String> {
    let mut out = Vec::new();
    for args in [&["ps", "-a", "-q"][..], &["network", "ls", "-q"][..]] {
        let o = Command::new("docker")
            .args(args)
            .args(["--filter", &format!("label=gauntlet.run={run}")])
            .output()
            .expect("docker");
        out.extend(
            String::from_utf8_lossy(&o.stdout)
                .lines()
                .map(str::to_string),
        );
    }
    out
}

/// A run of Redis with `power-loss` scheduled (so its node has Gauntlet's
/// filesystem mounted inside over the data directory), once its workload runs
/// and the mount is up: the child, the run id, the node, its root filesystem
/// on the host, and the host pids of the filesystem's processes with their
/// start times (a pid the kernel hands to another process later is not theirs).
struct DiskRun {
    child: std::process::Child,
    run: String,
    node: String,
    node_root: String,
    fs_pids: Vec<(String, String)>,
    file: PathBuf,
    results: PathBuf,
}

/// A process's start time (field 22 of `/proc/PID/stat`, after the command in
/// parentheses), `None` when there is no such process.
fn start_time(pid: &str) -> Option<String> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    let after = &stat[stat.rfind(')')? + 2..];
    after.split_whitespace().nth(19).map(str::to_string)
}

fn start_disk_run(what: &str) -> DiskRun {
    let name = format!("disk-{what}-{}", std::process::id());
    let results = results_dir(&format!("disk-{what}"));
    let file = std::env::temp_dir().join(format!("{name}.toml"));
    std::fs::write(
        &file,
        format!(
            r#"name = "{name}"
broker = "redis"
nodes = 1
time = "120s"
rate = 50
nemesis = ["power-loss"]
nemesis-interval = "60s"
"#
        ),
    )
    .expect("scenario");
    let (child, _seen) = start_run(&[&file.display().to_string()], &results);
    // From here a failed assertion still stops the run (Drop).
    let mut r = DiskRun {
        child,
        run: String::new(),
        node: String::new(),
        node_root: String::new(),
        fs_pids: Vec::new(),
        file,
        results,
    };
    // The run id begins with the results folder's `<scenario>/<stamp>`, joined by
    // `-` (`latest` is a link to the stamp's folder).
    let history = wait_for("the run's history", Duration::from_secs(60), || {
        history_under(&r.results)
    });
    let dir = std::fs::canonicalize(history.parent().expect("run folder")).expect("run folder");
    let stamp = dir.file_name().and_then(|s| s.to_str()).expect("stamp");
    // The id goes on with the harness's pid: read it off the run's containers.
    let prefix = format!("{name}-{stamp}");
    r.run = wait_for("the run's containers", Duration::from_secs(60), || {
        labelled_runs()
            .lines()
            .find(|l| l.starts_with(&prefix))
            .map(str::to_string)
    });
    let objects = objects_of(&r.run);
    assert!(!objects.is_empty(), "no container of run {}", r.run);
    // The filesystem is mounted in the node, and its process runs there.
    r.node = wait_for("the node's mount", Duration::from_secs(60), || {
        objects.iter().find(|id| {
            Command::new("docker")
                .args(["exec", id, "grep", "-q", "fuse", "/proc/mounts"])
                .status()
                .is_ok_and(|s| s.success())
        })
    })
    .clone();
    let top = Command::new("docker")
        .args(["top", &r.node, "-eo", "pid,args"])
        .output()
        .expect("docker top");
    let top = String::from_utf8_lossy(&top.stdout).to_string();
    r.fs_pids = top
        .lines()
        .filter(|l| l.contains("diskfs"))
        .filter_map(|l| l.split_whitespace().next().map(str::to_string))
        .filter_map(|pid| start_time(&pid).map(|t| (pid, t)))
        .collect();
    // Where the node's own root is on the host: a mount of this run left on the
    // machine would be under it. Other tests' filesystems may be mounted on the
    // machine meanwhile (the diskfs tests, other runs): they are not this run's.
    let inspect = Command::new("docker")
        .args(["inspect", "-f", "{{.GraphDriver.Data.MergedDir}}", &r.node])
        .output()
        .expect("docker inspect");
    r.node_root = String::from_utf8_lossy(&inspect.stdout).trim().to_string();
    eprintln!(
        "run {}: node {} (root {}), the filesystem's processes {:?}\n{top}",
        r.run, r.node, r.node_root, r.fs_pids
    );
    assert!(
        !r.fs_pids.is_empty(),
        "no filesystem process in the node:\n{top}"
    );
    r
}

impl Drop for DiskRun {
    /// A test that failed before its signal still ends the run it started.
    fn drop(&mut self) {
        if let Ok(None) = self.child.try_wait() {
            let _ = Command::new("kill")
                .args(["-INT", &self.child.id().to_string()])
                .status();
            let _ = self.child.wait();
        }
    }
}

impl DiskRun {
    /// Nothing of the run is left: no container or network, no process of its
    /// filesystem, no mount of it on the machine.
    fn assert_gone(&self) {
        assert_eq!(objects_of(&self.run), Vec::<String>::new(), "left behind");
        for (pid, started) in &self.fs_pids {
            assert!(
                start_time(pid).as_ref() != Some(started),
                "the filesystem's process {pid} outlived its node"
            );
        }
        let mounts = std::fs::read_to_string("/proc/mounts").unwrap_or_default();
        let ours = |l: &&str| {
            l.contains(&self.node)
                || l.contains(&self.run)
                || (!self.node_root.is_empty() && l.contains(&self.node_root))
        };
        let left: Vec<&str> = mounts.lines().filter(ours).collect();
        assert!(
            left.is_empty(),
            "a mount of the run is left on the machine: {left:?}"
        );
        let _ = std::fs::remove_file(&self.file);
        let _ = std::fs::remove_dir_all(&self.results);
    }

    fn signal(&mut self, sig: &str) -> Option<i32> {
        let status = Command::new("kill")
            .args([sig, &self.child.id().to_string()])
            .status()
            .expect("kill");
        assert!(status.success());
        self.child.wait().expect("wait").code()
    }
}

/// Ctrl-C of a run with a disk fault: the run ends as interrupted (exit 130)
/// and takes its node with it, and the mount inside with the node.
#[test]
fn a_disk_fault_run_stopped_by_ctrl_c_leaves_no_mount() {
    let mut r = start_disk_run("ctrl-c");
    let code = r.signal("-INT");
    assert_eq!(code, Some(130));
    r.assert_gone();
}

/// A run with a disk fault killed with SIGKILL: its node, with the mount
/// inside, outlives it (nothing could clean up); `gauntlet clean --run ID`
/// removes it and the run's network, and the mount goes with the node.
#[test]
fn a_disk_fault_run_killed_with_sigkill_leaves_no_mount_after_gauntlet_clean() {
    let mut r = start_disk_run("sigkill");
    r.signal("-KILL");
    assert!(
        !objects_of(&r.run).is_empty(),
        "the node went with the harness"
    );
    let clean = Command::new(env!("CARGO_BIN_EXE_gauntlet"))
        .args(["clean", "--run", &r.run])
        .output()
        .expect("gauntlet clean");
    eprintln!(
        "gauntlet clean --run {}: exit {:?}\n{}{}",
        r.run,
        clean.status.code(),
        String::from_utf8_lossy(&clean.stdout),
        String::from_utf8_lossy(&clean.stderr)
    );
    assert!(clean.status.success());
    r.assert_gone();
}
