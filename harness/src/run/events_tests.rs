//! The run's events, collected: what a run on the fake deployment sends, in
//! order, and Ctrl-C as an outcome (nothing printed, no exit).
use super::fake::{FakeBackend, FakeDeployment};
use super::queue::finish;
use super::tests::{cluster, fake_worker, spec_to, temp, worker_script};
use super::workers::Pool;
use super::*;
use crate::backend::Backend;
use crate::broker::BrokerKind;
use gauntlet_checkers::IncompleteReason;
use gauntlet_workloads::Recorder;
use std::sync::Mutex;

/// The events' names, for exact comparisons.
fn names(events: &Mutex<Vec<RunEvent>>) -> Vec<String> {
    events
        .lock()
        .map(|v| {
            v.iter()
                .map(|e| {
                    let d = format!("{e:?}");
                    d.split([' ', '(', '{'])
                        .next()
                        .unwrap_or_default()
                        .to_string()
                })
                .collect()
        })
        .unwrap_or_default()
}

#[tokio::test]
async fn a_run_on_the_fake_backend_sends_its_phases_in_order() {
    // A partition on one node is refused after the launch: deploy, ready, teardown.
    let results = temp("events-phases");
    let backend = Arc::new(FakeBackend::default());
    let s = Scenario {
        name: "events".into(),
        nodes: Some(1),
        results: results.clone(),
        nemesis: vec![gauntlet_nemesis::FaultKind::Partition],
        ..Scenario::default_scenario()
    };
    let (sink, seen) = EventSink::collect();
    let e = run_with_backend(
        backend,
        Instant::now(),
        &s,
        Path::new("/nonexistent/gauntlet"),
        sink,
        RunOptions::default(),
    )
    .await
    .expect_err("refused");
    assert!(e.to_string().contains("needs at least two nodes"), "{e}");
    assert_eq!(
        names(&seen),
        [
            "FolderCreated",
            "Deploying",
            "DeploymentReady",
            "TearingDown"
        ],
        "{seen:?}"
    );
    let events = seen.lock().map(|v| v.clone()).unwrap_or_default();
    assert!(
        matches!(
            events[1],
            RunEvent::Deploying {
                broker: BrokerKind::Redis,
                nodes: 1,
                ref settings,
            } if settings.is_empty()
        ),
        "{events:?}"
    );
    let _ = std::fs::remove_dir_all(&results);
}

#[tokio::test]
async fn the_drain_tells_whether_it_finished() {
    for (fails, expected) in [
        (false, vec!["Draining"]),
        (true, vec!["Draining", "DrainUnfinished"]),
    ] {
        let dir = temp(&format!("events-drain-{fails}"));
        let exe = fake_worker(&dir, fails);
        let recorder =
            Arc::new(Recorder::create(&dir.join(gauntlet_report::folder::HISTORY)).expect("rec"));
        let d = FakeDeployment::new(BrokerKind::Redis, 1);
        let (sink, seen) = EventSink::collect();
        finish(
            &cluster(&d, Pool::default(), false),
            &spec_to(exe, 1, sink.clone()),
            &recorder,
            &["g1".to_string()],
            &sink,
        )
        .await
        .expect("finish");
        assert_eq!(names(&seen), expected, "drain fails: {fails}");
        let _ = std::fs::remove_dir_all(&dir);
    }
}

