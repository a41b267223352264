//! Disk faults on real brokers (docs/nemesis.md, "Disk faults"): the nodes run
//! Gauntlet's filesystem over their data, which keeps what was not fsynced in
//! memory; `power-loss` drops it, as a power failure drops the page cache.
//! Seed D3 literally: "Producer -> Broker (memory) -X- (disk)".
use crate::common::*;
use serde_json::Value;
use std::time::Instant;

/// The info event of each disk fault (its start), with the filesystem's report.
fn disk_reports(r: &Run, f: &str) -> Vec<Value> {
    nemesis_events(&r.dir)
        .into_iter()
        .filter(|e| {
            e["f"] == f
                && e["type"] == "info"
                && (e["value"].get("disk").is_some() || e["value"].get("each").is_some())
        })
        .collect()
}

/// The queue workload on Redis (a primary and two replicas) with one consumer
/// slower than the producers, so acknowledged messages wait in the stream when
/// the power of the primary goes at 8 s.
fn redis_power_loss(name: &str, appendfsync: &str) -> Run {
    let schedule = schedule_file(name, &[(8_000, 0, "power-loss", "n1", 0)]);
    let toml = format!(
        r#"name = "{name}"
broker = "redis"
time = "14s"
rate = 150
seed = 5
expect = ["at-least-once"]
replay = "{}"

[redis]
appendfsync = "{appendfsync}"

[queue]
consumers = 1
processing-ms = 10
"#,
        schedule.display()
    );
    run_scenario(name, &toml, &[])
}

/// What every power-loss run of Redis shows whatever it lost: the primary came
/// back, the report shows what the disk fault did, and nothing of the run is left.
fn redis_power_loss_shown(r: &Run) {
    assert!(r.verdict["warnings"].as_array().is_none_or(|w| w
        .iter()
        .all(|w| !w.to_string().contains("did not come back"))));
    let html =
        std::fs::read_to_string(r.dir.join(gauntlet_report::folder::REPORT)).expect("report.html");
    assert!(
        html.contains("What the disk faults did"),
        "the report shows the power loss"
    );
    no_leftovers(&r.dir);
}

/// Seed D3 on Redis: `appendfsync everysec` acknowledges a write before it is
/// on the disk, so the primary's power loss loses acknowledged sends; with
/// `always` it fsyncs before it answers, and nothing acknowledged is lost.
mod d3_redis_power_loss_loses_acknowledged_sends_with_everysec_not_with_always {
    use super::*;

    #[test]
    fn everysec_loses() {
        let t = Instant::now();
        let everysec = redis_power_loss("redis-power-everysec", "everysec");
        report(
            "D3 redis appendfsync everysec, power-loss of the primary",
            &everysec,
            t,
        );
        let reports = disk_reports(&everysec, "power-loss");
        assert_eq!(reports.len(), 1, "{reports:?}");
        let disk = &reports[0]["value"]["disk"];
        eprintln!("everysec: the filesystem's report: {disk}");
        assert_eq!(reports[0]["value"]["node"], "n1");
        assert!(
            disk["dropped_bytes"].as_u64().unwrap_or(0) > 0,
            "a power loss with everysec drops unsynced AOF writes: {disk}"
        );
        assert!(
            count(&everysec, "lost") > 0,
            "{}",
            everysec.verdict["anomalies"]
        );
        assert_eq!(everysec.code, 1, "{}", everysec.verdict);
        redis_power_loss_shown(&everysec);
    }

    #[test]
    fn always_keeps() {
        let t = Instant::now();
        let always = redis_power_loss("redis-power-always", "always");
        report(
            "D3 redis appendfsync always, power-loss of the primary",
            &always,
            t,
        );
        let reports = disk_reports(&always, "power-loss");
        assert_eq!(reports.len(), 1, "{reports:?}");
        eprintln!(
            "always: the filesystem's report: {}",
            reports[0]["value"]["disk"]
        );
        assert_eq!(count(&always, "lost"), 0, "{}", always.verdict["anomalies"]);
        assert_eq!(always.code, 0, "{}", always.verdict);
        assert!(
            always.verdict["sources_lost"].is_null(),
            "{}",
            always.verdict
        );
        redis_power_loss_shown(&always);
    }
}

