//! What every end-to-end test uses: run `gauntlet run`, read its verdict, check the
//! run folder and that no container of the run is left.
use serde_json::Value;
use std::path::{Path, PathBuf};
use std::process::Command;

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

pub fn count(r: &Run, anomaly: &str) -> u64 {
    r.verdict["anomalies"][anomaly]["count"]
        .as_u64()
        .unwrap_or(u64::MAX)
}

pub fn assert_run_folder(dir: &Path) {
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

pub fn no_leftovers(dir: &Path) {
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
    // `<scenario>-<stamp>`, as the run id starts: the stamp alone can match another
    // run started in the same second (other test processes on the same machine).
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
    let stamp = format!("{scenario}-{}", name(Some(dir)));
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        !text.lines().any(|l| l.contains(&stamp)),
        "containers of run {stamp} left behind: {text}"
    );
}
