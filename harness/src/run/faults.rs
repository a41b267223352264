//! Which faults a run may inject on a deployment (refusals up front), its
//! schedule, and what the client proxy does for a link fault.
use super::context::RunContext;
use super::folder::io;
use super::scenario::{parse_duration, Scenario};
use crate::broker::BrokerExt;
use crate::deployment::Deployment;
use crate::error::HarnessError;
use crate::proxy::{LinkState, Toxic};
use gauntlet_nemesis::faults::{Heal, LinkEffect, LinkToxic, Needs};
use gauntlet_nemesis::{FaultKind, Pacing, Role, Schedule};
use std::time::Duration;

/// A replayed schedule, read whole: a fault name it cannot read refuses the
/// file (naming it and the entry), never thins the schedule.
fn read_replay(path: &std::path::Path) -> Result<Schedule, HarnessError> {
    let text = std::fs::read_to_string(path).map_err(io("reading", path))?;
    Schedule::from_toml(&text)
        .map_err(|e| HarnessError::Scenario(format!("{}: {e}", path.display())))
}

/// The faults a scenario may inject: its `nemesis` list, or those of its replayed schedule.
pub(super) fn fault_kinds(scenario: &Scenario) -> Result<Vec<FaultKind>, HarnessError> {
    if let Some(path) = &scenario.replay {
        return Ok(read_replay(path)?.faults.iter().map(|f| f.fault).collect());
    }
    Ok(scenario.nemesis.clone())
}

/// The disk fault among `kinds` (a sequence's parts count), if any: the run
/// then mounts Gauntlet's filesystem over the nodes' data.
pub(super) fn disk_fault(kinds: &[FaultKind]) -> Option<FaultKind> {
    kinds
        .iter()
        .copied()
        .find(|k| k.needs().disk || k.expands_to().iter().any(|p| p.needs().disk))
}

/// Whether the run puts the harness's TCP proxy between the clients and the nodes:
/// only when a fault needs it (the clean path stays direct).
pub(super) fn needs_proxy(kinds: &[FaultKind]) -> bool {
    kinds.iter().any(|k| k.needs().proxy)
}