#[tokio::test]
async fn a_line_a_worker_writes_that_is_no_event_is_told_not_printed() {
    let dir = temp("events-unreadable");
    let exe = worker_script(&dir, "echo 'not json'\ncat > /dev/null");
    let recorder =
        Arc::new(Recorder::create(&dir.join(gauntlet_report::folder::HISTORY)).expect("rec"));
    let (sink, seen) = EventSink::collect();
    let w = spec_to(exe, 1, sink)
        .spawn(&recorder, "g1", false)
        .expect("spawn");
    let process = w.process;
    // Wait for the event itself (generous deadline).
    let t = Instant::now();
    while names(&seen).is_empty() && t.elapsed() < Duration::from_secs(30) {
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    w.stop(Duration::from_secs(5)).await;
    let events = seen.lock().map(|v| v.clone()).unwrap_or_default();
    match events.as_slice() {
        [RunEvent::WorkerUnreadable {
            process: p, line, ..
        }] => {
            assert_eq!(*p, process);
            assert_eq!(line, "not json");
        }
        other => panic!("after {:?}: {other:?}", t.elapsed()),
    }
    let _ = std::fs::remove_dir_all(&dir);
}

/// A backend whose launch writes a small history into the run folder (as if
/// the run had recorded it) and then never returns: only Ctrl-C ends the run.
#[derive(Default)]
struct Hanging {
    /// Whether the launch writes the history (else nothing was recorded).
    records: bool,
    removed: Mutex<Vec<String>>,
    launched: tokio::sync::Notify,
}

#[async_trait::async_trait]
impl Backend for Hanging {
    fn name(&self) -> &'static str {
        "hanging"
    }
    async fn launch(
        &self,
        spec: crate::backend::ClusterSpec,
    ) -> Result<Box<dyn Deployment>, HarnessError> {
        if let Some(dir) = spec
            .logs_dir
            .as_ref()
            .and_then(|l| l.parent())
            .filter(|_| self.records)
        {
            let _ = std::fs::write(
                dir.join(gauntlet_report::folder::HISTORY),
                concat!(
                    r#"{"index":0,"time":1,"process":0,"type":"invoke","f":"send","value":{"key":"a","value":1}}"#,
                    "\n",
                    r#"{"index":1,"time":2,"process":0,"type":"ok","f":"send","value":{"key":"a","value":1}}"#,
                    "\n"
                ),
            );
        }
        self.launched.notify_one();
        std::future::pending().await
    }
    async fn remove_run(&self, run: &RunId) -> Result<(), HarnessError> {
        if let Ok(mut r) = self.removed.lock() {
            r.push(run.to_string());
        }
        Ok(())
    }
}

/// Starts a run on `backend`, waits for its launch, then sends SIGINT to this
/// process until the run takes it (its listener may register after the first).
async fn interrupt(
    backend: Arc<Hanging>,
    s: &Scenario,
    sink: EventSink,
) -> Result<RunOutcome, HarnessError> {
    // SIGINT must never kill this test process: a listener of our own, first.
    let mut own = tokio::signal::unix::signal(tokio::signal::unix::SignalKind::interrupt())
        .expect("a SIGINT listener");
    let run = run_with_backend(
        backend.clone(),
        Instant::now(),
        s,
        Path::new("/nonexistent/gauntlet"),
        sink,
        RunOptions::default(),
    );
    tokio::pin!(run);
    tokio::select! {
        _ = &mut run => panic!("the run ended before Ctrl-C"),
        () = backend.launched.notified() => {}
    }
    let t = Instant::now();
    loop {
        let _ = std::process::Command::new("kill")
            .args(["-INT", &std::process::id().to_string()])
            .status();
        let _ = own.recv().await;
        match tokio::time::timeout(Duration::from_millis(200), &mut run).await {
            Ok(r) => break r,
            Err(_) if t.elapsed() < Duration::from_secs(30) => {}
            Err(_) => panic!("the run did not take Ctrl-C in {:?}", t.elapsed()),
        }
    }
}

#[tokio::test]
async fn ctrl_c_is_an_outcome_with_the_verdict_of_what_was_recorded() {
    let results = temp("events-ctrlc");
    let backend = Arc::new(Hanging {
        records: true,
        ..Hanging::default()
    });
    let s = Scenario {
        name: "ctrlc".into(),
        results: results.clone(),
        nemesis: vec![],
        ..Scenario::default_scenario()
    };
    let (sink, seen) = EventSink::collect();
    let outcome = interrupt(backend.clone(), &s, sink)
        .await
        .expect("a verdict of what was recorded");
    assert!(outcome.interrupted);
    assert_eq!(
        outcome.verdict.incomplete.as_ref().map(|i| i.reason),
        Some(IncompleteReason::Interrupted)
    );
    assert!(outcome.dir.join(gauntlet_report::folder::VERDICT).is_file());
    assert_eq!(
        names(&seen),
        ["FolderCreated", "Deploying", "Interrupted", "Judged"],
        "{seen:?}"
    );
    let removed = backend
        .removed
        .lock()
        .map(|r| r.clone())
        .unwrap_or_default();
    assert_eq!(removed.len(), 1, "{removed:?}");
    assert!(removed[0].starts_with("ctrlc-"), "{removed:?}");
    let _ = std::fs::remove_dir_all(&results);
}

