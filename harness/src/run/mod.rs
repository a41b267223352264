//! One run, end to end: deploy the broker, run the workload with consumers as
//! separate worker processes, record the history as it goes, stop, drain with
//! fresh consumers, tear down, check, and write the run folder.
//!
//! The run folder is `results/<scenario>/<timestamp>/` with `history.jsonl`,
//! `verdict.json`, `scenario.toml` (the effective scenario) and `nodes/` (logs);
//! `results/<scenario>/latest` points at the newest.
use crate::backend::Backend;
use crate::backend::ClusterSpec;
use crate::broker::BrokerExt;
use crate::broker::ImageRef;
use crate::deployment::Deployment;
use crate::error::HarnessError;
use crate::proxy::Proxy;
use crate::RunId;
use faults::{disk_fault, fault_kinds, needs_proxy};
use gauntlet_checkers::{CheckOptions, Incomplete, IncompleteReason, Verdict};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, Instant};

mod context;
mod dedup;
mod events;
mod faults;
mod folder;
mod nemesis;
mod overrides;
mod plan;
mod queue;
mod reference;
mod scenario;
mod twohop;
mod txn;
mod workers;

#[cfg(test)]
mod events_tests;
#[cfg(test)]
mod fake;
#[cfg(test)]
mod tests;

use context::{client_port, Driven};
pub use context::{BenchPart, Figures, ReferenceFigure, RunContext, RunOptions};
pub use dedup::{DedupConfig, DEDUP_BROKERS};
pub use events::{EventSink, RunEvent};
pub use folder::timestamp;
pub use overrides::Overrides;
pub use plan::plan_faults;
pub use scenario::{
    parse_duration, parse_rate, rate_text, Scenario, StorageConfig, Workload, DEFAULT_FAULTS,
    DEFAULT_SEED,
};

/// What a finished run left.
#[derive(Debug)]
pub struct RunOutcome {
    /// The run folder.
    pub dir: PathBuf,
    /// With [`RunOptions::discard_history`], the verdict of an empty history (nothing was kept).
    pub verdict: Verdict,
    /// Sends the workload made (the txn workload: the seeder's sends that ended `ok`).
    pub sends: u64,
    /// Measurements of the run.
    pub figures: Figures,
    /// Stopped by Ctrl-C: the verdict is of what was recorded until then,
    /// marked interrupted (the CLI exits with 130).
    pub interrupted: bool,
}

/// The run on a deployment that is up: the workload under the fault schedule,
/// the final heal and drain, then the node logs and the teardown (also when the
/// workload phase failed).
pub(crate) async fn run_on(ctx: &RunContext<'_>) -> Result<Driven, HarnessError> {
    let result = if ctx.scenario.workload == Workload::Txn {
        txn::drive_txn(ctx).await
    } else if ctx.scenario.workload == Workload::TwoHop {
        twohop::drive_two_hop(ctx).await
    } else {
        queue::drive(ctx).await
    };
    ctx.events.send(RunEvent::TearingDown);
    let _ = ctx
        .deployment
        .collect_logs(&ctx.dir.join(gauntlet_report::folder::NODES))
        .await;
    let teardown = ctx.deployment.teardown().await;
    let driven = result?;
    match teardown {
        Ok(()) => {}
        // The nodes are gone; their logs did not fit where the history did not.
        Err(e) if driven.write_failure.is_some() => ctx
            .events
            .send(RunEvent::Warning(format!("node logs not kept: {e}"))),
        Err(e) => return Err(e),
    }
    Ok(driven)
}

/// Points each proxy link at its node's client port.
fn connect_proxy(proxy: &Proxy, deployment: &dyn Deployment) -> Result<(), HarnessError> {
    let port = client_port(deployment.broker());
    if let Some(link) = &proxy.dedup {
        match deployment
            .dedup_store()
            .and_then(|e| e.addr().parse::<std::net::SocketAddr>().ok())
        {
            Some(a) => link.set_upstream(a),
            None => {
                return Err(HarnessError::Scenario(
                    "the proxy has no dedup store to forward to".into(),
                ))
            }
        }
    }
    for link in &proxy.links {
        let up = deployment
            .endpoint(link.node(), port)
            .and_then(|e| e.addr().parse::<std::net::SocketAddr>().ok());
        match up {
            Some(a) => link.set_upstream(a),
            None => {
                return Err(HarnessError::Scenario(format!(
                    "the proxy has no node {} with port {port} to forward to",
                    link.node()
                )))
            }
        }
    }
    Ok(())
}

/// After Ctrl-C: the backend removes what it created for `run` (the run's
/// future, dropped, has stopped its workers and producers' driving), then what
/// was recorded is judged, marked interrupted.
async fn interrupted(
    backend: &dyn Backend,
    run: &RunId,
    dir: &Path,
    scenario: &Scenario,
    entered: Instant,
    events: &EventSink,
) -> Result<RunOutcome, HarnessError> {
    events.send(RunEvent::Interrupted {
        run: run.to_string(),
        backend: backend.name().to_string(),
    });
    if let Err(e) = backend.remove_run(run).await {
        events.send(RunEvent::CleanupFailed {
            error: e.to_string(),
        });
    }
    let verdict = judge_interrupted(dir, scenario, entered.elapsed(), events)?;
    Ok(RunOutcome {
        dir: dir.to_path_buf(),
        verdict,
        sends: 0,
        figures: Figures::default(),
        interrupted: true,
    })
}