/// A process crash of a mounted node is still a process crash: `kill-broker`
/// keeps what the broker wrote without an fsync (the OS keeps a dead process's
/// writes), so Redis with `appendfsync no` loses nothing to it; a power loss of
/// the same node at the same moment does (the difference is the whole point).
#[test]
fn kill_broker_on_a_mounted_node_keeps_unsynced_writes_power_loss_drops_them() {
    let t = Instant::now();
    let name = "redis-mounted-kill";
    let schedule = schedule_file(
        name,
        &[
            (6_000, 2_000, "kill-broker", "n1", 0),
            (10_000, 0, "power-loss", "n2", 0),
        ],
    );
    let toml = format!(
        r#"name = "{name}"
broker = "redis"
nodes = 3
time = "14s"
rate = 100
seed = 9
expect = ["at-least-once"]
replay = "{}"

[redis]
appendfsync = "no"
"#,
        schedule.display()
    );
    let r = run_scenario(name, &toml, &[]);
    report(
        "redis appendfsync no, kill-broker n1 then power-loss of replica n2",
        &r,
        t,
    );
    let kills: Vec<Value> = nemesis_events(&r.dir)
        .into_iter()
        .filter(|e| e["f"] == "kill" && e["type"] == "info")
        .collect();
    assert_eq!(kills.len(), 1, "{kills:?}");
    // Killed through the filesystem (the node had its data mounted), which
    // then ran again: the run is valid, nothing lost.
    assert_eq!(count(&r, "lost"), 0, "{}", r.verdict["anomalies"]);
    let power = disk_reports(&r, "power-loss");
    assert_eq!(power.len(), 1, "{power:?}");
    assert_eq!(power[0]["value"]["node"], "n2");
    assert!(
        power[0]["value"]["disk"]["dropped_bytes"]
            .as_u64()
            .unwrap_or(0)
            > 0,
        "appendfsync no never syncs: the replica's power loss drops its AOF tail: {}",
        power[0]["value"]["disk"]
    );
    no_leftovers(&r.dir);
}

/// A schedule of one disk fault on several nodes at once (`targets`).
fn schedule_on(name: &str, at_ms: u64, fault: &str, targets: &[&str]) -> String {
    let list: Vec<String> = targets.iter().map(|t| format!("\"{t}\"")).collect();
    let text = format!(
        "seed = 0\n\n[[fault]]\nat_ms = {at_ms}\nduration_ms = 0\nfault = \"{fault}\"\ntargets = [{}]\npick = 7\n",
        list.join(", ")
    );
    let file = std::env::temp_dir().join(format!(
        "gauntlet-e2e-{}-{name}-schedule.toml",
        std::process::id()
    ));
    std::fs::write(&file, text).expect("write the schedule");
    file.display().to_string()
}

fn nats_power_loss_all(name: &str, sync: Option<&str>) -> Run {
    let schedule = schedule_on(name, 8_000, "power-loss", &["n1", "n2", "n3"]);
    let nats = sync.map_or(String::new(), |s| {
        format!("\n[nats]\nsync-interval = \"{s}\"\n")
    });
    let toml = format!(
        r#"name = "{name}"
broker = "nats"
nodes = 3
time = "14s"
rate = 100
seed = 5
expect = ["at-least-once"]
replay = "{schedule}"
{nats}
[queue]
consumers = 1
processing-ms = 10
"#
    );
    run_scenario(name, &toml, &[])
}

/// Jepsen's NATS 2.12.1 finding, on 2.15.1: a coordinated power failure of all
/// three nodes of an R3 stream. With JetStream's default `sync_interval` (an
/// fsync every two minutes) the acknowledged messages written since the last
/// sync are on no disk; with `sync_interval: always` every one is. The
/// filesystem's report must show what it dropped on every node; the loss of
/// the default is printed (a finding, docs/nemesis.md), the `always` side
/// must lose nothing.
mod nats_r3_power_loss_of_all_nodes_default_sync_and_always {
    use super::*;

