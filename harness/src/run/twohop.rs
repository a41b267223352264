//! `workload = "two-hop"` (seed row O7, `docs/twohop.md`): the pipeline of
//! `gauntlet_workloads::twohop` (producers -> stream A -> transformers ->
//! stream B -> consumers) on NATS JetStream or the Kafka protocol, with the
//! run's fault schedule and the final heal before the pipeline drains.
//!
//! Transformers run in this process: `kill-consumer[:before-ack|:after-ack]`
//! kills one of them at that point (it drops its clients and comes back under
//! a new process number), and `[two-hop] crash-rate` makes one do so between
//! its sends and its ack on its own.
use super::context::{Driven, RunContext};
use super::events::RunEvent;
use super::faults::prepare_schedule;
use super::folder::io;
use super::nemesis::{final_heal, run_schedule, RoleNames, RunCluster};
use super::workers::Pool;
use crate::error::HarnessError;
use gauntlet_nemesis::InFlight;
use gauntlet_workloads::twohop::{Kills, TwoHopRun};
use gauntlet_workloads::Recorder;
use std::sync::Arc;
use std::time::Instant;

/// The two-hop workload phase of a run, up to its `drained` marker.
pub(super) async fn drive_two_hop(ctx: &RunContext<'_>) -> Result<Driven, HarnessError> {
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
    let addrs = ctx.client_addrs();
    let (a, b, topics) = gauntlet_workloads::twohop::drivers(
        kind,
        &addrs,
        scenario.delivery.resolve(),
        scenario.nats.replicas,
    )
    .map_err(|e| HarnessError::Scenario(e.to_string()))?;
    let (schedule, netem) = prepare_schedule(ctx, scenario).await?;
    let kills = Arc::new(Kills::default());
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
        transformers: Some(kills.clone()),
    };
    let run = TwoHopRun {
        producers: scenario.queue.producers.max(1),
        keys: scenario.queue.keys.max(1),
        rate: scenario.rate,
        time,
        seed: scenario.seed,
        topics,
    };
    let _ = recorder.phase("start");
    events.send(RunEvent::WorkloadStarted {
        first_op_after: started.elapsed(),
        workload: scenario.workload,
        time,
        rate: scenario.rate,
    });
    let t0 = Instant::now();
    let faults = async {
        run_schedule(&schedule, &cluster, &recorder, t0, events).await;
        final_heal(&cluster, &recorder, events).await;
    };
    let s = gauntlet_workloads::twohop::run(
        a,
        b,
        recorder.clone(),
        scenario.two_hop.clone(),
        run,
        kills.clone(),
        faults,
    )
    .await
    .map_err(|e| HarnessError::Worker(e.to_string()))?;
    events.send(RunEvent::TwoHopFinished {
        inputs: s.inputs,
        outputs: s.outputs,
        delivered: s.delivered,
        crashes: s.crashes,
    });
    Ok(Driven::timed(s.inputs, t0, &recorder))
}

#[cfg(test)]
mod tests {
    use crate::run::Scenario;

    fn scenario(broker: &str, rest: &str) -> Scenario {
        Scenario::from_toml(&format!(
            "name = \"x\"\nbroker = \"{broker}\"\nworkload = \"two-hop\"\n{rest}"
        ))
        .expect("scenario")
    }

    #[test]
    fn two_hop_runs_on_nats_and_kafka_and_is_refused_elsewhere_naming_the_broker() {
        for broker in ["nats", "kafka"] {
            let s = scenario(broker, "[two-hop]\ntransformers = 3\n");
            s.check_workload(s.broker).expect(broker);
            assert_eq!(s.two_hop.transformers, 3);
            let again = Scenario::from_toml(&s.to_toml()).expect("round trip");
            assert_eq!(again.two_hop, s.two_hop);
            assert!(s.to_toml().contains("[two-hop]"), "{}", s.to_toml());
        }
        for broker in ["redis", "rabbitmq", "sqs"] {
            let s = scenario(broker, "");
            let e = s.check_workload(s.broker).expect_err(broker).to_string();
            assert!(e.contains("two-hop") && e.contains(broker), "{e}");
        }
    }

    #[test]
    fn bad_two_hop_settings_are_refused_naming_the_setting_and_the_broker() {
        for (table, names) in [
            ("transformers = 0", "transformers = 0"),
            ("batch = 0", "batch = 0"),
            ("crash-rate = 2.0", "crash-rate = 2"),
        ] {
            let s = scenario("nats", &format!("[two-hop]\n{table}\n"));
            let e = s.check_workload(s.broker).expect_err(table).to_string();
            assert!(e.contains(names) && e.contains("nats"), "{table}: {e}");
        }
        // kill-consumer reaches the transformers (they run in the harness).
        let s = scenario("kafka", "nemesis = [\"kill-consumer:before-ack\"]\n");
        s.check_workload(s.broker)
            .expect("kill-consumer kills transformers");
        // A [two-hop] table on another workload is refused too; the default is not written.
        let q =
            Scenario::from_toml("name = \"x\"\nbroker = \"nats\"\n[two-hop]\ntransformers = 2\n")
                .expect("scenario");
        let e = q.check_workload(q.broker).expect_err("queue").to_string();
        assert!(e.contains("[two-hop]") && e.contains("queue"), "{e}");
        let d = Scenario::default_scenario();
        assert!(!d.to_toml().contains("two-hop"), "{}", d.to_toml());
        assert!(Scenario::from_toml(
            "name = \"x\"\nbroker = \"nats\"\n[two-hop]\ntransformer = 2\n"
        )
        .is_err());
    }
}