/// The scenario on whatever `backend` launches: the only step that differs
/// between backends is the launch; everything after it is [`run_on`].
/// `entered` is when the caller began (the figures' `first_op_after` counts
/// from it).
pub async fn run_with_backend(
    backend: Arc<dyn Backend>,
    entered: Instant,
    scenario: &Scenario,
    exe: &Path,
    events: EventSink,
    opts: RunOptions,
) -> Result<RunOutcome, HarnessError> {
    let kind = scenario.broker;
    scenario.duration()?;
    let expect = scenario.guarantees()?;
    scenario.check_workload(kind)?;
    let folder = folder::create(&scenario.results, &scenario.name, &scenario.to_toml())?;
    let dir = folder.dir;
    events.send(RunEvent::FolderCreated { dir: dir.clone() });

    let run_id = RunId::from_name(&format!(
        "{}-{}-{}",
        scenario.name,
        folder.stamp,
        std::process::id()
    ));
    // Ctrl-C from here to the end of the drain: the run stops where it is, what
    // the backend created goes, then what was recorded is judged (marked
    // interrupted: no `drained` marker) and the caller is told.
    let deployed = deploy_and_run(
        backend.as_ref(),
        run_id.clone(),
        scenario,
        &dir,
        exe,
        &events,
        entered,
        opts,
    );
    let result = tokio::select! {
        r = deployed => r,
        Ok(()) = tokio::signal::ctrl_c() => {
            return interrupted(backend.as_ref(), &run_id, &dir, scenario, entered, &events).await;
        }
    };
    let Driven {
        sends,
        figures,
        write_failure,
    } = result?;
    // Gauntlet's filesystem failing in a node at any time is the harness's
    // failure: the run says so instead of judging what it did to the broker.
    if disk_fault(&fault_kinds(scenario)?).is_some() {
        if let Some(e) = crate::diskfs::failure_in_logs(&dir.join(gauntlet_report::folder::NODES)) {
            return Err(e);
        }
    }

    if opts.discard_history || opts.part != BenchPart::Workload {
        let verdict = gauntlet_checkers::check(
            &gauntlet_history::model::History::default(),
            &CheckOptions {
                expect,
                max_examples: 10,
            },
        );
        return Ok(RunOutcome {
            dir,
            verdict,
            sends,
            figures,
            interrupted: false,
        });
    }
    let incomplete = write_failure.map(|f| {
        events.send(RunEvent::VerdictUnknown {
            failure: f.to_string(),
        });
        Incomplete {
            reason: IncompleteReason::HistoryWriteFailed,
            detail: f.to_string(),
        }
    });
    let verdict = judge(&dir, scenario, incomplete)?;
    events.send(RunEvent::Judged { dir: dir.clone() });
    Ok(RunOutcome {
        dir,
        verdict,
        sends,
        figures,
        interrupted: false,
    })
}

