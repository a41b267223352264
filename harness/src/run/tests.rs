//! The run pipeline on a [`FakeDeployment`]: refusals, schedules and replay,
//! worker restarts, the final heal before the drain, and the teardown. Worker
//! processes are a small shell script standing in for `gauntlet worker`.
use super::fake::{FakeBackend, FakeDeployment, NodeState};
use super::faults::schedule_for;
use super::nemesis::{RoleNames, RunCluster};
use super::queue::finish;
use super::workers::{respawn_exited, Pool, WorkerSpec};
use super::*;
use crate::broker::BrokerKind;
use gauntlet_nemesis::{Consumers, FaultKind, InFlight, KillConsumerAt, Schedule, ScheduledFault};
use gauntlet_workloads::queue::QueueConfig;
use gauntlet_workloads::Recorder;
use std::str::FromStr;
use std::sync::Arc;

/// A fresh folder for one test (also used by `events_tests`).
pub(super) fn temp(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("gauntlet-run-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).expect("temp dir");
    dir
}

fn scenario(broker: &str, nemesis: &[&str]) -> Scenario {
    let mut s = Scenario::default_scenario();
    s.broker = BrokerKind::from_str(broker).expect("a broker");
    s.nemesis = nemesis
        .iter()
        .map(|n| FaultKind::from_str(n).expect("a fault"))
        .collect();
    s
}

fn refusal(s: &Scenario, d: &FakeDeployment) -> String {
    match schedule_for(s, d, Duration::from_secs(20)) {
        Ok(_) => String::new(),
        Err(e) => e.to_string(),
    }
}

fn kafka_three() -> FakeDeployment {
    FakeDeployment::new(BrokerKind::Kafka, 3)
}

#[test]
fn faults_the_deployment_cannot_do_are_refused_with_the_reason() {
    let one = FakeDeployment::new(BrokerKind::Redis, 1);
    let three = FakeDeployment::new(BrokerKind::Redis, 3);
    let two = FakeDeployment::new(BrokerKind::Redis, 2);
    let no_exec = FakeDeployment::new(BrokerKind::Redis, 3).with_caps(|c| c.net_admin_exec = false);
    let no_proc = FakeDeployment::new(BrokerKind::Redis, 3).with_caps(|c| c.process_faults = false);
    let no_pause = FakeDeployment::new(BrokerKind::Redis, 3).with_caps(|c| c.pause = false);
    let with_storage = FakeDeployment::new(BrokerKind::Redis, 3).with_storage();
    let cases: [(&FakeDeployment, &str, &str); 13] = [
        (&no_pause, "pause", "cannot pause nodes"),
        (&no_pause, "pause:leader", "cannot pause nodes"),
        (
            &one,
            "partition",
            "needs at least two nodes, the deployment has 1",
        ),
        (&no_exec, "partition", "cannot run iptables"),
        (&no_exec, "netem", "cannot run tc"),
        (&no_proc, "kill-broker", "does not offer process faults"),
        (&no_proc, "pause:leader", "does not offer process faults"),
        (
            &two,
            "partition:ring",
            "needs at least three nodes, the deployment has 2",
        ),
        (&three, "kill-broker:storage", "has no storage node"),
        (&one, "partition:leader", "needs at least two nodes"),
        // A link fault aimed at a role: the consumers' dedup store only where there is one,
        // and never the storage node, which no client talks to.
        (&three, "client-partition:dedup-store", "has no dedup store"),
        (
            &with_storage,
            "client-partition:storage",
            "the clients never talk to the storage node",
        ),
        (
            &kafka_three(),
            "ack-loss:leader",
            "cannot tell which node leads",
        ),
    ];
    for (d, fault, why) in cases {
        let got = refusal(&scenario("redis", &[fault]), d);
        assert!(got.contains(why), "{fault}: {got:?} does not say {why:?}");
        assert!(
            got.contains(fault.split(':').next().unwrap_or(fault)),
            "{got}"
        );
    }
    // Kafka names no single leader: a fault aimed at it is refused, by name.
    let kafka = FakeDeployment::new(BrokerKind::Kafka, 3);
    let got = refusal(&scenario("kafka", &["kill-broker:leader"]), &kafka);
    assert!(got.contains("kafka cannot tell which node leads"), "{got}");
    // A deployment that cannot pause still kills.
    assert_eq!(
        refusal(&scenario("redis", &["kill-broker:leader"]), &no_pause),
        ""
    );
    // The same faults on a deployment that can do them are accepted.
    let able = FakeDeployment::new(BrokerKind::Redis, 3).with_storage();
    for fault in [
        "partition",
        "netem",
        "kill-broker",
        "pause:leader",
        "partition:ring",
        "kill-broker:storage",
        "ack-loss",
        "client-partition:leader",
    ] {
        assert_eq!(refusal(&scenario("redis", &[fault]), &able), "", "{fault}");
    }
    // crash-producer is the txn workload's: refused elsewhere, with the reason.
    let got = refusal(&scenario("redis", &["crash-producer"]), &able);
    assert!(
        got.contains("crash-producer on redis: only the txn workload does it")
            && got.contains("this run's workload is queue"),
        "{got}"
    );
}

#[test]
fn crash_producer_is_taken_by_the_txn_workload_and_never_scheduled() {
    // docs/txn.md: `--workload txn --nemesis crash-producer` (alone or with
    // other faults); the faults the nemesis plays are the others.
    let kafka = FakeDeployment::new(BrokerKind::Kafka, 3);
    let mut s = scenario("kafka", &["crash-producer"]);
    s.workload = Workload::Txn;
    assert_eq!(
        fault_kinds(&s).ok(),
        Some(vec![FaultKind::CrashProducer]),
        "accepted"
    );
    let only = schedule_for(&s, &kafka, Duration::from_secs(20)).expect("accepted");
    assert!(only.faults.is_empty(), "{only:?}");
    let mut both = scenario("kafka", &["crash-producer", "kill-broker"]);
    both.workload = Workload::Txn;
    let with = schedule_for(&both, &kafka, Duration::from_secs(20)).expect("accepted");
    let mut plain = scenario("kafka", &["kill-broker"]);
    plain.workload = Workload::Txn;
    let without = schedule_for(&plain, &kafka, Duration::from_secs(20)).expect("accepted");
    assert_eq!(with.faults, without.faults);
    assert!(!with.faults.is_empty());
}

#[test]
fn a_schedule_follows_the_seed_and_a_replay_follows_its_file() {
    let d = FakeDeployment::new(BrokerKind::Redis, 3);
    let s = scenario("redis", &["kill-consumer", "kill-broker", "partition"]);
    let a = schedule_for(&s, &d, Duration::from_secs(30)).expect("schedule");
    let b = schedule_for(&s, &d, Duration::from_secs(30)).expect("schedule");
    assert_eq!(a.faults, b.faults, "same seed, same schedule");
    assert_eq!(a.faults.len(), 4, "{a:?}");
    let mut other = s.clone();
    other.seed += 1;
    let c = schedule_for(&other, &d, Duration::from_secs(30)).expect("schedule");
    assert_ne!(a.faults, c.faults, "another seed draws another schedule");

    // A replay plays the file, whatever the seed and the fault list say.
    let dir = temp("replay");
    let file = dir.join("schedule.toml");
    std::fs::write(&file, a.to_toml()).expect("write");
    let mut replay = scenario("redis", &[]);
    replay.seed = 99;
    replay.replay = Some(file.clone());
    let r = schedule_for(&replay, &d, Duration::from_secs(5)).expect("replay");
    assert_eq!(r.faults, a.faults);
    assert_eq!(
        fault_kinds(&replay).map(|k| k.len()).ok(),
        Some(4),
        "the proxy is decided by the replayed faults"
    );
    // A replay that cannot be read names its file.
    replay.replay = Some(dir.join("missing.toml"));
    let e = schedule_for(&replay, &d, Duration::from_secs(5)).expect_err("missing");
    assert!(e.to_string().contains("missing.toml"), "{e}");
    std::fs::write(&file, "[[faults]]\nat = \"soon\"\n").expect("write");
    replay.replay = Some(file.clone());
    let e = schedule_for(&replay, &d, Duration::from_secs(5)).expect_err("bad file");
    assert!(e.to_string().contains("schedule.toml"), "{e}");
    // A fault name it cannot read refuses the file (it used to be dropped).
    let unreadable = a
        .to_toml()
        .replacen("fault = \"kill-broker\"", "fault = \"kill-brokers\"", 1);
    assert_ne!(unreadable, a.to_toml());
    std::fs::write(&file, unreadable).expect("write");
    let e = fault_kinds(&replay).expect_err("refused, not thinned");
    assert!(
        e.to_string().contains("schedule.toml")
            && e.to_string().contains("unknown fault `kill-brokers`"),
        "{e}"
    );
    let _ = std::fs::remove_dir_all(&dir);
}

/// A stand-in for `gauntlet worker`: a drain exits at once (successfully, or
/// with 3 when `fail_drain`), a consumer runs until its stdin closes.
/// A shell script standing in for `gauntlet worker`, with `body` after the shebang.
pub(super) fn worker_script(dir: &Path, body: &str) -> PathBuf {
    let exe = dir.join("fake-worker");
    std::fs::write(&exe, format!("#!/bin/sh\n{body}\n")).expect("script");
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(&exe, std::fs::Permissions::from_mode(0o755)).expect("chmod");
    }
    exe
}