    #[test]
    fn default_sync_loses_the_stream() {
        let t = Instant::now();
        let default = nats_power_loss_all("nats-power-all-default", None);
        report(
            "NATS R3 default sync_interval, power-loss of all 3 nodes",
            &default,
            t,
        );
        let reports = disk_reports(&default, "power-loss");
        assert_eq!(reports.len(), 1, "{reports:?}");
        let each = reports[0]["value"]["each"]
            .as_array()
            .cloned()
            .unwrap_or_default();
        assert_eq!(each.len(), 3, "{}", reports[0]);
        for e in &each {
            eprintln!(
                "default: {} dropped {} bytes",
                e["node"], e["disk"]["dropped_bytes"]
            );
            assert!(e["disk"]["dropped_bytes"].as_u64().unwrap_or(0) > 0, "{e}");
        }
        eprintln!(
            "FINDING nats default sync, power-loss:all: valid {}, lost {}, unseen {}, sends ok {}, drained {}, files dropped on n1: {}",
            default.verdict["valid"],
            count(&default, "lost"),
            count(&default, "unseen"),
            default.verdict["stats"]["sends_ok"],
            default.verdict["stats"]["drained"],
            each[0]["disk"]["files"]
                .as_array()
                .map(|f| f.iter().map(|f| f["path"].to_string()).collect::<Vec<_>>().join(" "))
                .unwrap_or_default()
        );
        // What 2.15.1 did here in every run (docs/nemesis.md, "Findings: disk
        // faults"): no node had synced the stream's own definition, so the power
        // loss took it on all three, with every message. Whether an acknowledged
        // message was still unread when it went (`lost` or `unseen`, printed
        // above) depends on how far behind the consumer was: 4 seeds of 5 on an
        // idle machine, and none in a run beside two CPU hogs that kept the
        // producers slow (2026-12-07).
        for e in &each {
            let files: Vec<String> = e["disk"]["files"]
                .as_array()
                .into_iter()
                .flatten()
                .filter_map(|f| f["path"].as_str().map(str::to_string))
                .collect();
            assert!(
                files
                    .iter()
                    .any(|p| p.ends_with("streams/gauntlet/meta.inf")),
                "{}: the stream's definition survived: {files:?}",
                e["node"]
            );
        }
        // The lost-stream rule (docs/checkers.md, "A lost stream"): the drain
        // was told, and told again 10 s later, that the stream does not exist;
        // the marker says so, the verdict names the stream, and whatever was
        // acknowledged and unread is `lost`, never `unseen`.
        assert_eq!(
            default.verdict["stats"]["drained"], true,
            "{}",
            default.verdict
        );
        let gone = default.verdict["sources_lost"]
            .as_array()
            .cloned()
            .unwrap_or_default();
        eprintln!("sources_lost: {gone:?}");
        assert_eq!(gone.len(), 1, "{}", default.verdict);
        assert_eq!(gone[0]["what"], "stream gauntlet", "{}", gone[0]);
        assert_eq!(
            count(&default, "unseen"),
            0,
            "{}",
            default.verdict["anomalies"]
        );
        assert_ne!(default.verdict["valid"], "unknown", "{}", default.verdict);
        assert!(
            default.verdict["warnings"]
                .as_array()
                .into_iter()
                .flatten()
                .any(|w| w
                    .as_str()
                    .is_some_and(|w| w.starts_with("the broker lost stream gauntlet"))),
            "{}",
            default.verdict["warnings"]
        );
        no_leftovers(&default.dir);
    }

    #[test]
    fn sync_always_keeps() {
        let t = Instant::now();
        let always = nats_power_loss_all("nats-power-all-always", Some("always"));
        report(
            "NATS R3 sync_interval always, power-loss of all 3 nodes",
            &always,
            t,
        );
        assert_eq!(count(&always, "lost"), 0, "{}", always.verdict["anomalies"]);
        assert_eq!(always.code, 0, "{}", always.verdict);
        no_leftovers(&always.dir);
    }
}

fn kafka_storage_power_loss(name: &str, fsync: bool) -> Run {
    let schedule = schedule_file(name, &[(8_000, 0, "power-loss:storage", "n1", 0)]);
    let toml = format!(
        r#"name = "{name}"
broker = "kafka"
time = "14s"
rate = 60
seed = 5
expect = ["at-least-once"]
replay = "{}"

[storage]
fsync = {fsync}
synchronous-commit = true

[queue]
consumers = 1
processing-ms = 20
"#,
        schedule.display()
    );
    run_scenario(name, &toml, &[])
}