#[tokio::test]
async fn ctrl_c_before_anything_was_recorded_is_an_error_without_a_verdict() {
    let results = temp("events-ctrlc-empty");
    let backend = Arc::new(Hanging::default());
    let s = Scenario {
        name: "ctrlc-empty".into(),
        results: results.clone(),
        nemesis: vec![],
        ..Scenario::default_scenario()
    };
    let (sink, seen) = EventSink::collect();
    let e = interrupt(backend.clone(), &s, sink)
        .await
        .expect_err("nothing to judge");
    let HarnessError::Interrupted { dir } = &e else {
        panic!("{e}")
    };
    assert!(!dir.join(gauntlet_report::folder::VERDICT).exists());
    assert_eq!(
        names(&seen),
        [
            "FolderCreated",
            "Deploying",
            "Interrupted",
            "NothingRecorded"
        ],
        "{seen:?}"
    );
    assert_eq!(
        backend.removed.lock().map(|r| r.len()).unwrap_or_default(),
        1
    );
    let _ = std::fs::remove_dir_all(&results);
}

#[tokio::test]
async fn durability_settings_are_on_the_deploying_line_and_bad_replicas_are_refused_before_it() {
    // [redis] appendfsync everysec: the launch is asked for, and the line says so.
    let results = temp("events-durability");
    let backend = Arc::new(FakeBackend::default());
    let mut s = Scenario {
        name: "durability".into(),
        nodes: Some(1),
        results: results.clone(),
        nemesis: vec![gauntlet_nemesis::FaultKind::Partition],
        ..Scenario::default_scenario()
    };
    s.redis.appendfsync = crate::broker::AppendFsync::Everysec;
    let (sink, seen) = EventSink::collect();
    let e = run_with_backend(
        backend.clone(),
        Instant::now(),
        &s,
        Path::new("/nonexistent/gauntlet"),
        sink,
        RunOptions::default(),
    )
    .await
    .expect_err("the partition is refused after the launch");
    assert!(e.to_string().contains("needs at least two nodes"), "{e}");
    let events = seen.lock().map(|v| v.clone()).unwrap_or_default();
    assert!(
        events.iter().any(|e| matches!(
            e,
            RunEvent::Deploying { settings, .. } if settings == &["appendfsync=everysec"]
        )),
        "{events:?}"
    );
    assert!(
        backend.calls()[0].starts_with("launch redis x1"),
        "{:?}",
        backend.calls()
    );

    // [nats] replicas = 5 on 3 nodes: refused before the launch, naming both numbers.
    let backend = Arc::new(FakeBackend::default());
    let mut n = Scenario {
        broker: BrokerKind::Nats,
        nodes: Some(3),
        nemesis: vec![],
        ..s.clone()
    };
    n.redis = Default::default();
    n.nats.replicas = Some(5);
    let (sink, seen) = EventSink::collect();
    let e = run_with_backend(
        backend.clone(),
        Instant::now(),
        &n,
        Path::new("/nonexistent/gauntlet"),
        sink,
        RunOptions::default(),
    )
    .await
    .expect_err("5 replicas on 3 nodes");
    assert!(e.to_string().contains("replicas = 5 on 3 node(s)"), "{e}");
    assert!(backend.calls().is_empty(), "{:?}", backend.calls());
    assert!(!names(&seen).contains(&"Deploying".to_string()));
    let _ = std::fs::remove_dir_all(&results);
}