/// A worker that reads and discards its input; with `--drain` it exits 3 when
/// `fail_drain` says so, else 0.
pub(super) fn fake_worker(dir: &Path, fail_drain: bool) -> PathBuf {
    let code = if fail_drain { 3 } else { 0 };
    worker_script(
        dir,
        &format!("case \" $* \" in *\" --drain \"*) exit {code};; esac\ncat > /dev/null"),
    )
}

/// A Redis queue worker of `consumers` consumers whose events go to `events`.
pub(super) fn spec_to(exe: PathBuf, consumers: usize, events: EventSink) -> WorkerSpec {
    let s = scenario("redis", &[]);
    WorkerSpec {
        exe,
        broker: BrokerKind::Redis,
        addrs: vec!["127.0.0.1:1".into()],
        delivery: Default::default(),
        cfg: QueueConfig {
            consumers,
            ..s.queue
        },
        workload: Workload::Queue,
        log: s.log,
        dedup: None,
        events,
    }
}

fn spec(exe: PathBuf, consumers: usize) -> WorkerSpec {
    spec_to(exe, consumers, EventSink::discard())
}

/// The nemesis's view of `d` with `pool`'s workers, no proxy.
pub(super) fn cluster<'a>(d: &'a FakeDeployment, pool: Pool, netem: bool) -> RunCluster<'a> {
    RunCluster {
        deployment: d,
        roles: RoleNames::of(&Scenario::default_scenario()),
        pool,
        proxy: None,
        netem,
        in_flight: InFlight::new(),
        transformers: None,
    }
}

/// The history's lines, parsed.
fn events(path: &Path) -> Vec<serde_json::Value> {
    std::fs::read_to_string(path)
        .expect("history")
        .lines()
        .map(|l| serde_json::from_str(l).expect("a JSON line"))
        .collect()
}

async fn processes(pool: &Pool) -> Vec<u64> {
    pool.lock().await.iter().map(|(_, w)| w.process).collect()
}