/// The Kafka cluster's PostgreSQL (the storage node) loses its power. With
/// `fsync` on, a commit is on the disk before tansu acknowledges: nothing
/// lost. With `fsync` off and `synchronous_commit` still on, PostgreSQL waits
/// for its WAL write but never for the disk, so only a power loss (never a
/// process kill) can lose it: acknowledged records are gone (lost, or unseen
/// when what PostgreSQL lost includes the topic itself and the drain cannot
/// read it to its end).
mod kafka_storage_power_loss_keeps_with_fsync_and_loses_without {
    use super::*;

    #[test]
    fn fsync_keeps() {
        let t = Instant::now();
        let on = kafka_storage_power_loss("kafka-storage-power-fsync", true);
        report("kafka storage fsync on, power-loss:storage", &on, t);
        let reports = disk_reports(&on, "power-loss");
        assert_eq!(reports.len(), 1, "{reports:?}");
        assert_eq!(reports[0]["value"]["node"], "storage", "{}", reports[0]);
        assert_eq!(count(&on, "lost"), 0, "{}", on.verdict["anomalies"]);
        no_leftovers(&on.dir);
    }

    #[test]
    fn no_fsync_loses() {
        let t = Instant::now();
        let off = kafka_storage_power_loss("kafka-storage-power-nofsync", false);
        report("kafka storage fsync off, power-loss:storage", &off, t);
        let reports = disk_reports(&off, "power-loss");
        assert_eq!(reports.len(), 1, "{reports:?}");
        eprintln!(
            "FINDING kafka storage fsync off, power-loss:storage: valid {}, lost {}, unseen {}, sends ok {}, drained {}, warnings {}, dropped {} bytes",
            off.verdict["valid"],
            count(&off, "lost"),
            count(&off, "unseen"),
            off.verdict["stats"]["sends_ok"],
            off.verdict["stats"]["drained"],
            off.verdict["warnings"],
            reports[0]["value"]["disk"]["dropped_bytes"]
        );
        assert!(
            reports[0]["value"]["disk"]["dropped_bytes"]
                .as_u64()
                .unwrap_or(0)
                > 0,
            "{}",
            reports[0]
        );
        assert!(
            count(&off, "lost") + count(&off, "unseen") > 0,
            "acknowledged records gone: {}",
            off.verdict["anomalies"]
        );
        assert_ne!(off.verdict["valid"], true, "{}", off.verdict);
        no_leftovers(&off.dir);
    }
}

/// What a corruption did, and what the corrupted node said about it in its log.
fn corruption_finding(r: &Run, label: &str) -> Value {
    let f = if label == "wipe" { "wipe" } else { "corrupt" };
    let reports = disk_reports(r, f);
    assert_eq!(reports.len(), 1, "{reports:?}");
    let disk = reports[0]["value"]["disk"].clone();
    let log = std::fs::read_to_string(r.dir.join("nodes").join("n1.log")).unwrap_or_default();
    let said: Vec<&str> = log
        .lines()
        .filter(|l| {
            let l = l.to_ascii_lowercase();
            l.contains("corrupt") || l.contains("checksum") || l.contains("truncat")
        })
        .take(5)
        .collect();
    eprintln!(
        "FINDING {label}: valid {}, lost {}, unseen {}, duplicate-write {}, sends ok {}, warnings {}; changes {}; n1 said: {said:?}",
        r.verdict["valid"],
        count(r, "lost"),
        count(r, "unseen"),
        count(r, "duplicate-write"),
        r.verdict["stats"]["sends_ok"],
        r.verdict["warnings"],
        disk["changes"]
    );
    disk
}

fn nats_corrupt(name: &str, corruption: &str) -> Run {
    let schedule = schedule_file(
        name,
        &[
            (5_000, 0, corruption, "n1", 21),
            (9_000, 0, "restart-broker", "n2", 0),
            (13_000, 0, "restart-broker", "n3", 0),
        ],
    );
    let toml = format!(
        r#"name = "{name}"
broker = "nats"
nodes = 3
time = "17s"
rate = 60
seed = 5
expect = ["at-least-once"]
replay = "{}"
"#,
        schedule.display()
    );
    run_scenario(name, &toml, &[])
}