/// The launch on `backend` and the run on the deployment ([`run_on`]).
#[allow(clippy::too_many_arguments)]
async fn deploy_and_run(
    backend: &dyn Backend,
    run_id: RunId,
    scenario: &Scenario,
    dir: &Path,
    exe: &Path,
    events: &EventSink,
    entered: Instant,
    opts: RunOptions,
) -> Result<Driven, HarnessError> {
    let kind = scenario.broker;
    let mut spec = ClusterSpec::new(kind)
        .run_id(run_id)
        .logs_dir(dir.join(gauntlet_report::folder::NODES))
        .build_missing_image(true);
    spec.image_progress = crate::images::SharedProgress::new(events.clone());
    if let Some(n) = scenario.nodes {
        spec = spec.nodes(n);
    }
    if let Some(img) = &scenario.image {
        spec = spec.image(ImageRef::named(img.clone()));
    }
    if !scenario.storage.is_default() {
        // Only a deployment with a storage node takes `[storage]`.
        let ctx = crate::broker::ClusterContext::for_image(spec.image.flavour, &spec.image.name);
        if kind.recipe().storage(&ctx).is_none() {
            return Err(HarnessError::Scenario(format!(
                "[storage] sets the storage node, and {} ({}) has none",
                scenario.broker, spec.image.name
            )));
        }
        spec.storage_env = scenario.storage.env();
    }
    spec.dedup_store = scenario.dedup.is_some();
    let started = Instant::now();
    let n_nodes = spec.node_count();
    // `[redis]` and `[nats]`: refused on another broker, and replicas beyond the
    // nodes; the backend refuses what its recipe cannot apply.
    scenario.check_settings(n_nodes)?;
    spec.durability = scenario.durability()?;
    let kinds = fault_kinds(scenario)?;
    if let Some(disk) = disk_fault(&kinds) {
        // Refused before anything starts: the backend, the image and the
        // binary; the mount itself is tried when the nodes start.
        let refuse = |why: String| HarnessError::Scenario(format!("{disk} on {kind}: {why}"));
        backend.disk_faults().map_err(refuse)?;
        spec.disk_faults().map_err(refuse)?;
        spec.diskfs = Some(crate::diskfs::binary_or_build(|command| {
            events.send(RunEvent::BuildingDiskfs { command })
        })?);
    }
    // The proxy listens before the nodes exist, so a recipe can advertise its address.
    let proxy = if needs_proxy(&kinds) {
        let names: Vec<String> = (1..=n_nodes).map(|i| format!("n{i}")).collect();
        let mut proxy = Proxy::bind(&names, scenario.seed).await?;
        if scenario.dedup.is_some() {
            // The consumers reach their dedup store through the proxy too (seed D7).
            proxy.dedup = Some(
                crate::proxy::Link::bind(crate::broker::DEDUP_STORE_NODE, scenario.seed ^ 0xD7)
                    .await?,
            );
        }
        let addrs: Vec<std::net::SocketAddr> = proxy.links.iter().map(|l| l.addr()).collect();
        spec = spec.client_endpoints(client_port(kind), &addrs);
        Some(proxy)
    } else {
        None
    };
    events.send(RunEvent::Deploying {
        broker: kind,
        nodes: n_nodes,
        settings: scenario.settings_line(),
    });
    let deployment = backend.launch(spec).await?;
    events.send(RunEvent::DeploymentReady {
        broker: kind,
        after: started.elapsed(),
    });
    if scenario.dedup.is_some() && deployment.dedup_store().is_none() {
        // Refused before the history exists: a backend that deploys no dedup store.
        let _ = deployment.teardown().await;
        return Err(HarnessError::Scenario(format!(
            "[dedup]: the {} backend deploys no dedup store beside {kind} (only the Docker \
             backend does)",
            backend.name()
        )));
    }
    if let Some(p) = &proxy {
        if let Err(e) = connect_proxy(p, deployment.as_ref()) {
            let _ = deployment.teardown().await;
            return Err(e);
        }
        events.send(RunEvent::Proxy { addrs: p.addrs() });
    }
    let ctx = RunContext {
        scenario,
        deployment: deployment.as_ref(),
        proxy: proxy.as_ref(),
        dir,
        exe,
        events,
        entered,
        started,
        opts,
    };
    run_on(&ctx).await
}

/// Reads the run folder's history, judges it against the scenario's `expect`
/// ([`gauntlet_report::folder::judge`]), marks the verdict when the run did not
/// finish as planned, and writes `verdict.json` and the reports. When the
/// history could not be written whole (a full disk), the reports may not fit
/// either: that is a warning of the verdict, not an error, so the caller still
/// gets the (unknown) verdict to show.
pub fn judge(
    dir: &Path,
    scenario: &Scenario,
    incomplete: Option<Incomplete>,
) -> Result<Verdict, HarnessError> {
    let history = gauntlet_history::read_path(dir.join(gauntlet_report::folder::HISTORY))
        .map_err(|e| HarnessError::RunFolder(e.to_string()))?;
    let disk_failed = matches!(
        incomplete,
        Some(Incomplete {
            reason: IncompleteReason::HistoryWriteFailed,
            ..
        })
    );
    let mut verdict = gauntlet_report::folder::judge(
        &history,
        &CheckOptions {
            expect: scenario.expect.to_vec(),
            max_examples: 10,
        },
        incomplete,
    );
    let written = gauntlet_report::folder::write_verdict(
        dir,
        &history,
        &verdict,
        Some(&scenario.to_toml()),
        Some(&scenario.report_info()),
    )
    .map_err(|e| HarnessError::RunFolder(e.to_string()));
    match written {
        Ok(()) => {}
        Err(e) if disk_failed => verdict
            .warnings
            .push(format!("the verdict and reports were not written: {e}")),
        Err(e) => return Err(e),
    }
    Ok(verdict)
}

/// After Ctrl-C (the containers are gone): judges what the run recorded, marked
/// interrupted, and writes `verdict.json` and the reports. Nothing recorded, or
/// nothing that could be judged: [`HarnessError::Interrupted`].
fn judge_interrupted(
    dir: &Path,
    scenario: &Scenario,
    after: Duration,
    events: &EventSink,
) -> Result<Verdict, HarnessError> {
    let interrupted = || HarnessError::Interrupted {
        dir: dir.to_path_buf(),
    };
    if !dir.join(gauntlet_report::folder::HISTORY).exists() {
        events.send(RunEvent::NothingRecorded);
        return Err(interrupted());
    }
    let incomplete = Incomplete {
        reason: IncompleteReason::Interrupted,
        detail: format!(
            "stopped by Ctrl-C {:.1} s after the start, before the final drain ended",
            after.as_secs_f64()
        ),
    };
    match judge(dir, scenario, Some(incomplete)) {
        Ok(v) => {
            events.send(RunEvent::Judged {
                dir: dir.to_path_buf(),
            });
            Ok(v)
        }
        Err(e) => {
            events.send(RunEvent::NoVerdict {
                error: e.to_string(),
            });
            Err(interrupted())
        }
    }
}
