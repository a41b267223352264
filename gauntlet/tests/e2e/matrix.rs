//! `gauntlet matrix`: a negative control that catches what it declares passes, a
//! declaration the run contradicts fails the matrix (exit 1), and the combined
//! JUnit file and index page say which.
use std::path::PathBuf;
use std::process::Command;

#[test]
fn matrix_passes_what_matches_and_fails_what_contradicts_its_declaration() {
    let root = std::env::temp_dir().join(format!("gauntlet-e2e-{}-matrix", std::process::id()));
    let _ = std::fs::remove_dir_all(&root);
    std::fs::create_dir_all(root.join("scenarios")).expect("temp dir");
    // One unsafe run (ack before processing, consumer killed while processing),
    // listed twice: once as the negative control it is, once wrongly declared safe.
    std::fs::write(
        root.join("scenarios/redis-d5.toml"),
        r#"name = "redis-d5"
broker = "redis"
nodes = 1
time = "10s"
rate = 50
seed = 3
expect = ["at-least-once"]
nemesis = ["kill-consumer:after-ack"]
nemesis-interval = "3s"
[delivery]
mode = "at-most-once"
[queue]
consumers = 2
processing-ms = 5
"#,
    )
    .expect("scenario");
    std::fs::write(
        root.join("matrix.toml"),
        r#"[[scenario]]
file = "scenarios/redis-d5.toml"
profiles = ["smoke"]
outcome = "violated"
must-find = ["lost"]
why = "negative control"

[[scenario]]
file = "scenarios/redis-d5.toml"
profiles = ["smoke"]
why = "wrongly declared safe"
"#,
    )
    .expect("matrix");
    let out = Command::new(env!("CARGO_BIN_EXE_gauntlet"))
        .arg("matrix")
        .arg(root.join("matrix.toml"))
        .args(["--profile", "any", "--results"])
        .arg(root.join("results"))
        .output()
        .expect("start gauntlet");
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    // A profile no entry names: an error (exit 3) with the profiles there are.
    assert_eq!(out.status.code(), Some(3), "{stdout}\n{stderr}");
    assert!(stderr.contains("no profile `any`"), "{stderr}");

    let out = Command::new(env!("CARGO_BIN_EXE_gauntlet"))
        .arg("matrix")
        .arg(root.join("matrix.toml"))
        .args(["--profile", "smoke", "--results"])
        .arg(root.join("results"))
        .output()
        .expect("start gauntlet");
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{stdout}\n{stderr}");
    assert!(
        stdout.contains("1 of 2 scenario(s) as declared"),
        "{stdout}"
    );
    let dir: PathBuf = stdout
        .lines()
        .find_map(|l| l.split("matrix folder: ").nth(1))
        .map(PathBuf::from)
        .unwrap_or_else(|| panic!("no matrix folder in\n{stdout}"));
    let junit = std::fs::read_to_string(dir.join("junit.xml")).expect("junit.xml");
    assert!(
        junit.contains(r#"tests="2" failures="1" errors="0""#),
        "{junit}"
    );
    assert!(junit.contains("contradicts-declaration"), "{junit}");
    assert!(
        junit.contains("declared valid, but the verdict is invalid"),
        "{junit}"
    );
    let index = std::fs::read_to_string(dir.join("index.html")).expect("index.html");
    assert_eq!(index.matches("report.html").count(), 2, "{index}");
    let summary: serde_json::Value = serde_json::from_str(
        &std::fs::read_to_string(dir.join("summary.json")).expect("summary.json"),
    )
    .expect("summary JSON");
    assert_eq!(summary[0]["pass"], true);
    assert_eq!(summary[1]["pass"], false);
    for row in summary.as_array().expect("rows") {
        let run = PathBuf::from(row["run"].as_str().expect("run folder"));
        assert!(run.join("report.html").is_file(), "{}", run.display());
    }
    let _ = std::fs::remove_dir_all(&root);
}