/// JetStream R3 with one node's data files corrupted while it is down (three
/// bits flipped in its message blocks and indexes; or its newest data file
/// cut; or its whole data directory gone, a disk replaced), then the two other nodes restarted in turn, so the stream's
/// leadership must pass through the corrupted node. What it does with it is a
/// finding (printed, docs/nemesis.md); the test holds the harness to saying
/// exactly what it changed, and to a verdict.
mod nats_r3_corrupt_one_node_then_restart_the_others {
    use super::*;

    /// One corruption of n1 while it is down, then n2 and n3 restarted.
    fn corrupt_then_restart(corruption: &str) {
        let t = Instant::now();
        let name = format!("nats-{}", corruption.replace(':', "-"));
        let r = nats_corrupt(&name, corruption);
        report(
            &format!("NATS R3 {corruption} on n1, restarts of n2, n3"),
            &r,
            t,
        );
        let disk = corruption_finding(&r, corruption);
        assert_eq!(disk["fault"], corruption, "{disk}");
        let changes = disk["changes"].as_array().cloned().unwrap_or_default();
        match corruption {
            "wipe" => {
                assert!(!changes.is_empty(), "{disk}");
                for c in &changes {
                    assert!(c["removed_bytes"].is_u64(), "{c}");
                }
            }
            "corrupt:bitflip" => {
                assert_eq!(changes.len(), 3, "{disk}");
                for c in &changes {
                    assert!(
                        c["path"]
                            .as_str()
                            .is_some_and(|p| p.starts_with("jetstream/")),
                        "{c}"
                    );
                    assert!(
                        c["offset"].is_u64() && c["bit"].as_u64().is_some_and(|b| b < 8),
                        "{c}"
                    );
                }
            }
            _ => {
                assert_eq!(changes.len(), 1, "{disk}");
                let c = &changes[0];
                assert!(c["to_size"].as_u64() < c["from_size"].as_u64(), "{c}");
            }
        }
        assert!(r.verdict["valid"].is_boolean() || r.verdict["valid"] == "unknown");
        let html = std::fs::read_to_string(r.dir.join(gauntlet_report::folder::REPORT))
            .expect("report.html");
        assert!(html.contains("What the disk faults did"));
        no_leftovers(&r.dir);
    }

    #[test]
    fn bitflip() {
        corrupt_then_restart("corrupt:bitflip");
    }

    #[test]
    fn truncate() {
        corrupt_then_restart("corrupt:truncate");
    }

    #[test]
    fn wipe() {
        corrupt_then_restart("wipe");
    }
}

/// A node whose filesystem cannot mount (here a stand-in for the binary that
/// fails as a mount denied by a security profile does: its FAILED line, exit
/// 86) stops the run before the workload, as a failure of the harness that
/// names the node and the reason, never as a finding about the broker; and
/// nothing of the run is left.
#[test]
fn a_filesystem_that_cannot_mount_is_a_harness_failure_naming_the_node() {
    let fake =
        std::env::temp_dir().join(format!("gauntlet-e2e-{}-fake-diskfs", std::process::id()));
    std::fs::write(
        &fake,
        "#!/bin/sh\necho 'gauntlet-diskfs: FAILED: mount /data: Operation not permitted (a denying profile)' >&2\nexit 86\n",
    )
    .expect("write the stand-in");
    {
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(&fake, std::fs::Permissions::from_mode(0o755)).expect("chmod");
    }
    let results = results_dir("diskfs-denied");
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_gauntlet"))
        .args([
            "run",
            "--broker",
            "redis",
            "--nodes",
            "1",
            "--time",
            "5s",
            "--nemesis",
            "power-loss",
        ])
        .arg("--results")
        .arg(&results)
        .env("GAUNTLET_DISKFS", &fake)
        .output()
        .expect("start gauntlet");
    let stderr = String::from_utf8_lossy(&out.stderr);
    eprintln!("exit {:?}\n{stderr}", out.status.code());
    assert_eq!(out.status.code(), Some(3), "{stderr}");
    assert!(
        stderr.contains(
            "Gauntlet's filesystem failed in node n1: mount /data: Operation not permitted"
        ),
        "{stderr}"
    );
    assert!(stderr.contains("not of the broker"), "{stderr}");
    let history = history_under(&results);
    assert!(
        history.is_none_or(|h| std::fs::read_to_string(h)
            .unwrap_or_default()
            .lines()
            .count()
            == 0),
        "no op was recorded"
    );
}

