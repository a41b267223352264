//! `workload = "txn"`: the consume-transform-produce workload
//! (`gauntlet_workloads::txn`) against the Kafka protocol, with the run's
//! fault schedule and the final heal before the drain.
//!
//! The pseudo-fault `crash-producer` in `nemesis` makes a transformer destroy
//! its client in the middle of 20% of its transactions (a producer crash
//! mid-transaction: the transaction ends `info`, and the transformer comes
//! back with the same transactional id); the other faults are the schedule's.
use super::*;
use gauntlet_workloads::txn::TxnConfig;

/// The pseudo-fault handled by the workload itself.
pub const CRASH_PRODUCER: &str = "crash-producer";

pub(super) async fn drive_txn(
    scenario: &Scenario,
    deployment: &DockerDeployment,
    proxy: Option<&Proxy>,
    dir: &Path,
    time: Duration,
    progress: &Progress,
    started: Instant,
) -> Result<Driven, HarnessError> {
    let kind = deployment.broker();
    if kind.name() != "kafka" {
        return Err(HarnessError::Scenario(format!(
            "the txn workload speaks the Kafka protocol; broker `{}` does not",
            kind.name()
        )));
    }
    let port = kind
        .recipe()
        .ports()
        .first()
        .map(|p| p.name)
        .unwrap_or("client");
    let addrs = match proxy {
        Some(p) => p.addrs(),
        None => deployment.addrs(port),
    };
    let recorder =
        Arc::new(Recorder::create(&dir.join("history.jsonl")).map_err(io("creating", dir))?);
    let crash = scenario.nemesis.iter().any(|n| n == CRASH_PRODUCER);
    let mut faults_only = scenario.clone();
    faults_only.nemesis.retain(|n| n != CRASH_PRODUCER);
    let schedule = schedule_for(&faults_only, deployment, time)?;
    std::fs::write(dir.join("schedule.toml"), schedule.to_toml()).map_err(io("writing", dir))?;
    let pool: Pool = Arc::new(tokio::sync::Mutex::new(Vec::new()));
    let netem = schedule
        .faults
        .iter()
        .any(|f| matches!(f.kind(), Ok(FaultKind::Netem { .. })));
    if netem {
        probe_netem(deployment).await?;
    }
    let cluster = RunCluster {
        deployment,
        roles: RoleNames::of(scenario),
        pool,
        proxy,
        netem,
    };
    let cfg = TxnConfig {
        transformers: scenario.queue.producers.max(1) as u32,
        rate: scenario.rate.max(1.0) as u32,
        batch: scenario.queue.batch.clamp(1, 50),
        seed: scenario.seed,
        crash_rate: if crash { 0.2 } else { 0.0 },
        ..TxnConfig::default()
    };
    let _ = recorder.phase("start");
    progress(&format!(
        "first op after {:.1}s; running the txn workload for {:?}: {} transformer(s), {} inputs/s",
        started.elapsed().as_secs_f64(),
        time,
        cfg.transformers,
        cfg.rate
    ));
    let t0 = Instant::now();
    let faults = async {
        run_schedule(&schedule, &cluster, &recorder, t0, progress).await;
        final_heal(&cluster, &recorder, progress).await;
    };
    let s = gauntlet_workloads::txn::run(&addrs.join(","), recorder.clone(), cfg, time, faults)
        .await
        .map_err(|e| HarnessError::Worker(e.to_string()))?;
    progress(&format!(
        "txn workload: {} inputs sent, {} transactions committed, {} aborted, {} unknown; {} outputs drained",
        s.sends, s.committed, s.aborted, s.unknown, s.drained
    ));
    let figures = Figures {
        workload_time: t0.elapsed(),
        ..Figures::default()
    };
    Ok(Driven {
        sends: s.sends,
        figures,
        write_failure: recorder.write_error(),
    })
}
