use gauntlet_harness::backend::docker::{self, DockerDeployment};
use gauntlet_harness::backend::ClusterSpec;
use gauntlet_harness::broker::Durability;
use gauntlet_harness::{BrokerKind, Deployment, NodeControl, RunId};
use std::future::Future;
use std::path::PathBuf;
use std::time::{Duration, Instant};

/// Where node logs of the test runs go.
pub fn logs_dir(run: &RunId) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../target-test-logs")
        .join(run.as_str())
}

/// Form a cluster of `broker` with `nodes` nodes (the recipe's default when None).
pub async fn launch(broker: BrokerKind, nodes: Option<usize>) -> DockerDeployment {
    launch_image(broker, nodes, None).await
}

/// [`launch`] with another image of the broker (by name).
pub async fn launch_image(
    broker: BrokerKind,
    nodes: Option<usize>,
    image: Option<&str>,
) -> DockerDeployment {
    launch_with(broker, nodes, image, Durability::default()).await
}

/// [`launch_image`] with the durability settings `durability` (a scenario's
/// `[redis]`, `[nats]`).
pub async fn launch_with(
    broker: BrokerKind,
    nodes: Option<usize>,
    image: Option<&str>,
    durability: Durability,
) -> DockerDeployment {
    let docker = docker::connect().await.expect("Docker Engine reachable");
    let run = RunId::from_name(&format!("test-{}-{}", broker, RunId::generate()));
    let mut spec = ClusterSpec::new(broker)
        .run_id(run.clone())
        .logs_dir(logs_dir(&run))
        .build_missing_image(true)
        .durability(durability);
    if let Some(i) = image {
        spec = spec.image(gauntlet_harness::ImageRef::named(i));
    }
    spec.nodes = nodes;
    let started = Instant::now();
    let dep = DockerDeployment::launch(&docker, spec)
        .await
        .unwrap_or_else(|e| panic!("launching {broker}: {e}"));
    eprintln!(
        "{broker}: {} node(s) ready in {:.1}s, endpoints {:?}",
        dep.nodes().len(),
        started.elapsed().as_secs_f64(),
        dep.endpoints()
            .iter()
            .map(|e| format!("{}/{}={}", e.node, e.port_name, e.addr()))
            .collect::<Vec<_>>()
    );
    dep
}

/// Kill `node` with SIGKILL, start it again and wait until the cluster is whole.
pub async fn kill_and_restart(dep: &DockerDeployment, node: &str) {
    let t = Instant::now();
    dep.kill(node).await.expect("kill");
    dep.start(node).await.expect("start");
    dep.wait_cluster_ready(Duration::from_secs(120))
        .await
        .unwrap_or_else(|e| panic!("after restarting {node}: {e}"));
    eprintln!(
        "{node} killed, restarted and ready in {:.1}s",
        t.elapsed().as_secs_f64()
    );
}

/// Tear down and check that no container or network with the run's label is left.
pub async fn teardown(dep: DockerDeployment) {
    let run = dep.run_id().clone();
    dep.teardown().await.expect("teardown");
    drop(dep);
    let docker = docker::connect().await.expect("Docker Engine reachable");
    let left = docker::list_labelled(&docker, Some(&run))
        .await
        .expect("list labelled");
    assert!(left.is_empty(), "leftovers of run {run}: {left:?}");
    assert!(
        logs_dir(&run).join("n1.log").exists(),
        "node logs collected into {}",
        logs_dir(&run).display()
    );
}

/// Retry `f` until it succeeds or `within` has passed; the last error is in the panic.
/// The tests' way to wait for an event (never a fixed sleep): the time it took is
/// printed ("`what`: after 12.3 s (deadline 120 s)"), so a slow machine shows how
/// close it came.
pub async fn retry<T, E: std::fmt::Display, F, Fut>(what: &str, within: Duration, mut f: F) -> T
where
    F: FnMut() -> Fut,
    Fut: Future<Output = Result<T, E>>,
{
    let started = Instant::now();
    loop {
        match f().await {
            Ok(v) => {
                eprintln!(
                    "{what}: after {:.1} s (deadline {} s)",
                    started.elapsed().as_secs_f64(),
                    within.as_secs()
                );
                return v;
            }
            Err(e) if started.elapsed() < within => {
                eprintln!("{what}: {e}; retrying");
                tokio::time::sleep(Duration::from_millis(500)).await;
            }
            Err(e) => panic!("{what}: still failing after {within:?}: {e}"),
        }
    }
}

/// The final drain's driver for `broker` on `addrs`, as `gauntlet worker --drain`
/// makes it.
pub fn drain_driver(
    broker: BrokerKind,
    addrs: &[String],
) -> std::sync::Arc<dyn gauntlet_workloads::Driver> {
    gauntlet_workloads::driver_for(
        broker,
        addrs,
        gauntlet_workloads::Delivery::default().resolve(),
        true,
        None,
    )
    .expect("a drain driver")
}

/// What the final drain's consumer of `group` finds (docs/checkers.md, "A lost
/// stream"): `None` when it got a consumer, else the broker's answer that the
/// group's source does not exist, confirmed 1 s later (the runs wait 10 s).
/// `when` names the moment in a failure.
pub async fn drain_answer(
    driver: &dyn gauntlet_workloads::Driver,
    group: &str,
    when: &str,
) -> Option<gauntlet_workloads::queue::MissingAnswer> {
    use gauntlet_workloads::queue::{connect_drain_consumer, DrainSource};
    let found = connect_drain_consumer(
        driver,
        group,
        1,
        Duration::from_secs(60),
        Duration::from_secs(1),
    )
    .await
    .unwrap_or_else(|e| panic!("{when}: {e}"));
    match found {
        DrainSource::Ready(_) => None,
        DrainSource::Missing(m) => Some(m),
    }
}