/// A torn write: the primary's power loss keeps a random prefix of the AOF's
/// unsynced tail (`power-loss:torn`), which can end inside a command. Redis
/// comes back (it truncates an AOF whose last command is cut short,
/// `aof-load-truncated yes`), and what it lost is acknowledged sends, never a
/// node that does not start.
#[test]
fn redis_torn_aof_tail_comes_back_truncated() {
    let t = Instant::now();
    let name = "redis-power-torn";
    let schedule = schedule_file(name, &[(8_000, 0, "power-loss:torn", "n1", 41)]);
    let toml = format!(
        r#"name = "{name}"
broker = "redis"
nodes = 1
time = "12s"
rate = 150
seed = 5
expect = ["at-least-once"]
replay = "{}"

[redis]
appendfsync = "no"

[queue]
consumers = 1
processing-ms = 10
"#,
        schedule.display()
    );
    let r = run_scenario(name, &toml, &[]);
    report("redis appendfsync no, power-loss:torn", &r, t);
    let reports = disk_reports(&r, "power-loss");
    assert_eq!(reports.len(), 1, "{reports:?}");
    let disk = &reports[0]["value"]["disk"];
    eprintln!("torn: the filesystem's report: {disk}");
    assert_eq!(disk["fault"], "power-loss:torn", "{disk}");
    assert!(disk["pending_bytes"].as_u64().unwrap_or(0) > 0, "{disk}");
    assert!(
        disk["dropped_bytes"].as_u64().unwrap_or(0) > 0,
        "a torn write loses at least its last byte: {disk}"
    );
    assert_eq!(
        disk["kept_bytes"].as_u64().unwrap_or(0) + disk["dropped_bytes"].as_u64().unwrap_or(0),
        disk["pending_bytes"].as_u64().unwrap_or(0),
        "{disk}"
    );
    let warnings = r.verdict["warnings"].to_string();
    assert!(!warnings.contains("did not come back"), "{warnings}");
    let log = std::fs::read_to_string(r.dir.join("nodes").join("n1.log")).unwrap_or_default();
    eprintln!(
        "torn: Redis said: {:?}",
        log.lines()
            .filter(|l| l.contains("AOF") || l.contains("truncat"))
            .take(6)
            .collect::<Vec<_>>()
    );
    assert!(count(&r, "lost") > 0, "{}", r.verdict["anomalies"]);
    no_leftovers(&r.dir);
}

/// RabbitMQ 3.10.8 loses its power 5 s after it started: the file of its
/// enabled feature flags, written at boot and not fsynced yet, comes back
/// empty, and the node no longer boots (`{case_clause,{ok,[]}}` in
/// `rabbit_feature_flags`). A finding (docs/nemesis.md): the run does not hang
/// on it, and its verdict says which node did not come back, with its log.
#[test]
fn rabbitmq_power_loss_soon_after_boot_leaves_a_node_that_does_not_boot() {
    let t = Instant::now();
    let name = "rabbitmq-power-boot";
    let schedule = schedule_file(name, &[(5_000, 0, "power-loss", "n1", 0)]);
    let r = run(
        name,
        &[
            "--broker",
            "rabbitmq",
            "--nodes",
            "1",
            "--time",
            "10s",
            "--rate",
            "50",
            "--replay",
            &schedule.display().to_string(),
        ],
    );
    report("rabbitmq, power-loss 5 s after boot", &r, t);
    let reports = disk_reports(&r, "power-loss");
    assert_eq!(reports.len(), 1, "{reports:?}");
    let files = reports[0]["value"]["disk"]["files"].to_string();
    eprintln!("rabbitmq: dropped {files}");
    let warnings = r.verdict["warnings"].to_string();
    eprintln!(
        "rabbitmq: warnings (first 600 characters): {}",
        &warnings[..warnings.len().min(600)]
    );
    assert!(warnings.contains("a node did not come back"), "{warnings}");
    assert!(warnings.contains("rabbit_feature_flags"), "{warnings}");
    assert!(files.contains("feature_flags"), "{files}");
    assert!(t.elapsed() < std::time::Duration::from_secs(600), "no hang");
    no_leftovers(&r.dir);
}
