//! `--plan`: what a run would do to the deployment, without doing it. The
//! schedule is drawn as the run would draw it (same seed, same refusals), and
//! each fault's start and heal are played against the deployment, whose
//! commands a recording backend keeps instead of running (the SSH backend's
//! `--plan`). Nothing waits: the plan takes no time.
use super::faults::schedule_for;
use super::nemesis::{RoleNames, RunCluster};
use super::workers::Pool;
use super::Scenario;
use crate::deployment::Deployment;
use crate::error::HarnessError;
use gauntlet_nemesis::{Fault, FaultKind};

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
        planning: true,
    };
    if schedule.faults.is_empty() {
        title("no fault is scheduled");
    }
    for sf in &schedule.faults {
        let Ok(kind) = sf.kind() else { continue };
        let when = format!(
            "at {:.1}s, {} on {}",
            sf.at_ms as f64 / 1000.0,
            sf.fault,
            sf.target
        );
        if matches!(kind, FaultKind::KillConsumer(_)) {
            title(&format!(
                "{when}: kills a consumer process on this machine; nothing runs on the hosts"
            ));
            continue;
        }
        if matches!(kind, FaultKind::Link(_)) {
            title(&format!(
                "{when}: in the client proxy on this machine; nothing runs on the hosts"
            ));
            continue;
        }
        title(&format!(
            "{when}, for {:.1}s:",
            sf.duration_ms as f64 / 1000.0
        ));
        match Fault::start(kind, &cluster, &sf.target, sf.pick).await {
            Ok((fault, _)) => {
                title(&format!(
                    "then its heal{}:",
                    fault
                        .target
                        .as_deref()
                        .map(|t| format!(" on {t}"))
                        .unwrap_or_default()
                ));
                if let Err(e) = fault.stop(&cluster).await {
                    title(&format!("(its heal is decided at run time: {e})"));
                }
            }
            Err(e) => title(&format!("(decided at run time: {e})")),
        }
    }
    Ok(())
}
