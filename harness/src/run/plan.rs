//! `--plan`: what a run would do to the deployment, without doing it. The
//! schedule is drawn as the run would draw it (same seed, same refusals), and
//! each fault's start and heal are played against the deployment, whose
//! commands a recording backend keeps instead of running (the SSH backend's
//! `--plan`). Nothing waits: the plan takes no time.
use super::faults::schedule_for;
use super::nemesis::{RoleNames, RunCluster};
use super::scenario::Scenario;
use super::workers::Pool;
use crate::deployment::Deployment;
use crate::error::HarnessError;
use gauntlet_nemesis::{Acts, Fault, InFlight};

/// Plays the scenario's schedule against `deployment` at once: `title` is
/// called before each fault's start and heal, so the commands the deployment
/// is asked for fall under it. A fault whose target is found at run time (a
/// leader, a coordinator) says so instead of guessing it.
pub async fn plan_faults(
    scenario: &Scenario,
    deployment: &dyn Deployment,
    title: &(dyn Fn(&str) + Send + Sync),
) -> Result<(), HarnessError> {
    let time = scenario.duration()?;
    let schedule = schedule_for(scenario, deployment, time)?;
    let cluster = RunCluster {
        deployment,
        roles: RoleNames::of(scenario),
        pool: Pool::default(),
        proxy: None,
        netem: true,
        in_flight: InFlight::always(),
        transformers: None,
    };
    let c = cluster.cluster();
    if schedule.faults.is_empty() {
        title("no fault is scheduled");
    }
    for sf in &schedule.faults {
        let kind = sf.fault;
        let spec = kind.spec();
        let when = format!(
            "at {:.1}s, {kind} on {}",
            sf.at_ms as f64 / 1000.0,
            sf.targets_line()
        );
        if !spec.plan.is_empty() {
            title(&format!("{when}: {}", spec.plan));
            continue;
        }
        title(&format!(
            "{when}, for {:.1}s:",
            sf.duration_ms as f64 / 1000.0
        ));
        match Fault::start(kind, &c, &sf.targets, sf.pick).await {
            Ok((fault, _)) => {
                let on = match (spec.acts, fault.targets.as_slice()) {
                    (Acts::Network, _) | (_, []) => String::new(),
                    (_, t) => format!(" on {}", t.join("+")),
                };
                title(&format!("then its heal{on}:"));
                if let Err(e) = fault.stop(&c).await {
                    title(&format!("(its heal is decided at run time: {e})"));
                }
            }
            Err(e) => title(&format!("(decided at run time: {e})")),
        }
    }
    Ok(())
}