/// The node whose client link a link fault hits, from each link's client -> broker
/// bytes (`traffic`; the harness passes the bytes of the last moment, or, when no
/// link carried any then, the bytes so far): the scheduled `node` when its link
/// carried at least a quarter of what the busiest link carried, else the busiest
/// link (first in node order on a tie), so a fault is not spent on a link that
/// carries no records (a Kafka client sends its records only to the brokers its
/// metadata names; the others get a metadata request now and then). With no
/// traffic anywhere, the scheduled node.
pub(super) fn link_target<'a>(node: &'a str, traffic: &[(&'a str, u64)]) -> &'a str {
    let most = traffic.iter().map(|&(_, up)| up).max().unwrap_or(0);
    if traffic
        .iter()
        .any(|&(n, up)| n == node && up > 0 && up.saturating_mul(4) >= most)
    {
        return node;
    }
    busiest_link(node, traffic)
}

/// The link that carried the most client -> broker bytes (first in node order
/// on a tie); the scheduled `node` when none carried any. `ack-loss` always
/// takes it: its point is to drop the broker's replies to records, and the
/// records go where the bytes go. A link with a quarter of those bytes may
/// carry only consumers' fetches and commits: a smoke run put `ack-loss` on
/// such a link, dropped 804 bytes of replies to consumers, and the negative
/// control caught nothing.
pub(super) fn busiest_link<'a>(node: &'a str, traffic: &[(&'a str, u64)]) -> &'a str {
    let mut best = (node, 0);
    for &(n, up) in traffic {
        if up > best.1 {
            best = (n, up);
        }
    }
    best.0
}

/// The proxy's state for a link fault's effect ([`gauntlet_nemesis::LinkFault::effect`]).
pub(super) fn link_state(effect: LinkEffect) -> LinkState {
    let toxic = |t: LinkToxic| match t {
        LinkToxic::Pass => Toxic::Pass,
        LinkToxic::Delay {
            latency_ms,
            jitter_ms,
        } => Toxic::Delay {
            latency: Duration::from_millis(u64::from(latency_ms)),
            jitter: Duration::from_millis(u64::from(jitter_ms)),
        },
        LinkToxic::Drop => Toxic::Drop,
        LinkToxic::Bandwidth { bytes_per_sec } => Toxic::Bandwidth { bytes_per_sec },
    };
    LinkState {
        up: toxic(effect.up),
        down: toxic(effect.down),
        loss: f64::from(effect.loss_percent) / 100.0,
        refuse: effect.refuse,
    }
}

/// Whether `deployment` (and the scenario's workload) meets a fault's needs;
/// the reason when it does not.
fn able(needs: Needs, deployment: &dyn Deployment, scenario: &Scenario) -> Result<(), String> {
    if let Some(w) = needs.workload {
        if scenario.workload.name() != w {
            return Err(format!(
                "only the {w} workload does it (its transformers), and this run's workload is {}",
                scenario.workload
            ));
        }
    }
    let caps = deployment.capabilities();
    let nodes = deployment.nodes().len();
    let broker = deployment.broker();
    if nodes < needs.nodes {
        let n = ["zero", "one", "two", "three"]
            .get(needs.nodes)
            .map_or_else(|| needs.nodes.to_string(), |w| w.to_string());
        return Err(format!(
            "needs at least {n} nodes, the deployment has {nodes}"
        ));
    }
    if let Some(tool) = needs.net_admin {
        if !caps.net_admin_exec {
            return Err(format!("the nodes cannot run {tool} (no NET_ADMIN exec)"));
        }
    }
    if needs.disk && !deployment.disk_mounted() {
        return Err(
            "the nodes do not run Gauntlet's filesystem over their data (only the Docker \
             backend mounts it, for Gauntlet's own images)"
                .into(),
        );
    }
    if needs.process_faults && !caps.process_faults {
        return Err("the deployment does not offer process faults".into());
    }
    if needs.pause && !caps.pause {
        return Err("the deployment cannot pause nodes".into());
    }
    if needs.proxy && needs.role == Some(Role::Storage) {
        return Err(
            "the clients never talk to the storage node, so there is no client link of \
             theirs to it (aim a node fault at it: kill-broker:storage, pause:storage)"
                .into(),
        );
    }
    match needs.role {
        Some(Role::Storage) if deployment.storage_node().is_none() => Err(format!(
            "the {broker} deployment has no storage node (its brokers keep their own data)"
        )),
        Some(Role::DedupStore) if deployment.dedup_store().is_none() => {
            Err("the run has no dedup store (the scenario's [dedup] table deploys one)".to_string())
        }
        Some(role)
            if !matches!(role, Role::Storage | Role::DedupStore)
                && broker.recipe().role_probe(role).is_none() =>
        {
            let which = match role {
                Role::Leader => "which node leads".to_string(),
                _ => format!("which node is the {role}"),
            };
            Err(format!(
                "{broker} cannot tell {which} (no role probe in its recipe)"
            ))
        }
        _ => Ok(()),
    }
}

/// The run's schedule: replayed from a file, or generated from the seed.
pub(super) fn schedule_for(
    scenario: &Scenario,
    deployment: &dyn Deployment,
    time: Duration,
) -> Result<Schedule, HarnessError> {
    if let Some(path) = &scenario.replay {
        return read_replay(path);
    }
    let mut kinds = Vec::new();
    for &kind in &scenario.nemesis {
        // A sequence (`pause-kill`) needs what its faults need, besides its own.
        let needs = std::iter::once(kind)
            .chain(kind.expands_to())
            .map(FaultKind::needs);
        for n in needs {
            if let Err(why) = able(n, deployment, scenario) {
                return Err(HarnessError::Scenario(format!(
                    "{kind} on {}: {why}",
                    scenario.broker
                )));
            }
        }
        kinds.push(kind);
    }
    if scenario.nemesis_concurrency == 0 {
        return Err(HarnessError::Scenario(
            "nemesis-concurrency is 0: at least 1 fault must be allowed at once".into(),
        ));
    }
    Ok(Schedule::paced(
        scenario.seed,
        &kinds,
        &deployment.nodes(),
        Pacing {
            time,
            interval: parse_duration(&scenario.nemesis_interval)?,
            duration: parse_duration(&scenario.nemesis_duration)?,
            concurrency: scenario.nemesis_concurrency,
        },
    ))
}

/// The run's schedule, refused up front where the deployment cannot do a fault,
/// written to `schedule.toml`; and whether it holds a netem fault (probed here).
pub(super) async fn prepare_schedule(
    ctx: &RunContext<'_>,
    scenario: &Scenario,
) -> Result<(Schedule, bool), HarnessError> {
    let schedule = schedule_for(scenario, ctx.deployment, scenario.duration()?)?;
    let netem = schedule
        .faults
        .iter()
        .any(|f| f.fault.spec().heal == Heal::RemoveDelay);
    if netem {
        probe_netem(ctx.deployment).await?;
    }
    std::fs::write(
        ctx.dir.join(gauntlet_report::folder::SCHEDULE),
        schedule.to_toml(),
    )
    .map_err(io("writing", ctx.dir))?;
    Ok((schedule, netem))
}

/// Refuses a netem fault up front where the nodes' kernel has no `sch_netem`.
async fn probe_netem(deployment: &dyn Deployment) -> Result<(), HarnessError> {
    let Some(node) = deployment.nodes().into_iter().next() else {
        return Ok(());
    };
    let probe = format!(
        "{} && tc qdisc del dev eth0 root",
        gauntlet_nemesis::net::delay_script(1)
    );
    let out = deployment
        .exec(
            &node,
            &crate::broker::Command::shell(&probe),
            Duration::from_secs(20),
        )
        .await?;
    if out.success() {
        return Ok(());
    }
    Err(HarnessError::Scenario(format!(
        "netem is not supported on {}: `{probe}` in {node} failed: {} \
         (use the proxy's latency/jitter/loss faults instead)",
        deployment.broker(),
        out.combined().trim()
    )))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_link_fault_moves_off_a_link_no_client_uses() {
        // The CI failure this prevents: ack-loss scheduled on n3 of a tansu
        // cluster whose clients all bootstrapped on n1 dropped nothing.
        let used = [("n1", 900), ("n2", 0), ("n3", 0)];
        assert_eq!(link_target("n3", &used), "n1");
        // A scheduled link with a fair share stays the target, busier ones or not.
        let both = [("n1", 900), ("n2", 300), ("n3", 0)];
        assert_eq!(link_target("n2", &both), "n2");
        // One that only sees a metadata request now and then does not (the
        // smoke run of kafka-acks1-inflight5: n3 116 bytes, n2 38,000).
        let trickle = [("n1", 0), ("n2", 38_000), ("n3", 116)];
        assert_eq!(link_target("n3", &trickle), "n2");
        // The busiest link wins; the first in node order on a tie.
        assert_eq!(link_target("n3", &[("n1", 5), ("n2", 7), ("n3", 0)]), "n2");
        assert_eq!(link_target("n3", &[("n1", 7), ("n2", 7), ("n3", 0)]), "n1");
        // No traffic anywhere yet: the schedule's node.
        assert_eq!(link_target("n2", &[("n1", 0), ("n2", 0)]), "n2");
        assert_eq!(link_target("n9", &[]), "n9");
        // ack-loss: the busiest link even when the scheduled one has a quarter.
        assert_eq!(
            busiest_link("n3", &[("n1", 400), ("n2", 0), ("n3", 100)]),
            "n1"
        );
        assert_eq!(
            link_target("n3", &[("n1", 400), ("n2", 0), ("n3", 100)]),
            "n3"
        );
        assert_eq!(busiest_link("n2", &[("n1", 0), ("n2", 0)]), "n2");
    }
}