#[tokio::test]
async fn a_killed_consumer_is_replaced_under_a_new_process_number() {
    let dir = temp("respawn");
    let recorder = Arc::new(Recorder::create(&dir.join("history.jsonl")).expect("recorder"));
    let spec = spec(fake_worker(&dir, false), 2);
    let d = FakeDeployment::new(BrokerKind::Redis, 1);
    let empty = cluster(&d, Pool::default(), false);
    let e = empty
        .kill_consumer(0, KillConsumerAt::Any)
        .await
        .expect_err("nobody to kill");
    assert!(e.to_string().contains("no consumer is running"), "{e}");

    let mut initial = Vec::new();
    for slot in 0..2 {
        initial.push((
            "g1".to_string(),
            spec.spawn_in(&recorder, "g1", false, slot).expect("spawn"),
        ));
    }
    let pool: Pool = Arc::new(tokio::sync::Mutex::new(initial));
    let before = processes(&pool).await;
    assert_eq!(
        respawn_exited(&pool, &spec, &recorder, 2).await.ok(),
        Some(0)
    );

    let c = cluster(&d, pool.clone(), false);
    let killed = c.kill_consumer(1, KillConsumerAt::Any).await.expect("kill");
    assert_eq!(killed["process"], serde_json::json!(before[1]));
    // The supervisor notices the exit on one of its passes.
    let mut replaced = 0;
    for _ in 0..100 {
        replaced += respawn_exited(&pool, &spec, &recorder, 2)
            .await
            .expect("respawn");
        if replaced > 0 {
            break;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    assert_eq!(replaced, 1);
    let after = processes(&pool).await;
    assert_eq!(after[0], before[0], "the live worker is kept");
    assert!(
        after[1] > *before.iter().max().unwrap_or(&0),
        "a new process number: {before:?} -> {after:?}"
    );
    super::workers::stop_all(&pool, Duration::from_secs(2)).await;
    assert!(pool.lock().await.is_empty());
    let _ = std::fs::remove_dir_all(&dir);
}

#[tokio::test]
async fn the_final_heal_brings_every_node_back_before_the_drain() {
    let dir = temp("heal");
    let history = dir.join("history.jsonl");
    let recorder = Arc::new(Recorder::create(&history).expect("recorder"));
    let spec = spec(fake_worker(&dir, false), 1);
    let d = FakeDeployment::new(BrokerKind::Kafka, 3).with_storage();
    d.set_state("n1", NodeState::Killed);
    d.set_state("n2", NodeState::Paused);
    d.set_state("storage", NodeState::Killed);
    let pool: Pool = Arc::new(tokio::sync::Mutex::new(vec![(
        "g1".to_string(),
        spec.spawn(&recorder, "g1", false).expect("spawn"),
    )]));
    let c = cluster(&d, pool.clone(), true);
    let progress = EventSink::discard();
    finish(&c, &spec, &recorder, &["g1".to_string()], &progress)
        .await
        .expect("finish");

    for n in ["n1", "n2", "n3", "storage"] {
        assert_eq!(d.state_of(n), Some(NodeState::Up), "{n}");
    }
    let calls = d.calls();
    let at = |c: &str| calls.iter().position(|x| x == c);
    let (storage, n1) = (at("start storage"), at("start n1"));
    assert!(storage.is_some() && n1.is_some(), "{calls:?}");
    assert!(storage < n1, "the storage node comes back first: {calls:?}");
    for n in ["n1", "n2", "n3", "storage"] {
        assert!(
            at(&format!("exec {n} iptables -F INPUT && iptables -F OUTPUT")).is_some(),
            "iptables flushed on {n}: {calls:?}"
        );
    }
    assert!(
        calls
            .iter()
            .any(|c| c.starts_with("exec n3 ") && c.contains("qdisc del")),
        "a run with netem removes the qdisc: {calls:?}"
    );
    assert!(at("wait-cluster-ready").is_some(), "{calls:?}");
    assert!(pool.lock().await.is_empty(), "the workers were stopped");

    let evs = events(&history);
    let pos = |f: &str, v: Option<&str>| {
        evs.iter().position(|e| {
            e["f"] == f
                && match v {
                    Some(v) => e["value"] == serde_json::json!(v),
                    None => true,
                }
        })
    };
    let healed = evs
        .iter()
        .position(|e| e["f"] == "heal-all" && e["type"] == "info")
        .expect("heal-all recorded");
    assert_eq!(evs[healed]["value"]["problems"], serde_json::json!([]));
    let drain = pos("phase", Some("drain")).expect("drain phase");
    let drained = pos("phase", Some("drained")).expect("drained marker");
    assert!(healed < drain && drain < drained, "{evs:?}");
    let _ = std::fs::remove_dir_all(&dir);
}

#[tokio::test]
async fn a_drain_that_fails_leaves_no_drained_marker() {
    let dir = temp("drainfail");
    let history = dir.join("history.jsonl");
    let recorder = Arc::new(Recorder::create(&history).expect("recorder"));
    let spec = spec(fake_worker(&dir, true), 1);
    let d = FakeDeployment::new(BrokerKind::Redis, 1);
    let c = cluster(&d, Pool::default(), false);
    let progress = EventSink::discard();
    finish(&c, &spec, &recorder, &["g1".to_string()], &progress)
        .await
        .expect("finish");
    let evs = events(&history);
    assert!(evs.iter().any(|e| e["value"] == "drain"));
    assert!(!evs.iter().any(|e| e["value"] == "drained"), "{evs:?}");
    let _ = std::fs::remove_dir_all(&dir);
}

#[tokio::test]
async fn a_refused_run_tears_down_keeps_the_logs_and_writes_no_history() {
    let dir = temp("refused");
    std::fs::create_dir_all(dir.join("nodes")).expect("nodes");
    let d = FakeDeployment::new(BrokerKind::Redis, 1);
    let s = scenario("redis", &["partition"]);
    let progress = EventSink::discard();
    let ctx = RunContext {
        scenario: &s,
        deployment: &d,
        proxy: None,
        dir: &dir,
        exe: Path::new("/nonexistent/gauntlet"),
        events: &progress,
        entered: Instant::now(),
        started: Instant::now(),
        opts: RunOptions::default(),
    };
    let e = run_on(&ctx).await.err().expect("refused");
    assert!(e.to_string().contains("needs at least two nodes"), "{e}");
    assert!(!dir.join("history.jsonl").exists(), "refused before any op");
    assert_eq!(d.calls(), vec!["collect-logs", "teardown"]);
    assert!(dir.join("nodes").join("n1.log").exists());

    // The txn workload on a broker that does not speak Kafka: refused the same way.
    let txn = Scenario {
        workload: Workload::Txn,
        ..scenario("redis", &[])
    };
    let ctx = RunContext {
        scenario: &txn,
        ..ctx
    };
    let e = run_on(&ctx).await.err().expect("refused");
    assert!(e.to_string().contains("speaks the Kafka protocol"), "{e}");
    assert_eq!(d.calls().iter().filter(|c| *c == "teardown").count(), 2);
    let _ = std::fs::remove_dir_all(&dir);
}

#[tokio::test]
async fn the_run_entry_launches_through_any_backend_and_tears_down_what_it_launched() {
    // The whole entry (folder, run id, Ctrl-C handler, spec, launch, run_on) on a
    // backend that is not Docker: a partition on one node is refused after the
    // launch, and what was launched is torn down with its logs kept.
    let results = temp("backend");
    let backend = Arc::new(FakeBackend::default());
    let s = Scenario {
        name: "fake-backend".into(),
        nodes: Some(1),
        results: results.clone(),
        ..scenario("redis", &["partition"])
    };
    let progress = EventSink::discard();
    let e = run_with_backend(
        backend.clone(),
        Instant::now(),
        &s,
        Path::new("/nonexistent/gauntlet"),
        progress,
        RunOptions::default(),
    )
    .await
    .expect_err("refused");
    assert!(e.to_string().contains("needs at least two nodes"), "{e}");
    let calls = backend.calls();
    assert_eq!(calls.len(), 3, "{calls:?}");
    assert!(
        calls[0].starts_with("launch redis x1 run fake-backend-")
            && calls[0].ends_with(" logs nodes"),
        "{calls:?}"
    );
    assert_eq!(calls[1..], ["collect-logs", "teardown"]);
    let dir = std::fs::read_dir(results.join("fake-backend"))
        .expect("the scenario's folder")
        .filter_map(|e| e.ok().map(|e| e.path()))
        .find(|p| p.is_dir() && p.file_name().is_some_and(|f| f != "latest"))
        .expect("a run folder");
    assert!(dir.join("scenario.toml").exists());
    assert!(dir.join("nodes").join("n1.log").exists());
    assert!(!dir.join("history.jsonl").exists(), "refused before any op");

    // A launch that fails: its error, and nothing to tear down.
    let failing = Arc::new(FakeBackend {
        fail_launch: Some("no such host".into()),
        ..FakeBackend::default()
    });
    let progress = EventSink::discard();
    let e = run_with_backend(
        failing.clone(),
        Instant::now(),
        &scenario_in(&results, "redis"),
        Path::new("/nonexistent/gauntlet"),
        progress,
        RunOptions::default(),
    )
    .await
    .expect_err("launch failed");
    assert!(e.to_string().contains("no such host"), "{e}");
    assert_eq!(failing.calls().len(), 1, "{:?}", failing.calls());
    let _ = std::fs::remove_dir_all(&results);
}

fn scenario_in(results: &Path, broker: &str) -> Scenario {
    Scenario {
        name: "fake-backend-fails".into(),
        results: results.to_path_buf(),
        ..scenario(broker, &[])
    }
}

#[test]
fn the_schedule_of_a_scenario_is_the_same_through_schedule_for_and_generate() {
    // What `gauntlet run` writes to schedule.toml is `Schedule::generate` over the
    // deployment's nodes: a backend that names its nodes n1..nN gets the same faults.
    let d = FakeDeployment::new(BrokerKind::Redis, 3);
    let s = Scenario::default_scenario();
    let via = schedule_for(&s, &d, Duration::from_secs(20)).expect("schedule");
    let kinds = s.nemesis.clone();
    let direct = Schedule::generate(
        s.seed,
        &kinds,
        &d.nodes(),
        Duration::from_secs(20),
        parse_duration(&s.nemesis_interval).expect("interval"),
        parse_duration(&s.nemesis_duration).expect("duration"),
    );
    assert_eq!(via.faults, direct.faults);
}

#[tokio::test]
async fn overlapping_faults_play_side_by_side_and_each_heals_its_own() {
    // pause n1 from 0 to 400 ms; kill-broker on n2 and n3 from 100 to 150 ms,
    // inside it; then kill-consumer (an instant) at 450 ms, after both.
    let dir = temp("overlap");
    let history = dir.join("history.jsonl");
    let recorder = Recorder::create(&history).expect("recorder");
    let d = FakeDeployment::new(BrokerKind::Redis, 3);
    let at = |at_ms, duration_ms, fault: &str, targets: &[&str], pick| ScheduledFault {
        at_ms,
        duration_ms,
        fault: FaultKind::from_str(fault).expect("fault"),
        targets: targets.iter().map(|t| t.to_string()).collect(),
        pick,
    };
    let schedule = Schedule {
        seed: 1,
        faults: vec![
            at(0, 400, "pause", &["n1"], 0),
            at(100, 50, "kill-broker", &["n2", "n3"], 0),
            at(450, 0, "kill-consumer", &["n1"], 0),
        ],
    };
    let c = cluster(&d, Pool::default(), false);
    let progress = EventSink::discard();
    let t0 = std::time::Instant::now();
    super::nemesis::run_schedule(&schedule, &c, &recorder, t0, &progress).await;
    let took = t0.elapsed();
    let calls = d.calls();
    assert_eq!(
        calls,
        [
            "pause n1",
            "kill n2",
            "kill n3",
            "start n2",
            "start n3",
            "unpause n1"
        ],
        "the kill healed inside the pause, each its own nodes (took {took:?})"
    );
    for n in ["n1", "n2", "n3"] {
        assert_eq!(d.state_of(n), Some(NodeState::Up), "{n}");
    }
    let evs = events(&history);
    let fs: Vec<(String, String, u64)> = evs
        .iter()
        .map(|e| {
            (
                e["type"].as_str().unwrap_or("").to_string(),
                e["f"].as_str().unwrap_or("").to_string(),
                e["value"]["fault_id"].as_u64().unwrap_or(99),
            )
        })
        .collect();
    let ev = |t: &str, f: &str, id: u64| (t.to_string(), f.to_string(), id);
    assert_eq!(
        fs,
        [
            ev("invoke", "pause", 0),
            ev("info", "pause", 0),
            ev("invoke", "kill", 1),
            ev("info", "kill", 1),
            ev("invoke", "start", 1),
            ev("info", "start", 1),
            ev("invoke", "resume", 0),
            ev("info", "resume", 0),
            ev("invoke", "kill-consumer", 2),
            ev("info", "kill-consumer", 2),
        ],
        "{evs:?}"
    );
    // The start events name their nodes: `node` for one, `nodes` for several.
    assert_eq!(evs[0]["value"]["node"], serde_json::json!("n1"));
    assert_eq!(evs[1]["value"]["node"], serde_json::json!("n1"));
    assert_eq!(evs[2]["value"]["nodes"], serde_json::json!(["n2", "n3"]));
    assert_eq!(evs[2]["value"]["targets"], serde_json::json!(["n2", "n3"]));
    assert_eq!(evs[3]["value"]["nodes"], serde_json::json!(["n2", "n3"]));
    assert_eq!(evs[5]["value"]["nodes"], serde_json::json!(["n2", "n3"]));
    // Only the instant is marked so (no consumer runs here: it failed, and says so).
    assert_eq!(evs[8]["value"]["instant"], serde_json::json!(true));
    assert_eq!(evs[9]["value"]["instant"], serde_json::json!(true));
    assert_eq!(evs[9]["value"]["end"], serde_json::json!(true));
    assert!(evs[..8].iter().all(|e| e["value"].get("instant").is_none()));
    // A consumer kill names no node: the schedule's draw of one is not its target.
    for e in &evs[8..] {
        let v = &e["value"];
        assert!(v.get("target").is_none() && v.get("node").is_none(), "{e}");
    }
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn a_backend_error_crosses_node_control_and_comes_back_whole() {
    let e = HarnessError::ExecTimeout {
        node: "n2".into(),
        cmd: "hostname -i".into(),
        waited: Duration::from_secs(3),
    };
    let text = e.to_string();
    let through = gauntlet_nemesis::ControlError::from(e);
    assert_eq!(
        through.to_string(),
        text,
        "the nemesis sees the backend's words"
    );
    let back = HarnessError::from(through);
    assert!(
        matches!(back, HarnessError::ExecTimeout { ref node, .. } if node == "n2"),
        "{back:?}"
    );
    // A failed command of the default iptables/tc bodies comes back as the harness's.
    let failed = HarnessError::from(gauntlet_nemesis::ControlError::CommandFailed {
        node: "n1".into(),
        cmd: "iptables -F INPUT".into(),
        code: 4,
        output: "denied".into(),
    });
    assert!(
        matches!(failed, HarnessError::CommandFailed { code: 4, .. }),
        "{failed:?}"
    );
}

#[tokio::test]
async fn a_disk_fault_is_refused_before_anything_starts_where_no_filesystem_can_be_mounted() {
    // A backend that does not mount Gauntlet's filesystem: refused before the
    // launch, naming the fault, the broker and the backend.
    let results = temp("disk-refused");
    let backend = Arc::new(FakeBackend::default());
    let s = Scenario {
        name: "disk-refused".into(),
        results: results.clone(),
        ..scenario("redis", &["power-loss"])
    };
    let e = run_with_backend(
        backend.clone(),
        Instant::now(),
        &s,
        Path::new("/nonexistent/gauntlet"),
        EventSink::discard(),
        RunOptions::default(),
    )
    .await
    .expect_err("refused");
    let text = e.to_string();
    assert!(
        text.contains("power-loss on redis: the fake backend does not mount Gauntlet's filesystem"),
        "{text}"
    );
    assert!(backend.calls().is_empty(), "{:?}", backend.calls());
    let _ = std::fs::remove_dir_all(&results);

    // An official image, and a broker that keeps nothing on its nodes' disks.
    let official = ClusterSpec::new(BrokerKind::Redis).image(ImageRef::named("redis:7"));
    let why = official.disk_faults().expect_err("an official image");
    assert!(
        why.contains("redis:7 is not one of Gauntlet's images"),
        "{why}"
    );
    let sqs = ClusterSpec::new(BrokerKind::Sqs)
        .disk_faults()
        .expect_err("sqs");
    assert!(sqs.contains("keeps no data on its nodes' disks"), "{sqs}");
    for b in [
        BrokerKind::Redis,
        BrokerKind::Nats,
        BrokerKind::RabbitMq,
        BrokerKind::Kafka,
    ] {
        assert_eq!(ClusterSpec::new(b).disk_faults(), Ok(()), "{b}");
    }

    // A sequence whose crash is a power loss is a disk fault too.
    let kinds = |s: &[&str]| -> Vec<FaultKind> {
        s.iter()
            .map(|n| FaultKind::from_str(n).expect("a fault"))
            .collect()
    };
    assert!(super::faults::disk_fault(&kinds(&["pause-kill:power-loss"])).is_some());
    assert!(super::faults::disk_fault(&kinds(&["kill-consumer", "wipe"])).is_some());
    assert!(super::faults::disk_fault(&kinds(&["pause-kill", "kill-broker:all"])).is_none());

    // A deployment whose nodes are not mounted (an SSH host's `--plan`).
    let d = FakeDeployment::new(BrokerKind::Redis, 3);
    for fault in [
        "power-loss",
        "corrupt:truncate",
        "wipe",
        "power-loss:leader",
    ] {
        let got = refusal(&scenario("redis", &[fault]), &d);
        assert!(
            got.contains("do not run Gauntlet's filesystem over their data"),
            "{fault}: {got}"
        );
    }
}

/// A scheduled fault by name, for the player tests.
fn sf(at_ms: u64, duration_ms: u64, fault: &str, targets: &[&str]) -> ScheduledFault {
    ScheduledFault {
        at_ms,
        duration_ms,
        fault: FaultKind::from_str(fault).expect("fault"),
        targets: targets.iter().map(|t| t.to_string()).collect(),
        pick: 0,
    }
}

/// (type, f, fault_id) of each event.
fn kinds_of(evs: &[serde_json::Value]) -> Vec<(String, String, u64)> {
    evs.iter()
        .map(|e| {
            (
                e["type"].as_str().unwrap_or("").to_string(),
                e["f"].as_str().unwrap_or("").to_string(),
                e["value"]["fault_id"].as_u64().unwrap_or(99),
            )
        })
        .collect()
}

#[test]
fn counts_pause_kill_and_concurrency_are_drawn_or_refused_by_the_run() {
    let three = FakeDeployment::new(BrokerKind::Redis, 3);
    let s = Scenario {
        time: "30s".into(),
        ..scenario("redis", &["kill-broker:majority", "pause:minority"])
    };
    let a = schedule_for(&s, &three, Duration::from_secs(30)).expect("schedule");
    assert!(a.faults.len() >= 3, "{a:?}");
    for f in &a.faults {
        let want = if f.fault.to_string() == "kill-broker:majority" {
            2
        } else {
            1
        };
        assert_eq!(f.targets.len(), want, "{f:?}");
    }
    // The same seed draws the same nodes; the file replays them.
    assert_eq!(
        schedule_for(&s, &three, Duration::from_secs(30)).ok(),
        Some(a.clone())
    );
    // pause-kill: three nodes, and what its pause and crash need.
    let two = FakeDeployment::new(BrokerKind::Redis, 2);
    let got = refusal(&scenario("redis", &["pause-kill"]), &two);
    assert!(
        got.contains("pause-kill on redis: needs at least three nodes, the deployment has 2"),
        "{got}"
    );
    let no_pause = FakeDeployment::new(BrokerKind::Redis, 3).with_caps(|c| c.pause = false);
    let got = refusal(&scenario("redis", &["pause-kill"]), &no_pause);
    assert!(
        got.contains("pause-kill on redis: the deployment cannot pause nodes"),
        "{got}"
    );
    let no_proc = FakeDeployment::new(BrokerKind::Redis, 3).with_caps(|c| c.process_faults = false);
    let got = refusal(&scenario("redis", &["kill-broker:all"]), &no_proc);
    assert!(
        got.contains("kill-broker:all on redis: the deployment does not offer process faults"),
        "{got}"
    );
    let pk = schedule_for(
        &scenario("redis", &["pause-kill"]),
        &three,
        Duration::from_secs(20),
    )
    .expect("pause-kill on three nodes");
    let names: Vec<String> = pk.faults.iter().map(|f| f.fault.to_string()).collect();
    assert_eq!(names[..3], ["pause", "kill-broker", "pause"], "{pk:?}");
    // Concurrency: from the scenario; 0 is refused.
    let mut over = Scenario {
        nemesis_interval: "1s".into(),
        nemesis_duration: "4s".into(),
        nemesis_concurrency: 2,
        ..scenario("redis", &["kill-broker", "pause"])
    };
    let o = schedule_for(&over, &three, Duration::from_secs(30)).expect("overlap");
    assert!(
        o.faults.windows(2).any(|w| w[1].at_ms < w[0].end_ms()),
        "faults overlap: {o:?}"
    );
    over.nemesis_concurrency = 1;
    let serial = schedule_for(&over, &three, Duration::from_secs(30)).expect("serial");
    assert!(serial
        .faults
        .windows(2)
        .all(|w| w[0].end_ms() <= w[1].at_ms));
    over.nemesis_concurrency = 0;
    let got = refusal(&over, &three);
    assert!(got.contains("nemesis-concurrency is 0"), "{got}");
    // The setting reads and writes as `nemesis-concurrency`; 1 is not written.
    let read = Scenario::from_toml("name = \"x\"\nbroker = \"redis\"\nnemesis-concurrency = 3\n")
        .expect("scenario");
    assert_eq!(read.nemesis_concurrency, 3);
    assert!(read.to_toml().contains("nemesis-concurrency = 3"));
    assert!(!Scenario::default_scenario()
        .to_toml()
        .contains("nemesis-concurrency"));
}

#[tokio::test]
async fn several_targets_are_faulted_at_once_and_each_is_healed() {
    // kill-broker:majority on n1 and n3 from 0 to 150 ms; pause:minority on n2
    // from 50 to 250 ms, overlapping it; restart-broker:all at 300 ms.
    let dir = temp("several");
    let history = dir.join("history.jsonl");
    let recorder = Recorder::create(&history).expect("recorder");
    let d = FakeDeployment::new(BrokerKind::Redis, 3);
    let schedule = Schedule {
        seed: 1,
        faults: vec![
            sf(0, 150, "kill-broker:majority", &["n1", "n3"]),
            sf(50, 200, "pause:minority", &["n2"]),
            sf(300, 0, "restart-broker:all", &["n1", "n2", "n3"]),
        ],
    };
    let c = cluster(&d, Pool::default(), false);
    let t0 = Instant::now();
    super::nemesis::run_schedule(&schedule, &c, &recorder, t0, &EventSink::discard()).await;
    let calls = d.calls();
    assert_eq!(
        calls,
        [
            "kill n1",
            "kill n3",
            "pause n2",
            "start n1",
            "start n3",
            "unpause n2",
            "kill n1",
            "kill n2",
            "kill n3",
            "start n1",
            "start n2",
            "start n3",
        ],
        "took {:?}",
        t0.elapsed()
    );
    for n in ["n1", "n2", "n3"] {
        assert_eq!(d.state_of(n), Some(NodeState::Up), "{n}");
    }
    let evs = events(&history);
    let ev = |t: &str, f: &str, id: u64| (t.to_string(), f.to_string(), id);
    assert_eq!(
        kinds_of(&evs),
        [
            ev("invoke", "kill", 0),
            ev("info", "kill", 0),
            ev("invoke", "pause", 1),
            ev("info", "pause", 1),
            ev("invoke", "start", 0),
            ev("info", "start", 0),
            ev("invoke", "resume", 1),
            ev("info", "resume", 1),
            ev("invoke", "restart", 2),
            ev("info", "restart", 2),
            ev("invoke", "restarted", 2),
            ev("info", "restarted", 2),
        ],
        "{evs:?}"
    );
    // The start and end events name every node: two down at once, then both back.
    let two = serde_json::json!(["n1", "n3"]);
    assert_eq!(evs[0]["value"]["fault"], "kill-broker:majority");
    assert_eq!(evs[0]["value"]["targets"], two);
    for i in [0, 1, 5] {
        assert_eq!(evs[i]["value"]["nodes"], two, "{}", evs[i]);
    }
    assert_eq!(evs[4]["value"]["targets"], two);
    assert_eq!(evs[1]["value"]["each"][1]["node"], "n3");
    assert_eq!(evs[3]["value"]["node"], "n2");
    assert_eq!(
        evs[9]["value"]["nodes"],
        serde_json::json!(["n1", "n2", "n3"])
    );
    let _ = std::fs::remove_dir_all(&dir);
}

#[tokio::test]
async fn a_fault_that_fails_on_one_of_its_nodes_heals_the_others() {
    let dir = temp("partial");
    let history = dir.join("history.jsonl");
    let recorder = Recorder::create(&history).expect("recorder");
    let d = FakeDeployment::new(BrokerKind::Redis, 3);
    let schedule = Schedule {
        seed: 1,
        faults: vec![sf(0, 5_000, "pause", &["n1", "n9", "n2"])],
    };
    let c = cluster(&d, Pool::default(), false);
    let t0 = Instant::now();
    super::nemesis::run_schedule(&schedule, &c, &recorder, t0, &EventSink::discard()).await;
    assert!(
        t0.elapsed() < Duration::from_secs(4),
        "no heal to wait for: {:?}",
        t0.elapsed()
    );
    assert_eq!(
        d.calls(),
        ["pause n1", "pause n2", "unpause n1", "unpause n2"]
    );
    for n in ["n1", "n2", "n3"] {
        assert_eq!(d.state_of(n), Some(NodeState::Up), "{n}");
    }
    let evs = events(&history);
    assert_eq!(evs.len(), 2, "{evs:?}");
    let error = evs[1]["value"]["error"].as_str().unwrap_or_default();
    assert!(
        error.contains("pause on n1+n9+n2")
            && error.contains("no node n9")
            && error.contains("then healed on n1, n2"),
        "{error}"
    );
    assert_eq!(evs[1]["value"]["end"], true);
    let _ = std::fs::remove_dir_all(&dir);
}

#[tokio::test]
async fn pause_kill_plays_jepsens_steps_in_order_and_heals_every_node() {
    let d = FakeDeployment::new(BrokerKind::Redis, 3);
    let s = Scenario {
        nemesis_interval: "100ms".into(),
        nemesis_duration: "200ms".into(),
        ..scenario("redis", &["pause-kill"])
    };
    let schedule = schedule_for(&s, &d, Duration::from_secs(3)).expect("schedule");
    assert_eq!(schedule.faults.len(), 3, "{schedule:?}");
    let [p1, crash, p2] = [0, 1, 2].map(|i| schedule.faults[i].targets_line());
    let dir = temp("pausekill");
    let recorder = Recorder::create(&dir.join("history.jsonl")).expect("recorder");
    let c = cluster(&d, Pool::default(), false);
    let t0 = Instant::now();
    super::nemesis::run_schedule(&schedule, &c, &recorder, t0, &EventSink::discard()).await;
    assert_eq!(
        d.calls(),
        [
            format!("pause {p1}"),
            format!("kill {crash}"),
            format!("pause {p2}"),
            format!("unpause {p1}"),
            format!("start {crash}"),
            format!("unpause {p2}"),
        ],
        "took {:?}",
        t0.elapsed()
    );
    for n in ["n1", "n2", "n3"] {
        assert_eq!(d.state_of(n), Some(NodeState::Up), "{n}");
    }
    let _ = std::fs::remove_dir_all(&dir);
}

#[tokio::test]
async fn a_several_node_kill_and_pause_cut_short_are_undone_by_the_final_heal() {
    // The schedule is cut while n1..n3 are killed and n4, n5 paused (as a failed
    // history write cuts it); the final heal brings all five back.
    let dir = temp("cutshort");
    let history = dir.join("history.jsonl");
    let recorder = Arc::new(Recorder::create(&history).expect("recorder"));
    let d = FakeDeployment::new(BrokerKind::Redis, 5);
    let schedule = Schedule {
        seed: 1,
        faults: vec![
            sf(0, 60_000, "kill-broker:majority", &["n1", "n2", "n3"]),
            sf(0, 60_000, "pause:minority", &["n4", "n5"]),
        ],
    };
    let c = cluster(&d, Pool::default(), false);
    let t0 = Instant::now();
    let all_down = || {
        ["n1", "n2", "n3"]
            .iter()
            .all(|n| d.state_of(n) == Some(NodeState::Killed))
            && ["n4", "n5"]
                .iter()
                .all(|n| d.state_of(n) == Some(NodeState::Paused))
    };
    let sink = EventSink::discard();
    // Boxed so that dropping it (as the run's select drops it) ends it here.
    let mut play = Box::pin(super::nemesis::run_schedule(
        &schedule, &c, &recorder, t0, &sink,
    ));
    let deadline = t0 + Duration::from_secs(20);
    while !all_down() {
        tokio::select! {
            () = &mut play => panic!("the schedule ended early"),
            () = tokio::time::sleep(Duration::from_millis(10)) => {}
        }
        assert!(Instant::now() < deadline, "not all down: {:?}", d.calls());
    }
    eprintln!("all five down after {:?}", t0.elapsed());
    drop(play);
    let spec = spec(fake_worker(&dir, false), 1);
    finish(&c, &spec, &recorder, &[], &EventSink::discard())
        .await
        .expect("finish");
    for n in ["n1", "n2", "n3", "n4", "n5"] {
        assert_eq!(d.state_of(n), Some(NodeState::Up), "{n}");
    }
    let evs = events(&history);
    let healed = evs
        .iter()
        .find(|e| e["f"] == "heal-all" && e["type"] == "info")
        .expect("heal-all");
    assert_eq!(healed["value"]["problems"], serde_json::json!([]));
    let _ = std::fs::remove_dir_all(&dir);
}

#[tokio::test]
async fn a_storage_node_that_does_not_come_back_is_a_problem_and_the_brokers_are_not_waited_for() {
    let dir = temp("storage-down");
    let history = dir.join("history.jsonl");
    let recorder = Arc::new(Recorder::create(&history).expect("recorder"));
    let d = FakeDeployment::new(BrokerKind::Kafka, 3).with_storage();
    d.set_state("storage", NodeState::Broken);
    d.set_state("n1", NodeState::Killed);
    let c = cluster(&d, Pool::default(), false);
    super::nemesis::final_heal(&c, &recorder, &EventSink::discard()).await;
    let calls = d.calls();
    assert!(calls.iter().any(|c| c == "start storage"), "{calls:?}");
    assert!(
        calls.iter().any(|c| c == "start n1"),
        "the brokers are started: {calls:?}"
    );
    assert!(
        !calls.iter().any(|c| c == "wait-cluster-ready"),
        "nor waited for: {calls:?}"
    );
    let evs = events(&history);
    let healed = evs
        .iter()
        .find(|e| e["f"] == "heal-all" && e["type"] == "info")
        .expect("heal-all recorded");
    let problems = healed["value"]["problems"].to_string();
    assert!(problems.contains("storage: start on storage"), "{problems}");
    assert!(
        problems.contains("the storage node did not come back"),
        "{problems}"
    );
    let _ = std::fs::remove_dir_all(&dir);
}

#[tokio::test]
async fn add_partitions_runs_on_the_storage_node_or_the_first_broker_and_records_its_outcome() {
    for (d, node, marker) in [
        (
            FakeDeployment::new(BrokerKind::Kafka, 3).with_storage(),
            "storage",
            "GAUNTLET_SQL",
        ),
        (
            FakeDeployment::new(BrokerKind::Kafka, 3),
            "n1",
            "kafka-topics.sh",
        ),
    ] {
        let dir = temp(&format!("addparts-{node}"));
        let history = dir.join("history.jsonl");
        let recorder = Recorder::create(&history).expect("recorder");
        let schedule = Schedule {
            seed: 1,
            faults: vec![sf(0, 0, "add-partitions:3", &["n2"])],
        };
        let c = cluster(&d, Pool::default(), false);
        super::nemesis::run_schedule(
            &schedule,
            &c,
            &recorder,
            Instant::now(),
            &EventSink::discard(),
        )
        .await;
        // One command, on the node the fault picks (not the one the schedule drew).
        let calls = d.calls();
        assert_eq!(calls.len(), 1, "{calls:?}");
        assert!(
            calls[0].starts_with(&format!("exec {node} ")) && calls[0].contains(marker),
            "{calls:?}"
        );
        // The fake prints no topic: the start fails, recorded with the reason; an
        // instant, so no end events.
        let evs = events(&history);
        assert_eq!(evs.len(), 2, "{evs:?}");
        assert_eq!(evs[0]["f"], "add-partitions");
        assert_eq!(evs[0]["value"]["instant"], true);
        assert!(evs[0]["value"].get("node").is_none(), "{evs:?}");
        let error = evs[1]["value"]["error"].as_str().unwrap_or_default();
        assert!(error.contains("no topic to add partitions to"), "{error}");
        assert_eq!(evs[1]["value"]["end"], true);
        let _ = std::fs::remove_dir_all(&dir);
    }
}
