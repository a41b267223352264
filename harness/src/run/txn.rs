//! `workload = "txn"`: the consume-transform-produce workload
//! (`gauntlet_workloads::txn`) against the Kafka protocol, with the run's
//! fault schedule and the final heal before the drain.
//!
//! The fault `crash-producer` in `nemesis` (its entry in the nemesis's table:
//! done by the workload, never scheduled) makes a transformer destroy its
//! client in the middle of 20% of its transactions (a producer crash
//! mid-transaction: the transaction ends `info`, and the transformer comes
//! back with the same transactional id); the other faults are the schedule's.
use super::context::{Driven, RunContext};
use super::events::RunEvent;
use super::faults::prepare_schedule;
use super::folder::io;
use super::nemesis::{final_heal, run_schedule, RoleNames, RunCluster};
use super::workers::Pool;
use crate::error::HarnessError;
use gauntlet_nemesis::{FaultKind, InFlight};
use gauntlet_workloads::txn::TxnConfig;
use gauntlet_workloads::Recorder;
use std::sync::Arc;
use std::time::Instant;

/// The txn workload phase of a run, up to its drain.
pub(super) async fn drive_txn(ctx: &RunContext<'_>) -> Result<Driven, HarnessError> {
    let RunContext {
        scenario,
        deployment,
        dir,
        events,
        started,
        ..
    } = *ctx;
    let time = scenario.duration()?;
    let kind = deployment.broker();
    if kind.name() != "kafka" {
        return Err(HarnessError::Scenario(format!(
            "the txn workload speaks the Kafka protocol; broker `{}` does not",
            kind.name()
        )));
    }
    let addrs = ctx.client_addrs();
    let crash = scenario.nemesis.contains(&FaultKind::CrashProducer);
    // The schedule never draws it (its table entry: the workload does it).
    let (schedule, netem) = prepare_schedule(ctx, scenario).await?;
    let recorder = Arc::new(
        Recorder::create(&dir.join(gauntlet_report::folder::HISTORY))
            .map_err(io("creating", dir))?,
    );
    let cluster = RunCluster {
        deployment,
        roles: RoleNames::of(scenario),
        pool: Pool::default(),
        proxy: ctx.proxy,
        netem,
        in_flight: InFlight::new(),
        transformers: None,
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
    events.send(RunEvent::TxnStarted {
        first_op_after: started.elapsed(),
        time,
        transformers: cfg.transformers,
        rate: cfg.rate,
    });
    let t0 = Instant::now();
    let faults = async {
        run_schedule(&schedule, &cluster, &recorder, t0, events).await;
        final_heal(&cluster, &recorder, events).await;
    };
    let s = gauntlet_workloads::txn::run(&addrs.join(","), recorder.clone(), cfg, time, faults)
        .await
        .map_err(|e| HarnessError::Worker(e.to_string()))?;
    events.send(RunEvent::TxnFinished {
        sends: s.sends,
        committed: s.committed,
        aborted: s.aborted,
        unknown: s.unknown,
        drained: s.drained,
    });
    Ok(Driven::timed(s.sends, t0, &recorder))
}
