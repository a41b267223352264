//! `workload = "queue"` and `"log"`: producers in this process, consumers as
//! worker processes, faults from the schedule, the final heal, then the drain.
use super::context::{until_failed, BenchPart, Driven, Figures, RunContext};
use super::events::{EventSink, RunEvent};
use super::faults::prepare_schedule;
use super::folder::io;
use super::nemesis::{final_heal, run_schedule, RoleNames, RunCluster};
use super::scenario::Workload;
use super::workers::{drain, respawn_exited, stop_all, Pool, Worker, WorkerSpec};
use crate::error::HarnessError;
use gauntlet_nemesis::InFlight;
use gauntlet_workloads::log::LogDriver;
use gauntlet_workloads::Recorder;
use std::sync::atomic::{AtomicBool, AtomicI64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// The queue or log workload phase of a run, up to the `drained` marker.
pub(super) async fn drive(ctx: &RunContext<'_>) -> Result<Driven, HarnessError> {
    let RunContext {
        scenario,
        deployment,
        dir,
        exe,
        events,
        started,
        entered,
        opts,
        ..
    } = *ctx;
    let time = scenario.duration()?;
    let settings = scenario.run_delivery().resolve();
    // Faults the deployment cannot do are refused here, before the history exists
    // and before any op.
    let (schedule, netem) = prepare_schedule(ctx, scenario).await?;
    let kind = deployment.broker();
    let addrs = ctx.client_addrs();
    let mut recorder = if opts.discard_history {
        Recorder::discarding()
    } else {
        Recorder::create(&dir.join(gauntlet_report::folder::HISTORY))
            .map_err(io("creating", dir))?
    };
    if opts.keep_latencies {
        recorder = recorder.keep_latencies();
    }
    let recorder = Arc::new(recorder);
    let driver: Arc<dyn gauntlet_workloads::Driver> = if scenario.workload == Workload::Log {
        Arc::new(
            LogDriver::new(&addrs, settings.clone(), &scenario.log)
                .map_err(|e| HarnessError::Worker(e.to_string()))?,
        )
    } else {
        gauntlet_workloads::driver_for(
            kind,
            &addrs,
            settings.clone(),
            false,
            scenario.nats.replicas,
        )
        .map_err(|e| HarnessError::Worker(e.to_string()))?
    };
    let groups = scenario.queue.groups.clone();
    driver
        .setup(&groups)
        .await
        .map_err(|e| HarnessError::Worker(e.to_string()))?;
    if opts.part == BenchPart::Reference {
        return super::reference::run(ctx, driver, time).await;
    }
    let producers_only = opts.part == BenchPart::Producers;
    let spec = WorkerSpec {
        exe: exe.to_path_buf(),
        broker: kind,
        addrs: addrs.clone(),
        delivery: scenario.run_delivery(),
        cfg: scenario.queue.clone(),
        workload: scenario.workload,
        log: scenario.log.clone(),
        dedup: match &scenario.dedup {
            Some(d) => Some(d.call(ctx.dedup_addr().ok_or_else(|| {
                HarnessError::Scenario(format!(
                    "[dedup]: the {} deployment has no dedup store (only the Docker backend \
                     deploys one)",
                    kind
                ))
            })?)?),
            None => None,
        },
        events: events.clone(),
    };
    let _ = recorder.phase("start");
    events.send(RunEvent::WorkloadStarted {
        first_op_after: started.elapsed(),
        workload: scenario.workload,
        time,
        rate: scenario.rate,
    });

    // Consumers: separate processes, restarted (under a new number) whenever one exits.
    let stop = Arc::new(AtomicBool::new(false));
    let mut initial: Vec<(String, Worker)> = Vec::new();
    for g in groups.iter().filter(|_| !producers_only) {
        for slot in 0..scenario.queue.consumers.max(1) {
            initial.push((g.clone(), spec.spawn_in(&recorder, g, false, slot)?));
        }
    }
    let pool: Pool = Arc::new(tokio::sync::Mutex::new(initial));
    let next_value = Arc::new(AtomicI64::new(0));
    // Sends in flight: counted by the producers, read by the nemesis.
    let in_flight = InFlight::new();
    let producers = tokio::spawn(gauntlet_workloads::queue::run_producers(
        driver.clone(),
        recorder.clone(),
        scenario.queue.clone(),
        scenario.rate,
        scenario.seed,
        next_value,
        stop.clone(),
        in_flight.counter(),
    ));
    let cluster = RunCluster {
        deployment,
        roles: RoleNames::of(scenario),
        pool: pool.clone(),
        proxy: ctx.proxy,
        netem,
        in_flight,
        transformers: None,
    };
    let t0 = Instant::now();
    let deadline = t0 + time;
    let supervise = async {
        let mut last = (Instant::now(), 0u64);
        while Instant::now() < deadline && !recorder.failed() {
            tokio::time::sleep(Duration::from_millis(500)).await;
            let count = if producers_only {
                0
            } else {
                respawn_exited(&pool, &spec, &recorder, scenario.queue.consumers.max(1)).await?
            };
            if count > 0 {
                events.send(RunEvent::WorkersRestarted { count });
            }
            let (now, counts) = (Instant::now(), recorder.counts());
            let ok_per_s = counts.sends_ok.saturating_sub(last.1) as f64
                / now
                    .saturating_duration_since(last.0)
                    .as_secs_f64()
                    .max(1e-3);
            last = (now, counts.sends_ok);
            events.send(RunEvent::Tick {
                elapsed: t0.elapsed().min(time),
                total: time,
                counts,
                ok_per_s,
                in_flight: cluster.in_flight.now(),
            });
        }
        Ok::<(), HarnessError>(())
    };
    let faults = async {
        // A failed history write ends the schedule too (the final heal undoes it).
        tokio::select! {
            () = run_schedule(&schedule, &cluster, &recorder, t0, events) => {}
            () = until_failed(&recorder) => {}
        }
    };
    let (supervised, ()) = tokio::join!(supervise, faults);
    supervised?;
    stop.store(true, Ordering::Relaxed);
    let sends = producers.await.unwrap_or(0);
    let figures = Figures {
        first_op_after: recorder
            .first_op()
            .map(|t| t.saturating_duration_since(entered)),
        workload_time: t0.elapsed(),
        latencies_us: recorder.latencies(),
        counts: recorder.counts(),
        reference: None,
    };
    if producers_only {
        // No consumer ran: nothing to heal (a benchmark has no faults), nothing to drain.
        final_heal(&cluster, &recorder, events).await;
    } else {
        finish(&cluster, &spec, &recorder, &groups, events).await?;
    }
    Ok(Driven {
        sends,
        figures,
        write_failure: recorder.write_error(),
    })
}

/// After the workload: the final heal (every fault undone, every node up and
/// ready), the workers stopped, then the drain with fresh consumers and its
/// `drained` marker. No drain when the history can no longer be written.
pub(super) async fn finish(
    cluster: &RunCluster<'_>,
    spec: &WorkerSpec,
    recorder: &Arc<Recorder>,
    groups: &[String],
    events: &EventSink,
) -> Result<(), HarnessError> {
    final_heal(cluster, recorder, events).await;
    stop_all(&cluster.pool, Duration::from_secs(10)).await;
    if let Some(failure) = recorder.write_error() {
        // Nothing more can be recorded: no drain, no `drained` marker.
        events.send(RunEvent::HistoryWriteFailed {
            failure: failure.to_string(),
        });
        return Ok(());
    }
    // Final drain: fresh consumers per group until a few polls in a row bring nothing.
    let _ = recorder.phase("drain");
    events.send(RunEvent::Draining);
    match drain(spec, recorder, groups, Duration::from_secs(120)).await? {
        Some(end) => {
            for m in &end.missing {
                events.send(RunEvent::SourceMissing {
                    group: m.group.clone(),
                    what: m.what.clone(),
                    answer: m.answer.clone(),
                });
            }
            let _ = recorder.drained(&end);
        }
        None => events.send(RunEvent::DrainUnfinished),
    }
    Ok(())
}
